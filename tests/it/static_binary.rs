//! The fully static Linux x86_64 binary (`scripts/static-binary`: glibc with `+crt-static`,
//! rustls, no OpenSSL) run in an empty root — a fresh directory holding nothing but the binary
//! (no /lib, no /etc, no /dev), entered with chroot as root: `file` and `ldd` call it static,
//! `tools --json` lists what the test build lists, `run --demo` answers `initialize`,
//! `tools/list` and a call over stdio, and `run` reaches a Proxmox API at an IP address over
//! HTTPS with a pinned certificate. What it cannot do there is pinned down too: resolve a host
//! name without /etc/hosts or /etc/resolv.conf, or trust a CA without a CA file
//! (docs/RELEASE.md).
//!
//! Building the binary takes minutes and chroot needs root, so every check here is ignored by
//! default; `.ci/run` runs them as root (after probing that chroot works), or by hand:
//!
//!     sudo -E cargo test --test it static_binary:: -- --ignored
//!
//! `NANDI_STATIC_BIN=path` tests a binary built before; otherwise `scripts/static-binary`
//! builds (or finds up to date) `target/static/x86_64-unknown-linux-gnu/release/…`.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use common::{McpProcess, emulator, env_for, envelope};
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The static binary: `NANDI_STATIC_BIN`, else built once by `scripts/static-binary`.
fn static_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(path) = std::env::var_os("NANDI_STATIC_BIN") {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "NANDI_STATIC_BIN={} is no file",
                path.display()
            );
            return path;
        }
        let out = Command::new("bash")
            .arg(root().join("scripts/static-binary"))
            .current_dir(root())
            .stderr(Stdio::inherit())
            .output()
            .expect("bash runs scripts/static-binary");
        assert!(out.status.success(), "scripts/static-binary failed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().expect("the script prints the path");
        root().join(last.trim())
    })
}

/// chroot(2) needs root (CAP_SYS_CHROOT); these checks are never skipped silently.
fn require_root() {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "the empty-root checks enter the root with chroot, which needs root: run them as root \
         (.ci/run does)"
    );
}

