//! The audit trail over the real binary: what a change, a refusal and a read leave in the
//! file; `audit verify` on an intact file and on each kind of tampering; fail-closed refusal
//! (nothing reaches Proxmox) when the file cannot be written; `off`; the default location;
//! two server processes sharing one file.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{McpProcess, binary, emulator, env_for, envelope, with_policy};
use pve_emulator::Emulator;
use serde_json::{Value, json};

const PASSWORD: &str = "audit-canary-pw-58c1";

fn server_env(emu: &Emulator, audit: Option<&Path>) -> Vec<(String, String)> {
    let mut env = with_policy(
        env_for(emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    if let Some(path) = audit {
        env.push(("PVE_AUDIT_LOG".into(), path.display().to_string()));
    }
    env
}

async fn server(env: &[(String, String)]) -> McpProcess {
    let mut mcp = McpProcess::spawn(&["run"], env);
    mcp.initialize().await;
    mcp
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `nandi-proxmox-mcp audit verify FILE` → (exit code, stdout + stderr).
fn verify(path: &Path) -> (i32, String) {
    let out = Command::new(binary())
        .args(["audit", "verify"])
        .arg(path)
        .env_clear()
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Five calls: a change with a task, a gate refusal, a read (not recorded), a change with a
/// secret argument, a change Proxmox rejects.
async fn record_five(mcp: &mut McpProcess) {
    let start = envelope(
        &mcp.call(
            "pve_start_qemu_vm",
            json!({"node": "pve03", "vmid": 102, "confirm": true}),
        )
        .await,
    );
    assert_eq!(start["ok"], true, "{start}");
    let refused = envelope(
        &mcp.call("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 101}))
            .await,
    );
    assert_eq!(refused["error"]["code"], "CONFIRMATION_REQUIRED");
    let read = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(read["ok"], true);
    let user = envelope(
        &mcp.call(
            "pve_create_user",
            json!({"userid": "audit@pve", "password": PASSWORD, "confirm": true}),
        )
        .await,
    );
    assert_eq!(user["ok"], true, "{user}");
    let again = envelope(
        &mcp.call(
            "pve_create_user",
            json!({"userid": "audit@pve", "password": PASSWORD, "confirm": true}),
        )
        .await,
    );
    assert_eq!(again["ok"], false);
    let stop = envelope(
        &mcp.call(
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101, "confirm": true}),
        )
        .await,
    );
    assert_eq!(stop["ok"], true, "{stop}");
}

#[tokio::test]
async fn changes_and_refusals_are_recorded_and_verify() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut mcp = server(&server_env(&emu, Some(&path))).await;
    record_five(&mut mcp).await;
    assert!(mcp.shutdown().await.success());

    let all = lines(&path);
    // Each change sent has a `sending` line (written and synced before the request) right
    // before its outcome; one server, one call at a time, so they are adjacent.
    let sending: Vec<usize> = (0..all.len())
        .filter(|&i| all[i]["decision"] == "sending")
        .collect();
    assert_eq!(sending, [0, 3, 5, 7], "{all:?}");
    for &i in &sending {
        assert_eq!(all[i]["outcome"], "pending");
        assert_eq!(all[i]["tool"], all[i + 1]["tool"]);
        assert_eq!(all[i]["arguments"], all[i + 1]["arguments"]);
        assert_eq!(all[i]["approval"], all[i + 1]["approval"]);
        assert_eq!(all[i + 1]["decision"], "executed");
    }
    let records: Vec<Value> = all
        .into_iter()
        .filter(|r| r["decision"] != "sending")
        .collect();
    let tools: Vec<&str> = records
        .iter()
        .map(|r| r["tool"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "pve_start_qemu_vm",
            "pve_stop_qemu_vm",
            "pve_create_user",
            "pve_create_user",
            "pve_stop_qemu_vm"
        ],
        "reads are not recorded"
    );
    let start = &records[0];
    assert_eq!(start["seq"], 2);
    assert_eq!(start["decision"], "executed");
    // A start is a change: it needs approval too (here the confirm flag of a client that
    // cannot ask).
    assert_eq!(start["approval"], "confirm-flag");
    assert_eq!(start["outcome"], "ok");
    assert_eq!(start["pveStatus"], 200);
    assert!(start["upid"].as_str().unwrap().starts_with("UPID:pve03:"));
    assert_eq!(
        start["arguments"],
        json!({"node": "pve03", "vmid": 102, "confirm": true})
    );
    assert!(start["durationMs"].is_u64() && start["time"].is_string());
    // Every line names who asked: over stdio, the local user who started the server.
    assert!(
        records.iter().all(|r| r["caller"] == "stdio"),
        "{records:?}"
    );
    assert_eq!(start["hash"].as_str().unwrap().len(), 64);
    let refused = &records[1];
    assert_eq!(refused["decision"], "refused");
    assert_eq!(refused["outcome"], "CONFIRMATION_REQUIRED");
    assert_eq!(refused["upid"], Value::Null);
    assert_eq!(records[2]["arguments"]["password"], "[redacted]");
    assert_eq!(records[2]["approval"], "confirm-flag");
    assert_eq!(records[3]["outcome"], "PROXMOX_SERVER_ERROR");
    assert_eq!(records[3]["pveStatus"], 500);
    assert!(!std::fs::read_to_string(&path).unwrap().contains(PASSWORD));

    let (code, text) = verify(&path);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("9 line(s), hash chain intact"), "{text}");
    emu.shutdown().await;
}

/// Writes `lines` (each without newline) joined to a new file; `cut` bytes removed at the end.
fn tampered(dir: &Path, name: &str, lines: &[String], cut: usize) -> PathBuf {
    let mut text = lines.join("\n");
    text.push('\n');
    let path = dir.join(name);
    std::fs::write(&path, &text.as_bytes()[..text.len() - cut]).unwrap();
    path
}

#[tokio::test]
async fn verify_names_the_first_tampered_line() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut mcp = server(&server_env(&emu, Some(&path))).await;
    record_five(&mut mcp).await;
    assert!(mcp.shutdown().await.success());
    let original: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(original.len(), 9, "5 outcomes and 4 sending lines");

    let mut modified = original.clone();
    modified[3] = modified[3].replace("audit@pve", "other@pve");
    let mut deleted = original.clone();
    deleted.remove(1);
    let mut reordered = original.clone();
    reordered.swap(2, 3);
    let mut inserted = original.clone();
    inserted.insert(4, original[1].clone());
    let cases = [
        ("modified", modified, 0, "line 4: modified"),
        (
            "deleted",
            deleted,
            0,
            "line 2: record 2 before this line was deleted",
        ),
        (
            "reordered",
            reordered,
            0,
            "line 3: reordered: holds record 4 where record 3 belongs",
        ),
        (
            "inserted",
            inserted,
            0,
            "line 5: inserted: repeats record 2",
        ),
        ("truncated", original.clone(), 30, "line 9: truncated"),
    ];
    for (name, content, cut, expected) in cases {
        let (code, text) = verify(&tampered(dir.path(), name, &content, cut));
        assert_eq!(code, 1, "{name}: {text}");
        assert!(text.contains("BROKEN at"), "{name}: {text}");
        let (line, what) = expected.split_once(": ").unwrap();
        assert!(
            text.contains(&format!("BROKEN at {line}: {what}")),
            "{name}: expected {expected:?} in {text}"
        );
    }
    // A missing file is an error too, not an empty success.
    let (code, text) = verify(&dir.path().join("absent.jsonl"));
    assert_eq!(code, 1, "{text}");
    emu.shutdown().await;
}

