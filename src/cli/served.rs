//! What `run` would serve, for the commands that describe it without serving (`tools`,
//! `list`, `doctor`, `harden`): every cluster loaded exactly as `run` loads it, each with its
//! own settings, and the MCP client entry that launches the server for an instance file.
//!
//! Invariants: clusters come from [`config::clusters::load_clusters`] and each cluster's
//! settings from [`Settings::for_cluster`] (the instance file's policy keys beat the
//! variables), as in `run`; tool names are `mcp__<entry>__<tool>` where `<entry>` is the name
//! of the client entry that starts the server — a cluster added to another entry is reached
//! through that entry's names with a `cluster` argument. Nothing here contacts Proxmox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::CliError;
use super::clients::{self, ClientId, ServerEntry};
use crate::config::clusters::{self, ClusterConfig};
use crate::config::{self, CONFIG_ENV_VAR, ConfigSource, EnvSource, Paths, ProcessEnv, Scope};
use crate::policy::Settings;

/// One cluster as `run` would serve it.
#[derive(Debug, Clone)]
pub struct ServedCluster {
    /// Its name (the instance file's stem, or `default`).
    pub name: String,
    /// The instance file it comes from, when it comes from one.
    pub path: Option<PathBuf>,
    /// Its configuration.
    pub config: config::Config,
    /// Its settings: the variables, then its file's policy keys.
    pub settings: Settings,
}

/// The settings of `cluster` under `base` (the variables): its file's keys win, and the
/// refusal that a tier or module limit causes names the file as the place to change it.
pub fn cluster_settings(base: &Settings, cluster: &ClusterConfig) -> Result<Settings, CliError> {
    let mut settings = base
        .for_cluster(&cluster.config.policy, &cluster.name)
        .map_err(|e| CliError::Config(e.to_string()))?;
    if let ConfigSource::File { path, .. } = &cluster.config.source {
        settings.name_file_limits(&cluster.config.policy, path);
    }
    Ok(settings)
}

/// Every cluster `run` would serve with the environment `env` (the process environment plus,
/// for `doctor`, a client entry's variables), each with its own settings.
pub fn load_with(env: &dyn EnvSource, paths: &Paths) -> Result<Vec<ServedCluster>, CliError> {
    let base =
        Settings::from_lookup(|key| env.var(key)).map_err(|e| CliError::Config(e.to_string()))?;
    let set = clusters::load_clusters(env, paths).map_err(|e| CliError::Config(e.to_string()))?;
    set.clusters
        .into_iter()
        .map(|cluster| {
            let settings = cluster_settings(&base, &cluster)?;
            let path = match &cluster.config.source {
                ConfigSource::File { path, .. } => Some(path.clone()),
                _ => None,
            };
            Ok(ServedCluster {
                name: cluster.name,
                path,
                config: cluster.config,
                settings,
            })
        })
        .collect()
}

/// [`load_with`] for the process environment.
pub fn load() -> Result<Vec<ServedCluster>, CliError> {
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    load_with(&ProcessEnv, &paths)
}

/// The process environment with some variables replaced (a client entry's `env`).
pub struct Overlay<'a>(pub &'a BTreeMap<String, String>);

impl EnvSource for Overlay<'_> {
    fn var(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned().or_else(|| ProcessEnv.var(key))
    }
}

/// The client entry that launches the server for an instance file.
#[derive(Debug, Clone)]
pub struct EntryOf {
    /// The entry's name: the `<server>` of `mcp__<server>__<tool>`.
    pub key: String,
    /// The client whose file holds it.
    pub client: ClientId,
    /// The scope of that file.
    pub scope: Scope,
    /// The entry itself.
    pub entry: ServerEntry,
}

impl EntryOf {
    /// Whether this entry serves other files too, so the instance is one of its clusters.
    pub fn serves_several(&self) -> bool {
        self.entry
            .env
            .get(CONFIG_ENV_VAR)
            .is_some_and(|list| list.split(',').filter(|f| !f.trim().is_empty()).count() > 1)
    }
}

/// The entry whose `NANDI_PROXMOX_CONFIG` names `file`: the instance's own entry (`own_key`)
/// first, else another instance's entry that lists it; Claude Code's files first, then the
/// other clients'. `None` when no client file names it.
pub fn entry_of(paths: &Paths, own_key: &str, file: &Path) -> Option<EntryOf> {
    let mut keys = vec![own_key.to_owned()];
    for inst in config::instances::list_instances(paths) {
        if !keys.contains(&inst.server_key) {
            keys.push(inst.server_key);
        }
    }
    for client in ClientId::ALL {
        for scope in [Scope::Project, Scope::User] {
            let Ok(path) = client.config_path(paths, scope) else {
                continue;
            };
            if !path.exists() {
                continue;
            }
            for key in &keys {
                if let Ok(Some(entry)) = clients::read_entry(client, &path, key)
                    && entry
                        .env
                        .get(CONFIG_ENV_VAR)
                        .is_some_and(|list| names_file(list, file))
                {
                    return Some(EntryOf {
                        key: key.clone(),
                        client,
                        scope,
                        entry,
                    });
                }
            }
        }
    }
    None
}

/// Whether a `NANDI_PROXMOX_CONFIG` value (one file or a comma-separated list) names `file`.
pub fn names_file(list: &str, file: &Path) -> bool {
    let wanted = std::fs::canonicalize(file).ok();
    list.split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .any(|f| {
            Path::new(f) == file
                || wanted
                    .as_ref()
                    .is_some_and(|w| std::fs::canonicalize(f).ok().as_ref() == Some(w))
        })
}