fn chroot_command() -> PathBuf {
    [
        "/usr/sbin/chroot",
        "/sbin/chroot",
        "/usr/bin/chroot",
        "/bin/chroot",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .expect("chroot (coreutils) is installed")
}

/// A temporary directory that holds only the static binary, at `/nandi-proxmox-mcp`.
struct EmptyRoot {
    dir: tempfile::TempDir,
}

impl EmptyRoot {
    fn new() -> EmptyRoot {
        require_root();
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::copy(static_binary(), dir.path().join("nandi-proxmox-mcp")).expect("copy");
        let entries: Vec<_> = std::fs::read_dir(dir.path())
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(entries, ["nandi-proxmox-mcp"], "nothing but the binary");
        EmptyRoot { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Adds `/relative` with `text` (the tests that give the root an /etc).
    fn add(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    /// The arguments of `chroot ROOT /nandi-proxmox-mcp ARGS…`.
    fn argv<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut argv = vec![
            self.path().to_str().expect("UTF-8 temp path"),
            "/nandi-proxmox-mcp",
        ];
        argv.extend_from_slice(args);
        argv
    }

    /// Runs the binary in the root with only `env` (HOME=/), stdin closed.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(chroot_command())
            .args(self.argv(args))
            .env_clear()
            .env("HOME", "/")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .expect("chroot runs")
    }

    /// The server in the root over stdio (HOME=/, the given environment).
    fn spawn(&self, args: &[&str], env: &[(String, String)]) -> McpProcess {
        let mut env = env.to_vec();
        env.push(("HOME".into(), "/".into()));
        McpProcess::spawn_named(chroot_command(), &self.argv(args), &env)
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
#[ignore = "builds the static glibc binary (minutes): cargo test --test it static_binary:: -- --ignored (.ci/run runs it)"]
fn file_and_ldd_call_the_binary_static() {
    let bin = static_binary();
    let file = Command::new("file")
        .arg("-L")
        .arg(bin)
        .output()
        .expect("file runs");
    let kind = String::from_utf8_lossy(&file.stdout);
    assert!(
        kind.contains("static-pie linked") || kind.contains("statically linked"),
        "{kind}"
    );
    let ldd = Command::new("ldd").arg(bin).output().expect("ldd runs");
    let said = text(&ldd);
    assert!(
        said.contains("statically linked") || said.contains("not a dynamic executable"),
        "ldd: {said}"
    );
    assert!(!said.contains("=>"), "ldd lists libraries: {said}");
    let size = std::fs::metadata(bin).expect("metadata").len();
    eprintln!(
        "static binary {}: {size} bytes; {}",
        bin.display(),
        kind.trim()
    );
}

#[test]
#[ignore = "builds the static glibc binary (minutes) and needs root for chroot: cargo test --test it static_binary:: -- --ignored (.ci/run runs it)"]
fn tools_json_in_an_empty_root_lists_what_the_test_build_lists() {
    let empty = EmptyRoot::new();
    let inside = empty.run(&["tools", "--json"], &[]);
    assert!(inside.status.success(), "{}", text(&inside));
    let inside: Value = serde_json::from_slice(&inside.stdout).expect("JSON");
    let home = tempfile::tempdir().expect("home");
    let outside = Command::new(common::binary())
        .args(["tools", "--json"])
        .env_clear()
        .env("HOME", home.path())
        .output()
        .expect("test build runs");
    assert!(outside.status.success(), "{}", text(&outside));
    let outside: Value = serde_json::from_slice(&outside.stdout).expect("JSON");
    assert_eq!(
        inside, outside,
        "same catalog from the static build in an empty root"
    );
    let tools = inside["tools"].as_array().expect("tools");
    assert_eq!(inside["toolCount"], json!(tools.len()));
    assert!(tools.iter().any(|t| t["name"] == "pve_list_nodes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "builds the static glibc binary (minutes) and needs root for chroot: cargo test --test it static_binary:: -- --ignored (.ci/run runs it)"]
async fn run_demo_answers_mcp_over_stdio_in_an_empty_root() {
    let empty = EmptyRoot::new();
    let mut mcp = empty.spawn(&["run", "--demo"], &[]);
    let init = mcp.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "nandi-proxmox-mcp");
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    let tools = mcp.list_tools().await;
    assert!(
        tools.iter().any(|t| t["name"] == "pve_list_nodes"),
        "{tools:?}"
    );
    // The demo's emulator is in the process, on 127.0.0.1: no name is looked up.
    let nodes = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(nodes["ok"], true, "{nodes}");
    assert_eq!(nodes["data"].as_array().map(Vec::len), Some(3), "{nodes}");
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "builds the static glibc binary (minutes) and needs root for chroot: cargo test --test it static_binary:: -- --ignored (.ci/run runs it)"]
async fn run_reaches_proxmox_at_an_ip_address_in_an_empty_root() {
    let emu = emulator().await;
    let empty = EmptyRoot::new();
    // PROXMOX_HOST=127.0.0.1 with the certificate pinned: no name service, no CA store.
    let mut mcp = empty.spawn(&["run"], &env_for(&emu));
    let init = mcp.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "nandi-proxmox-mcp");
    let nodes = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(nodes["ok"], true, "{nodes}");
    assert!(
        emu.requests().iter().any(|r| r.path.contains("/nodes")),
        "the emulator was asked: {:?}",
        emu.requests()
    );
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "builds the static glibc binary (minutes) and needs root for chroot: cargo test --test it static_binary:: -- --ignored (.ci/run runs it)"]
async fn a_host_name_resolves_in_an_empty_root_only_once_etc_hosts_is_given() {
    // `.invalid` (RFC 6761) never resolves through DNS, whatever this machine's resolver is.
    const NAME: &str = "pve.static-binary.invalid";
    let emu = emulator().await;
    let mut env = env_for(&emu);
    for (key, value) in &mut env {
        if key == "PROXMOX_HOST" {
            *value = NAME.into();
        }
    }

    let empty = EmptyRoot::new();
    let mut mcp = empty.spawn(&["run"], &env);
    mcp.initialize().await;
    let failed = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(failed["error"]["code"], "DNS_RESOLUTION_FAILED", "{failed}");
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    assert!(mcp.shutdown().await.success());

    // The same root with /etc/hosts (and an nsswitch.conf that reads it first): glibc's
    // built-in `files` source resolves the name, and the call goes through.
    empty.add("etc/hosts", &format!("127.0.0.1 {NAME}\n"));
    empty.add("etc/nsswitch.conf", "hosts: files dns\n");
    let mut mcp = empty.spawn(&["run"], &env);
    mcp.initialize().await;
    let nodes = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(nodes["ok"], true, "{nodes}");
    assert!(!emu.requests().is_empty());
    assert!(mcp.shutdown().await.success());
}

#[test]
#[ignore = "builds the static glibc binary (minutes) and needs root for chroot: cargo test --test it static_binary:: -- --ignored (.ci/run runs it)"]
fn without_a_pin_or_a_ca_file_an_empty_root_has_no_ca_to_trust() {
    let empty = EmptyRoot::new();
    let out = empty.run(
        &["run"],
        &[
            ("PROXMOX_HOST", "127.0.0.1"),
            ("PROXMOX_USER", "mcp"),
            ("PROXMOX_REALM", "pve"),
            ("PROXMOX_TOKEN_NAME", "t"),
            (
                "PROXMOX_TOKEN_SECRET",
                "00000000-0000-0000-0000-000000000000",
            ),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("could not load the system's CA certificates")
            && said.contains("PROXMOX_TLS_FINGERPRINT"),
        "{said}"
    );
}
