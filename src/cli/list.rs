//! `list`: the configured instances (project scope first, then user scope), as the reference
//! prints them: name, scope, config path and the Claude tool prefix.
//!
//! Reads folder listings, and of each instance file only its policy keys (its own access tier,
//! module mode, whether it is the default cluster): no other value is printed, so it cannot
//! leak a secret.

use super::CliError;
use super::harden::rule_prefix;
use crate::config::{self, instances};
use crate::config::{Paths, ProcessEnv};

/// Prints the instances.
pub fn run() -> Result<(), CliError> {
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
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
            "    tools:  prefixed with \"{}\" (e.g. {}pve_list_nodes)",
            i.server_key,
            rule_prefix(&i.server_key)
        );
    }
    Ok(())
}
