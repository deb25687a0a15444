//! Configuration from `PROXMOX_*` environment variables (spec §6.3 names, plus the new TLS and
//! SSH ones).
//!
//! Invariants: every variable read here is listed in [`ENV_VARS`] (a test checks it); missing
//! required variables are reported together in one error; a malformed value (e.g. a non-numeric
//! port) is an error, never a silent default; SSH is off unless `PROXMOX_SSH_KEY_PATH` is set.

use std::path::Path;

use super::fields::{self, Labels, SshParts, TlsParts};
use super::{
    CONFIG_ENV_VAR, Config, ConfigError, ConfigSource, DEFAULT_PROXMOX_PORT, DEFAULT_REALM,
    EnvSource, EnvVarDoc, ProxmoxConfig, Secret,
};

const HOST: &str = "PROXMOX_HOST";
const PORT: &str = "PROXMOX_PORT";
const USER: &str = "PROXMOX_USER";
const REALM: &str = "PROXMOX_REALM";
const TOKEN_NAME: &str = "PROXMOX_TOKEN_NAME";
const TOKEN_SECRET: &str = "PROXMOX_TOKEN_SECRET";
const INSECURE: &str = "PROXMOX_ALLOW_INSECURE_TLS";
const CA_FILE: &str = "PROXMOX_TLS_CA_FILE";
const FINGERPRINT: &str = "PROXMOX_TLS_FINGERPRINT";
const SSH_HOST: &str = "PROXMOX_SSH_HOST";
const SSH_PORT: &str = "PROXMOX_SSH_PORT";
const SSH_USER: &str = "PROXMOX_SSH_USER";
const SSH_KEY: &str = "PROXMOX_SSH_KEY_PATH";
const SSH_STRATEGY: &str = "PROXMOX_SSH_STRATEGY";
const SSH_KNOWN_HOSTS: &str = "PROXMOX_SSH_KNOWN_HOSTS";
const SSH_HOST_KEY: &str = "PROXMOX_SSH_HOST_KEY_FINGERPRINT";
const AUDIT_LOG: &str = "PVE_AUDIT_LOG";
const FREEZE_FILE: &str = "PVE_FREEZE_FILE";
const XDG_STATE_HOME: &str = "XDG_STATE_HOME";

/// The variables that must be set in environment mode.
const REQUIRED: [&str; 4] = [HOST, USER, TOKEN_NAME, TOKEN_SECRET];

/// Every environment variable the config module reads.
pub(crate) const ENV_VARS: &[EnvVarDoc] = &[
    doc(
        CONFIG_ENV_VAR,
        "Path of the instance file to use (skips discovery; must load); a folder or a comma-separated list of files serves several clusters",
        "–",
        false,
    ),
    doc(
        super::CLUSTERS_ENV_VAR,
        "`all` serves every instance file in ~/.nandi-proxmox-mcp/ (and trusted project files) as clusters of one server; each call names its `cluster`",
        "–",
        false,
    ),
    doc(
        super::DEFAULT_CLUSTER_ENV_VAR,
        "With several clusters, the one a call without `cluster` goes to (else `cluster` is required, unless a file says `\"default\": true`)",
        "–",
        false,
    ),
    doc(
        HOST,
        "Proxmox host name or IP address (a complete PROXMOX_* set beats discovered instance files)",
        "–",
        false,
    ),
    doc(PORT, "Proxmox API port", "8006", false),
    doc(USER, "API user without realm, e.g. `mcp`", "–", false),
    doc(REALM, "Realm of the API user", "pve", false),
    doc(TOKEN_NAME, "API token id (the part after `!`)", "–", false),
    doc(TOKEN_SECRET, "API token secret", "–", true),
    doc(
        INSECURE,
        "1/true/yes/on turns certificate checks off (last resort; prefer PROXMOX_TLS_FINGERPRINT)",
        "false",
        false,
    ),
    doc(
        CA_FILE,
        "PEM file of the CA that signed the Proxmox certificate",
        "–",
        false,
    ),
    doc(
        FINGERPRINT,
        "SHA-256 fingerprint of the Proxmox certificate to pin (`AB:CD:…` or 64 hex digits)",
        "–",
        false,
    ),
    doc(SSH_HOST, "SSH entry host", "value of PROXMOX_HOST", false),
    doc(SSH_PORT, "SSH port", "22", false),
    doc(SSH_USER, "SSH user", "root", false),
    doc(
        SSH_KEY,
        "SSH private key file; without it SSH tools are disabled",
        "– (SSH disabled)",
        false,
    ),
    doc(
        SSH_STRATEGY,
        "How SSH reaches other nodes: auto, direct, hop or disabled",
        "auto with a key, else disabled",
        false,
    ),
    doc(
        SSH_KNOWN_HOSTS,
        "known_hosts file used to verify SSH host keys",
        "~/.ssh/known_hosts",
        false,
    ),
    doc(
        SSH_HOST_KEY,
        "Pinned SSH host key fingerprint, `SHA256:…` as printed by `ssh-keygen -lf`",
        "–",
        false,
    ),
    doc(
        AUDIT_LOG,
        "Audit trail: one hash-chained JSON line per change or refusal (`nandi-proxmox-mcp audit verify` checks it); `off` disables. When it cannot be written, changes are refused",
        "$XDG_STATE_HOME/nandi-proxmox-mcp/audit.jsonl, else ~/.local/state/nandi-proxmox-mcp/audit.jsonl",
        false,
    ),
    doc(
        FREEZE_FILE,
        "Kill switch: while this file exists (`nandi-proxmox-mcp freeze` creates it, `unfreeze` removes it), every call that does more than a plain read is refused with FROZEN; replicas sharing the file freeze together",
        "$XDG_STATE_HOME/nandi-proxmox-mcp/frozen, else ~/.local/state/nandi-proxmox-mcp/frozen",
        false,
    ),
    doc(
        XDG_STATE_HOME,
        "Per-user state folder; holds the default audit log and freeze file",
        "~/.local/state",
        false,
    ),
    doc(
        "HOME",
        "Home directory (Unix): user-scope instances live in $HOME/.nandi-proxmox-mcp/; `~` in paths",
        "–",
        false,
    ),
    doc(
        "USERPROFILE",
        "Home directory (Windows), used like HOME",
        "–",
        false,
    ),
    doc(
        "PBS_HOST",
        "Proxmox Backup Server host; with PBS_USER, PBS_TOKEN_NAME and PBS_TOKEN_SECRET it adds one PBS (more go in an instance file's `pbs` list)",
        "–",
        false,
    ),
    doc("PBS_PORT", "PBS API port", "8007", false),
    doc("PBS_USER", "PBS API user without realm", "–", false),
    doc("PBS_REALM", "Realm of the PBS API user", "pbs", false),
    doc(
        "PBS_TOKEN_NAME",
        "PBS API token id (the part after `!`)",
        "–",
        false,
    ),
    doc("PBS_TOKEN_SECRET", "PBS API token secret", "–", true),
    doc(
        "PBS_TLS_FINGERPRINT",
        "SHA-256 fingerprint of the PBS certificate to pin",
        "–",
        false,
    ),
    doc(
        "PBS_TLS_CA_FILE",
        "PEM file of the CA that signed the PBS certificate",
        "–",
        false,
    ),
    doc(
        "PBS_ALLOW_INSECURE_TLS",
        "`true` turns PBS certificate checks off (last resort)",
        "false",
        false,
    ),
    doc(
        "PBS_NAME",
        "The name PBS tools call this server by",
        "pbs",
        false,
    ),
];

