//! `tools`: what the server would register under the current settings, without serving.
//!
//! Loads the configuration exactly as `run` does (a folder or a comma-separated list in
//! `NANDI_PROXMOX_CONFIG`, `NANDI_PROXMOX_CLUSTERS=all`) and lists each cluster's tools at its
//! own tier (an instance file's `accessTier`/`moduleMode` beat the variables); needs no Proxmox
//! and does no network I/O. `--all-backends` lists SSH tools even without SSH.

use clap::Args;
use serde_json::{Value, json};

use super::CliError;
use crate::config::{self, Paths, ProcessEnv};
use crate::policy::Settings;
use crate::registry::{Capabilities, Registry};

/// Flags of `tools`.
#[derive(Debug, Args, Default)]
pub struct ToolsArgs {
    /// Print JSON (one object per canonical tool) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also list the SSH-backed tools when SSH is not configured (what the catalog offers).
    #[arg(long)]
    pub all_backends: bool,
}

/// Prints the registered tools: of the one configuration `run` would load, or of each cluster
/// (each at its own tier: an instance file's `accessTier`/`moduleMode` beat the variables).
pub fn print(args: ToolsArgs) -> Result<(), CliError> {
    let clusters = match super::served::load() {
        Ok(clusters) => clusters,
        Err(e) if several_requested() => return Err(e),
        Err(e) => {
            // Listing tools needs no connection: a file that does not load is said, not fatal.
            eprintln!("nandi-proxmox-mcp: configuration not loaded ({e}); SSH tools not listed");
            let settings = Settings::from_lookup(|key| std::env::var(key).ok())
                .map_err(|e| CliError::Config(e.to_string()))?;
            let registry = Registry::build_for(&settings, capabilities(&args, false, false));
            return emit(&args, &[(None, registry, settings)]);
        }
    };
    let several = clusters.len() > 1;
    let built: Vec<Listed> = clusters
        .into_iter()
        .map(|c| {
            let registry = Registry::build_for(
                &c.settings,
                capabilities(&args, c.config.ssh.is_some(), !c.config.pbs.is_empty()),
            );
            let cluster = several.then(|| Cluster {
                name: c.name.clone(),
                path: c.path.clone(),
            });
            (cluster, registry, c.settings)
        })
        .collect();
    emit(&args, &built)
}

/// A cluster's name and file, shown when several are served.
struct Cluster {
    name: String,
    path: Option<std::path::PathBuf>,
}

/// What one table lists: the cluster (when several), its registry and settings.
type Listed = (Option<Cluster>, Registry, Settings);

/// Whether the variables ask for several clusters (then a load failure is an error, as in `run`).
fn several_requested() -> bool {
    Paths::from_env(&ProcessEnv)
        .map(|paths| config::clusters::several_requested(&ProcessEnv, &paths))
        .unwrap_or(false)
}

fn capabilities(args: &ToolsArgs, ssh: bool, pbs: bool) -> Capabilities {
    if args.all_backends {
        Capabilities::ALL
    } else {
        Capabilities { ssh, pbs }
    }
}

/// One table (or JSON document) per cluster; a single configuration prints as before.
fn emit(args: &ToolsArgs, built: &[Listed]) -> Result<(), CliError> {
    if args.json {
        let doc = match built {
            [(None, registry, settings)] => describe(registry, settings),
            _ => json!({
                "clusters": built.iter().map(|(cluster, registry, settings)| {
                    let mut doc = describe(registry, settings);
                    if let (Value::Object(map), Some(cluster)) = (&mut doc, cluster) {
                        map.insert("cluster".into(), json!(cluster.name));
                    }
                    doc
                }).collect::<Vec<_>>(),
            }),
        };
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::Runtime(e.to_string()))?;
        println!("{text}");
        return Ok(());
    }
    for (cluster, registry, settings) in built {
        match cluster {
            Some(Cluster {
                name,
                path: Some(path),
            }) => println!("\ncluster {name} ({}):", path.display()),
            Some(Cluster { name, path: None }) => println!("\ncluster {name}:"),
            None => {}
        }
        println!("{}", registry.exposure(settings));
        print!("{}", table(registry));
    }
    Ok(())
}

/// The canonical tools as aligned columns: name, tier, module, category, method and path.
/// Column widths come from the rows, so no long value (e.g. `monitoring`) shifts a row.
fn table(registry: &Registry) -> String {
    let rows: Vec<[String; 5]> = registry
        .entries()
        .iter()
        .filter(|e| e.alias_for.is_none())
        .map(|entry| {
            let spec = entry.spec;
            let (method, path) = spec.backend.summary();
            let confirm = match crate::docs::approval_kind(spec) {
                "always" => " approval",
                "arguments" => " approval-when",
                "routine" => " routine",
                _ => "",
            };
            [
                spec.name.to_owned(),
                spec.tier.as_str().to_owned(),
                spec.module.as_str().to_owned(),
                spec.category.as_str().to_owned(),
                format!("{method} {path}{confirm}"),
            ]
        })
        .collect();
    let mut widths = [0usize; 4];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row.iter()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for [name, tier, module, category, request] in &rows {
        let [w0, w1, w2, w3] = widths;
        out.push_str(&format!(
            "{name:<w0$} {tier:<w1$} {module:<w2$} {category:<w3$} {request}\n"
        ));
    }
    out
}

/// The machine-readable description used by `tools --json`.
pub fn describe(registry: &Registry, settings: &Settings) -> Value {
    let tools: Vec<Value> = registry
        .entries()
        .iter()
        .filter(|e| e.alias_for.is_none())
        .map(|entry| {
            let spec = entry.spec;
            let (method, path) = spec.backend.summary();
            // Superseded reference tools are legacy names of this tool, as aliases are.
            let aliases: Vec<&str> = spec
                .aliases
                .iter()
                .copied()
                .chain(
                    registry
                        .entries()
                        .iter()
                        .filter(|e| e.alias_for == Some(spec.name) && e.spec.superseded_by.is_some())
                        .map(|e| e.wire_name),
                )
                .collect();
            json!({
                "name": spec.name,
                "title": spec.title,
                "category": spec.category.as_str(),
                "tier": spec.tier.as_str(),
                "module": spec.module.as_str(),
                "readOnly": spec.effect.is_read(),
                "destructive": spec.effect.is_destructive(),
                "idempotent": spec.effect.is_idempotent(),
                "confirm": spec.always_gated(),
                "openWorld": crate::registry::annotations(spec).open_world_hint.unwrap_or(false),
                "approval": crate::docs::approval_kind(spec),
                "approvalWhen": crate::docs::approval_when(spec).into_iter().map(|(condition, why)| json!({
                    "condition": condition,
                    "why": why,
                })).collect::<Vec<_>>(),
                "effects": crate::catalog::effects::of(spec).possible.effects.names(),
                "effectsEveryCall": crate::catalog::effects::of(spec).always.names(),
                "dryRun": !spec.effect.is_read(),
                "deprecated": spec.deprecated,
                "aliases": aliases,
                "method": method,
                "path": path,
                "params": spec.params.iter().map(|p| p.name).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "tier": settings.tier.as_str(),
        "module": settings.module.as_str(),
        "toolCount": registry.canonical_count(),
        "aliasCount": registry.alias_count(),
        "tools": tools,
    })
}
