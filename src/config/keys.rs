//! The instance-file schema: every key, its documentation, typed and located access to JSON
//! values, validation into a [`ProxmoxConfig`] / [`SshConfig`], and rendering back to a file.
//!
//! Invariant: the loader and the renderer use the same key constants, and every key must be known
//! — an unknown key is an error naming it (with a "did you mean"), never silently dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::fields::{self, Labels, SshParts, TlsParts};
use super::policy_keys;
use super::{
    ConfigError, DEFAULT_PROXMOX_PORT, DEFAULT_REALM, FileKeyDoc, ProxmoxConfig, Secret, SshConfig,
    SshNodeOverride, TlsSetting,
};

const HOST: &str = "proxmoxHost";
const PORT: &str = "proxmoxPort";
const USER: &str = "proxmoxUser";
const REALM: &str = "proxmoxRealm";
const TOKEN_NAME: &str = "tokenName";
const TOKEN_SECRET: &str = "tokenSecret";
const INSECURE: &str = "allowInsecureTls";
const CA_FILE: &str = "tlsCaFile";
const FINGERPRINT: &str = "tlsFingerprint";
const SSH_HOST: &str = "sshHost";
const SSH_PORT: &str = "sshPort";
const SSH_USER: &str = "sshUser";
const SSH_KEY: &str = "sshKeyPath";
const SSH_STRATEGY: &str = "sshStrategy";
const SSH_NODE_NAME: &str = "sshNodeName";
const SSH_NODES: &str = "sshNodes";
const SSH_KNOWN_HOSTS: &str = "sshKnownHostsPath";
const SSH_HOST_KEY: &str = "sshHostKeyFingerprint";

/// Keys that name a local SSH credential file: a working-directory file may not set them.
const SSH_PATH_KEYS: [&str; 2] = [SSH_KEY, SSH_KNOWN_HOSTS];

/// The SSH credential-path keys (`sshKeyPath`, `sshKnownHostsPath`) this object sets.
pub(crate) fn ssh_path_keys_set(map: &Map<String, Value>) -> Vec<&'static str> {
    SSH_PATH_KEYS
        .into_iter()
        .filter(|k| match map.get(*k) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.trim().is_empty(),
            Some(_) => true,
        })
        .collect()
}

/// Keys that name a file whose content decides what a trusted instance file trusts: its
/// SHA-256 is recorded with the instance file's (`config::trust`). The SSH path keys are not
/// here: a project-directory file's are never used.
const TRUST_HASHED_PATH_KEYS: [&str; 1] = [CA_FILE];

/// The files this object names under [`TRUST_HASHED_PATH_KEYS`], as the loader reads them
/// (trimmed, `~` expanded); unset, blank and non-string values name none.
pub(crate) fn trust_hashed_paths(
    map: &Map<String, Value>,
    home: Option<&Path>,
) -> Vec<(&'static str, PathBuf)> {
    TRUST_HASHED_PATH_KEYS
        .into_iter()
        .filter_map(|k| match map.get(k) {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                Some((k, fields::expand_home(s.trim(), home)))
            }
            _ => None,
        })
        .collect()
}

/// Keys allowed inside one `sshNodes` entry.
const NODE_KEYS: [&str; 3] = ["host", "port", "user"];

