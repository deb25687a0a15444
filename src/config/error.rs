//! The error type of configuration loading.
//!
//! Invariant: every message says what is wrong, where (file path and key, or variable name) and
//! how to fix it — and none ever contains the token secret: value-rule failures for the secret
//! report lengths only, and JSON syntax errors come from an untyped parse that quotes no content.

use std::path::PathBuf;

use super::scope::{self, Instance};
use super::{CONFIG_ENV_VAR, MAX_FILE_BYTES, SshStrategy};

/// Everything that can go wrong while loading configuration. Messages say what is wrong, where,
/// and how to fix it; they never contain the token secret.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `NANDI_PROXMOX_CONFIG` is set but empty.
    #[error(
        "{var} points to an empty path; set it to the path of an instance file \
         (`nandi-proxmox-mcp list` prints them) or unset it"
    )]
    EmptyConfigPath {
        /// The variable name.
        var: &'static str,
    },
    /// `NANDI_PROXMOX_CONFIG` contains control characters.
    #[error("{var} contains control characters (e.g. a newline); set it to a plain file path")]
    ControlCharsInPath {
        /// The variable name.
        var: &'static str,
    },
    /// The configuration file does not exist.
    #[error(
        "config file {} does not exist; fix the path, or run `nandi-proxmox-mcp list` to see \
         the configured instances",
        path.display()
    )]
    FileNotFound {
        /// The missing path.
        path: PathBuf,
    },
    /// The path exists but is not a regular file.
    #[error(
        "Config path is not a file: {}; point to the instance's .json file, not a directory",
        path.display()
    )]
    NotAFile {
        /// The offending path.
        path: PathBuf,
    },
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error(
        "config file {} is {size} bytes and exceeds {MAX_FILE_BYTES} bytes; an instance file is \
         a small JSON object, check that the path names the right file",
        path.display()
    )]
    TooLarge {
        /// The offending path.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    /// The file could not be read.
    #[error("cannot read config file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("config file {} is not UTF-8 text; save it as UTF-8 JSON", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The file is not valid JSON (the detail never quotes file content).
    #[error(
        "config file {} is not valid JSON ({detail}); fix the syntax or re-create it with \
         `nandi-proxmox-mcp setup`",
        path.display()
    )]
    InvalidJson {
        /// The file.
        path: PathBuf,
        /// Parser message with line and column.
        detail: String,
    },
    /// The JSON document is not an object.
    #[error(
        "config file {} must contain a JSON object ({{\"proxmoxHost\": …}}); found {found}",
        path.display()
    )]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// What was found instead (e.g. "an array").
        found: &'static str,
    },
    /// The file has keys we do not know (typos must not be ignored silently).
    #[error(
        "config file {}: unknown key(s) {}; valid keys are: {}",
        path.display(),
        describe_unknown(keys, valid),
        valid.join(", ")
    )]
    UnknownKeys {
        /// The file.
        path: PathBuf,
        /// The unknown keys (nested ones as `sshNodes.<node>.<key>`).
        keys: Vec<String>,
        /// The keys that are allowed at that place.
        valid: Vec<&'static str>,
    },
    /// Required keys are missing from the file.
    #[error(
        "config file {} is missing required key(s) (or they are empty): {}; add them or \
         re-create the file with `nandi-proxmox-mcp setup`",
        path.display(),
        keys.join(", ")
    )]
    MissingKeys {
        /// The file.
        path: PathBuf,
        /// The missing keys.
        keys: Vec<&'static str>,
    },
    /// Required environment variables are missing (some are set, so the environment is meant
    /// to configure the server: instance files are not used instead).
    #[error(
        "environment configuration is incomplete: missing {}; set them, or unset the PROXMOX_* \
         variables to use an instance file (one is never used in place of a half-set \
         environment; `nandi-proxmox-mcp setup` creates one)",
        vars.join(", ")
    )]
    MissingEnvVars {
        /// The missing variables.
        vars: Vec<&'static str>,
    },
    /// A value breaks its rule.
    #[error("invalid {location}: {reason}")]
    Invalid {
        /// Which key in which file, or which environment variable.
        location: String,
        /// What is wrong and what is expected (never the secret's value).
        reason: String,
    },
    /// More than one TLS mode is configured.
    #[error(
        "{place} sets more than one TLS mode ({}); keep exactly one: insecure TLS, a CA file, \
         or a certificate fingerprint",
        set.join(", ")
    )]
    AmbiguousTls {
        /// `config file <path>` or `the environment`.
        place: String,
        /// The settings that are set.
        set: Vec<&'static str>,
    },
    /// An SSH strategy other than `disabled` without a key path.
    #[error(
        "{place} sets {strategy_key} to `{strategy}` but no SSH private key; set {key_key} to \
         the key file, or set {strategy_key} to `disabled` for REST-only use"
    )]
    SshStrategyWithoutKey {
        /// `config file <path>` or `the environment`.
        place: String,
        /// The strategy key or variable.
        strategy_key: &'static str,
        /// The strategy that was set.
        strategy: SshStrategy,
        /// The key-path key or variable.
        key_key: &'static str,
    },
    /// Discovery found several instances and cannot choose. `run` (and `tools`) take no
    /// instance name, so the variable is the way there; `doctor` and `harden` take `--name`.
    #[error(
        "several Proxmox instances are configured: {}; set {CONFIG_ENV_VAR} to the file of the \
         one to use (`nandi-proxmox-mcp list` prints each path; `run` takes no --name), or pass \
         --name NAME to `doctor` or `harden` (e.g. `nandi-proxmox-mcp doctor --name {}`); or set \
         NANDI_PROXMOX_CLUSTERS=all to serve them all from one server (each call names its cluster)",
        describe_instances(found),
        found.first().map_or("NAME", |i| i.name.as_str())
    )]
    AmbiguousInstances {
        /// The candidates.
        found: Vec<Instance>,
    },
    /// No instance has the requested name.
    #[error("{}", describe_unknown_instance(name, known))]
    UnknownInstance {
        /// The requested name.
        name: String,
        /// The configured names.
        known: Vec<String>,
    },
    /// An instance name breaks the naming rule.
    #[error(
        "invalid instance name {name:?}: {reason}; names match {} (e.g. `proxmox`, `lab-cluster`)",
        scope::NAME_PATTERN
    )]
    InvalidInstanceName {
        /// The rejected name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The user scope was requested but no home directory is known.
    #[error(
        "cannot locate your home directory (HOME / USERPROFILE is not set); set it, or use the \
         project scope"
    )]
    NoHomeDir,
    /// A discovered home-folder instance file (not named by `NANDI_PROXMOX_CONFIG`) that
    /// another local user could have written: it is not used, because it would choose the
    /// Proxmox host, the token and the SSH key this server uses.
    #[error(
        "refusing the discovered config file {}: {reason}. A file found by discovery must be \
         owned by you and writable by nobody else (`chmod go-w` it and its folder); to use it \
         anyway name it with {CONFIG_ENV_VAR}, or configure the PROXMOX_* variables",
        path.display()
    )]
    UntrustedFile {
        /// The refused file.
        path: PathBuf,
        /// What makes it untrusted (owner or permission bits).
        reason: String,
    },
    /// A project-directory instance file (under the working directory) that the user has not
    /// trusted, or that changed since: it may come from a cloned repository.
    #[error(
        "the project-directory instance file {} {}; review it, then run \
         `nandi-proxmox-mcp trust {}` (or name it with {CONFIG_ENV_VAR})",
        path.display(),
        if *changed { "changed since you trusted it (its SHA-256 differs)" } else { "is not trusted" },
        path.display()
    )]
    UntrustedProjectFile {
        /// The file.
        path: PathBuf,
        /// Whether it was trusted with other content.
        changed: bool,
    },
    /// A trusted project-directory instance file whose own bytes are the trusted ones, but a
    /// file it names that decides what is trusted (its `tlsCaFile`) is not the one trusted
    /// with it.
    #[error(
        "the project-directory instance file {} is not used: the file its `{key}` names, {}, \
         {reason}; review both, then run `nandi-proxmox-mcp trust {}` again",
        path.display(),
        named.display(),
        path.display()
    )]
    TrustedNamedFileChanged {
        /// The instance file.
        path: PathBuf,
        /// The key naming the other file (`tlsCaFile`).
        key: String,
        /// The other file, as the instance file names it.
        named: PathBuf,
        /// What differs (`changed since you trusted it (its SHA-256 differs)`, …).
        reason: String,
    },
    /// The trust store cannot be read, parsed or written, or others could have written it.
    #[error("trust store {}: {reason}", path.display())]
    TrustStore {
        /// The store file (or its folder).
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The trust store location is unknown (no `XDG_STATE_HOME`, no home folder).
    #[error(
        "cannot locate the trust store: set HOME (or an absolute XDG_STATE_HOME); without it \
         no project-directory instance file can be trusted"
    )]
    NoTrustStore,
    /// A cluster's name (its file stem) breaks the cluster naming rule.
    #[error(
        "cluster name {name:?} (from {}) is not valid: cluster names match \
         ^[a-z0-9][a-z0-9_-]{{0,31}}$; rename the file",
        path.display()
    )]
    InvalidClusterName {
        /// The rejected name.
        name: String,
        /// The file it comes from.
        path: PathBuf,
    },
    /// Two instance files give the same cluster name.
    #[error(
        "two instance files name the cluster `{name}`: {} and {}; cluster names must be unique",
        first.display(),
        second.display()
    )]
    DuplicateCluster {
        /// The name.
        name: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// More than one cluster claims to be the default.
    #[error(
        "both `{first}` and `{second}` are named the default cluster; keep `\"default\": true` in \
         one instance file (or set NANDI_PROXMOX_DEFAULT_CLUSTER to one name)"
    )]
    TwoDefaults {
        /// One default.
        first: String,
        /// The other.
        second: String,
    },
    /// `NANDI_PROXMOX_DEFAULT_CLUSTER` names no loaded cluster.
    #[error("NANDI_PROXMOX_DEFAULT_CLUSTER={name:?} names no configured cluster; clusters: {}", known.join(", "))]
    UnknownDefaultCluster {
        /// The value.
        name: String,
        /// The loaded cluster names.
        known: Vec<String>,
    },
    /// `NANDI_PROXMOX_CLUSTERS` holds something other than `all`.
    #[error(
        "NANDI_PROXMOX_CLUSTERS={value:?} is not valid; use `all` (every instance file in ~/.nandi-proxmox-mcp/) or leave it unset"
    )]
    InvalidClustersValue {
        /// The value.
        value: String,
    },
    /// A folder of instance files (or the discovered set) holds none.
    #[error("no instance file (*.json) found in {}", path.display())]
    NoClusters {
        /// The folder.
        path: PathBuf,
    },
    /// The current directory cannot be determined.
    #[error("cannot determine the current directory: {source}")]
    CurrentDir {
        /// The I/O failure.
        source: std::io::Error,
    },
}

