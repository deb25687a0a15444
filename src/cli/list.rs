//! `list`: the configured instances (project scope first, then user scope), as the reference
//! prints them: name, scope, config path and the Claude tool prefix.
//!
//! Reads folder listings only; never opens an instance file, so it cannot leak a secret.

use super::CliError;
use super::harden::rule_prefix;
use crate::config::instances;
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
    for i in all {
        println!("\n  {}", i.name);
        println!("    scope:  {}", i.scope);
        println!("    config: {}", i.path.display());
        println!(
            "    tools:  prefixed with \"{}\" (e.g. {}pve_list_nodes)",
            i.server_key,
            rule_prefix(&i.server_key)
        );
    }
    Ok(())
}
