//! Configuration loading: which Proxmox VE cluster to talk to, and how.
//!
//! A configuration comes from exactly one place, chosen in this order by [`load`] — what the user
//! set explicitly beats what was found on disk, and the user's own folder beats the working
//! directory:
//! 1. the file named by `NANDI_PROXMOX_CONFIG` (it must load; the user's choice, fully trusted);
//! 2. a complete set of `PROXMOX_*` environment variables (host, user, token name and secret);
//! 3. an incomplete set (some but not all of those four) is an error naming the missing ones —
//!    never a fallback to discovery;
//! 4. the only instance file in `~/.nandi-proxmox-mcp/` (several are an error), used only when
//!    this user owns it and nobody else can write it;
//! 5. a project instance file in `<cwd>/.nandi-proxmox-mcp/`, used only when its exact content was
//!    trusted with `nandi-proxmox-mcp trust` (the [`trust`] store); untrusted or changed files are
//!    ignored with a warning; an SSH key or known_hosts path it names is dropped (SSH off);
//! 6. nothing: the server still starts, and tool calls report that it is not configured.
//!
//! Invariants guarded here:
//! * the source in use is logged at WARN (stderr), naming anything it shadowed;
//! * a working-directory file (a cloned repository may carry one) never beats the user's own
//!   settings, is never used without the user's trust in its exact bytes, and never chooses the
//!   SSH key or known_hosts file — so it cannot send the user's key to another host;
//! * a file that was selected or discovered (and not shadowed) but cannot be used is reported as
//!   such — we never fall back to the environment, because that hides the real cause;
//! * every value is validated before a [`Config`] exists, so later code can trust it;
//! * the API token secret is only reachable through [`Secret::expose`]: it never appears in `Debug`
//!   output or in an error message.

pub mod clusters;
mod env;
mod error;
mod fields;
mod file;
pub mod instances;
mod keys;
pub mod pbs;
mod policy_keys;
mod scope;
pub mod trust;
mod trust_ops;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

pub use error::ConfigError;
/// The host rule of `proxmoxHost`/`PROXMOX_HOST` (a bare name or IP), for `setup`'s wizard.
pub(crate) use fields::host as check_host;
/// The home-folder file rule (owned by the user, nobody else can write it or its folder).
pub(crate) use file::check_trusted as check_user_file;
pub use instances::{Instance, Scope};
pub use keys::render_instance_file;
pub use policy_keys::PolicyKeys;
pub use trust_ops::{
    revoke_file, trust_file, trust_status, trust_store, trusted_project_object,
    untrusted_project_files,
};

/// Environment variable that names the instance file to use (bypasses discovery).
pub const CONFIG_ENV_VAR: &str = "NANDI_PROXMOX_CONFIG";
/// Asks discovery for every instance file (`all`) instead of the only one (several clusters).
pub const CLUSTERS_ENV_VAR: &str = "NANDI_PROXMOX_CLUSTERS";
/// Names the cluster a call without a `cluster` argument goes to (several clusters).
pub const DEFAULT_CLUSTER_ENV_VAR: &str = "NANDI_PROXMOX_DEFAULT_CLUSTER";
/// Largest instance file we accept; an instance file is a small JSON object.
pub const MAX_FILE_BYTES: u64 = 65_536;
/// Proxmox API port used when none is configured.
pub const DEFAULT_PROXMOX_PORT: u16 = 8006;
/// Proxmox realm used when none is configured.
pub const DEFAULT_REALM: &str = "pve";
/// SSH port used when none is configured.
pub const DEFAULT_SSH_PORT: u16 = 22;
/// SSH user used when none is configured.
pub const DEFAULT_SSH_USER: &str = "root";

/// A secret string (the API token secret). `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The real value; call this only where the secret is sent to Proxmox or written to its file.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where environment variables come from; lets tests avoid the process environment.
pub trait EnvSource {
    /// The variable's value, or `None` when it is unset (or not valid Unicode).
    fn var(&self, key: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }
}

/// A fixed set of variables, for tests and for callers that build an environment by hand.
#[derive(Debug, Clone, Default)]
pub struct MapEnv(pub HashMap<String, String>);

impl MapEnv {
    /// Builds a `MapEnv` from `(name, value)` pairs.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )
    }
}

impl EnvSource for MapEnv {
    fn var(&self, key: &str) -> Option<String> {
        self.0.get(key).cloned()
    }
}

/// Roots for instance discovery: project scope lives under `cwd`, user scope under `home`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// Working directory (project scope, and base for a relative `NANDI_PROXMOX_CONFIG`).
    pub cwd: PathBuf,
    /// Home directory (user scope, and `~` in configured paths); `None` when unknown.
    pub home: Option<PathBuf>,
}

