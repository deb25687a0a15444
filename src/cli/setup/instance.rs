//! Writing the instance file: find the instance a re-run updates, merge into an existing file,
//! validate, write 0600.
//!
//! Invariants: the keys `setup` owns (connection and TLS) are replaced as a group — so a stale
//! `tlsFingerprint` cannot contradict a new `--allow-insecure-tls` — while every other key a person
//! added (`sshNodes`, `sshStrategy`, `sshKnownHostsPath`, …) is kept unless SSH flags were given;
//! without `--name`, a re-run for a host that already has an instance in the scope updates that
//! instance instead of adding a second one for the same host. A project-directory file is merged
//! into only when this user trusted its exact content; otherwise setup refuses and writes nothing
//! (keys nobody reviewed must never be kept and then trusted).

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
/// after the cluster. Files that cannot be read are not candidates, nor is a project file whose
/// content is not trusted (a cloned repository's file must not be adopted just because it
/// names the same host); the legacy `config.json` is left alone.
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
        .filter(|i| i.scope == Scope::User || trusted(paths, &i.path))
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

/// Whether the trust store holds this project file's current content.
fn trusted(paths: &Paths, path: &Path) -> bool {
    config::trust_status(&config::ProcessEnv, paths, path)
        .is_ok_and(|(_, _, state)| state == config::trust::TrustState::Trusted)
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

/// The content a re-run merges into: the user's own file in the user scope; in the project
/// scope only a file whose exact bytes this user trusted — anything else at that path (a cloned
/// repository's file, one changed since `trust`, a symlink elsewhere) is refused, because its
/// other keys would survive the merge and then be trusted along with what the person typed.
fn existing_content(
    paths: &Paths,
    scope: Scope,
    path: &Path,
) -> Result<Map<String, Value>, CliError> {
    if scope == Scope::User || path.symlink_metadata().is_err() {
        return files::read_json_object(path).map_err(|e| CliError::Config(e.to_string()));
    }
    config::trusted_project_object(&config::ProcessEnv, paths, path).map_err(|e| {
        let why = match e {
            config::ConfigError::UntrustedProjectFile { changed: true, .. } => {
                "changed since you trusted it".to_owned()
            }
            config::ConfigError::UntrustedProjectFile { changed: false, .. } => {
                "is not trusted by you (it may come from a cloned repository)".to_owned()
            }
            other => format!("cannot be checked against your trust store ({other})"),
        };
        CliError::Config(format!(
            "setup did not write {shown}: that project-directory instance file {why}, and setup \
             keeps the keys it does not own, so they would become trusted unreviewed. Nothing was \
             written. Review the file and run `nandi-proxmox-mcp trust {shown}`, then run setup \
             again; or choose another instance name with --name (or --scope user)",
            shown = path.display()
        ))
    })
}

/// Merges, validates with the loader `run` uses, and writes the file with mode 0600. In the
/// project scope an existing file is merged into only when this user trusted its content.
pub(crate) fn write(
    paths: &Paths,
    scope: Scope,
    path: &Path,
    answers: &Answers,
) -> Result<(), CliError> {
    let existing = existing_content(paths, scope, path)?;
    let merged = merge(existing, answers);
    config::parse_instance_object(path, &merged).map_err(|e| CliError::Config(e.to_string()))?;
    files::write_atomic(path, &files::pretty(&Value::Object(merged)), true)
        .map_err(|e| CliError::Runtime(e.to_string()))?;
    // The user just wrote this file: trust its content, so discovery and `doctor --name` use it.
    config::trust_file(&config::ProcessEnv, paths, path)
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

    #[test]
    fn a_rerun_finds_the_instance_of_the_same_host_and_port_only() {
        let cwd = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let paths = Paths {
            cwd: cwd.path().to_path_buf(),
            home: Some(home.path().to_path_buf()),
        };
        // User-scope files are the user's own; project files would also need trust.
        let dir = home.path().join(instances::CONFIG_DIR_NAME);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("proxmox.json"), r#"{"proxmoxHost": "PVE.lan"}"#).unwrap();
        std::fs::write(
            dir.join("other.json"),
            r#"{"proxmoxHost": "pve.lan", "proxmoxPort": 8443}"#,
        )
        .unwrap();
        std::fs::write(dir.join("broken.json"), "{ not json").unwrap();
        let found = |host, port| existing_for_host(&paths, Scope::User, host, port);
        assert_eq!(found(" pve.lan ", 8006).as_deref(), Some("proxmox"));
        assert_eq!(found("pve.lan", 8443).as_deref(), Some("other"));
        assert_eq!(found("pve2.lan", 8006), None);
        assert_eq!(
            existing_for_host(&paths, Scope::Project, "pve.lan", 8006),
            None,
            "another scope's files are not candidates"
        );
        // A project file nobody trusted is not adopted.
        let project = cwd.path().join(instances::CONFIG_DIR_NAME);
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("cloned.json"), r#"{"proxmoxHost": "pve.lan"}"#).unwrap();
        assert_eq!(
            existing_for_host(&paths, Scope::Project, "pve.lan", 8006),
            None
        );
    }
}
