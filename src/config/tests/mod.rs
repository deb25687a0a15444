//! Tests of source selection, discovery and secret hygiene, plus helpers shared with `values`.
//! Every test uses temporary folders as cwd/home and a `MapEnv`, never the process state.

#[cfg(unix)]
mod discovery;
mod multi;
mod values;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::*;

pub(super) const SECRET: &str = "s3cr3t-6f1c2d9e-aaaa-bbbb";

pub(super) struct Dirs {
    pub(super) cwd: TempDir,
    pub(super) home: TempDir,
}

impl Dirs {
    pub(super) fn new() -> Self {
        Self {
            cwd: tempfile::tempdir().unwrap(),
            home: tempfile::tempdir().unwrap(),
        }
    }

    pub(super) fn paths(&self) -> Paths {
        Paths {
            cwd: self.cwd.path().to_path_buf(),
            home: Some(self.home.path().to_path_buf()),
        }
    }

    pub(super) fn project(&self, file: &str, body: &str) -> PathBuf {
        write_in(self.cwd.path(), file, body)
    }

    pub(super) fn user(&self, file: &str, body: &str) -> PathBuf {
        write_in(self.home.path(), file, body)
    }

    /// Trusts `path` in this home's trust store, as `nandi-proxmox-mcp trust` does.
    pub(super) fn trust(&self, path: &Path) {
        trust_file(&env(&[]), &self.paths(), path).unwrap();
    }
}

pub(super) fn write_in(root: &Path, file: &str, body: &str) -> PathBuf {
    let dir = root.join(instances::CONFIG_DIR_NAME);
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file);
    fs::write(&path, body).unwrap();
    path
}

/// A minimal REST-only instance file.
pub(super) fn rest_only(host: &str) -> Value {
    json!({
        "proxmoxHost": host,
        "proxmoxPort": 8006,
        "proxmoxUser": "mcp",
        "proxmoxRealm": "pve",
        "tokenName": "nandi",
        "tokenSecret": SECRET,
    })
}

pub(super) fn with(mut base: Value, extra: Value) -> String {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    base.to_string()
}

pub(super) fn env(pairs: &[(&str, &str)]) -> MapEnv {
    MapEnv::from_pairs(pairs.iter().copied())
}

pub(super) fn full_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("PROXMOX_HOST", "pve.lan"),
        ("PROXMOX_USER", "mcp"),
        ("PROXMOX_TOKEN_NAME", "nandi"),
        ("PROXMOX_TOKEN_SECRET", SECRET),
    ]
}

pub(super) fn file_path(config: &Config) -> (&Path, Option<&str>) {
    match &config.source {
        ConfigSource::File { path, instance, .. } => (path.as_path(), instance.as_deref()),
        other => panic!("expected a file source, got {other:?}"),
    }
}

pub(super) fn load_with_file(body: &str) -> Result<Config, ConfigError> {
    let dirs = Dirs::new();
    let path = dirs.project("lab.json", body);
    file::load_path(&path, dirs.paths().home.as_deref(), FileOrigin::Selected)
}

#[test]
fn a_project_instance_is_used_only_once_trusted() {
    let dirs = Dirs::new();
    let path = dirs.project("lab.json", &rest_only("a.lan").to_string());
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(config, Config::unconfigured(), "untrusted: ignored");
    dirs.trust(&path);
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(file_path(&config), (path.as_path(), Some("lab")));
    assert_eq!(config.proxmox.unwrap().host, "a.lan");
    assert!(config.ssh.is_none());
    // A changed file loses its trust.
    fs::write(&path, rest_only("b.lan").to_string()).unwrap();
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(config, Config::unconfigured(), "changed: ignored");
}

#[test]
fn user_scope_beats_even_a_trusted_project_file() {
    let dirs = Dirs::new();
    dirs.user("home.json", &rest_only("user.lan").to_string());
    let proj = dirs.project("proj.json", &rest_only("proj.lan").to_string());
    dirs.trust(&proj);
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "user.lan");
}

