//! A cloned repository cannot take over the user's configuration, driven through the built
//! binary with HOME, XDG_STATE_HOME / XDG_CONFIG_HOME and the working directory in temp folders.
//!
//! The hostile working directory carries `.nandi-proxmox-mcp/x.json` naming the user's
//! `~/.ssh/id_ed25519` and pointing both its Proxmox API and its SSH at a "honeypot": a local TCP
//! listener that counts connections. For each user setup — a complete environment, an
//! environment missing one variable, home-folder discovery, an explicit `NANDI_PROXMOX_CONFIG` —
//! the honeypot must see no connection, trusted or not. Alone, the project file is ignored until
//! `trust`ed; trusted, it is used but its SSH key never is; changed, it is ignored again — and
//! so it is when the CA file it names is swapped, or its trust predates CA files being hashed.
#![cfg(unix)]

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{CliDirs, text_of};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};

/// A listener that accepts and immediately drops connections, counting them: the "repository
/// author's" Proxmox and sshd.
struct Honeypot {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Honeypot {
    async fn start() -> Honeypot {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(socket);
            }
        });
        Honeypot { port, hits }
    }

    fn assert_untouched(&self, context: &str) {
        assert_eq!(
            self.hits.load(Ordering::SeqCst),
            0,
            "{context}: the hostile file's host was contacted"
        );
    }
}

/// The hostile project file: API and SSH at the honeypot, with the user's default key.
fn hostile(pot: &Honeypot) -> Value {
    json!({
        "proxmoxHost": "127.0.0.1", "proxmoxPort": pot.port, "proxmoxUser": "mcp",
        "proxmoxRealm": "pve", "tokenName": "nandi", "tokenSecret": "0123456789abcdef-hostile",
        "allowInsecureTls": true,
        "sshHost": "127.0.0.1", "sshPort": pot.port, "sshUser": "root",
        "sshKeyPath": "~/.ssh/id_ed25519", "sshKnownHostsPath": "./known_hosts"
    })
}

/// An instance file for the emulator (the user's real cluster), without SSH.
fn emulator_file(emu: &Emulator) -> Value {
    let opts = EmulatorOptions::default();
    json!({
        "proxmoxHost": emu.host(), "proxmoxPort": emu.port(), "proxmoxUser": opts.user,
        "proxmoxRealm": opts.realm, "tokenName": opts.token_name,
        "tokenSecret": opts.token_secret, "tlsFingerprint": emu.cert_fingerprint().unwrap(),
        "sshStrategy": "disabled"
    })
}

/// The emulator's API, but SSH (with the user's key) at the honeypot.
fn emulator_with_hostile_ssh(emu: &Emulator, pot: &Honeypot) -> Value {
    let mut v = emulator_file(emu);
    let m = v.as_object_mut().unwrap();
    m.remove("sshStrategy");
    m.insert("sshHost".into(), "127.0.0.1".into());
    m.insert("sshPort".into(), pot.port.into());
    m.insert("sshKeyPath".into(), "~/.ssh/id_ed25519".into());
    v
}

/// Writes `<root>/.nandi-proxmox-mcp/<name>` privately (0600 in a 0700 folder).
fn write_instance(root: &Path, name: &str, body: &Value) -> PathBuf {
    let dir = root.join(".nandi-proxmox-mcp");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    fs::write(&path, body.to_string()).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    path
}

/// The user's default SSH key (a placeholder that must never be read).
fn user_ssh_key(home: &Path) {
    let ssh = home.join(".ssh");
    fs::create_dir_all(&ssh).unwrap();
    fs::write(ssh.join("id_ed25519"), "placeholder, must never be read").unwrap();
}

/// XDG folders inside the temp HOME, plus `extra`.
fn xdg_env(d: &CliDirs, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "XDG_STATE_HOME".to_owned(),
            d.home.path().join("xdg-state").display().to_string(),
        ),
        (
            "XDG_CONFIG_HOME".to_owned(),
            d.home.path().join("xdg-config").display().to_string(),
        ),
    ];
    env.extend_from_slice(extra);
    env
}

fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

async fn doctor(d: &CliDirs, env: &[(String, String)]) -> (Value, String, std::process::Output) {
    let out = d.run(&["doctor", "--json"], &pairs(env), None).await;
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text_of(&out)));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (report, stderr, out)
}

