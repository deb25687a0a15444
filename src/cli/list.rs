//! `list`: the configured instances (project scope first, then user scope), as the reference
//! prints them: name, scope, config path, tier and the Claude tool names — or, when
//! `NANDI_PROXMOX_CONFIG` names a folder or a list (or `NANDI_PROXMOX_CLUSTERS=all`), the
//! clusters `run` would serve, loaded exactly as `run` loads them.
//!
//! Reads folder listings, client entries and of each instance file only its policy keys (its
//! own access tier, module mode, whether it is the default cluster): no other value is printed,
//! so it cannot leak a secret. Tool names come from the client entry that launches the server
//! for the file (`mcp__<entry>__…`, with `cluster` as an argument when the entry serves
//! several), never from the file's own name.

use std::path::Path;

use super::CliError;
use super::harden::rule_prefix;
use super::served;
use crate::config::{self, instances};
use crate::config::{Paths, ProcessEnv};

/// Prints the instances.
pub fn run() -> Result<(), CliError> {
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    if config::clusters::several_requested(&ProcessEnv, &paths) {
        return served_clusters(&paths);
    }
    let all = instances::list_instances(&paths);
    if all.is_empty() {
        println!(
            "No Proxmox instances configured yet. Run `nandi-proxmox-mcp setup` (or \
             `nandi-proxmox-mcp bootstrap` first to create an API token)."
        );
        return Ok(());
    }
    println!("Configured Proxmox instances ({}):", all.len());
    if all.len() > 1 {
        println!(
            "  (one server can serve them all as clusters: NANDI_PROXMOX_CLUSTERS=all, or \
             NANDI_PROXMOX_CONFIG=<file>,<file>; `setup` adds a cluster to an existing entry)"
        );
    }
    for i in all {
        println!("\n  {}", i.name);
        println!("    scope:  {}", i.scope);
        println!("    config: {}", i.path.display());
        let policy = config::clusters::policy_of(&i.path).unwrap_or_default();
        let tier = match (&policy.access_tier, &policy.module_mode) {
            (Some(t), Some(m)) => format!("{t}, module {m} (from the file)"),
            (Some(t), None) => format!("{t} (from the file)"),
            (None, Some(m)) => format!("PVE_ACCESS_TIER of the server, module {m} (from the file)"),
            (None, None) => "PVE_ACCESS_TIER of the server (default read-only)".to_owned(),
        };
        println!("    tier:   {tier}");
        if policy.default {
            println!("    default cluster: yes");
        }
        println!(
            "    tools:  {}",
            tool_names(&paths, &i.server_key, &i.name, &i.path)
        );
    }
    Ok(())
}

/// The clusters `run` would serve, each at the tier it runs with.
fn served_clusters(paths: &Paths) -> Result<(), CliError> {
    let clusters = served::load()?;
    println!(
        "Clusters served by one server ({}; from {}):",
        clusters.len(),
        source_of_several()
    );
    for c in clusters {
        println!("\n  {}", c.name);
        if let Some(path) = &c.path {
            println!("    config: {}", path.display());
        }
        let whence = if c.config.policy.access_tier.is_some() {
            "from the file"
        } else {
            "PVE_ACCESS_TIER of the server"
        };
        println!(
            "    tier:   {}, module {} ({whence})",
            c.settings.tier.as_str(),
            c.settings.module.as_str()
        );
        if c.config.policy.default {
            println!("    default cluster: yes");
        }
        if let Some(path) = &c.path {
            println!("    tools:  {}", tool_names(paths, &c.name, &c.name, path));
        }
    }
    Ok(())
}

/// `NANDI_PROXMOX_CONFIG=…` or `NANDI_PROXMOX_CLUSTERS=all`, as said in the heading.
fn source_of_several() -> String {
    match std::env::var(config::CONFIG_ENV_VAR) {
        Ok(v) if !v.trim().is_empty() => format!("{}={}", config::CONFIG_ENV_VAR, v.trim()),
        _ => format!("{}=all", config::CLUSTERS_ENV_VAR),
    }
}

/// How a client reaches the tools of the instance file `path`: the entry that launches the
/// server for it names them; without one, the name `setup` would give its own entry.
fn tool_names(paths: &Paths, own_key: &str, cluster: &str, path: &Path) -> String {
    match served::entry_of(paths, own_key, path) {
        Some(found) if found.serves_several() => format!(
            "prefixed with \"{}\" (e.g. {}pve_list_nodes with cluster: \"{cluster}\"; entry `{}` in the {} configuration serves it)",
            found.key,
            rule_prefix(&found.key),
            found.key,
            found.client.label()
        ),
        Some(found) => format!(
            "prefixed with \"{}\" (e.g. {}pve_list_nodes)",
            found.key,
            rule_prefix(&found.key)
        ),
        None => format!(
            "prefixed with \"{own_key}\" (e.g. {}pve_list_nodes) once a client entry `{own_key}` starts the server",
            rule_prefix(own_key)
        ),
    }
}