#[test]
fn single_user_instance_is_chosen() {
    let dirs = Dirs::new();
    let path = dirs.user("home.json", &rest_only("user.lan").to_string());
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(file_path(&config), (path.as_path(), Some("home")));
}

#[test]
fn several_instances_are_ambiguous() {
    let dirs = Dirs::new();
    dirs.user("one.json", &rest_only("a.lan").to_string());
    dirs.user("two.json", &rest_only("b.lan").to_string());
    let err = load(&env(&[]), &dirs.paths()).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ConfigError::AmbiguousInstances { .. }),
        "{msg}"
    );
    for needle in [
        "one",
        "two",
        "NANDI_PROXMOX_CONFIG",
        "nandi-proxmox-mcp list",
        "`run` takes no --name",
        "--name NAME to `doctor` or `harden`",
        "nandi-proxmox-mcp doctor --name one",
    ] {
        assert!(msg.contains(needle), "{needle} missing in {msg}");
    }
}

#[test]
fn several_trusted_project_files_are_ambiguous_untrusted_ones_do_not_count() {
    let dirs = Dirs::new();
    let one = dirs.project("one.json", &rest_only("a.lan").to_string());
    dirs.project("two.json", &rest_only("b.lan").to_string());
    dirs.trust(&one);
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "a.lan");
    let two = dirs.cwd.path().join(".nandi-proxmox-mcp/two.json");
    dirs.trust(&two);
    let err = load(&env(&[]), &dirs.paths()).unwrap_err();
    assert!(
        matches!(err, ConfigError::AmbiguousInstances { .. }),
        "{err}"
    );
}

#[test]
fn legacy_config_json_is_preferred() {
    let dirs = Dirs::new();
    let legacy = dirs.project("config.json", &rest_only("legacy.lan").to_string());
    let other = dirs.project("other.json", &rest_only("other.lan").to_string());
    dirs.trust(&legacy);
    dirs.trust(&other);
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(
        file_path(&config),
        (legacy.as_path(), Some("nandi-proxmox-mcp"))
    );
}

#[test]
fn user_scope_legacy_file_keeps_its_real_path() {
    let dirs = Dirs::new();
    let legacy = dirs.user("config.json", &rest_only("u.lan").to_string());
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(
        file_path(&config),
        (legacy.as_path(), Some("nandi-proxmox-mcp"))
    );
    let listed = instances::list_instances(&dirs.paths());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].scope, Scope::User);
    assert_eq!(listed[0].path, legacy);
}

#[test]
fn nothing_configured_is_not_an_error() {
    let dirs = Dirs::new();
    let config = load(&env(&[("PROXMOX_PORT", "8007")]), &dirs.paths()).unwrap();
    assert_eq!(config, Config::unconfigured());
}

#[test]
fn environment_is_used_when_no_file_exists() {
    let dirs = Dirs::new();
    let config = load(&env(&full_env()), &dirs.paths()).unwrap();
    assert_eq!(config.source, ConfigSource::Env);
    let px = config.proxmox.unwrap();
    assert_eq!((px.port, px.realm.as_str()), (8006, "pve"));
    assert_eq!(px.tls, TlsSetting::Verify);
    assert!(config.ssh.is_none(), "no key path → SSH disabled");
}

#[test]
fn half_filled_environment_is_reported() {
    let dirs = Dirs::new();
    let err = load(&env(&[("PROXMOX_TOKEN_SECRET", SECRET)]), &dirs.paths()).unwrap_err();
    assert!(err.to_string().contains("PROXMOX_HOST"), "{err}");
}

#[test]
fn broken_discovered_file_is_an_error_not_env() {
    let dirs = Dirs::new();
    dirs.user("lab.json", "{ not json");
    let err = load(&env(&[("PROXMOX_PORT", "8006")]), &dirs.paths()).unwrap_err();
    assert!(matches!(err, ConfigError::InvalidJson { .. }), "{err}");
    assert!(err.to_string().contains("lab.json"), "{err}");
}

