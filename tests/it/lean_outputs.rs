//! Lean outputs through the built binary over stdio against the emulator: `fields`,
//! `limit` and `offset` shape a list answer without reaching Proxmox, bad values are
//! refused before any request, and an answer over `PVE_OUTPUT_CAP_BYTES` is cut with a
//! note that says how to page — never silently.

use crate::common;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_list_fields_limit_offset_shape_the_answer_and_are_never_sent() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    mcp.initialize().await;
    let whole = envelope(&mcp.call("pve_list_cluster_resources", json!({})).await);
    let all = whole["data"].as_array().expect("a list").clone();
    assert!(all.len() >= 3, "{whole}");

    let page = envelope(
        &mcp.call(
            "pve_list_cluster_resources",
            json!({"fields": ["id", "type"], "offset": 1, "limit": 2}),
        )
        .await,
    );
    assert_eq!(page["ok"], true, "{page}");
    let items = page["data"].as_array().expect("a list");
    assert_eq!(items.len(), 2);
    for (item, original) in items.iter().zip(&all[1..3]) {
        assert_eq!(
            item,
            &json!({"id": original["id"], "type": original["type"]})
        );
    }
    for request in emu.requests() {
        let keys: Vec<&str> = request.query.iter().map(|(k, _)| k.as_str()).collect();
        for control in ["fields", "limit", "offset"] {
            assert!(!keys.contains(&control), "{control} was sent: {request:?}");
        }
    }

    let before = emu.requests().len();
    let refused = envelope(
        &mcp.call(
            "pve_list_cluster_resources",
            json!({"limit": -1, "fields": 3}),
        )
        .await,
    );
    assert_eq!(refused["error"]["code"], "TOOL_INPUT_REJECTED", "{refused}");
    assert!(refused["error"]["details"]["errors"]["limit"].is_string());
    assert!(refused["error"]["details"]["errors"]["fields"].is_string());
    assert_eq!(emu.requests().len(), before, "nothing sent for bad input");
    // Reads that are not lists take no shaping arguments.
    let node = envelope(
        &mcp.call("pve_get_node_status", json!({"node": "pve01", "limit": 1}))
            .await,
    );
    assert_eq!(node["error"]["code"], "TOOL_INPUT_REJECTED", "{node}");
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_an_answer_over_the_cap_is_cut_with_a_paging_note() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), &[("PVE_OUTPUT_CAP_BYTES", "1024")]);
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    let result = mcp.call("pve_list_cluster_resources", json!({})).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{env}");
    let data = &env["data"];
    let kept = data["items"].as_array().expect("kept items").len();
    let note = &data["truncated"];
    assert!(
        note["totalItems"].as_u64().expect("total") > kept as u64,
        "{note}"
    );
    assert_eq!(note["returnedItems"], kept);
    assert!(note["capBytes"] == 1024);
    let next = note["next"].as_str().expect("how to page");
    assert!(next.contains(&format!("offset={kept}")), "{next}");
    assert!(serde_json::to_vec(data).expect("json").len() <= 1024);
    // Following the note pages on.
    let next_page = envelope(
        &mcp.call(
            "pve_list_cluster_resources",
            json!({"offset": kept, "fields": ["id"]}),
        )
        .await,
    );
    assert_eq!(next_page["ok"], true, "{next_page}");
    mcp.shutdown().await;
}

#[test]
fn lean_a_bad_cap_setting_is_a_startup_error() {
    let output = std::process::Command::new(common::binary())
        .arg("run")
        .env_clear()
        .env("PVE_OUTPUT_CAP_BYTES", "12")
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("PVE_OUTPUT_CAP_BYTES"), "{stderr}");
}
