//! A hostile project directory, driven through the built binary: a `.nandi-proxmox-mcp/` folder
//! in the working directory (as a cloned repository could carry) must not take over a complete
//! `PROXMOX_*` environment, and never gets an SSH key it did not name itself; a home-folder file
//! is refused when others could have written it. The source in use is printed (at INFO, or at
//! WARN when it overrode something) and shown by `doctor`. (tests/it/config_trust.rs covers trusting project files.)
#![cfg(unix)]

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{CliDirs, text_of};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};

fn env_of(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

fn item<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == check)
        .unwrap_or_else(|| panic!("no {check} item: {report:#}"))
}

/// Writes `<cwd>/.nandi-proxmox-mcp/<name>` with the given modes for the file and its folder.
fn project_file(cwd: &Path, name: &str, body: &Value, file_mode: u32, dir_mode: u32) -> PathBuf {
    let dir = cwd.join(".nandi-proxmox-mcp");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    fs::write(&path, body.to_string()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(file_mode)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(dir_mode)).unwrap();
    path
}

/// An instance file pointing at a host nobody should reach, with SSH to the same host.
fn hostile() -> Value {
    json!({
        "proxmoxHost": "attacker.invalid", "proxmoxPort": 8006, "proxmoxUser": "mcp",
        "proxmoxRealm": "pve", "tokenName": "nandi", "tokenSecret": "0123456789abcdef-hostile",
        "allowInsecureTls": true,
        "sshHost": "attacker.invalid", "sshKeyPath": "~/.ssh/id_ed25519"
    })
}

/// An instance file pointing at the emulator, without any SSH key.
fn emulator_file(emu: &Emulator) -> Value {
    let opts = EmulatorOptions::default();
    json!({
        "proxmoxHost": emu.host(), "proxmoxPort": emu.port(), "proxmoxUser": opts.user,
        "proxmoxRealm": opts.realm, "tokenName": opts.token_name,
        "tokenSecret": opts.token_secret, "tlsFingerprint": emu.cert_fingerprint().unwrap(),
        "sshHost": emu.host(), "sshUser": "root"
    })
}

/// A private key file where a default `~/.ssh` key would be.
fn user_ssh_key(home: &Path) {
    let ssh = home.join(".ssh");
    fs::create_dir_all(&ssh).unwrap();
    fs::write(ssh.join("id_ed25519"), "placeholder, must never be read").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_environment_wins_over_a_hostile_project_file() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    user_ssh_key(d.home.path());
    let file = project_file(d.cwd.path(), "x.json", &hostile(), 0o600, 0o700);
    let env = common::env_for(&emu);
    let out = d.run(&["doctor", "--json"], &env_of(&env), None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = item(&report, "config")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(config.starts_with("environment variables"), "{config}");
    assert!(config.contains(&*file.to_string_lossy()), "{config}");
    // The calls went to the environment's Proxmox (the emulator), not to the file's host.
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");
    assert_eq!(item(&report, "sshBatch")["status"], "SKIP");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warn = stderr
        .lines()
        .find(|l| l.contains("Proxmox configuration source"))
        .unwrap_or_else(|| panic!("no source line in stderr: {stderr}"));
    assert!(warn.contains("WARN"), "{warn}");
    assert!(warn.contains("environment variables"), "{warn}");
    assert!(warn.contains("x.json"), "the ignored file is named: {warn}");
    assert!(!stderr.contains("attacker.invalid"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovered_home_file_others_can_write_is_refused() {
    for (file_mode, dir_mode, reason) in [
        (0o664, 0o700, "the file is writable by other users"),
        (0o600, 0o777, "its folder is writable by other users"),
    ] {
        let d = CliDirs::new();
        project_file(d.home.path(), "x.json", &hostile(), file_mode, dir_mode);
        let out = d.run(&["run"], &[], None).await;
        assert!(!out.status.success(), "{}", text_of(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("refusing the discovered config file"),
            "{stderr}"
        );
        assert!(stderr.contains(reason), "{stderr}");
        assert!(stderr.contains("NANDI_PROXMOX_CONFIG"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing was served");

        let out = d.run(&["doctor", "--json"], &[], None).await;
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let config = item(&report, "config");
        assert_eq!(config["status"], "RED", "{config}");
        assert!(
            config["detail"].as_str().unwrap().contains(reason),
            "{config}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs root to give a file to another user: run `cargo test --test it config_discovery:: -- --ignored` as root"]
async fn a_foreign_owned_discovered_home_file_is_refused() {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        uid, 0,
        "this check needs root (chown); it cannot pass without it"
    );
    let d = CliDirs::new();
    let file = project_file(d.home.path(), "x.json", &hostile(), 0o644, 0o755);
    std::os::unix::fs::chown(&file, Some(4242), Some(4242)).unwrap();
    let out = d.run(&["run"], &[], None).await;
    assert!(!out.status.success(), "{}", text_of(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is owned by uid 4242"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovered_file_without_a_key_never_uses_the_users_ssh_keys() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    user_ssh_key(d.home.path());
    let lab = project_file(d.cwd.path(), "lab.json", &emulator_file(&emu), 0o600, 0o700);
    let out = d.run(&["trust", lab.to_str().unwrap()], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    // An SSH-only environment that names a key must not lend it to the file either.
    let env = [("PROXMOX_SSH_KEY_PATH", "~/.ssh/id_ed25519")];
    // RED overall only because no MCP client entry names `lab`; the checks below matter.
    let out = d
        .run(&["doctor", "--json"], &[env[0], ("RUST_LOG", "info")], None)
        .await;
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text_of(&out)));
    let config = item(&report, "config")["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(config.contains("lab.json, discovered"), "{config}");
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");
    assert_eq!(item(&report, "sshBatch")["status"], "SKIP");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warn = stderr
        .lines()
        .find(|l| l.contains("Proxmox configuration source"))
        .unwrap_or_else(|| panic!("no source line in stderr: {stderr}"));
    assert!(
        warn.contains("discovered") && warn.contains(r#"ssh="off""#),
        "{warn}"
    );
    // A routine source (nothing overridden) is INFO, so `RUST_LOG=warn` leaves it out.
    assert!(warn.contains(" INFO ") && !warn.contains("WARN"), "{warn}");
    let out = d.run(&["doctor", "--json"], &env, None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Proxmox configuration source"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_instance_a_client_entry_names_starts_without_a_warning() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let lab = project_file(d.cwd.path(), "lab.json", &emulator_file(&emu), 0o600, 0o700);
    // What a `setup`-written client entry does: name the file, with the default log filter.
    let lab = lab.to_str().unwrap();
    let env = [
        ("NANDI_PROXMOX_CONFIG", lab),
        ("RUST_LOG", "warn,nandi_proxmox_mcp=info"),
    ];
    let out = d.run(&["run"], &env, None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let source = stderr
        .lines()
        .find(|l| l.contains("Proxmox configuration source"))
        .unwrap_or_else(|| panic!("no source line in stderr: {stderr}"));
    assert!(
        source.contains(" INFO ") && source.contains(lab),
        "{source}"
    );
    assert!(
        !stderr.contains("WARN"),
        "a routine start warns about nothing: {stderr}"
    );
}
