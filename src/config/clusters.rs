//! Several clusters in one process: which instance files are loaded, and under which names.
//!
//! Several clusters are loaded when `NANDI_PROXMOX_CONFIG` names a folder (every `*.json` in
//! it) or a comma-separated list of files, or when `NANDI_PROXMOX_CLUSTERS=all` asks discovery
//! for every instance file in `~/.nandi-proxmox-mcp/` (with the same owner and permission checks
//! as a single discovered file) plus the trusted project files. Otherwise [`super::load`] decides,
//! exactly as before, and the one configuration it returns is the only cluster.
//!
//! Invariants: a cluster is named by its file stem, which must match [`CLUSTER_NAME_PATTERN`];
//! names are unique; at most one cluster is the default (`"default": true` in its file, or
//! `NANDI_PROXMOX_DEFAULT_CLUSTER`); every file named or discovered must load (none is skipped
//! silently, except untrusted project files, which discovery never uses).

use std::fs;
use std::path::{Path, PathBuf};

use super::instances::{self, Scope};
use super::trust::{self, TrustState};
use super::{
    CONFIG_ENV_VAR, Config, ConfigError, ConfigSource, EnvSource, FileOrigin, Paths, file,
};

pub use super::{CLUSTERS_ENV_VAR, DEFAULT_CLUSTER_ENV_VAR};
/// Allowed cluster names (the file stem of the instance file).
pub const CLUSTER_NAME_PATTERN: &str = "^[a-z0-9][a-z0-9_-]{0,31}$";
/// The name of the only cluster when it has no file name (environment variables).
pub const SINGLE_CLUSTER_NAME: &str = "default";

/// One configured cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Its name (the instance file's stem).
    pub name: String,
    /// Its connection, SSH and policy settings.
    pub config: Config,
}

/// Every cluster this process serves, in a stable order (as listed, or sorted by file name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSet {
    /// The clusters; exactly one in the plain case.
    pub clusters: Vec<ClusterConfig>,
    /// The default cluster's name, when one is configured.
    pub default: Option<String>,
}

/// Whether `name` is a valid cluster name ([`CLUSTER_NAME_PATTERN`]).
pub fn valid_cluster_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_lowercase() || first.is_ascii_digit())
        && name.len() <= 32
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// Loads every cluster the settings name (see the module docs); without a multi-cluster
/// setting, the one configuration [`super::load`] returns.
pub fn load_clusters(env: &dyn EnvSource, paths: &Paths) -> Result<ClusterSet, ConfigError> {
    let home = paths.home.as_deref();
    let clusters = match env.var(CONFIG_ENV_VAR).map(|v| v.trim().to_owned()) {
        Some(raw) if raw.contains(',') => {
            let mut files = Vec::new();
            for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                files.push(super::explicit_path(part, &paths.cwd)?);
            }
            load_files(&files, home)?
        }
        Some(raw) if !raw.is_empty() && paths.cwd.join(&raw).is_dir() => {
            let dir = paths.cwd.join(&raw);
            let files = json_files(&dir);
            if files.is_empty() {
                return Err(ConfigError::NoClusters { path: dir });
            }
            load_files(&files, home)?
        }
        _ => match clusters_requested(env)? {
            true if !super::env::all_core_vars_set(env) && env.var(CONFIG_ENV_VAR).is_none() => {
                discover_all(env, paths)?
            }
            _ => vec![single(super::load(env, paths)?)],
        },
    };
    check_unique(&clusters)?;
    let default = default_of(env, &clusters)?;
    Ok(ClusterSet { clusters, default })
}

/// Whether the settings ask for several clusters (a folder or a list in
/// `NANDI_PROXMOX_CONFIG`, or `NANDI_PROXMOX_CLUSTERS=all`), whatever loading them gives.
pub fn several_requested(env: &dyn EnvSource, paths: &Paths) -> bool {
    match env.var(CONFIG_ENV_VAR).map(|v| v.trim().to_owned()) {
        Some(raw) if !raw.is_empty() => raw.contains(',') || paths.cwd.join(&raw).is_dir(),
        _ => clusters_requested(env).unwrap_or(true),
    }
}

/// `NANDI_PROXMOX_CLUSTERS=all` (trimmed, case-insensitive); unset or blank is `false`.
fn clusters_requested(env: &dyn EnvSource) -> Result<bool, ConfigError> {
    match env
        .var(CLUSTERS_ENV_VAR)
        .map(|v| v.trim().to_ascii_lowercase())
    {
        None => Ok(false),
        Some(v) if v.is_empty() => Ok(false),
        Some(v) if v == "all" => Ok(true),
        Some(value) => Err(ConfigError::InvalidClustersValue { value }),
    }
}

/// The only cluster of the plain case, named by its instance (or file stem), else `default`.
fn single(config: Config) -> ClusterConfig {
    let name = match &config.source {
        ConfigSource::File { path, instance, .. } => instance
            .clone()
            .or_else(|| stem(path))
            .unwrap_or_else(|| SINGLE_CLUSTER_NAME.to_owned()),
        _ => SINGLE_CLUSTER_NAME.to_owned(),
    };
    ClusterConfig { name, config }
}

fn stem(path: &Path) -> Option<String> {
    Some(path.file_stem()?.to_str()?.to_owned())
}