impl Paths {
    /// Current directory plus the home directory taken from `HOME` / `USERPROFILE`.
    pub fn from_env(env: &dyn EnvSource) -> Result<Self, ConfigError> {
        let cwd = std::env::current_dir().map_err(|source| ConfigError::CurrentDir { source })?;
        Ok(Self {
            cwd,
            home: home_from_env(env),
        })
    }
}

/// Home directory from the environment. Windows sets `USERPROFILE`, Unix sets `HOME`; we try the
/// platform's own variable first so a stray value of the other one does not win.
pub(crate) fn home_from_env(env: &dyn EnvSource) -> Option<PathBuf> {
    let order: [&str; 2] = if cfg!(windows) {
        ["USERPROFILE", "HOME"]
    } else {
        ["HOME", "USERPROFILE"]
    };
    order
        .iter()
        .filter_map(|k| env.var(k))
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A validated configuration. `proxmox` is `None` only when nothing is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// How to reach the Proxmox REST API.
    pub proxmox: Option<ProxmoxConfig>,
    /// How to reach the cluster over SSH; `None` means SSH-backed tools are disabled.
    pub ssh: Option<SshConfig>,
    /// Where this configuration came from (for logs and `doctor`).
    pub source: ConfigSource,
    /// The cluster's own policy keys (instance files only; empty otherwise).
    pub policy: PolicyKeys,
    /// The Proxmox Backup Servers beside it (an instance file's `pbs`, or `PBS_*`).
    pub pbs: Vec<pbs::PbsConfig>,
}

impl Config {
    /// The "nothing configured" value: the server starts, tool calls say it is not configured.
    pub fn unconfigured() -> Self {
        Self {
            proxmox: None,
            ssh: None,
            source: ConfigSource::Unconfigured,
            policy: PolicyKeys::default(),
            pbs: Vec::new(),
        }
    }
}

/// Where a [`Config`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// An instance file; `instance` is its instance name when the file sits in a
    /// `.nandi-proxmox-mcp/` folder (the legacy `config.json` is `nandi-proxmox-mcp`).
    File {
        /// Absolute (or as-given) path of the file that was loaded.
        path: PathBuf,
        /// Instance name derived from the file name, when it is one.
        instance: Option<String>,
        /// Whether the file was named by the user or found by discovery.
        origin: FileOrigin,
    },
    /// The `PROXMOX_*` environment variables.
    Env,
    /// Nothing was configured.
    Unconfigured,
}

/// How an instance file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOrigin {
    /// Named by the user: `NANDI_PROXMOX_CONFIG`, `doctor --name`, or written by `setup`.
    Selected,
    /// Found by discovery in the home folder's `.nandi-proxmox-mcp/`.
    Discovered,
    /// Found by discovery in the working directory's `.nandi-proxmox-mcp/`, and trusted with
    /// `nandi-proxmox-mcp trust` (its SSH key settings are never used).
    Trusted,
}

impl FileOrigin {
    fn suffix(self) -> &'static str {
        match self {
            Self::Selected => "",
            Self::Discovered => ", discovered",
            Self::Trusted => ", discovered, trusted project file",
        }
    }
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File {
                path,
                instance: Some(name),
                origin,
            } => write!(
                f,
                "instance `{name}` ({}{})",
                path.display(),
                origin.suffix()
            ),
            Self::File {
                path,
                instance: None,
                origin: FileOrigin::Selected,
            } => write!(f, "config file {} ({CONFIG_ENV_VAR})", path.display()),
            Self::File {
                path,
                instance: None,
                origin,
            } => write!(
                f,
                "config file {} ({})",
                path.display(),
                &origin.suffix()[2..]
            ),
            Self::Env => f.write_str("environment variables"),
            Self::Unconfigured => f.write_str("not configured"),
        }
    }
}

/// Connection settings for the Proxmox REST API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxmoxConfig {
    /// Host name or IP address (no scheme, port or path).
    pub host: String,
    /// API port (default 8006).
    pub port: u16,
    /// API user without realm, e.g. `mcp`.
    pub user: String,
    /// Realm, e.g. `pve` or `pam`.
    pub realm: String,
    /// API token id (the part after `!`).
    pub token_name: String,
    /// API token secret.
    pub token_secret: Secret,
    /// How the server certificate is checked.
    pub tls: TlsSetting,
}

