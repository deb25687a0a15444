//! The node-access tools (shell run, CLI run, node files, cloud-init snippets) through the
//! built binary against the emulator and a real OpenSSH `sshd` (with its SFTP subsystem)
//! on loopback: approval, argv kept whole, metacharacters as data, caps, path rules and
//! symlink refusals with nothing run or written.
//!
//! Ignored when `sshd` is not installed, except under `CI=true` (see build.rs).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::sshd::Sshd;
use common::{McpProcess, env_for, envelope};
use nandi_proxmox_mcp::pve::{ApiRequest, Client, Connection, TlsMode};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const TOOLS: [&str; 7] = [
    "pve_node_shell_run",
    "pve_cli_run",
    "pve_node_file_read",
    "pve_node_file_write",
    "pve_get_cloudinit_snippet",
    "pve_put_cloudinit_snippet",
    "pve_delete_cloudinit_snippet",
];

/// A `qm` stub on the sshd PATH recording its argv (NUL-separated) like the other stubs.
fn install_qm_stub(sshd: &Sshd) {
    let script = format!(
        "#!/bin/bash\nlog=\"{dir}/calls/qm\"\nmkdir -p \"$log\"\nprintf '%s\\0' \"$@\" > \"$log/$(date +%s%N).$$\"\necho \"qm ran with $# args\"\n",
        dir = sshd.dir().display()
    );
    let path = sshd.dir().join("bin/qm");
    std::fs::write(&path, script).unwrap();
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&path)
        .status()
        .unwrap();
}

fn ssh_env(emu: &Emulator, sshd: &Sshd, tier: &str, module: &str) -> Vec<(String, String)> {
    let mut env = env_for(emu);
    env.extend(sshd.server_vars(&sshd.trusted_known_hosts()));
    for (k, v) in [
        ("PVE_ACCESS_TIER", tier),
        ("PVE_MODULE_MODE", module),
        // These tests exercise the tools' own 1 MiB caps, above the default output cap.
        ("PVE_OUTPUT_CAP_BYTES", "4194304"),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    env
}

async fn emulator() -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_millis(100),
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator starts")
}

async fn server(emu: &Emulator, sshd: &Sshd) -> McpProcess {
    let mut mcp = McpProcess::spawn(&["run"], &ssh_env(emu, sshd, "full", "advanced"));
    mcp.initialize().await;
    mcp
}

async fn ok_data(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{tool}: {env}");
    env["data"].clone()
}

async fn error_of(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    assert_eq!(result["isError"], true, "{tool}: {result}");
    envelope(&result)["error"].clone()
}