#[tokio::test]
async fn an_unwritable_log_refuses_changes_before_anything_is_sent() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the log's folder should be: not writable even for root.
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let path = blocker.join("audit.jsonl");
    let mut mcp = server(&server_env(&emu, Some(&path))).await;

    emu.clear_requests();
    let refused = envelope(
        &mcp.call(
            "pve_start_qemu_vm",
            json!({"node": "pve03", "vmid": 102, "confirm": true}),
        )
        .await,
    );
    assert_eq!(
        refused["error"]["code"], "AUDIT_LOG_UNAVAILABLE",
        "{refused}"
    );
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("audit log") && message.contains("not-a-dir"),
        "{message}"
    );
    assert!(
        refused["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("Nothing was sent")
    );
    let confirmed = envelope(
        &mcp.call(
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101, "confirm": true}),
        )
        .await,
    );
    assert_eq!(confirmed["error"]["code"], "AUDIT_LOG_UNAVAILABLE");
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());

    let read = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(read["ok"], true, "reads still work: {read}");
    assert_eq!(emu.requests().len(), 1);
    assert!(mcp.shutdown().await.success());
    emu.shutdown().await;
}

#[tokio::test]
async fn off_records_nothing_and_the_default_lives_in_the_state_folder() {
    let emu = emulator().await;
    let state = tempfile::tempdir().unwrap();
    let mut env = server_env(&emu, None);
    env.push(("XDG_STATE_HOME".into(), state.path().display().to_string()));
    env.push(("RUST_LOG".into(), "warn,nandi_proxmox_mcp=info".into()));
    let mut off_env = env.clone();
    off_env.push(("PVE_AUDIT_LOG".into(), "off".into()));

    let logs = tempfile::tempdir().unwrap();
    let off_log = logs.path().join("off.log");
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &off_env, &off_log);
    mcp.initialize().await;
    let start = envelope(
        &mcp.call(
            "pve_start_qemu_vm",
            json!({"node": "pve03", "vmid": 102, "confirm": true}),
        )
        .await,
    );
    assert_eq!(start["ok"], true);
    assert!(mcp.shutdown().await.success());
    let default = state.path().join("nandi-proxmox-mcp/audit.jsonl");
    assert!(!default.exists(), "off writes nothing");
    let said = std::fs::read_to_string(&off_log).unwrap();
    assert!(
        said.contains("audit trail disabled (PVE_AUDIT_LOG=off)")
            && !said.contains("audit trail enabled"),
        "start-up says the trail is off: {said}"
    );

    let on_log = logs.path().join("on.log");
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &env, &on_log);
    mcp.initialize().await;
    let refused = envelope(
        &mcp.call("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 101}))
            .await,
    );
    assert_eq!(refused["error"]["code"], "CONFIRMATION_REQUIRED");
    assert!(mcp.shutdown().await.success());
    assert_eq!(lines(&default).len(), 1);
    let said = std::fs::read_to_string(&on_log).unwrap();
    assert!(
        said.contains("audit trail enabled") && !said.contains("audit trail disabled"),
        "start-up says the trail is on: {said}"
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn two_servers_sharing_one_file_keep_one_chain() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let env = server_env(&emu, Some(&path));
    let (mut a, mut b) = (server(&env).await, server(&env).await);
    for round in 0..4 {
        for mcp in [&mut a, &mut b] {
            let args = json!({"node": "pve01", "vmid": 101, "round": round});
            // Rejected input of a change is recorded too (as `rejected`).
            mcp.call("pve_stop_qemu_vm", args).await;
        }
    }
    assert!(a.shutdown().await.success() && b.shutdown().await.success());
    let records = lines(&path);
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| r["decision"] == "rejected"));
    let (code, text) = verify(&path);
    assert_eq!(code, 0, "{text}");
    emu.shutdown().await;
}