const fn doc(
    name: &'static str,
    description: &'static str,
    default: &'static str,
    secret: bool,
) -> EnvVarDoc {
    EnvVarDoc {
        name,
        description,
        default,
        secret,
    }
}

/// Whether the environment tries to configure a connection: any required variable set (so a
/// half-filled environment is reported, not silently ignored).
pub(crate) fn any_core_var_set(env: &dyn EnvSource) -> bool {
    REQUIRED
        .iter()
        .any(|k| env.var(k).is_some_and(|v| !v.trim().is_empty()))
}

/// Whether the environment is a complete configuration on its own: every required variable set.
/// A complete environment beats discovered instance files (it is what the user chose for this
/// process; a file in the working directory may come from a cloned repository).
pub(crate) fn all_core_vars_set(env: &dyn EnvSource) -> bool {
    REQUIRED
        .iter()
        .all(|k| env.var(k).is_some_and(|v| !v.trim().is_empty()))
}

/// Typed, located access to variables. Blank values count as unset, so `PORT=` in a compose
/// file means "default" rather than an error.
struct Vars<'a>(&'a dyn EnvSource);

impl Vars<'_> {
    fn invalid(var: &str, reason: String) -> ConfigError {
        ConfigError::Invalid {
            location: format!("environment variable {var}"),
            reason,
        }
    }

    fn raw(&self, var: &str) -> Option<String> {
        self.0
            .var(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn text(
        &self,
        var: &str,
        rule: fn(&str) -> Result<(), String>,
    ) -> Result<Option<String>, ConfigError> {
        match self.raw(var) {
            Some(v) => rule(&v)
                .map(|()| Some(v))
                .map_err(|r| Self::invalid(var, r)),
            None => Ok(None),
        }
    }

    fn parsed<T>(
        &self,
        var: &str,
        rule: fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        match self.raw(var) {
            Some(v) => rule(&v).map(Some).map_err(|r| Self::invalid(var, r)),
            None => Ok(None),
        }
    }

    fn path(
        &self,
        var: &str,
        home: Option<&Path>,
    ) -> Result<Option<std::path::PathBuf>, ConfigError> {
        Ok(self
            .text(var, fields::path)?
            .map(|p| fields::expand_home(&p, home)))
    }
}

/// Builds a [`Config`] from the environment. `home` expands `~` in paths.
pub(crate) fn load(env: &dyn EnvSource, home: Option<&Path>) -> Result<Config, ConfigError> {
    let vars = Vars(env);
    let missing: Vec<&'static str> = REQUIRED
        .into_iter()
        .filter(|k| vars.raw(k).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(ConfigError::MissingEnvVars { vars: missing });
    }
    // `missing` guarantees these are set; the fallbacks only keep the code panic-free.
    let host = vars.text(HOST, fields::host)?.unwrap_or_default();
    let user = vars.text(USER, fields::user)?.unwrap_or_default();
    let token_name = vars
        .text(TOKEN_NAME, fields::token_name)?
        .unwrap_or_default();
    let token_secret = vars
        .text(TOKEN_SECRET, fields::token_secret)?
        .unwrap_or_default();
    let port = vars
        .parsed(PORT, fields::port_text)?
        .unwrap_or(DEFAULT_PROXMOX_PORT);
    let realm = vars
        .text(REALM, fields::realm)?
        .unwrap_or_else(|| DEFAULT_REALM.to_owned());

    let labels = Labels {
        place: "the environment".to_owned(),
        insecure: INSECURE,
        ca_file: CA_FILE,
        fingerprint: FINGERPRINT,
        strategy: SSH_STRATEGY,
        key_path: SSH_KEY,
    };
    let tls = fields::tls_mode(
        TlsParts {
            insecure: vars.parsed(INSECURE, fields::flag)?.unwrap_or(false),
            ca_file: vars.path(CA_FILE, home)?,
            fingerprint: vars.parsed(FINGERPRINT, fields::tls_fingerprint)?,
        },
        &labels,
    )?;
    let ssh_parts = SshParts {
        host: vars.text(SSH_HOST, fields::host)?,
        port: vars.parsed(SSH_PORT, fields::port_text)?,
        user: vars.text(SSH_USER, fields::user)?,
        key_path: vars.path(SSH_KEY, home)?,
        strategy: vars.parsed(SSH_STRATEGY, fields::strategy)?,
        known_hosts: vars.path(SSH_KNOWN_HOSTS, home)?,
        host_key_fingerprint: vars.parsed(SSH_HOST_KEY, fields::host_key_fingerprint)?,
        ..SshParts::default()
    };
    let ssh = fields::ssh_block(ssh_parts, &host, &labels)?;
    Ok(Config {
        proxmox: Some(ProxmoxConfig {
            host,
            port,
            user,
            realm,
            token_name,
            token_secret: Secret::new(token_secret),
            tls,
        }),
        ssh,
        source: ConfigSource::Env,
        policy: super::PolicyKeys::default(),
        pbs: super::pbs::from_env(env, home)?.into_iter().collect(),
    })
}

/// Where the audit trail goes, from `PVE_AUDIT_LOG` (see [`ENV_VARS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditLogSetting {
    /// `PVE_AUDIT_LOG=off`.
    Off,
    /// The file to append to (`~` expanded; the default when the variable is unset).
    File(std::path::PathBuf),
    /// Unset, and neither `XDG_STATE_HOME` nor a home folder is known.
    NoStateDir,
}