#[test]
fn an_incomplete_environment_is_an_error_never_a_fallback_to_a_file() {
    let dirs = Dirs::new();
    dirs.user("home.json", &rest_only("user.lan").to_string());
    let proj = dirs.project("x.json", &rest_only("attacker.example").to_string());
    dirs.trust(&proj);
    let mut vars = full_env();
    vars.retain(|(k, _)| *k != "PROXMOX_TOKEN_SECRET");
    let err = load(&env(&vars), &dirs.paths()).unwrap_err();
    assert!(
        matches!(&err, ConfigError::MissingEnvVars { vars } if vars == &["PROXMOX_TOKEN_SECRET"]),
        "{err}"
    );
    assert!(err.to_string().contains("PROXMOX_TOKEN_SECRET"), "{err}");
}

#[test]
fn explicit_path_rules() {
    let dirs = Dirs::new();
    let p = dirs.paths();
    let load_var = |v: &str| load(&env(&[(CONFIG_ENV_VAR, v)]), &p);

    let err = load_var("   ").unwrap_err();
    assert!(err.to_string().contains("points to an empty path"), "{err}");
    assert!(matches!(
        load_var("a\nb").unwrap_err(),
        ConfigError::ControlCharsInPath { .. }
    ));
    let missing = load_var("nope.json").unwrap_err();
    assert!(
        matches!(missing, ConfigError::FileNotFound { .. }),
        "{missing}"
    );
    // Relative paths resolve against cwd, not the process directory.
    assert!(
        missing
            .to_string()
            .contains(&*dirs.cwd.path().to_string_lossy())
    );
    let dir_err = load_var(&dirs.cwd.path().to_string_lossy()).unwrap_err();
    assert!(
        dir_err.to_string().contains("Config path is not a file"),
        "{dir_err}"
    );

    let big = dirs.cwd.path().join("big.json");
    fs::write(&big, vec![b' '; 65_537]).unwrap();
    let err = load_var("big.json").unwrap_err();
    assert!(err.to_string().contains("exceeds 65536 bytes"), "{err}");

    // The explicit file wins over discovery and environment.
    dirs.project("one.json", &rest_only("a.lan").to_string());
    dirs.project("two.json", &rest_only("b.lan").to_string());
    fs::write(
        dirs.cwd.path().join("pick.json"),
        rest_only("pick.lan").to_string(),
    )
    .unwrap();
    let config = load_var(" pick.json ").unwrap();
    assert_eq!(config.proxmox.as_ref().unwrap().host, "pick.lan");
    assert_eq!(file_path(&config).1, None);
}

#[test]
fn secret_never_leaks() {
    let config = load_env(&env(&full_env())).unwrap();
    let debug = format!("{config:?} {config:#?}");
    assert!(!debug.contains(SECRET) && debug.contains("***"), "{debug}");
    assert_eq!(Secret::new(SECRET).to_string(), "***");

    let secret_in_file = [
        with(rest_only("a"), json!({"tokenSecret": "short1"})),
        with(
            rest_only("a"),
            json!({"tokenSecret": format!("{SECRET}\u{7}")}),
        ),
        with(
            rest_only("a"),
            json!({"allowInsecureTls": true, "tlsFingerprint": "x"}),
        ),
        with(rest_only("a b"), json!({})),
        with(rest_only("a"), json!({"bogus": SECRET})),
        with(rest_only("a"), json!({"sshStrategy": "auto"})),
        format!("{{\"tokenSecret\": \"{SECRET}\" oops}}"),
        format!("{{\"tokenSecret\": \"{SECRET}"),
    ];
    for body in &secret_in_file {
        let err = load_with_file(body).unwrap_err();
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!text.contains(SECRET) && !text.contains("short1"), "{text}");
        }
    }
    let mut vars = full_env();
    vars.retain(|(k, _)| *k != "PROXMOX_TOKEN_SECRET");
    vars.push(("PROXMOX_TOKEN_SECRET", "tiny-pw"));
    let err = load_env(&env(&vars)).unwrap_err();
    assert!(!err.to_string().contains("tiny-pw") && !format!("{err:?}").contains("tiny-pw"));
}

