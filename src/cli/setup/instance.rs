//! Writing the instance file: find the instance a re-run updates, merge into an existing file,
//! validate, write 0600.
//!
//! Invariants: the keys `setup` owns (connection and TLS) are replaced as a group — so a stale
//! `tlsFingerprint` cannot contradict a new `--allow-insecure-tls` — while every other key a person
//! added (`sshNodes`, `sshStrategy`, `sshKnownHostsPath`, …) is kept unless SSH flags were given;
//! without `--name`, a re-run for a host that already has an instance in the scope updates that
//! instance instead of adding a second one for the same host.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::Answers;
use crate::cli::CliError;
use crate::cli::files;
use crate::config::instances::{self, Scope};
use crate::config::{self, Paths, ProxmoxConfig};

/// Keys `setup` always writes; an old value of any of them is dropped first.
const CORE_KEYS: [&str; 9] = [
    "proxmoxHost",
    "proxmoxPort",
    "proxmoxUser",
    "proxmoxRealm",
    "tokenName",
    "tokenSecret",
    "allowInsecureTls",
    "tlsCaFile",
    "tlsFingerprint",
];

/// Keys replaced when SSH flags are given.
const SSH_OWNED: [&str; 5] = ["sshHost", "sshPort", "sshUser", "sshKeyPath", "sshStrategy"];

/// What to do with the SSH part of the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SshChoice {
    /// No SSH flags: keep whatever the file has (a new file gets `sshStrategy: disabled`).
    Keep,
    /// SSH off.
    Disabled,
    /// These `ssh*` keys replace the file's.
    Enabled(Map<String, Value>),
}

/// Validates the connection keys alone (SSH off) and returns the connection settings.
pub(crate) fn validate_core(core: &Map<String, Value>) -> Result<ProxmoxConfig, CliError> {
    let mut probe = core.clone();
    probe.insert("sshStrategy".into(), json!("disabled"));
    config::parse_instance_object(Path::new("(setup input)"), &probe)
        .map_err(|e| CliError::Config(e.to_string()))?
        .proxmox
        .ok_or_else(|| CliError::Config("no Proxmox connection in the setup input".into()))
}

/// The instance of `scope` whose file already points at `host:port` (the first, in listing
/// order), so a re-run — after a TLS failure, say — updates it rather than adding a twin named
/// after the cluster. Files that cannot be read are not candidates; the legacy `config.json`
/// is left alone.
pub(crate) fn existing_for_host(
    paths: &Paths,
    scope: Scope,
    host: &str,
    port: u16,
) -> Option<String> {
    let host = host.trim();
    instances::list_instances(paths)
        .into_iter()
        .filter(|i| i.scope == scope && !i.is_legacy())
        .find(|i| {
            files::read_json_object(&i.path).is_ok_and(|file| {
                let same_host = file
                    .get("proxmoxHost")
                    .and_then(Value::as_str)
                    .is_some_and(|h| h.trim().eq_ignore_ascii_case(host));
                let file_port = match file.get("proxmoxPort") {
                    None => Some(8006),
                    Some(Value::Number(n)) => n.as_u64(),
                    Some(Value::String(s)) => s.trim().parse().ok(),
                    Some(_) => None,
                };
                same_host && file_port == Some(u64::from(port))
            })
        })
        .map(|i| i.name)
}

/// The merged file content (existing keys kept, owned keys replaced).
pub(crate) fn merge(existing: Map<String, Value>, answers: &Answers) -> Map<String, Value> {
    let mut merged = existing;
    for key in CORE_KEYS {
        merged.remove(key);
    }
    for (k, v) in &answers.core {
        merged.insert(k.clone(), v.clone());
    }
    match &answers.ssh {
        SshChoice::Keep => {
            if !merged.keys().any(|k| k.starts_with("ssh")) {
                merged.insert("sshStrategy".into(), json!("disabled"));
            }
        }
        SshChoice::Disabled => {
            merged.insert("sshStrategy".into(), json!("disabled"));
        }
        SshChoice::Enabled(ssh) => {
            for key in SSH_OWNED {
                merged.remove(key);
            }
            for (k, v) in ssh {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    merged
}

/// Merges, validates with the loader `run` uses, and writes the file with mode 0600.
pub(crate) fn write(path: &Path, answers: &Answers) -> Result<(), CliError> {
    let existing = files::read_json_object(path).map_err(|e| CliError::Config(e.to_string()))?;
    let merged = merge(existing, answers);
    config::parse_instance_object(path, &merged).map_err(|e| CliError::Config(e.to_string()))?;
    files::write_atomic(path, &files::pretty(&Value::Object(merged)), true)
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    // The user just wrote this file: trust its content, so discovery and `doctor --name` use it.
    let paths = config::Paths::from_env(&config::ProcessEnv)
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    config::trust_file(&config::ProcessEnv, &paths, path)
        .map(|_| ())
        .map_err(|e| CliError::Runtime(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_added_keys_survive_and_tls_is_replaced() {
        let existing: Map<String, Value> = serde_json::from_value(json!({
            "proxmoxHost": "old", "tlsFingerprint": "AA", "sshKeyPath": "/k",
            "sshStrategy": "hop", "sshNodes": {"pve2": {"host": "10.0.0.2"}}
        }))
        .unwrap();
        let mut core = Map::new();
        core.insert("proxmoxHost".into(), json!("new"));
        core.insert("allowInsecureTls".into(), json!(true));
        let merged = merge(
            existing,
            &Answers {
                core,
                ssh: SshChoice::Keep,
            },
        );
        assert_eq!(merged["proxmoxHost"], "new");
        assert!(!merged.contains_key("tlsFingerprint"));
        assert_eq!(merged["sshStrategy"], "hop");
        assert_eq!(merged["sshNodes"]["pve2"]["host"], "10.0.0.2");
    }
}
