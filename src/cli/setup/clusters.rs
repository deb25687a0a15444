//! `setup` adding a cluster to a client that already runs this server for another one: the
//! existing entry is extended (one server, several clusters) instead of a second entry.
//!
//! The entry's `NANDI_PROXMOX_CONFIG` becomes the comma-separated list of the instance files
//! (the existing ones first, then the new one), so the server loads exactly those clusters
//! and nothing else in the folder. The entry keeps its `PVE_ACCESS_TIER` (the default of every
//! cluster); a new cluster whose tier differs gets it as `accessTier` in its own instance file.
//! Invariants: re-running setup for a cluster already in the entry changes nothing in the list;
//! an entry that is not ours (no `NANDI_PROXMOX_CONFIG`) is never touched.

use std::path::Path;

use serde_json::Value;

use crate::catalog::Tier;
use crate::cli::clients::{self, ClientId, ServerEntry};
use crate::cli::{CliError, files};
use crate::config::{self, CONFIG_ENV_VAR, Instance};

/// The entry of `client`'s file (at `file`) that already serves another instance of `scope`,
/// extended with `path`: its key and the entry to write. `None` when there is none.
pub(super) fn join_existing(
    client: ClientId,
    file: &Path,
    others: &[Instance],
    path: &Path,
    entry: &ServerEntry,
) -> Option<(String, ServerEntry)> {
    let new = path.to_string_lossy().into_owned();
    for other in others {
        let Ok(Some(existing)) = clients::read_entry(client, file, &other.server_key) else {
            continue;
        };
        let Some(list) = existing.env.get(CONFIG_ENV_VAR) else {
            continue;
        };
        let mut files: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        if !files.contains(&new) {
            files.push(new.clone());
        }
        let mut joined = entry.clone();
        joined
            .env
            .insert(CONFIG_ENV_VAR.to_owned(), files.join(","));
        for key in ["PVE_ACCESS_TIER", "PVE_MODULE_MODE"] {
            match existing.env.get(key) {
                Some(value) => joined.env.insert(key.to_owned(), value.clone()),
                None => joined.env.remove(key),
            };
        }
        return Some((other.server_key.clone(), joined));
    }
    None
}

/// The entry's own tier (`PVE_ACCESS_TIER`), when it is one.
pub(super) fn entry_tier(entry: &ServerEntry) -> Option<Tier> {
    entry
        .env
        .get("PVE_ACCESS_TIER")
        .and_then(|t| Tier::parse(t))
}

/// Writes `tier` as the cluster's own `accessTier` into its instance file (kept private and
/// trusted, as `setup` writes it).
pub(super) fn write_tier(paths: &config::Paths, path: &Path, tier: Tier) -> Result<(), CliError> {
    let mut map = files::read_json_object(path).map_err(|e| CliError::Runtime(e.to_string()))?;
    map.insert("accessTier".into(), Value::from(tier.as_str()));
    config::parse_instance_object(path, &map).map_err(|e| CliError::Config(e.to_string()))?;
    files::write_atomic(path, &files::pretty(&Value::Object(map)), true)
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    config::trust_file(&config::ProcessEnv, paths, path)
        .map(|_| ())
        .map_err(|e| CliError::Runtime(e.to_string()))
}