fn files_dir(sshd: &Sshd) -> PathBuf {
    let dir = sshd.dir().join("files");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn none_is_listed_by_default_and_all_are_at_full_advanced() {
    let sshd = Sshd::start();
    let emu = emulator().await;
    for (tier, module, listed) in [
        ("read-only", "core", false),
        ("full", "core", false),
        ("read-only", "advanced", false),
        ("full", "advanced", true),
    ] {
        let mut mcp = McpProcess::spawn(&["run"], &ssh_env(&emu, &sshd, tier, module));
        mcp.initialize().await;
        let tools = mcp.list_tools().await;
        for name in TOOLS {
            let tool = tools.iter().find(|t| t["name"] == name);
            assert_eq!(tool.is_some(), listed, "{name} at {tier}/{module}");
            if let Some(tool) = tool
                && name != "pve_node_file_read"
                && name != "pve_get_cloudinit_snippet"
            {
                assert_eq!(tool["annotations"]["destructiveHint"], true, "{name}");
                assert_eq!(
                    tool["_meta"]["anthropic/requiresUserInteraction"], true,
                    "{name}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn commands_need_approval_keep_argv_whole_and_cap_output() {
    let sshd = Sshd::start();
    install_qm_stub(&sshd);
    let emu = emulator().await;
    let mut mcp = server(&emu, &sshd).await;
    let marker = sshd.dir().join("pwned");
    let touch = format!("touch {}", marker.display());

    let error = error_of(
        &mut mcp,
        "pve_node_shell_run",
        json!({"node": "pve01", "command": touch}),
    )
    .await;
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED");
    assert!(!marker.exists(), "ran without approval");

    let data = ok_data(
        &mut mcp,
        "pve_node_shell_run",
        json!({"node": "pve01", "command": "echo out; echo err >&2; exit 3", "confirm": true}),
    )
    .await;
    assert_eq!(
        (
            data["exitCode"].clone(),
            data["stdout"].clone(),
            data["stderr"].clone()
        ),
        (json!(3), json!("out\n"), json!("err\n"))
    );
    assert_eq!(data["truncated"], false);
    assert_eq!(data["route"], "direct");
    let data = ok_data(
        &mut mcp,
        "pve_node_shell_run",
        json!({"node": "pve01", "command": "head -c 3000000 /dev/zero | tr '\\0' a", "confirm": true}),
    )
    .await;
    assert_eq!(data["truncated"], true);
    assert_eq!(data["stdout"].as_str().unwrap().len(), 1024 * 1024);

    // The CLI: only allow-listed binaries; every argv element arrives as one literal word.
    for argv in [
        json!(["bash", "-c", touch]),
        json!(["/usr/sbin/qm", "list"]),
        json!(["qm;id"]),
    ] {
        let error = error_of(
            &mut mcp,
            "pve_cli_run",
            json!({"node": "pve01", "argv": argv, "confirm": true}),
        )
        .await;
        assert_eq!(error["code"], "NODE_ACCESS_REFUSED", "{argv}: {error}");
    }
    assert!(sshd.calls("qm").is_empty() && !marker.exists());
    let hostile = format!("$({touch}); `{touch}` | {touch} && '\"x");
    let data = ok_data(
        &mut mcp,
        "pve_cli_run",
        json!({"node": "pve01", "argv": ["qm", "set", "101", "--description", hostile], "confirm": true}),
    )
    .await;
    assert_eq!(data["exitCode"], 0);
    assert_eq!(data["stdout"], "qm ran with 4 args\n");
    assert_eq!(
        sshd.calls("qm"),
        vec![vec![
            "set".to_owned(),
            "101".into(),
            "--description".into(),
            hostile
        ]]
    );
    assert!(!marker.exists(), "a metacharacter was interpreted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn node_files_follow_the_path_rules_caps_and_refuse_symlinks() {
    let sshd = Sshd::start();
    let emu = emulator().await;
    let mut mcp = server(&emu, &sshd).await;
    let dir = files_dir(&sshd);
    let file = dir.join("a.txt");
    let text = "hello $(id) `x` ; | & \n";

    let error = error_of(
        &mut mcp,
        "pve_node_file_write",
        json!({"node": "pve01", "path": p(&file), "content": text}),
    )
    .await;
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED");
    assert!(!file.exists());
    let data = ok_data(
        &mut mcp,
        "pve_node_file_write",
        json!({"node": "pve01", "path": p(&file), "content": text, "confirm": true}),
    )
    .await;
    assert_eq!(
        (data["bytesWritten"].clone(), data["created"].clone()),
        (json!(text.len()), json!(true))
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let data = ok_data(
        &mut mcp,
        "pve_node_file_read",
        json!({"confirm": true, "node": "pve01", "path": p(&file)}),
    )
    .await;
    assert_eq!(
        (
            data["content"].clone(),
            data["encoding"].clone(),
            data["truncated"].clone()
        ),
        (json!(text), json!("utf8"), json!(false))
    );
    let data = ok_data(
        &mut mcp,
        "pve_node_file_read",
        json!({"confirm": true, "node": "pve01", "path": p(&file), "maxBytes": 5}),
    )
    .await;
    assert_eq!(
        (data["content"].clone(), data["truncated"].clone()),
        (json!("hello"), json!(true))
    );

    // Caps: reads stop at 1 MiB, writes over 1 MiB are refused before connecting.
    let big = dir.join("big.bin");
    std::fs::write(&big, vec![0xffu8; 1_500_000]).unwrap();
    let data = ok_data(
        &mut mcp,
        "pve_node_file_read",
        json!({"confirm": true, "node": "pve01", "path": p(&big)}),
    )
    .await;
    assert_eq!(
        (
            data["bytesReturned"].clone(),
            data["size"].clone(),
            data["truncated"].clone(),
            data["encoding"].clone()
        ),
        (
            json!(1_048_576),
            json!(1_500_000),
            json!(true),
            json!("base64")
        )
    );
    let too_big = dir.join("too-big");
    let error = error_of(&mut mcp, "pve_node_file_write", json!({"node": "pve01", "path": p(&too_big), "content": "x".repeat(1_048_577), "confirm": true})).await;
    assert_eq!(error["code"], "NODE_ACCESS_REFUSED");
    assert!(!too_big.exists());

    // Path rules: refused before any SSH connection, nothing written.
    let base = p(&dir);
    for path in [
        "relative/x".to_owned(),
        format!("{base}/../files/x"),
        format!("{base}//x"),
        format!("{base}/./x"),
        format!("{base}/x\n"),
        format!("{base}/"),
    ] {
        let error = error_of(
            &mut mcp,
            "pve_node_file_write",
            json!({"node": "pve01", "path": path, "content": "x", "confirm": true}),
        )
        .await;
        assert!(
            error["code"] == "NODE_ACCESS_REFUSED" || error["code"] == "TOOL_INPUT_REJECTED",
            "{path:?}: {error}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "only a.txt and big.bin"
    );

    // Symlinks: a linked file and a linked directory are refused, the target untouched.
    let outside = sshd.dir().join("outside.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    let error = error_of(
        &mut mcp,
        "pve_node_file_read",
        json!({"confirm": true, "node": "pve01", "path": p(&dir.join("link"))}),
    )
    .await;
    assert_eq!(error["code"], "REMOTE_FILE_ERROR");
    assert!(
        error["message"].as_str().unwrap().contains("symbolic link"),
        "{error}"
    );
    let error = error_of(
        &mut mcp,
        "pve_node_file_write",
        json!({"node": "pve01", "path": p(&dir.join("link")), "content": "owned", "confirm": true}),
    )
    .await;
    assert_eq!(error["code"], "REMOTE_FILE_ERROR");
    std::os::unix::fs::symlink(sshd.dir(), dir.join("ldir")).unwrap();
    let error = error_of(&mut mcp, "pve_node_file_write", json!({"node": "pve01", "path": format!("{base}/ldir/outside.txt"), "content": "owned", "confirm": true})).await;
    assert!(
        error["message"].as_str().unwrap().contains("resolves to"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn snippets_live_only_in_the_storage_snippet_dir() {
    let sshd = Sshd::start();
    let emu = emulator().await;
    let root = files_dir(&sshd);
    std::fs::create_dir_all(root.join("snippets")).unwrap();
    let opts = EmulatorOptions::default();
    let client = Client::new(&Connection {
        host: emu.host().into(),
        port: emu.port(),
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: TlsMode::Fingerprint(emu.cert_fingerprint().unwrap()),
    })
    .unwrap();
    // The test's own setup, as an operator would do it: cleared for any effect.
    let created = nandi_proxmox_mcp::effects::with_clearance(
        nandi_proxmox_mcp::effects::EffectSet::ANY,
        None,
        client.call(
            ApiRequest::post("/storage")
                .param("storage", "snip")
                .param("type", "dir")
                .param("path", p(&root))
                .param("content", "iso,snippets"),
            &CancellationToken::new(),
        ),
    )
    .await;
    created.result.expect("storage created");
    let mut mcp = server(&emu, &sshd).await;
    let body = "#cloud-config\nruncmd:\n  - echo $(id) > /tmp/x\n";
    let args = |name: &str| json!({"node": "pve01", "storage": "snip", "name": name});

    let mut put = args("user-data.yaml");
    put["content"] = json!(body);
    let error = error_of(&mut mcp, "pve_put_cloudinit_snippet", put.clone()).await;
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED");
    put["confirm"] = json!(true);
    let data = ok_data(&mut mcp, "pve_put_cloudinit_snippet", put).await;
    assert_eq!(data["volid"], "snip:snippets/user-data.yaml");
    let on_disk = root.join("snippets/user-data.yaml");
    assert_eq!(std::fs::read_to_string(&on_disk).unwrap(), body);
    let mut get = args("user-data.yaml");
    get["confirm"] = json!(true);
    let data = ok_data(&mut mcp, "pve_get_cloudinit_snippet", get).await;
    assert_eq!(data["content"], body);

    for name in ["../user-data.yaml", ".hidden", "a/b", "x;y"] {
        let mut bad = args(name);
        bad["content"] = json!("x");
        bad["confirm"] = json!(true);
        let error = error_of(&mut mcp, "pve_put_cloudinit_snippet", bad).await;
        assert_eq!(error["code"], "TOOL_INPUT_REJECTED", "{name}: {error}");
    }
    // local-lvm is block storage: no path, no snippets.
    let mut wrong_store = json!({"node": "pve01", "storage": "local-lvm", "name": "x.yaml", "content": "x", "confirm": true});
    let error = error_of(&mut mcp, "pve_put_cloudinit_snippet", wrong_store.clone()).await;
    assert_eq!(error["code"], "NODE_ACCESS_REFUSED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("does not hold snippets"),
        "{error}"
    );
    wrong_store["storage"] = json!("nosuch");
    let error = error_of(&mut mcp, "pve_put_cloudinit_snippet", wrong_store).await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{error}"
    );
    assert_eq!(std::fs::read_dir(root.join("snippets")).unwrap().count(), 1);

    let mut delete = args("user-data.yaml");
    delete["confirm"] = json!(true);
    let data = ok_data(&mut mcp, "pve_delete_cloudinit_snippet", delete.clone()).await;
    assert_eq!(data["removed"], true);
    assert!(!on_disk.exists());
    let error = error_of(&mut mcp, "pve_delete_cloudinit_snippet", delete).await;
    assert_eq!(error["code"], "REMOTE_FILE_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn input_rules_refuse_before_any_ssh_connection() {
    let sshd = Sshd::start();
    let emu = emulator().await;
    // Point the server at a port where nothing listens: any SSH attempt would fail with
    // SSH_CONNECTION_FAILED, so NODE_ACCESS_REFUSED proves the rule fired first.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut env = ssh_env(&emu, &sshd, "full", "advanced");
    for (k, v) in env.iter_mut() {
        if k == "PROXMOX_SSH_PORT" {
            *v = closed.to_string();
        }
    }
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    let cases = [
        (
            "pve_cli_run",
            json!({"node": "pve01", "argv": ["sh", "-c", "id"], "confirm": true}),
        ),
        (
            "pve_node_shell_run",
            json!({"node": "pve01", "command": "   ", "confirm": true}),
        ),
        (
            "pve_node_file_read",
            json!({"confirm": true, "node": "pve01", "path": "/etc/../etc/shadow"}),
        ),
        (
            "pve_node_file_write",
            json!({"node": "pve01", "path": "/tmp/x", "content": "!!", "encoding": "base64", "confirm": true}),
        ),
        (
            "pve_put_cloudinit_snippet",
            json!({"node": "pve01", "storage": "local-lvm", "name": "a.yaml", "content": "x", "confirm": true}),
        ),
    ];
    for (tool, args) in cases {
        let error = error_of(&mut mcp, tool, args.clone()).await;
        assert_eq!(
            error["code"], "NODE_ACCESS_REFUSED",
            "{tool} {args}: {error}"
        );
    }
    // A valid call does try SSH, and fails to connect: the port really is closed.
    let error = error_of(
        &mut mcp,
        "pve_node_file_read",
        json!({"confirm": true, "node": "pve01", "path": "/etc/hostname"}),
    )
    .await;
    assert_eq!(error["code"], "SSH_CONNECTION_FAILED", "{error}");
}