/// How the Proxmox server certificate is checked. Exactly one mode applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSetting {
    /// Normal verification against the system trust store.
    Verify,
    /// Verification against this CA certificate (PEM file).
    CaFile(PathBuf),
    /// Accept exactly the certificate with this SHA-256 fingerprint, normalised `AB:CD:…` upper-case.
    Fingerprint(String),
    /// No verification at all (explicit opt-in).
    Insecure,
}

/// SSH settings for container commands. Present only when SSH is enabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshConfig {
    /// Entry host (defaults to the Proxmox host).
    pub host: String,
    /// Entry port (default 22).
    pub port: u16,
    /// Login user (default `root`).
    pub user: String,
    /// Private key file (`~` expanded).
    pub key_path: PathBuf,
    /// Routing strategy to reach other nodes (never `Disabled` here: disabled means no `SshConfig`).
    pub strategy: SshStrategy,
    /// Which cluster node the entry host is, when known.
    pub node_name: Option<String>,
    /// Per-node address overrides, keyed by node name.
    pub nodes: BTreeMap<String, SshNodeOverride>,
    /// known_hosts file used to verify host keys (`~` expanded).
    pub known_hosts: Option<PathBuf>,
    /// Pinned host key fingerprint, `SHA256:<base64>` as OpenSSH prints it.
    pub host_key_fingerprint: Option<String>,
}

/// How SSH reaches a node other than the entry host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SshStrategy {
    /// Try a direct connection, then hop through the entry host.
    Auto,
    /// Connect to each node directly.
    Direct,
    /// Always hop through the entry host.
    Hop,
    /// SSH is off (REST-only).
    Disabled,
}

impl SshStrategy {
    /// Every strategy, in the order they are documented.
    pub const ALL: [SshStrategy; 4] = [Self::Auto, Self::Direct, Self::Hop, Self::Disabled];

    /// The name users write (`auto`, `direct`, `hop`, `disabled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Direct => "direct",
            Self::Hop => "hop",
            Self::Disabled => "disabled",
        }
    }

    /// Parses a strategy name (trimmed, case-insensitive).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        Self::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(value))
    }
}