/// Reads `PVE_AUDIT_LOG`: `off` (any case) disables the trail; a path selects the file;
/// unset or blank means `$XDG_STATE_HOME/nandi-proxmox-mcp/audit.jsonl`, else
/// `~/.local/state/nandi-proxmox-mcp/audit.jsonl`. A path with control characters is an error.
pub fn audit_log(env: &dyn EnvSource) -> Result<AuditLogSetting, ConfigError> {
    let vars = Vars(env);
    let home = super::home_from_env(env);
    if vars
        .raw(AUDIT_LOG)
        .is_some_and(|v| v.eq_ignore_ascii_case("off"))
    {
        return Ok(AuditLogSetting::Off);
    }
    if let Some(path) = vars.path(AUDIT_LOG, home.as_deref())? {
        return Ok(AuditLogSetting::File(path));
    }
    Ok(
        state_folder(&vars, home)?.map_or(AuditLogSetting::NoStateDir, |dir| {
            AuditLogSetting::File(dir.join("audit.jsonl"))
        }),
    )
}

/// This program's folder in the per-user state folder: `$XDG_STATE_HOME/nandi-proxmox-mcp`
/// (when absolute), else `~/.local/state/nandi-proxmox-mcp`; `None` without either.
fn state_folder(
    vars: &Vars<'_>,
    home: Option<std::path::PathBuf>,
) -> Result<Option<std::path::PathBuf>, ConfigError> {
    let state = vars
        .path(XDG_STATE_HOME, home.as_deref())?
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".local").join("state")));
    Ok(state.map(|dir| dir.join("nandi-proxmox-mcp")))
}

/// Reads `PVE_FREEZE_FILE`, the kill switch's file (see [`ENV_VARS`]): a path (`~`
/// expanded), else `frozen` in the same state folder as the default audit log; `None` when
/// neither is known (then nothing can freeze this process). A path with control characters
/// is an error.
pub fn freeze_file(env: &dyn EnvSource) -> Result<Option<std::path::PathBuf>, ConfigError> {
    let vars = Vars(env);
    let home = super::home_from_env(env);
    if let Some(path) = vars.path(FREEZE_FILE, home.as_deref())? {
        return Ok(Some(path));
    }
    Ok(state_folder(&vars, home)?.map(|dir| dir.join("frozen")))
}