/// Records every variable asked for, to prove `ENV_VARS` lists exactly what is read.
struct Recorder(MapEnv, RefCell<BTreeSet<String>>);

impl EnvSource for Recorder {
    fn var(&self, key: &str) -> Option<String> {
        self.1.borrow_mut().insert(key.to_owned());
        self.0.var(key)
    }
}

#[test]
fn env_var_table_is_complete_and_exact() {
    let mut vars = full_env();
    vars.push(("PROXMOX_SSH_KEY_PATH", "/k"));
    let rec = Recorder(env(&vars), RefCell::default());
    let dirs = Dirs::new();
    load(&rec, &dirs.paths()).unwrap();
    clusters::load_clusters(&rec, &dirs.paths()).unwrap();
    Paths::from_env(&rec).unwrap();
    let rec_empty = Recorder(env(&[]), RefCell::default());
    load_env(&rec_empty).unwrap_err();
    audit_log(&rec_empty).unwrap();
    freeze_file(&rec_empty).unwrap();
    let mut read: BTreeSet<String> = rec.1.into_inner();
    read.extend(rec_empty.1.into_inner());
    let documented: BTreeSet<String> = ENV_VARS.iter().map(|d| d.name.to_owned()).collect();
    assert_eq!(read, documented);
    let secrets: Vec<_> = ENV_VARS
        .iter()
        .filter(|d| d.secret)
        .map(|d| d.name)
        .collect();
    assert_eq!(secrets, ["PROXMOX_TOKEN_SECRET", "PBS_TOKEN_SECRET"]);
}

#[test]
fn audit_log_setting_off_path_and_defaults() {
    let setting = |vars: &[(&str, &str)]| audit_log(&env(vars)).unwrap();
    assert_eq!(setting(&[("PVE_AUDIT_LOG", "OFF")]), AuditLogSetting::Off);
    assert_eq!(
        setting(&[("PVE_AUDIT_LOG", "~/a.jsonl"), ("HOME", "/home/u")]),
        AuditLogSetting::File(PathBuf::from("/home/u/a.jsonl"))
    );
    assert_eq!(
        setting(&[("XDG_STATE_HOME", "/st"), ("HOME", "/home/u")]),
        AuditLogSetting::File(PathBuf::from("/st/nandi-proxmox-mcp/audit.jsonl"))
    );
    assert_eq!(
        setting(&[("HOME", "/home/u")]),
        AuditLogSetting::File(PathBuf::from(
            "/home/u/.local/state/nandi-proxmox-mcp/audit.jsonl"
        ))
    );
    assert_eq!(setting(&[]), AuditLogSetting::NoStateDir);
    assert!(audit_log(&env(&[("PVE_AUDIT_LOG", "a\u{7}b")])).is_err());
}

#[test]
fn freeze_file_path_and_defaults_sit_beside_the_audit_log() {
    let setting = |vars: &[(&str, &str)]| freeze_file(&env(vars)).unwrap();
    assert_eq!(
        setting(&[("PVE_FREEZE_FILE", "~/f"), ("HOME", "/home/u")]),
        Some(PathBuf::from("/home/u/f"))
    );
    assert_eq!(
        setting(&[("XDG_STATE_HOME", "/st"), ("HOME", "/home/u")]),
        Some(PathBuf::from("/st/nandi-proxmox-mcp/frozen"))
    );
    assert_eq!(
        setting(&[("HOME", "/home/u")]),
        Some(PathBuf::from(
            "/home/u/.local/state/nandi-proxmox-mcp/frozen"
        ))
    );
    assert_eq!(setting(&[]), None);
    assert!(freeze_file(&env(&[("PVE_FREEZE_FILE", "a\u{7}b")])).is_err());
}
