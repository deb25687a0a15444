//! What the pipeline records, through the built binary over stdio against the emulator: a dry
//! run leaves no line in the audit trail (it sends nothing and decides nothing), while the same
//! call run for real leaves its `sending` line; and a *read* that needs an approval counts as a
//! change for the trail — with the log on `/dev/full` it is refused (`AUDIT_LOG_UNAVAILABLE`)
//! and never reaches Proxmox. (Found by the `pipeline` mutation group: `scripts/mutants
//! pipeline`.)

use crate::common;

use std::path::Path;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use pve_emulator::Emulator;
use serde_json::{Value, json};

/// The binary at `full`/`advanced`, its audit trail at `audit`, initialized.
async fn server(emu: &Emulator, audit: &Path) -> McpProcess {
    let mut env = with_policy(
        env_for(emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    env.push(("PVE_AUDIT_LOG".into(), audit.display().to_string()));
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    mcp
}

/// The audit trail's lines (none when the file does not exist).
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an audit line"))
        .collect()
}

#[tokio::test]
async fn a_dry_run_leaves_no_audit_line_and_the_real_call_does() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let mut mcp = server(&emu, &audit).await;
    let stop = json!({"node": "pve01", "vmid": 101, "confirm": true});
    let mut dry = stop.clone();
    dry["dry_run"] = json!(true);

    let preview = envelope(&mcp.call("pve_stop_qemu_vm", dry).await);
    assert_eq!(preview["ok"], true, "{preview}");
    assert!(lines(&audit).is_empty(), "{:?}", lines(&audit));

    // The log is on: the same call, run, is recorded before it is sent.
    let ran = envelope(&mcp.call("pve_stop_qemu_vm", stop).await);
    assert_eq!(ran["ok"], true, "{ran}");
    let decisions: Vec<Value> = lines(&audit)
        .iter()
        .map(|l| l["decision"].clone())
        .collect();
    assert!(decisions.contains(&json!("sending")), "{decisions:?}");
}

#[tokio::test]
async fn a_read_that_needs_approval_is_not_sent_when_it_cannot_be_recorded() {
    let emu = emulator().await;
    let mut mcp = server(&emu, Path::new("/dev/full")).await;
    emu.clear_requests();
    let path = "/nodes/pve01/qemu/101/agent/file-read";
    let answer = envelope(
        &mcp.call(
            "pve_qemu_agent_file_read",
            json!({"node": "pve01", "vmid": 101, "file": "/etc/hostname", "confirm": true}),
        )
        .await,
    );
    assert_eq!(answer["error"]["code"], "AUDIT_LOG_UNAVAILABLE", "{answer}");
    let reached: Vec<_> = emu
        .requests()
        .into_iter()
        .filter(|r| r.path == path)
        .collect();
    assert!(reached.is_empty(), "{reached:?}");
}
