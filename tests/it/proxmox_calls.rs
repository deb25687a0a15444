//! What the built binary does toward Proxmox, over real stdio against the emulator: it reports
//! how many requests a call really sent, never puts a `/` into a path segment (pveproxy would
//! route it elsewhere), never echoes a huge argument back whole, and refuses client limits it
//! cannot honour at startup.

use crate::common;

use std::process::Stdio;

use common::{FULL_ADVANCED, McpProcess, emulator, env_for, envelope, full_server, with_policy};
use pve_emulator::{Fault, FaultKind};
use serde_json::{Map, Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_result_says_how_many_requests_were_sent() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;

    let plain = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(plain["meta"]["attempts"], 1, "{plain}");
    assert_eq!(plain["meta"]["retries"], 0);

    emu.arm_fault(Fault::new(FaultKind::Status(503), 1));
    let retried = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(retried["ok"], true, "{retried}");
    assert_eq!(retried["meta"]["attempts"], 2, "{retried}");
    assert_eq!(retried["meta"]["retries"], 1);

    // A 500 is Proxmox's answer for permanent errors: reported after one request.
    emu.arm_fault(Fault::new(FaultKind::Status(500), 3));
    emu.clear_requests();
    let failed = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(failed["ok"], false, "{failed}");
    assert_eq!(failed["meta"]["attempts"], 1, "{failed}");
    assert_eq!(emu.requests().len(), 1);
    emu.clear_faults();

    let refused = envelope(&mcp.call("pve_list_nodes", json!({"bogus": 1})).await);
    assert_eq!(refused["meta"]["attempts"], 0, "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slash_in_a_path_parameter_is_refused_before_sending() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    emu.clear_requests();
    let cases = [
        (
            "pve_delete_backup_job",
            json!({"id": "x/included_volumes", "confirm": true}),
            "id",
        ),
        (
            "pve_get_task_status",
            json!({"node": "pve01", "upid": "UPID:pve01:00001234:00005678:65A1B2C3:vzdump:x/y:root@pam:"}),
            "upid",
        ),
    ];
    for (tool, args, param) in cases {
        let result = mcp.call(tool, args).await;
        assert_eq!(result["isError"], true, "{tool}: {result}");
        let error = envelope(&result)["error"].clone();
        assert_eq!(error["code"], "TOOL_INPUT_REJECTED", "{tool}: {error}");
        let why = error["details"]["errors"][param]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: no error for {param}: {error}"));
        assert!(why.contains("'/'"), "{tool}: {why}");
    }
    assert!(
        emu.requests().is_empty(),
        "nothing may reach Proxmox: {:?}",
        emu.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_argument_is_not_echoed_back_whole() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let huge = "A".repeat(200_000);
    let mut args = Map::new();
    args.insert("node".into(), json!("pve01"));
    args.insert(huge.clone(), json!(1));
    let result = mcp.call("pve_get_node_status", Value::Object(args)).await;
    assert_eq!(result["isError"], true);
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(
        text.len() < 10_000,
        "a 200 kB argument name came back as {} bytes",
        text.len()
    );
    let error = envelope(&result)["error"].clone();
    assert_eq!(error["code"], "TOOL_INPUT_REJECTED");

    let long_comment = "c".repeat(300_000);
    let result = mcp
        .call(
            "pve_get_node_status",
            json!({"node": format!("pve01{long_comment}")}),
        )
        .await;
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.len() < 10_000, "{} bytes", text.len());
}

#[tokio::test]
async fn client_limits_that_cannot_be_honoured_stop_the_start() {
    let emu = emulator().await;
    for (var, value) in [
        ("PVE_MAX_INFLIGHT", "0"),
        ("PVE_MAX_INFLIGHT", "lots"),
        ("PVE_CALL_DEADLINE_SECS", "0"),
    ] {
        let mut command = tokio::process::Command::new(common::binary());
        command
            .arg("run")
            .env_clear()
            .env("HOME", std::env::temp_dir())
            .env(var, value)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env_for(&emu) {
            command.env(k, v);
        }
        let out = tokio::time::timeout(std::time::Duration::from_secs(20), command.output())
            .await
            .expect("exits promptly")
            .expect("runs");
        assert!(!out.status.success(), "{var}={value} was accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(var), "{var}={value}: {stderr}");
        assert!(out.stdout.is_empty(), "stdout is the MCP channel");
    }

    // A valid setting starts normally.
    let env = with_policy(
        env_for(&emu),
        &[("PVE_MAX_INFLIGHT", "2"), ("PVE_CALL_DEADLINE_SECS", "10")],
    );
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env, FULL_ADVANCED));
    mcp.initialize().await;
    let listed = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(listed["ok"], true, "{listed}");
}