impl fmt::Display for SshStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Address override for one cluster node (`sshNodes.<node>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshNodeOverride {
    /// Host name or IP address to use for this node.
    pub host: String,
    /// Port for this node (else the entry port).
    pub port: Option<u16>,
    /// User for this node (else the entry user).
    pub user: Option<String>,
}

/// One environment variable read by this module (for the README table; checked by a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVarDoc {
    /// Variable name.
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Default, or `–` when there is none.
    pub default: &'static str,
    /// Whether the value is a secret.
    pub secret: bool,
}

/// One key of an instance file (for the README table; checked by a test).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKeyDoc {
    /// JSON key.
    pub key: &'static str,
    /// One-line description, including the default.
    pub description: &'static str,
    /// Whether the key must be present.
    pub required: bool,
}

/// Every environment variable this module reads.
pub const ENV_VARS: &[EnvVarDoc] = env::ENV_VARS;

pub use env::{AuditLogSetting, audit_log, freeze_file};

/// Every key an instance file may contain.
pub const FILE_KEYS: &[FileKeyDoc] = keys::FILE_KEYS;

/// The one entry point `run` uses: `NANDI_PROXMOX_CONFIG`, else a complete `PROXMOX_*`
/// environment, else (an incomplete environment is an error) the only home-folder instance, else
/// a trusted project instance, else [`Config::unconfigured`]. A selected or discovered file that
/// fails is an error. The source in use is logged at INFO, or at WARN naming whatever it shadowed.
pub fn load(env: &dyn EnvSource, paths: &Paths) -> Result<Config, ConfigError> {
    let home = paths.home.as_deref();
    if let Some(raw) = env.var(CONFIG_ENV_VAR) {
        let path = explicit_path(&raw, &paths.cwd)?;
        let config = file::load_path(&path, home, FileOrigin::Selected)?;
        let shadowed = env::any_core_var_set(env).then_some("PROXMOX_* environment variables");
        announce(&config, shadowed);
        return Ok(config);
    }
    if env::all_core_vars_set(env) {
        let config = env::load(env, home)?;
        // Whatever discovery would have found (even a broken or ambiguous set) is not used.
        let found: Vec<String> = instances::list_instances(paths)
            .iter()
            .map(|i| i.path.display().to_string())
            .collect();
        let shadowed = (!found.is_empty()).then(|| format!("instance files {}", found.join(", ")));
        announce(&config, shadowed.as_deref());
        return Ok(config);
    }
    if env::any_core_var_set(env) {
        // Half an environment is a mistake to report, not a reason to read files instead.
        return env::load(env, home);
    }
    if let Some(path) = file::discover_user(paths)? {
        file::check_trusted(&path)?;
        let config = file::load_path(&path, home, FileOrigin::Discovered)?;
        let project = file::project_instances(paths);
        let shadowed = (!project.is_empty()).then(|| {
            let names: Vec<String> = project
                .iter()
                .map(|i| i.path.display().to_string())
                .collect();
            format!("project-directory files {}", names.join(", "))
        });
        announce(&config, shadowed.as_deref());
        return Ok(config);
    }
    let store = trust::TrustStore::load_or_empty(env, home);
    if let Some(read) = file::discover_project(paths, &store)? {
        let config = file::load_project(read, home)?;
        announce(&config, None);
        return Ok(config);
    }
    Ok(Config::unconfigured())
}

/// Loads one listed instance (`doctor --name`): a home-folder file as named; a project file only
/// when its exact content is trusted, and never with its SSH key settings.
pub fn load_instance(
    instance: &Instance,
    env: &dyn EnvSource,
    paths: &Paths,
) -> Result<Config, ConfigError> {
    let home = paths.home.as_deref();
    match instance.scope {
        Scope::User => file::load_path(&instance.path, home, FileOrigin::Selected),
        Scope::Project => {
            let store = trust::TrustStore::load_or_empty(env, home);
            file::load_project(file::read_project(&instance.path, &store, home)?, home)
        }
    }
}

/// Logs the source in use, with its Proxmox host and SSH target: at INFO when nothing else was
/// configured (the routine start; the default filter `warn,nandi_proxmox_mcp=info` still shows
/// it, since a discovered file can change where the token goes), at WARN when it overrode
/// something (variables or files the person may have meant to be used), naming what.
fn announce(config: &Config, shadowed: Option<&str>) {
    let ssh = config.ssh.as_ref().map(|s| {
        format!(
            "{}@{}:{} with key {}",
            s.user,
            s.host,
            s.port,
            s.key_path.display()
        )
    });
    let host = config
        .proxmox
        .as_ref()
        .map(|p| p.host.as_str())
        .unwrap_or("-");
    let ssh = ssh.as_deref().unwrap_or("off");
    match shadowed {
        Some(ignored) => tracing::warn!(
            proxmox_host = host,
            ssh,
            ignored,
            "Proxmox configuration source: {}",
            config.source
        ),
        None => tracing::info!(
            proxmox_host = host,
            ssh,
            "Proxmox configuration source: {}",
            config.source
        ),
    }
}

/// Loads one specific instance file (`doctor --name`, tests). `~` in paths uses the process home.
pub fn load_file(path: &Path) -> Result<Config, ConfigError> {
    file::load_path(
        path,
        home_from_env(&ProcessEnv).as_deref(),
        FileOrigin::Selected,
    )
}

/// Loads the configuration from `PROXMOX_*` environment variables only.
pub fn load_env(env: &dyn EnvSource) -> Result<Config, ConfigError> {
    env::load(env, home_from_env(env).as_deref())
}

/// Turns the value of `NANDI_PROXMOX_CONFIG` into a path: trimmed, non-empty, no control
/// characters, relative paths taken from `cwd`.
fn explicit_path(raw: &str, cwd: &Path) -> Result<PathBuf, ConfigError> {
    let value = raw.trim();
    if value.is_empty() {
        return Err(ConfigError::EmptyConfigPath {
            var: CONFIG_ENV_VAR,
        });
    }
    if value.chars().any(char::is_control) {
        return Err(ConfigError::ControlCharsInPath {
            var: CONFIG_ENV_VAR,
        });
    }
    Ok(cwd.join(value))
}

/// Validates an instance-file object as if it had been read from `path` (`setup` checks the file
/// it is about to write, so errors name the real file and nothing invalid is ever written).
pub fn parse_instance_object(
    path: &Path,
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<Config, ConfigError> {
    let home = home_from_env(&ProcessEnv);
    let (proxmox, ssh) = keys::parse_object(path, map, home.as_deref())?;
    Ok(Config {
        proxmox: Some(proxmox),
        ssh,
        policy: policy_keys::parse(path, map)?,
        pbs: pbs::from_file(path, map, home.as_deref(), false)?,
        source: ConfigSource::File {
            path: path.to_path_buf(),
            instance: instances::instance_name_for(path),
            origin: FileOrigin::Selected,
        },
    })
}

/// The home folder from `HOME` / `USERPROFILE` (the platform's own variable first).
pub fn home_dir(env: &dyn EnvSource) -> Option<PathBuf> {
    home_from_env(env)
}