/// "a (project, /p/a.json), b (user, /h/b.json)" for error messages.
pub(crate) fn describe_instances(found: &[Instance]) -> String {
    found
        .iter()
        .map(|i| format!("{} ({}, {})", i.name, i.scope, i.path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Message for an unknown instance name.
pub(crate) fn describe_unknown_instance(name: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!(
            "no Proxmox instance named `{name}`: none is configured yet; run \
             `nandi-proxmox-mcp setup` to create one"
        )
    } else {
        format!(
            "no Proxmox instance named `{name}`; configured instances: {} \
             (`nandi-proxmox-mcp list` prints each path)",
            known.join(", ")
        )
    }
}

/// Renders unknown keys with a "did you mean" hint when a valid key is close.
pub(crate) fn describe_unknown(keys: &[String], valid: &[&'static str]) -> String {
    keys.iter()
        .map(|key| {
            let leaf = key.rsplit('.').next().unwrap_or(key);
            match closest(leaf, valid) {
                Some(guess) => format!("`{key}` (did you mean `{guess}`?)"),
                None => format!("`{key}`"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The valid key nearest to `key` (case-insensitive edit distance ≤ 2), if any.
fn closest(key: &str, valid: &[&'static str]) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    valid
        .iter()
        .map(|v| (edit_distance(&key, &v.to_ascii_lowercase()), *v))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// Levenshtein distance; keys are short, so the simple two-row version is enough.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
