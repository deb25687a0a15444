//! `setup` run as a user would: the built binary in a temporary HOME and working directory,
//! against the emulator over real HTTPS.

use crate::common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{CliDirs, setup_flags, text_of};
use nandi_proxmox_mcp::cli::clients::{ClientId, read_entry};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const SECRET: &str = "emulator-secret-token\n";
const ALL: &str = "claude-code,vscode,cursor,codex,claude-desktop";

fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

fn args<'a>(flags: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    flags
        .iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
        .collect()
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn client_files(d: &CliDirs) -> Vec<(ClientId, std::path::PathBuf)> {
    let home = d.home.path();
    vec![
        (ClientId::ClaudeCode, d.cwd.path().join(".mcp.json")),
        (ClientId::Vscode, d.cwd.path().join(".vscode/mcp.json")),
        (ClientId::Cursor, d.cwd.path().join(".cursor/mcp.json")),
        (ClientId::Codex, home.join(".codex/config.toml")),
        (
            ClientId::ClaudeDesktop,
            home.join(".config/Claude/claude_desktop_config.json"),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_setup_writes_every_client_and_doctor_is_green() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let flags = setup_flags(&emu);
    let out = d
        .run(
            &args(&flags, &["--clients", ALL, "--name", "lab-cluster"]),
            &[],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Final status: GREEN"), "{stdout}");
    let instance = d.cwd.path().join(".nandi-proxmox-mcp/lab-cluster.json");
    #[cfg(unix)]
    assert_eq!(mode(&instance), 0o600);
    let file = read_json(&instance);
    assert_eq!(file["tokenSecret"], "emulator-secret-token");
    assert_eq!(file["sshStrategy"], "disabled");
    assert!(!stdout.contains("emulator-secret-token"), "secret printed");
    let gitignore = std::fs::read_to_string(d.cwd.path().join(".gitignore")).unwrap();
    assert!(gitignore.lines().any(|l| l == ".nandi-proxmox-mcp/"));
    for (client, path) in client_files(&d) {
        let entry = read_entry(client, &path, "lab-cluster")
            .unwrap_or_else(|e| panic!("{client:?}: {e}"))
            .unwrap_or_else(|| panic!("{client:?}: no entry in {}", path.display()));
        assert_eq!(
            Path::new(&entry.command),
            common::binary().canonicalize().unwrap()
        );
        assert_eq!(entry.args, ["run"]);
        assert_eq!(entry.env["PVE_ACCESS_TIER"], "read-only");
        assert_eq!(
            Path::new(&entry.env["NANDI_PROXMOX_CONFIG"]),
            instance.as_path()
        );
    }
    let vscode = read_json(&d.cwd.path().join(".vscode/mcp.json"));
    assert_eq!(vscode["servers"]["lab-cluster"]["type"], "stdio");
    // Read-only lists no confirm-gated tool, so no ask rule is written for it.
    let rules = d.cwd.path().join(".claude/settings.json");
    assert!(!std::fs::read_to_string(&rules).is_ok_and(|r| r.contains("pve_stop_qemu_vm")));

    let out = d
        .run(&["doctor", "--name", "lab-cluster", "--json"], &[], None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "GREEN", "{report:#}");
    let items = report["items"].as_array().unwrap();
    let status_of = |check: &str| {
        items
            .iter()
            .find(|i| i["check"] == check)
            .map(|i| i["status"].clone())
    };
    for check in [
        "listNodes",
        "listVMs",
        "listContainers",
        "getNodeStatus",
        "tls",
        "permissions",
        "mcpConfig:codex",
        "mcpConfig:claude-desktop",
    ] {
        assert_eq!(
            status_of(check),
            Some(json!("GREEN")),
            "{check}: {report:#}"
        );
    }
    assert_eq!(status_of("sshBatch"), Some(json!("SKIP")));
    // Plain doctor (no --name) discovers the same instance and checks it under its real key.
    let out = d.run(&["doctor"], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[GREEN] mcpConfig:claude-code"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_secret_is_red_with_privsep_advice_and_nonzero_exit() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let flags = setup_flags(&emu);
    let out = d
        .run(
            &args(&flags, &["--clients", "claude-code"]),
            &[],
            Some("wrong-secret-0000\n"),
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Final status: RED"), "{stdout}");
    assert!(
        stdout.contains("pveum user token modify svc_mcp@pve emu --privsep 0"),
        "{stdout}"
    );
    assert!(!stdout.contains("wrong-secret-0000"));
    let out = d.run(&["doctor"], &[], None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[RED] listNodes"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_keep_other_entries_and_refuse_malformed_files() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let cwd = d.cwd.path();
    std::fs::write(
        cwd.join(".mcp.json"),
        r#"{"mcpServers":{"other":{"command":"x"}},"extra":1}"#,
    )
    .unwrap();
    std::fs::create_dir_all(cwd.join(".vscode")).unwrap();
    std::fs::write(cwd.join(".vscode/mcp.json"), "{ broken").unwrap();
    std::fs::create_dir_all(d.home.path().join(".codex")).unwrap();
    std::fs::write(
        d.home.path().join(".codex/config.toml"),
        "# mine\nmodel = \"x\"\n[mcp_servers.other]\ncommand = \"y\"\n",
    )
    .unwrap();
    let flags = setup_flags(&emu);
    let out = d
        .run(
            &args(
                &flags,
                &[
                    "--clients",
                    "claude-code,vscode,codex",
                    "--skip-connectivity",
                ],
            ),
            &[],
            Some(SECRET),
        )
        .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "malformed vscode file is RED: {}",
        text_of(&out)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join(".vscode/mcp.json")).unwrap(),
        "{ broken"
    );
    let mcp = read_json(&cwd.join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["other"]["command"], "x");
    assert_eq!(mcp["extra"], 1);
    assert!(mcp["mcpServers"]["proxmox"].is_object());
    let codex = std::fs::read_to_string(d.home.path().join(".codex/config.toml")).unwrap();
    assert!(codex.starts_with("# mine\nmodel = \"x\"\n"), "{codex}");
    assert!(codex.contains("[mcp_servers.proxmox]"), "{codex}");
    assert!(codex.contains("[mcp_servers.other]"), "{codex}");

    // Re-running keeps hand-added fields of the instance file and of our client entry.
    let instance = cwd.join(".nandi-proxmox-mcp/proxmox.json");
    let mut file = read_json(&instance);
    file["sshKeyPath"] = json!("/keys/id");
    file["sshStrategy"] = json!("hop");
    file["sshNodes"] = json!({"pve02": {"host": "10.1.1.2"}});
    std::fs::write(&instance, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    // An edited project file is trusted again before setup merges into it (as discovery needs).
    let out = d
        .run(&["trust", instance.to_str().unwrap()], &[], None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let mut mcp = mcp;
    mcp["mcpServers"]["proxmox"]["timeout"] = json!(30);
    std::fs::write(cwd.join(".mcp.json"), mcp.to_string()).unwrap();
    let out = d
        .run(
            &args(
                &flags,
                &[
                    "--clients",
                    "claude-code",
                    "--skip-connectivity",
                    "--access-tier",
                    "full",
                ],
            ),
            &[],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let file = read_json(&instance);
    assert_eq!(file["sshStrategy"], "hop");
    assert_eq!(file["sshNodes"]["pve02"]["host"], "10.1.1.2");
    #[cfg(unix)]
    assert_eq!(mode(&instance), 0o600);
    let mcp = read_json(&cwd.join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["proxmox"]["timeout"], 30);
    assert_eq!(
        mcp["mcpServers"]["proxmox"]["env"]["PVE_ACCESS_TIER"],
        "full"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_writes_nothing() {
    let d = CliDirs::new();
    for extra in [
        &["--access-tier", "admin"][..],
        &["--module-mode", "everything"][..],
        &["--clients", "emacs"][..],
        &["--scope", "global"][..],
    ] {
        let mut a = vec![
            "setup",
            "--proxmox-host",
            "h",
            "--proxmox-user",
            "u",
            "--token-name",
            "t",
            "--token-secret-stdin",
            "--skip-connectivity",
        ];
        a.extend_from_slice(extra);
        let out = d.run(&a, &[], Some(SECRET)).await;
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", text_of(&out));
    }
    let out = d.run(&["setup", "--proxmox-host", "h"], &[], None).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token-name"));
    assert_eq!(
        std::fs::read_dir(d.cwd.path()).unwrap().count(),
        0,
        "nothing written"
    );
    let out = d
        .run(&["setup", "--print-config", "--name", "Lab"], &[], None)
        .await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "a name setup would change is refused"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("use `--name lab`"));
    let out = d
        .run(&["setup", "--print-config", "--name", "lab"], &[], None)
        .await;
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "\"mcpServers\"",
        "\"servers\"",
        "[mcp_servers.lab]",
        "PVE_ACCESS_TIER=read-only",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert_eq!(
        std::fs::read_dir(d.cwd.path()).unwrap().count(),
        0,
        "print-config writes nothing"
    );
    let out = d
        .run(
            &[
                "setup",
                "--proxmox-host",
                "h",
                "--proxmox-user",
                "u",
                "--token-name",
                "t",
                "--token-secret",
                "0123456789ab",
                "--skip-connectivity",
                "--clients",
                "cursor",
            ],
            &[],
            None,
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shell history"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wizard_runs_from_standard_input() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let answers = format!(
        "y\n2\n{}\n{}\nsvc_mcp\npve\nemu\nemulator-secret-token\ny\ny\nn\n",
        emu.host(),
        emu.port()
    );
    let out = d
        .run(
            &["setup", "--name", "wiz", "--clients", "claude-code"],
            &[],
            Some(&answers),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let file = read_json(&d.cwd.path().join(".nandi-proxmox-mcp/wiz.json"));
    assert_eq!(
        file["tlsFingerprint"],
        json!(emu.cert_fingerprint().unwrap())
    );
    assert_eq!(file["sshStrategy"], "disabled");
    let mcp = read_json(&d.cwd.path().join(".mcp.json"));
    assert_eq!(
        mcp["mcpServers"]["wiz"]["env"]["PVE_ACCESS_TIER"],
        "read-execute"
    );
    // Input that ends early aborts without writing.
    let d2 = CliDirs::new();
    let out = d2.run(&["setup"], &[], Some("y\n1\n")).await;
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_dir(d2.cwd.path()).unwrap().count(), 0);
    // No token yet: bootstrap advice and exit 1.
    let out = d2.run(&["setup"], &[], Some("n\n")).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("bootstrap"));
}

async fn initialize_as_client(
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    home: &Path,
) -> Value {
    let mut child = tokio::process::Command::new(command)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .envs(env)
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the configured command starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"pve_list_nodes\",\"arguments\":{}}}\n").await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    let init: Value = serde_json::from_str(&first).unwrap();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    serde_json::from_str(&second).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_entry_starts_the_server() {
    let emu = Emulator::start(EmulatorOptions::default()).await.unwrap();
    let d = CliDirs::new();
    let flags = setup_flags(&emu);
    let out = d
        .run(
            &args(&flags, &["--clients", ALL, "--name", "lab"]),
            &[],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    for (client, path) in client_files(&d) {
        let entry = read_entry(client, &path, "lab").unwrap().unwrap();
        let called =
            initialize_as_client(&entry.command, &entry.args, &entry.env, d.home.path()).await;
        let text = called["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(text.contains("pve01"), "{client:?}: {called}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_scope_writes_user_files_only() {
    let d = CliDirs::new();
    let out = d
        .run(
            &[
                "setup",
                "--scope",
                "user",
                "--proxmox-host",
                "pve.example",
                "--proxmox-user",
                "mcp",
                "--token-name",
                "nandi",
                "--token-secret-stdin",
                "--skip-connectivity",
                "--clients",
                "claude-code,vscode,cursor",
                "--name",
                "home-lab",
                "--access-tier",
                "full",
            ],
            &[],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert_eq!(
        std::fs::read_dir(d.cwd.path()).unwrap().count(),
        0,
        "nothing in the project folder"
    );
    let home = d.home.path();
    let instance = home.join(".nandi-proxmox-mcp/home-lab.json");
    #[cfg(unix)]
    assert_eq!(mode(&instance), 0o600);
    for (client, path) in [
        (ClientId::ClaudeCode, home.join(".claude.json")),
        (ClientId::Vscode, home.join(".config/Code/User/mcp.json")),
        (ClientId::Cursor, home.join(".cursor/mcp.json")),
    ] {
        let entry = read_entry(client, &path, "home-lab").unwrap().unwrap();
        assert_eq!(
            Path::new(&entry.env["NANDI_PROXMOX_CONFIG"]),
            instance.as_path()
        );
    }
    let rules = read_json(&home.join(".claude/settings.json"));
    assert!(rules["permissions"]["ask"].as_array().unwrap().len() > 5);
    let list = d.run(&["list"], &[], None).await;
    assert!(String::from_utf8_lossy(&list.stdout).contains("scope:  user"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unverifiable_certificate_offers_the_fingerprint_to_pin() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let flags: Vec<String> = setup_flags(&emu)
        .into_iter()
        .filter(|f| {
            f != "--tls-fingerprint" && Some(f.as_str()) != emu.cert_fingerprint().as_deref()
        })
        .collect();
    let out = d
        .run(&args(&flags, &["--clients", "cursor"]), &[], Some(SECRET))
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[RED] listNodes: TLS failed"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "--tls-fingerprint {}",
            emu.cert_fingerprint().unwrap()
        )),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launcher_is_the_bare_name_when_path_finds_this_binary() {
    let d = CliDirs::new();
    let bin = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(common::binary(), bin.path().join("nandi-proxmox-mcp")).unwrap();
    #[cfg(not(unix))]
    return;
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = d
        .run(
            &[
                "setup",
                "--proxmox-host",
                "h",
                "--proxmox-user",
                "u",
                "--token-name",
                "t",
                "--token-secret-stdin",
                "--skip-connectivity",
                "--clients",
                "claude-code",
            ],
            &[("PATH", &path)],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let mcp = read_json(&d.cwd.path().join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["proxmox"]["command"], "nandi-proxmox-mcp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_named_after_the_cluster_and_requested_clients_checked() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let flags = setup_flags(&emu);
    let out = d
        .run(
            &args(&flags, &["--clients", "claude-code"]),
            &[],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        d.cwd
            .path()
            .join(".nandi-proxmox-mcp/emu-cluster.json")
            .is_file()
    );
    let out = d
        .run(
            &[
                "doctor",
                "--clients",
                "claude-code,cursor",
                "--check",
                "mcp-config",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[GREEN] mcpConfig:claude-code"), "{text}");
    assert!(
        text.contains("[RED] mcpConfig:cursor: no Cursor configuration file exists"),
        "{text}"
    );
    // A broken entry (command gone) is RED.
    let mcp_path = d.cwd.path().join(".mcp.json");
    let mut mcp = read_json(&mcp_path);
    mcp["mcpServers"]["emu-cluster"]["command"] = json!("/nonexistent/nandi-proxmox-mcp");
    std::fs::write(&mcp_path, mcp.to_string()).unwrap();
    let out = d.run(&["doctor", "--check", "mcp-config"], &[], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("is not an executable file"));
}