/// The cluster name of a file: its stem, validated.
fn cluster_name(path: &Path) -> Result<String, ConfigError> {
    let name = stem(path).unwrap_or_default();
    if valid_cluster_name(&name) {
        Ok(name)
    } else {
        Err(ConfigError::InvalidClusterName {
            name,
            path: path.to_path_buf(),
        })
    }
}

/// Every `*.json` regular file in `dir`, sorted by file name.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    files
}

/// Files the user named: each must load (fully trusted, as `NANDI_PROXMOX_CONFIG` is).
fn load_files(files: &[PathBuf], home: Option<&Path>) -> Result<Vec<ClusterConfig>, ConfigError> {
    let mut clusters = Vec::new();
    for path in files {
        let name = cluster_name(path)?;
        let config = file::load_path(path, home, FileOrigin::Selected)?;
        clusters.push(ClusterConfig { name, config });
    }
    tracing::info!(
        clusters = %names(&clusters),
        "Proxmox configuration source: {CONFIG_ENV_VAR} names several clusters"
    );
    Ok(clusters)
}

/// `NANDI_PROXMOX_CLUSTERS=all`: every home-folder instance (owner and permissions checked),
/// then every trusted project instance whose name the home folder does not already use.
fn discover_all(env: &dyn EnvSource, paths: &Paths) -> Result<Vec<ClusterConfig>, ConfigError> {
    let home = paths.home.as_deref();
    let all = instances::list_instances(paths);
    let mut clusters = Vec::new();
    for inst in all.iter().filter(|i| i.scope == Scope::User) {
        let name = cluster_name(&inst.path)?;
        file::check_trusted(&inst.path)?;
        let config = file::load_path(&inst.path, home, FileOrigin::Discovered)?;
        clusters.push(ClusterConfig { name, config });
    }
    let store = trust::TrustStore::load_or_empty(env, home);
    for inst in all.iter().filter(|i| i.scope == Scope::Project) {
        let read = match file::read_project(&inst.path, &store, home) {
            Ok(read) if read.state == TrustState::Trusted => read,
            Ok(read) => {
                file::warn_untrusted(&read);
                continue;
            }
            Err(e) => {
                tracing::warn!(
                    "ignoring the project-directory instance file {}: {e}",
                    inst.path.display()
                );
                continue;
            }
        };
        let name = cluster_name(&inst.path)?;
        if clusters.iter().any(|c| c.name == name) {
            tracing::warn!(
                file = %inst.path.display(),
                "ignoring the project-directory instance `{name}`: the home folder has one of the same name"
            );
            continue;
        }
        let config = file::load_project(read, home)?;
        clusters.push(ClusterConfig { name, config });
    }
    if clusters.is_empty() {
        let path = instances::scope_dir(paths, Scope::User).unwrap_or_default();
        return Err(ConfigError::NoClusters { path });
    }
    tracing::info!(
        clusters = %names(&clusters),
        "Proxmox configuration source: {CLUSTERS_ENV_VAR}=all (every instance file)"
    );
    Ok(clusters)
}

fn names(clusters: &[ClusterConfig]) -> String {
    clusters
        .iter()
        .map(|c| c.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn path_of(config: &Config) -> PathBuf {
    match &config.source {
        ConfigSource::File { path, .. } => path.clone(),
        _ => PathBuf::new(),
    }
}

fn check_unique(clusters: &[ClusterConfig]) -> Result<(), ConfigError> {
    for (i, a) in clusters.iter().enumerate() {
        if let Some(b) = clusters[..i].iter().find(|b| b.name == a.name) {
            return Err(ConfigError::DuplicateCluster {
                name: a.name.clone(),
                first: path_of(&b.config),
                second: path_of(&a.config),
            });
        }
    }
    Ok(())
}

/// The default cluster: the file marked `"default": true` (at most one), or the one
/// `NANDI_PROXMOX_DEFAULT_CLUSTER` names (which must exist, and agree with a marked file).
fn default_of(
    env: &dyn EnvSource,
    clusters: &[ClusterConfig],
) -> Result<Option<String>, ConfigError> {
    let mut marked = clusters.iter().filter(|c| c.config.policy.default);
    let from_file = marked.next().map(|c| c.name.clone());
    if let (Some(first), Some(second)) = (&from_file, marked.next()) {
        return Err(ConfigError::TwoDefaults {
            first: first.clone(),
            second: second.name.clone(),
        });
    }
    let from_env = env
        .var(DEFAULT_CLUSTER_ENV_VAR)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty());
    match (from_env, from_file) {
        (Some(name), file) => {
            if !clusters.iter().any(|c| c.name == name) {
                return Err(ConfigError::UnknownDefaultCluster {
                    name,
                    known: clusters.iter().map(|c| c.name.clone()).collect(),
                });
            }
            match file {
                Some(other) if other != name => Err(ConfigError::TwoDefaults {
                    first: other,
                    second: name,
                }),
                _ => Ok(Some(name)),
            }
        }
        (None, file) => Ok(file),
    }
}

/// The policy keys of the instance file at `path` (for `list`), or `None` when it cannot be
/// read; no other value of the file is returned.
pub fn policy_of(path: &Path) -> Option<super::PolicyKeys> {
    let meta = fs::metadata(path).ok()?;
    if meta.len() > super::MAX_FILE_BYTES {
        return None;
    }
    let text = fs::read_to_string(path).ok()?;
    let map = file::parse_map(path, &text).ok()?;
    super::policy_keys::parse(path, &map).ok()
}