/// Every key an instance file may contain (the README table is generated from this).
pub(crate) const FILE_KEYS: &[FileKeyDoc] = &[
    doc(
        HOST,
        "Proxmox host name or IP address (no scheme, port or path)",
        true,
    ),
    doc(PORT, "Proxmox API port; default 8006", false),
    doc(USER, "API user without realm, e.g. `mcp`", true),
    doc(
        REALM,
        "Realm of the API user, e.g. `pve` or `pam`; default `pve`",
        false,
    ),
    doc(TOKEN_NAME, "API token id (the part after `!`)", true),
    doc(
        TOKEN_SECRET,
        "API token secret (10+ characters; keep the file at chmod 600)",
        true,
    ),
    doc(
        INSECURE,
        "`true` turns certificate checks off (last resort; prefer `tlsFingerprint`); default false",
        false,
    ),
    doc(
        CA_FILE,
        "PEM file of the CA that signed the Proxmox certificate",
        false,
    ),
    doc(
        FINGERPRINT,
        "SHA-256 fingerprint of the Proxmox certificate to pin (`AB:CD:…` or 64 hex digits)",
        false,
    ),
    doc(SSH_HOST, "SSH entry host; default: proxmoxHost", false),
    doc(SSH_PORT, "SSH port; default 22", false),
    doc(SSH_USER, "SSH user; default `root`", false),
    doc(
        SSH_KEY,
        "SSH private key file (`~/` allowed); without it SSH tools are disabled",
        false,
    ),
    doc(
        SSH_STRATEGY,
        "How SSH reaches other nodes: `auto`, `direct`, `hop` or `disabled`; default `auto` when sshKeyPath is set",
        false,
    ),
    doc(
        SSH_NODE_NAME,
        "Name of the cluster node that sshHost is",
        false,
    ),
    doc(
        SSH_NODES,
        "Per-node SSH overrides: {\"<node>\": {\"host\": …, \"port\": …, \"user\": …}}",
        false,
    ),
    doc(
        SSH_KNOWN_HOSTS,
        "known_hosts file used to verify SSH host keys",
        false,
    ),
    doc(
        SSH_HOST_KEY,
        "Pinned SSH host key fingerprint, `SHA256:…` as printed by `ssh-keygen -lf`",
        false,
    ),
    doc(
        policy_keys::ACCESS_TIER,
        "This cluster's access tier (`read-only`, `read-execute`, `full`); beats PVE_ACCESS_TIER for it",
        false,
    ),
    doc(
        policy_keys::MODULE_MODE,
        "This cluster's module mode (`core`, `advanced`); beats PVE_MODULE_MODE for it",
        false,
    ),
    doc(
        policy_keys::CATEGORIES,
        "This cluster's category allow-list (array or comma-separated, as PVE_CATEGORIES); beats the variable for it",
        false,
    ),
    doc(
        policy_keys::TOOL_WHITELIST,
        "This cluster's tool allow-list (array or comma-separated, as PVE_TOOL_WHITELIST); beats the variable for it",
        false,
    ),
    doc(
        policy_keys::TOOL_BLACKLIST,
        "This cluster's tool deny-list (array or comma-separated, as PVE_TOOL_BLACKLIST); beats the variable for it",
        false,
    ),
    doc(
        policy_keys::POLICY,
        "Operator rules for this cluster, {\"rules\": [{\"action\": \"allow|ask|deny\", …}]} (docs/POLICY.md); beats PVE_POLICY_FILE for it",
        false,
    ),
    doc(
        super::pbs::KEY,
        "Proxmox Backup Servers: one object or a list of {\"name\", \"host\", \"port\" (8007), \"user\", \"realm\" (`pbs`), \"tokenName\", \"tokenSecret\", \"tlsFingerprint\" | \"tlsCaFile\" | \"allowInsecureTls\"}",
        false,
    ),
    doc(
        policy_keys::DEFAULT,
        "`true`: with several clusters, calls without a `cluster` argument go to this one (at most one); default false",
        false,
    ),
];

const fn doc(key: &'static str, description: &'static str, required: bool) -> FileKeyDoc {
    FileKeyDoc {
        key,
        description,
        required,
    }
}

fn valid_keys() -> Vec<&'static str> {
    FILE_KEYS.iter().map(|d| d.key).collect()
}

pub(crate) use super::fields::kind;

/// Typed, located access to one JSON object of the file.
struct Obj<'a> {
    path: &'a Path,
    /// Prefix for nested keys, e.g. `sshNodes.pve2.`.
    prefix: String,
    map: &'a Map<String, Value>,
}