/// Issue 23.4: the demo's changes never land in the user's audit log unless asked, and every
/// record names the cluster it is about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_keeps_no_log_unless_asked_and_records_name_their_cluster() {
    let state = tempfile::tempdir().unwrap();
    let env = vec![
        (
            "XDG_STATE_HOME".to_owned(),
            state.path().display().to_string(),
        ),
        ("PVE_ACCESS_TIER".to_owned(), "full".to_owned()),
    ];
    let stop = json!({"node": "pve01", "vmid": 101, "confirm": true});
    let mut demo = McpProcess::spawn(&["run", "--demo"], &env);
    demo.initialize().await;
    let done = envelope(&demo.call("pve_stop_qemu_vm", stop.clone()).await);
    assert_eq!(done["ok"], true, "{done}");
    drop(demo);
    let written: Vec<_> = walk(state.path());
    assert!(written.is_empty(), "the demo wrote {written:?}");

    let asked = state.path().join("demo.jsonl");
    let mut env = env;
    env.push(("PVE_AUDIT_LOG".into(), asked.display().to_string()));
    let mut demo = McpProcess::spawn(&["run", "--demo"], &env);
    demo.initialize().await;
    let done = envelope(&demo.call("pve_stop_qemu_vm", stop).await);
    assert_eq!(done["ok"], true, "{done}");
    drop(demo);
    let records = lines(&asked);
    assert!(!records.is_empty());
    for record in &records {
        assert_eq!(record["instance"], "demo (built-in emulator)", "{record}");
    }
    assert_eq!(verify(&asked).0, 0, "{}", verify(&asked).1);

    // A real (emulated) cluster's records name its address.
    let emu = emulator().await;
    let real = state.path().join("real.jsonl");
    let mut mcp = server(&server_env(&emu, Some(&real))).await;
    let done = envelope(
        &mcp.call(
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101, "confirm": true}),
        )
        .await,
    );
    assert_eq!(done["ok"], true, "{done}");
    drop(mcp);
    let instance = lines(&real)[0]["instance"].as_str().unwrap().to_owned();
    assert!(instance.contains(&emu.port().to_string()), "{instance}");
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