fn item<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == check)
        .unwrap_or_else(|| panic!("no {check} item: {report:#}"))
}

fn detail(report: &Value, check: &str) -> String {
    item(report, check)["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn trust(d: &CliDirs, env: &[(String, String)], path: &Path) -> std::process::Output {
    let out = d
        .run(&["trust", path.to_str().unwrap()], &pairs(env), None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    out
}

/// The four user setups. Each returns the environment to run with and what `config` says.
#[derive(Clone, Copy, Debug)]
enum Setup {
    EnvComplete,
    EnvMissingOne,
    HomeFile,
    ExplicitFile,
}

impl Setup {
    const ALL: [Setup; 4] = [
        Setup::EnvComplete,
        Setup::EnvMissingOne,
        Setup::HomeFile,
        Setup::ExplicitFile,
    ];

    fn prepare(self, d: &CliDirs, emu: &Emulator) -> Vec<(String, String)> {
        match self {
            Setup::EnvComplete => xdg_env(d, &common::env_for(emu)),
            Setup::EnvMissingOne => {
                let mut env = common::env_for(emu);
                env.retain(|(k, _)| k != "PROXMOX_TOKEN_SECRET");
                xdg_env(d, &env)
            }
            Setup::HomeFile => {
                write_instance(d.home.path(), "home.json", &emulator_file(emu));
                xdg_env(d, &[])
            }
            Setup::ExplicitFile => {
                let own = d.home.path().join("mine.json");
                fs::write(&own, emulator_file(emu).to_string()).unwrap();
                xdg_env(
                    d,
                    &[("NANDI_PROXMOX_CONFIG".into(), own.display().to_string())],
                )
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_working_directory_never_wins_over_any_user_setup_trusted_or_not() {
    let emu = common::emulator().await;
    for setup in Setup::ALL {
        for trusted in [false, true] {
            let pot = Honeypot::start().await;
            let d = CliDirs::new();
            user_ssh_key(d.home.path());
            let mut env = setup.prepare(&d, &emu);
            // The source line is INFO when it overrode nothing (the explicit file's case).
            env.push(("RUST_LOG".into(), "info".into()));
            let file = write_instance(d.cwd.path(), "x.json", &hostile(&pot));
            if trusted {
                trust(&d, &env, &file).await;
            }
            let ctx = format!("{setup:?}, trusted={trusted}");
            let (report, stderr, _) = doctor(&d, &env).await;
            let config = detail(&report, "config");
            match setup {
                Setup::EnvMissingOne => {
                    assert_eq!(item(&report, "config")["status"], "RED", "{ctx}: {config}");
                    assert!(config.contains("PROXMOX_TOKEN_SECRET"), "{ctx}: {config}");
                    assert!(config.contains("incomplete"), "{ctx}: {config}");
                    // `run` refuses to start, naming the variable; nothing is served.
                    let out = d.run(&["run"], &pairs(&env), None).await;
                    assert!(!out.status.success(), "{ctx}: {}", text_of(&out));
                    let err = String::from_utf8_lossy(&out.stderr);
                    assert!(err.contains("missing PROXMOX_TOKEN_SECRET"), "{ctx}: {err}");
                    assert!(out.stdout.is_empty(), "{ctx}");
                }
                _ => {
                    assert!(!config.starts_with("instance `x`"), "{ctx}: {config}");
                    assert_eq!(
                        item(&report, "listNodes")["detail"],
                        "Found 3 nodes",
                        "{ctx}: {report:#}"
                    );
                    assert_eq!(item(&report, "sshBatch")["status"], "SKIP", "{ctx}");
                    let source = stderr
                        .lines()
                        .find(|l| l.contains("Proxmox configuration source"))
                        .unwrap_or_else(|| panic!("{ctx}: no source line: {stderr}"));
                    assert!(!source.contains("trusted project file"), "{ctx}: {source}");
                }
            }
            pot.assert_untouched(&ctx);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alone_a_project_file_is_ignored_until_trusted_and_its_ssh_key_is_never_used() {
    let emu = common::emulator().await;
    let pot = Honeypot::start().await;
    let d = CliDirs::new();
    user_ssh_key(d.home.path());
    let env = xdg_env(&d, &[]);
    let file = write_instance(
        d.cwd.path(),
        "x.json",
        &emulator_with_hostile_ssh(&emu, &pot),
    );
    let shown = file.display().to_string();

    // Untrusted: ignored, with a warning naming the file and the command that trusts it.
    let (report, stderr, out) = doctor(&d, &env).await;
    assert!(!out.status.success());
    let config = item(&report, "config");
    assert_eq!(config["status"], "RED", "{config}");
    assert!(
        detail(&report, "config").contains("is not trusted"),
        "{config}"
    );
    let trust_line = format!("nandi-proxmox-mcp trust {shown}");
    assert!(stderr.contains(&trust_line), "{stderr}");
    assert!(stderr.contains("WARN"), "{stderr}");
    assert!(stderr.contains(&shown), "{stderr}");

    // Trusted: used for the API, but the SSH key it names is dropped (SSH off), with a note.
    let out = trust(&d, &env, &file).await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("sshKeyPath"), "{said}");
    let store = d
        .home
        .path()
        .join("xdg-state/nandi-proxmox-mcp/trusted-files.json");
    let mode = fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the trust store is private");
    let stored: Value = serde_json::from_str(&fs::read_to_string(&store).unwrap()).unwrap();
    let canonical = fs::canonicalize(&file).unwrap();
    assert_eq!(stored["files"][0]["path"], canonical.to_str().unwrap());
    assert_eq!(stored["files"][0]["sha256"].as_str().unwrap().len(), 64);

    let (report, stderr, _) = doctor(&d, &env).await;
    let config = detail(&report, "config");
    assert!(config.contains("trusted project file"), "{config}");
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");
    assert_eq!(item(&report, "sshBatch")["status"], "SKIP");
    assert!(
        stderr.contains("never chooses an SSH key"),
        "the dropped key is announced: {stderr}"
    );
    pot.assert_untouched("trusted project file");

    // Changed: the trust is gone.
    let mut body = emulator_with_hostile_ssh(&emu, &pot);
    body["proxmoxHost"] = "127.0.0.1".into();
    body["proxmoxPort"] = pot.port.into();
    fs::write(&file, body.to_string()).unwrap();
    let (report, stderr, _) = doctor(&d, &env).await;
    assert!(
        detail(&report, "config").contains("changed since you trusted it"),
        "{report:#}"
    );
    assert!(stderr.contains(&trust_line), "{stderr}");
    pot.assert_untouched("changed project file");

    // `--list` shows the stale entry; `--revoke` removes it.
    let out = d.run(&["trust", "--list"], &pairs(&env), None).await;
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains(canonical.to_str().unwrap()) && listed.contains("CHANGED"),
        "{listed}"
    );
    let out = d
        .run(&["trust", "--revoke", &shown], &pairs(&env), None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let out = d.run(&["trust", "--list"], &pairs(&env), None).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("no trusted files"),
        "{}",
        text_of(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explicit_file_is_trusted_with_its_ssh_key_and_trust_refuses_a_broken_file() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    // NANDI_PROXMOX_CONFIG naming a working-directory file is the user's own choice.
    let file = write_instance(d.cwd.path(), "lab.json", &emulator_file(&emu));
    let env = xdg_env(
        &d,
        &[("NANDI_PROXMOX_CONFIG".into(), file.display().to_string())],
    );
    let (report, _, _) = doctor(&d, &env).await;
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");
    assert!(!detail(&report, "config").contains("trusted project file"));

    // A file that does not load is never trusted.
    let broken = write_instance(d.cwd.path(), "broken.json", &json!({"proxmoxHost": "x"}));
    let out = d
        .run(&["trust", broken.to_str().unwrap()], &pairs(&env), None)
        .await;
    assert!(!out.status.success(), "{}", text_of(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing required key"),
        "{}",
        text_of(&out)
    );
    let store = d
        .home
        .path()
        .join("xdg-state/nandi-proxmox-mcp/trusted-files.json");
    assert!(!store.exists(), "nothing was recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_xdg_state_home_the_store_lives_in_the_home_state_folder() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let file = write_instance(d.cwd.path(), "lab.json", &emulator_file(&emu));
    let out = d.run(&["trust", file.to_str().unwrap()], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let store = d
        .home
        .path()
        .join(".local/state/nandi-proxmox-mcp/trusted-files.json");
    assert!(store.is_file(), "{}", text_of(&out));
    let out = d.run(&["doctor", "--json"], &[], None).await;
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");
    // `trust` alone shows the state of this directory's files; `--help` has examples.
    let out = d.run(&["trust"], &[], None).await;
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("lab.json  trusted"),
        "{}",
        text_of(&out)
    );
    let out = d.run(&["trust", "--help"], &[], None).await;
    assert!(String::from_utf8_lossy(&out.stdout).contains("Examples:"));
}

/// A planted project file with keys the person never typed: the emulator's API (so it would
/// work), SSH at the honeypot with the user's key, per-node SSH routes and another SSH user.
fn planted(emu: &Emulator, pot: &Honeypot) -> Value {
    let mut v = emulator_with_hostile_ssh(emu, pot);
    let m = v.as_object_mut().unwrap();
    m.insert("sshUser".into(), "attacker".into());
    m.insert("sshStrategy".into(), "direct".into());
    m.insert(
        "sshNodes".into(),
        json!({"pve2": {"host": "127.0.0.1", "port": pot.port}}),
    );
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_never_adopts_an_untrusted_project_file_of_the_same_name() {
    let emu = common::emulator().await;
    let flags = common::setup_flags(&emu);
    // `--name lab`, and no name at all (the emulator's cluster name, `emu-cluster`).
    for (file_name, extra) in [
        ("lab.json", vec!["--name", "lab"]),
        ("emu-cluster.json", vec![]),
    ] {
        let pot = Honeypot::start().await;
        let d = CliDirs::new();
        user_ssh_key(d.home.path());
        let env = xdg_env(&d, &[]);
        let file = write_instance(d.cwd.path(), file_name, &planted(&emu, &pot));
        let before = fs::read(&file).unwrap();
        let shown = file.display().to_string();
        let mut argv: Vec<&str> = flags.iter().map(String::as_str).collect();
        argv.extend(["--clients", "claude-code"]);
        argv.extend(extra.iter().copied());
        let out = d
            .run(&argv, &pairs(&env), Some("emulator-secret-token\n"))
            .await;
        let ctx = format!("{file_name}: {}", text_of(&out));
        assert_eq!(out.status.code(), Some(2), "{ctx}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is not trusted"), "{ctx}");
        assert!(err.contains("Nothing was written"), "{ctx}");
        assert!(
            err.contains(&format!("nandi-proxmox-mcp trust {shown}")),
            "{ctx}"
        );
        assert!(err.contains("--name"), "{ctx}");
        assert!(!err.contains("emulator-secret-token"), "{ctx}");
        // Nothing changed, nothing was trusted, no client was pointed at the file.
        assert_eq!(fs::read(&file).unwrap(), before, "{ctx}");
        let store = d
            .home
            .path()
            .join("xdg-state/nandi-proxmox-mcp/trusted-files.json");
        assert!(!store.exists(), "{ctx}");
        assert!(!d.cwd.path().join(".mcp.json").exists(), "{ctx}");
        // Neither doctor nor run picks the planted file up.
        let (report, _, _) = doctor(&d, &env).await;
        assert_eq!(item(&report, "config")["status"], "RED", "{report:#}");
        assert!(detail(&report, "config").contains("is not trusted"));
        // `run` starts without a connection (every call says PROXMOX_NOT_CONFIGURED).
        let out = d.run(&["run"], &pairs(&env), None).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no Proxmox connection configured"), "{err}");
        assert!(err.contains(&format!("{shown} is not trusted")), "{err}");
        pot.assert_untouched(file_name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_updates_a_project_file_the_user_trusted_and_refuses_it_once_changed() {
    let emu = common::emulator().await;
    let pot = Honeypot::start().await;
    let d = CliDirs::new();
    let env = xdg_env(&d, &[]);
    let file = write_instance(d.cwd.path(), "lab.json", &planted(&emu, &pot));
    // Reviewed and trusted: setup updates it and keeps the keys the person accepted.
    trust(&d, &env, &file).await;
    let mut argv: Vec<String> = common::setup_flags(&emu);
    argv.extend(["--clients", "claude-code", "--name", "lab"].map(String::from));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = d
        .run(&argv, &pairs(&env), Some("emulator-secret-token\n"))
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let written: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["sshNodes"]["pve2"]["host"], "127.0.0.1");
    // Edited since: refused again until it is reviewed and trusted anew.
    let mut body = written.clone();
    body["sshUser"] = "someone-else".into();
    fs::write(&file, body.to_string()).unwrap();
    let out = d
        .run(&argv, &pairs(&env), Some("emulator-secret-token\n"))
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("changed since you trusted it"),
        "{}",
        text_of(&out)
    );
    let now: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(now, body, "the changed file was left alone");
    pot.assert_untouched("trusted project file");
}

/// The CA file a trusted project file names is part of the trust: swapping it (another
/// certificate, the "attacker's" CA) makes the file ignored, naming the CA file and the command
/// that trusts it again; a trust recorded before CA files were hashed is not enough either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swapped_ca_file_or_a_trust_without_its_hash_loses_the_trust() {
    let emu = common::emulator().await;
    let attacker = common::emulator().await;
    let d = CliDirs::new();
    let env = xdg_env(&d, &[]);
    let ca = d.cwd.path().join("proxmox-ca.pem");
    fs::write(&ca, emu.cert_pem().unwrap()).unwrap();
    let mut body = emulator_file(&emu);
    let m = body.as_object_mut().unwrap();
    m.remove("tlsFingerprint");
    m.insert("tlsCaFile".into(), "./proxmox-ca.pem".into());
    let file = write_instance(d.cwd.path(), "lab.json", &body);
    let shown = file.display().to_string();
    let trust_again = format!("run `nandi-proxmox-mcp trust {shown}` again");
    let ca_shown = "./proxmox-ca.pem";

    let out = trust(&d, &env, &file).await;
    let ca_canonical = fs::canonicalize(&ca).unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("tlsCaFile {}", ca_canonical.display())),
        "{}",
        text_of(&out)
    );
    let store = d
        .home
        .path()
        .join("xdg-state/nandi-proxmox-mcp/trusted-files.json");
    let stored: Value = serde_json::from_str(&fs::read_to_string(&store).unwrap()).unwrap();
    let named = &stored["files"][0]["namedFiles"][0];
    assert_eq!(named["key"], "tlsCaFile", "{stored:#}");
    assert_eq!(named["path"], ca_canonical.to_str().unwrap());
    let pem_sha = nandi_proxmox_mcp::config::trust::sha256_hex(emu.cert_pem().unwrap().as_bytes());
    assert_eq!(named["sha256"], pem_sha.as_str());
    let (report, _, _) = doctor(&d, &env).await;
    assert!(detail(&report, "config").contains("trusted project file"));
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");

    // The CA swapped, the instance file untouched: ignored, the CA file named.
    fs::write(&ca, attacker.cert_pem().unwrap()).unwrap();
    let (report, stderr, out) = doctor(&d, &env).await;
    assert!(!out.status.success());
    assert!(
        !detail(&report, "config").contains("trusted project file"),
        "{report:#}"
    );
    assert!(
        stderr.contains(&format!(
            "the file its `tlsCaFile` names, {ca_shown}, changed since you trusted it"
        )) && stderr.contains(&trust_again),
        "{stderr}"
    );
    assert!(
        attacker.requests().is_empty(),
        "nothing reached the other side"
    );
    let out = d.run(&["trust", "--list"], &pairs(&env), None).await;
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("NAMED FILE CHANGED") && listed.contains(ca_shown),
        "{listed}"
    );

    // Back to the reviewed CA, but the record predates CA hashes: still not trusted.
    fs::write(&ca, emu.cert_pem().unwrap()).unwrap();
    let (report, _, _) = doctor(&d, &env).await;
    assert!(detail(&report, "config").contains("trusted project file"));
    let mut old = stored.clone();
    old["files"][0]
        .as_object_mut()
        .unwrap()
        .remove("namedFiles");
    fs::write(&store, old.to_string()).unwrap();
    let (report, stderr, _) = doctor(&d, &env).await;
    assert!(
        !detail(&report, "config").contains("trusted project file"),
        "{report:#}"
    );
    assert!(
        stderr.contains("was not recorded when the instance file was trusted")
            && stderr.contains(&trust_again),
        "{stderr}"
    );
    trust(&d, &env, &file).await;
    let (report, _, _) = doctor(&d, &env).await;
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");

    // A CA file that cannot be read is never trusted.
    fs::remove_file(&ca).unwrap();
    let out = d
        .run(&["trust", file.to_str().unwrap()], &pairs(&env), None)
        .await;
    assert!(!out.status.success(), "{}", text_of(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("`tlsCaFile` names ./proxmox-ca.pem, which cannot be read"),
        "{}",
        text_of(&out)
    );
}
