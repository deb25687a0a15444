//! `tools`: what the server would register under the current settings, without serving.
//!
//! Reads the policy variables and the configuration (to know whether SSH tools exist); needs
//! no Proxmox and does no network I/O. `--all-backends` lists SSH tools even without SSH.

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

/// Prints the registered tools.
pub fn print(args: ToolsArgs) -> Result<(), CliError> {
    let settings = Settings::from_lookup(|key| std::env::var(key).ok())
        .map_err(|e| CliError::Config(e.to_string()))?;
    let capabilities = if args.all_backends {
        Capabilities::ALL
    } else {
        Capabilities {
            ssh: ssh_configured(),
        }
    };
    let registry = Registry::build_for(&settings, capabilities);
    if args.json {
        let doc = describe(&registry, &settings);
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::Runtime(e.to_string()))?;
        println!("{text}");
    } else {
        println!("{}", registry.exposure(&settings));
        print!("{}", table(&registry));
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

/// Whether the configuration `run` would load has SSH settings. A configuration that does not
/// load is reported on stderr and treated as "no SSH" — listing tools needs no connection.
fn ssh_configured() -> bool {
    let loaded = Paths::from_env(&ProcessEnv).and_then(|paths| config::load(&ProcessEnv, &paths));
    match loaded {
        Ok(config) => config.ssh.is_some(),
        Err(e) => {
            eprintln!("nandi-proxmox-mcp: configuration not loaded ({e}); SSH tools not listed");
            false
        }
    }
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