impl Obj<'_> {
    fn invalid(&self, key: &str, reason: String) -> ConfigError {
        ConfigError::Invalid {
            location: format!("`{}{key}` in {}", self.prefix, self.path.display()),
            reason,
        }
    }

    /// Absent, `null` and blank strings count as "not set".
    fn is_blank(&self, key: &str) -> bool {
        match self.map.get(key) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(_) => false,
        }
    }

    /// A trimmed string checked by `rule`; `None` when not set.
    fn text(
        &self,
        key: &str,
        rule: fn(&str) -> Result<(), String>,
    ) -> Result<Option<String>, ConfigError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => {
                let s = s.trim();
                rule(s).map_err(|reason| self.invalid(key, reason))?;
                Ok(Some(s.to_owned()))
            }
            Some(other) => {
                Err(self.invalid(key, format!("must be a string (got {})", kind(other))))
            }
        }
    }

    /// A path (`~` expanded); `None` when not set.
    fn path(&self, key: &str, home: Option<&Path>) -> Result<Option<PathBuf>, ConfigError> {
        Ok(self
            .text(key, fields::path)?
            .map(|p| fields::expand_home(&p, home)))
    }

    /// A string normalised by `rule` (fingerprints, strategy).
    fn parsed<T>(
        &self,
        key: &str,
        rule: fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        match self.text(key, |_| Ok(()))? {
            Some(s) => rule(&s).map(Some).map_err(|r| self.invalid(key, r)),
            None => Ok(None),
        }
    }

    /// A port as a JSON number or a numeric string.
    fn port(&self, key: &str) -> Result<Option<u16>, ConfigError> {
        let result = match self.map.get(key) {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => fields::port_number(n),
            Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
            Some(Value::String(s)) => fields::port_text(s.trim()),
            Some(other) => Err(format!(
                "must be a whole number between 1 and 65535 (got {})",
                kind(other)
            )),
        };
        result.map(Some).map_err(|r| self.invalid(key, r))
    }

    fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(self.invalid(
                key,
                format!("must be true or false without quotes (got {})", kind(other)),
            )),
        }
    }

    fn reject_unknown(&self, valid: &[&'static str]) -> Result<(), ConfigError> {
        let keys: Vec<String> = self
            .map
            .keys()
            .filter(|k| !valid.contains(&k.as_str()))
            .map(|k| format!("{}{k}", self.prefix))
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        Err(ConfigError::UnknownKeys {
            path: self.path.to_path_buf(),
            keys,
            valid: valid.to_vec(),
        })
    }
}

pub(crate) fn parse_object(
    path: &Path,
    map: &Map<String, Value>,
    home: Option<&Path>,
) -> Result<(ProxmoxConfig, Option<SshConfig>), ConfigError> {
    let obj = Obj {
        path,
        prefix: String::new(),
        map,
    };
    obj.reject_unknown(&valid_keys())?;
    let missing: Vec<&'static str> = FILE_KEYS
        .iter()
        .filter(|d| d.required && obj.is_blank(d.key))
        .map(|d| d.key)
        .collect();
    if !missing.is_empty() {
        return Err(ConfigError::MissingKeys {
            path: path.to_path_buf(),
            keys: missing,
        });
    }
    // `missing` guarantees these are set; the fallbacks only keep the code panic-free.
    let host = obj.text(HOST, fields::host)?.unwrap_or_default();
    let user = obj.text(USER, fields::user)?.unwrap_or_default();
    let token_name = obj
        .text(TOKEN_NAME, fields::token_name)?
        .unwrap_or_default();
    let token_secret = obj
        .text(TOKEN_SECRET, fields::token_secret)?
        .unwrap_or_default();
    let port = obj.port(PORT)?.unwrap_or(DEFAULT_PROXMOX_PORT);
    let realm = obj
        .text(REALM, fields::realm)?
        .unwrap_or_else(|| DEFAULT_REALM.to_owned());

    let labels = Labels {
        place: format!("config file {}", path.display()),
        insecure: INSECURE,
        ca_file: CA_FILE,
        fingerprint: FINGERPRINT,
        strategy: SSH_STRATEGY,
        key_path: SSH_KEY,
    };
    let tls = fields::tls_mode(
        TlsParts {
            insecure: obj.boolean(INSECURE)?,
            ca_file: obj.path(CA_FILE, home)?,
            fingerprint: obj.parsed(FINGERPRINT, fields::tls_fingerprint)?,
        },
        &labels,
    )?;
    let ssh_parts = SshParts {
        host: obj.text(SSH_HOST, fields::host)?,
        port: obj.port(SSH_PORT)?,
        user: obj.text(SSH_USER, fields::user)?,
        key_path: obj.path(SSH_KEY, home)?,
        strategy: obj.parsed(SSH_STRATEGY, fields::strategy)?,
        node_name: obj.text(SSH_NODE_NAME, fields::node_name)?,
        nodes: ssh_nodes(&obj)?,
        known_hosts: obj.path(SSH_KNOWN_HOSTS, home)?,
        host_key_fingerprint: obj.parsed(SSH_HOST_KEY, fields::host_key_fingerprint)?,
    };
    let ssh = fields::ssh_block(ssh_parts, &host, &labels)?;
    let proxmox = ProxmoxConfig {
        host,
        port,
        user,
        realm,
        token_name,
        token_secret: Secret::new(token_secret),
        tls,
    };
    Ok((proxmox, ssh))
}

