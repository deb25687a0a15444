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
        println!(
            "{} tools and {} aliases registered ({})",
            registry.canonical_count(),
            registry.alias_count(),
            settings.summary()
        );
        for entry in registry.entries().iter().filter(|e| e.alias_for.is_none()) {
            let spec = entry.spec;
            let (method, path) = spec.backend.summary();
            let confirm = if spec.confirm { " confirm" } else { "" };
            println!(
                "{:<34} {:<12} {:<8} {:<7} {method} {path}{confirm}",
                spec.name,
                spec.tier.as_str(),
                spec.module.as_str(),
                spec.category.as_str(),
            );
        }
    }
    Ok(())
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
            json!({
                "name": spec.name,
                "title": spec.title,
                "category": spec.category.as_str(),
                "tier": spec.tier.as_str(),
                "module": spec.module.as_str(),
                "readOnly": spec.effect.is_read(),
                "destructive": spec.effect.is_destructive(),
                "idempotent": spec.effect.is_idempotent(),
                "confirm": spec.confirm,
                "openWorld": spec.open_world,
                "approval": crate::docs::approval_kind(spec),
                "approvalWhen": spec.gated_when.iter().map(|rule| json!({
                    "condition": rule.condition(),
                    "why": rule.why,
                })).collect::<Vec<_>>(),
                "dryRun": !spec.effect.is_read(),
                "deprecated": spec.deprecated,
                "aliases": spec.aliases,
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
