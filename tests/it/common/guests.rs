//! Helpers of the guest lifecycle tool tests (`tests/tools_guests*.rs`): a server with
//! every tool exposed, calls that return the envelope together with what the emulator
//! received, and request assertions.

use std::time::Duration;

use pve_emulator::{Emulator, RecordedRequest};
use serde_json::{Value, json};

use super::{McpProcess, emulator, env_for, envelope, with_policy};

/// Every tier and module, so every guest tool is exposed.
pub const FULL_ADVANCED: &[(&str, &str)] =
    &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];

/// The tools the guest tests cover (guest lifecycle, templates, restores, guest agent).
pub const GUEST_TOOLS: &[&str] = &[
    "pve_qemu_create",
    "pve_qemu_delete",
    "pve_qemu_migrate",
    "pve_qemu_clone",
    "pve_qemu_update_config",
    "pve_qemu_resize_disk",
    "pve_list_qemu_snapshots",
    "pve_qemu_create_snapshot",
    "pve_qemu_delete_snapshot",
    "pve_qemu_rollback_snapshot",
    "pve_qemu_create_template",
    "pve_exec_qemu_guest_command",
    "pve_lxc_create",
    "pve_lxc_delete",
    "pve_lxc_migrate",
    "pve_lxc_clone",
    "pve_lxc_update_config",
    "pve_list_lxc_snapshots",
    "pve_lxc_create_snapshot",
    "pve_lxc_delete_snapshot",
    "pve_lxc_rollback_snapshot",
    "pve_get_qemu_cloudinit_dump",
    "pve_list_qemu_templates",
    "pve_list_iso_images",
    "pve_list_storage_templates",
    "pve_set_qemu_cloudinit",
    "pve_create_qemu_template",
    "pve_restore_qemu_backup",
    "pve_restore_lxc_backup",
    "pve_get_qemu_agent_info",
    "pve_get_qemu_agent_network",
    "pve_get_qemu_agent_osinfo",
    "pve_get_qemu_agent_fsinfo",
];

/// An emulator and a server process talking to it, initialized, with every tool exposed.
pub async fn start() -> (Emulator, McpProcess) {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), FULL_ADVANCED));
    mcp.initialize().await;
    (emu, mcp)
}

/// Calls a tool with fresh request records; returns the envelope and what Proxmox got.
pub async fn call(
    mcp: &mut McpProcess,
    emu: &Emulator,
    tool: &str,
    args: Value,
) -> (Value, Vec<RecordedRequest>) {
    emu.clear_requests();
    let result = mcp.call(tool, args).await;
    let env = envelope(&result);
    assert_eq!(
        result["isError"].as_bool().unwrap_or(false),
        env["ok"] == false,
        "{tool}: isError must mirror ok"
    );
    (env, emu.requests())
}

/// Calls a tool that must succeed with exactly one request of its own; returns (data,
/// request). A routine change first reads its target's facts (`/cluster/resources`, the
/// guest's config): those plain reads are not the tool's request.
pub async fn ok(
    mcp: &mut McpProcess,
    emu: &Emulator,
    tool: &str,
    args: Value,
) -> (Value, RecordedRequest) {
    let (env, requests) = call(mcp, emu, tool, args).await;
    assert_eq!(env["ok"], true, "{tool}: {env}");
    assert_eq!(env["meta"]["tool"], tool);
    let own = own_requests(&requests);
    assert_eq!(own.len(), 1, "{tool}: {requests:?}");
    (env["data"].clone(), own[0].clone())
}

/// The requests a call made beyond a routine change's fact reads: when it sent anything but
/// GETs, only those; otherwise all of them.
pub fn own_requests(requests: &[RecordedRequest]) -> Vec<RecordedRequest> {
    if requests.iter().any(|r| r.method != "GET") {
        requests
            .iter()
            .filter(|r| r.method != "GET")
            .cloned()
            .collect()
    } else {
        requests.to_vec()
    }
}

/// Calls a tool that must fail with `code`; returns the error object.
pub async fn fails(
    mcp: &mut McpProcess,
    emu: &Emulator,
    tool: &str,
    args: Value,
    code: &str,
) -> (Value, Vec<RecordedRequest>) {
    let (env, requests) = call(mcp, emu, tool, args).await;
    assert_eq!(env["ok"], false, "{tool}: {env}");
    assert_eq!(env["error"]["code"], code, "{tool}: {env}");
    (env["error"].clone(), requests)
}

/// Borrowed view of recorded parameter pairs, for comparisons with literals.
pub fn pairs(list: &[(String, String)]) -> Vec<(&str, &str)> {
    list.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// Asserts one recorded request: method, decoded path, and the query and form pairs
/// (order-insensitive; repeated keys count), sent with the right token.
pub fn assert_request(
    req: &RecordedRequest,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    form: &[(&str, &str)],
) {
    assert_eq!(req.method, method, "{req:?}");
    assert_eq!(req.path, path, "{req:?}");
    let mut got_query = pairs(&req.query);
    let mut got_form = pairs(&req.form);
    let (mut want_query, mut want_form) = (query.to_vec(), form.to_vec());
    for list in [
        &mut got_query,
        &mut want_query,
        &mut got_form,
        &mut want_form,
    ] {
        list.sort();
    }
    assert_eq!(got_query, want_query, "query of {method} {path}");
    assert_eq!(got_form, want_form, "form of {method} {path}");
    assert!(req.authorized);
}

/// Follows a UPID until the task stops; asserts it ended "OK".
pub async fn wait_task(mcp: &mut McpProcess, upid: &Value) {
    let upid = upid.as_str().expect("a UPID string");
    let node = upid.split(':').nth(1).expect("node in UPID");
    for _ in 0..100 {
        let result = mcp
            .call("pve_get_task_status", json!({"node": node, "upid": upid}))
            .await;
        let env = envelope(&result);
        if env["data"]["status"] == "stopped" {
            assert_eq!(env["data"]["exitstatus"], "OK", "{env}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    panic!("task {upid} did not finish");
}