/// `sshNodes`: node name → `{host, port?, user?}`, each entry checked like the top level.
fn ssh_nodes(obj: &Obj<'_>) -> Result<BTreeMap<String, SshNodeOverride>, ConfigError> {
    let mut nodes = BTreeMap::new();
    let entries = match obj.map.get(SSH_NODES) {
        None | Some(Value::Null) => return Ok(nodes),
        Some(Value::Object(entries)) => entries,
        Some(other) => {
            return Err(obj.invalid(
                SSH_NODES,
                format!(
                    "must be an object of node name → {{\"host\": …}} (got {})",
                    kind(other)
                ),
            ));
        }
    };
    for (name, entry) in entries {
        let name_key = format!("{SSH_NODES}.{name}");
        fields::node_name(name.trim()).map_err(|r| obj.invalid(&name_key, r))?;
        let Value::Object(map) = entry else {
            return Err(obj.invalid(
                &name_key,
                format!(
                    "must be an object like {{\"host\": …}} (got {})",
                    kind(entry)
                ),
            ));
        };
        let node = Obj {
            path: obj.path,
            prefix: format!("{name_key}."),
            map,
        };
        node.reject_unknown(&NODE_KEYS)?;
        let Some(host) = node.text("host", fields::host)? else {
            return Err(node.invalid("host", "is required for every sshNodes entry".into()));
        };
        nodes.insert(
            name.trim().to_owned(),
            SshNodeOverride {
                host,
                port: node.port("port")?,
                user: node.text("user", fields::user)?,
            },
        );
    }
    Ok(nodes)
}

/// Renders an instance file: pretty JSON with 2-space indentation and a final newline, using the
/// same keys the loader reads (so `setup` and the loader cannot drift apart). Without SSH the
/// file says `"sshStrategy": "disabled"` so a reader sees that SSH is off on purpose.
pub fn render_instance_file(proxmox: &ProxmoxConfig, ssh: Option<&SshConfig>) -> String {
    let mut m = Map::new();
    let path_value = |p: &Path| Value::String(p.to_string_lossy().into_owned());
    m.insert(HOST.into(), proxmox.host.clone().into());
    m.insert(PORT.into(), proxmox.port.into());
    m.insert(USER.into(), proxmox.user.clone().into());
    m.insert(REALM.into(), proxmox.realm.clone().into());
    m.insert(TOKEN_NAME.into(), proxmox.token_name.clone().into());
    m.insert(TOKEN_SECRET.into(), proxmox.token_secret.expose().into());
    m.insert(
        INSECURE.into(),
        matches!(proxmox.tls, TlsSetting::Insecure).into(),
    );
    match &proxmox.tls {
        TlsSetting::CaFile(p) => {
            m.insert(CA_FILE.into(), path_value(p));
        }
        TlsSetting::Fingerprint(fp) => {
            m.insert(FINGERPRINT.into(), fp.clone().into());
        }
        TlsSetting::Verify | TlsSetting::Insecure => {}
    }
    match ssh {
        None => {
            m.insert(SSH_STRATEGY.into(), "disabled".into());
        }
        Some(s) => {
            m.insert(SSH_HOST.into(), s.host.clone().into());
            m.insert(SSH_PORT.into(), s.port.into());
            m.insert(SSH_USER.into(), s.user.clone().into());
            m.insert(SSH_KEY.into(), path_value(&s.key_path));
            m.insert(SSH_STRATEGY.into(), s.strategy.as_str().into());
            if let Some(n) = &s.node_name {
                m.insert(SSH_NODE_NAME.into(), n.clone().into());
            }
            if !s.nodes.is_empty() {
                let nodes: Map<String, Value> = s
                    .nodes
                    .iter()
                    .map(|(name, o)| {
                        let mut e = Map::new();
                        e.insert("host".into(), o.host.clone().into());
                        if let Some(p) = o.port {
                            e.insert("port".into(), p.into());
                        }
                        if let Some(u) = &o.user {
                            e.insert("user".into(), u.clone().into());
                        }
                        (name.clone(), Value::Object(e))
                    })
                    .collect();
                m.insert(SSH_NODES.into(), Value::Object(nodes));
            }
            if let Some(p) = &s.known_hosts {
                m.insert(SSH_KNOWN_HOSTS.into(), path_value(p));
            }
            if let Some(fp) = &s.host_key_fingerprint {
                m.insert(SSH_HOST_KEY.into(), fp.clone().into());
            }
        }
    }
    format!("{:#}\n", Value::Object(m))
}
