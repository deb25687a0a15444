//! Guest lifecycle tools through the built binary over stdio, against the emulator over
//! HTTPS: what Proxmox receives (method, path, query and form), the envelope, the
//! confirmation gate, indexed keys, the template filter, `sshkeys` encoding and the
//! stateful round trips (create → config → snapshots → delete → NOT_FOUND).

mod common;

use std::time::Duration;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use nandi_proxmox_mcp::catalog;
use nandi_proxmox_mcp::emulator::{Emulator, RecordedRequest};
use serde_json::{Value, json};

const FULL_ADVANCED: &[(&str, &str)] =
    &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];

/// The tools this file covers (guest lifecycle, templates, restores, guest agent).
const GUEST_TOOLS: &[&str] = &[
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

async fn start() -> (Emulator, McpProcess) {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), FULL_ADVANCED));
    mcp.initialize().await;
    (emu, mcp)
}

/// Calls a tool with fresh request records; returns the envelope and what Proxmox got.
async fn call(
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

/// Calls a tool that must succeed with exactly one request; returns (data, request).
async fn ok(
    mcp: &mut McpProcess,
    emu: &Emulator,
    tool: &str,
    args: Value,
) -> (Value, RecordedRequest) {
    let (env, requests) = call(mcp, emu, tool, args).await;
    assert_eq!(env["ok"], true, "{tool}: {env}");
    assert_eq!(env["meta"]["tool"], tool);
    assert_eq!(requests.len(), 1, "{tool}: {requests:?}");
    (env["data"].clone(), requests[0].clone())
}

/// Calls a tool that must fail with `code`; returns the error object.
async fn fails(
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

fn pairs(list: &[(String, String)]) -> Vec<(&str, &str)> {
    list.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn assert_request(
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
async fn wait_task(mcp: &mut McpProcess, upid: &Value) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_guest_tool_is_listed_with_indexed_keys_advertised() {
    let (_emu, mut mcp) = start().await;
    let tools = mcp.list_tools().await;
    for name in GUEST_TOOLS {
        let tool = tools
            .iter()
            .find(|t| t["name"] == *name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema.get("anyOf").is_none() && schema.get("oneOf").is_none());
        assert!(catalog::find(name).unwrap().aliases.is_empty(), "{name}");
    }
    let create = tools
        .iter()
        .find(|t| t["name"] == "pve_qemu_create")
        .unwrap();
    let families = create["inputSchema"]["patternProperties"]
        .as_object()
        .expect("patternProperties");
    assert!(
        families.contains_key("^net([0-9]|[1-2][0-9]|3[0-1])$"),
        "{families:?}"
    );
    assert!(families.contains_key("^scsi([0-9]|[1-2][0-9]|30)$"));
    assert_eq!(create["inputSchema"]["additionalProperties"], false);
    let iso = tools
        .iter()
        .find(|t| t["name"] == "pve_list_iso_images")
        .unwrap();
    assert!(iso["inputSchema"]["properties"].get("content").is_none());
    let exec = tools
        .iter()
        .find(|t| t["name"] == "pve_exec_qemu_guest_command")
        .unwrap();
    assert_eq!(
        exec["inputSchema"]["properties"]["command"]["type"],
        "array"
    );
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qemu_lifecycle_round_trip() {
    let (emu, mut mcp) = start().await;
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_create",
        json!({"node": "pve01", "vmid": 150, "name": "web-150", "cores": 2, "memory": 2048,
               "ostype": "l26", "scsihw": "virtio-scsi-single", "scsi0": "local-lvm:32",
               "net0": "virtio,bridge=vmbr0", "net1": "virtio,bridge=vmbr1,tag=20",
               "ipconfig0": "ip=dhcp", "agent": "1", "onboot": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu",
        &[],
        &[
            ("vmid", "150"),
            ("name", "web-150"),
            ("cores", "2"),
            ("memory", "2048"),
            ("ostype", "l26"),
            ("scsihw", "virtio-scsi-single"),
            ("scsi0", "local-lvm:32"),
            ("net0", "virtio,bridge=vmbr0"),
            ("net1", "virtio,bridge=vmbr1,tag=20"),
            ("ipconfig0", "ip=dhcp"),
            ("agent", "1"),
            ("onboot", "1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;

    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(config["scsi0"], "local-lvm:vm-150-disk-0,size=32G");
    assert_eq!(config["memory"], 2048);
    assert!(
        config["net1"]
            .as_str()
            .unwrap()
            .ends_with(",bridge=vmbr1,tag=20")
    );
    let digest = config["digest"].as_str().unwrap().to_owned();

    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 150, "memory": 4096, "delete": "net1",
               "digest": digest, "confirm": true}),
    )
    .await;
    assert_eq!(data, Value::Null);
    assert_request(
        &req,
        "PUT",
        "/nodes/pve01/qemu/150/config",
        &[],
        &[("memory", "4096"), ("delete", "net1"), ("digest", &digest)],
    );
    // The digest is now stale: Proxmox's refusal comes back with its own text.
    let (error, _) = fails(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 150, "cores": 4, "digest": digest, "confirm": true}),
        "PROXMOX_SERVER_ERROR",
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("detected modified configuration"),
        "{error}"
    );
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(config["memory"], 4096);
    assert!(config.get("net1").is_none());
    assert_eq!(config["cores"], 2);

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_resize_disk",
        json!({"node": "pve01", "vmid": 150, "disk": "scsi0", "size": "+8G", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "PUT",
        "/nodes/pve01/qemu/150/resize",
        &[],
        &[("disk", "scsi0"), ("size", "+8G")],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(config["scsi0"], "local-lvm:vm-150-disk-0,size=40G");

    // Snapshots: create → list (with "current") → rollback → delete.
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_create_snapshot",
        json!({"node": "pve01", "vmid": 150, "snapname": "pre-upgrade", "description": "before"}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu/150/snapshot",
        &[],
        &[("snapname", "pre-upgrade"), ("description", "before")],
    );
    wait_task(&mut mcp, &upid).await;
    let (list, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_snapshots",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_request(&req, "GET", "/nodes/pve01/qemu/150/snapshot", &[], &[]);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pre-upgrade", "current"]);
    assert_eq!(list[1]["parent"], "pre-upgrade");
    ok(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 150, "cores": 8, "confirm": true}),
    )
    .await;
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_rollback_snapshot",
        json!({"node": "pve01", "vmid": 150, "snapname": "pre-upgrade", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu/150/snapshot/pre-upgrade/rollback",
        &[],
        &[],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(config["cores"], 2, "rollback restored the snapshot's cores");
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_delete_snapshot",
        json!({"node": "pve01", "vmid": 150, "snapname": "pre-upgrade", "force": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "DELETE",
        "/nodes/pve01/qemu/150/snapshot/pre-upgrade",
        &[("force", "1")],
        &[],
    );
    wait_task(&mut mcp, &upid).await;
    let (list, _) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_snapshots",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(list.as_array().unwrap().len(), 1);

    // Clone to another node, migrate the clone, convert it to a template.
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 150, "newid": 151, "name": "web-151",
               "target": "pve02", "full": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu/150/clone",
        &[],
        &[
            ("newid", "151"),
            ("name", "web-151"),
            ("target", "pve02"),
            ("full", "1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve02", "vmid": 151}),
    )
    .await;
    assert_eq!(config["name"], "web-151");
    assert_eq!(config["scsi0"], "local-lvm:vm-151-disk-0,size=40G");

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_migrate",
        json!({"node": "pve02", "vmid": 151, "target": "pve03", "online": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve02/qemu/151/migrate",
        &[],
        &[("target", "pve03"), ("online", "1")],
    );
    wait_task(&mut mcp, &upid).await;
    ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_status",
        json!({"node": "pve03", "vmid": 151}),
    )
    .await;

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_create_template",
        json!({"node": "pve03", "vmid": 151, "confirm": true}),
    )
    .await;
    assert_request(&req, "POST", "/nodes/pve03/qemu/151/template", &[], &[]);
    wait_task(&mut mcp, &upid).await;
    let (templates, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_templates",
        json!({"node": "pve03"}),
    )
    .await;
    assert_request(&req, "GET", "/nodes/pve03/qemu", &[], &[]);
    let ids: Vec<u64> = templates
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["vmid"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [151], "only the template of pve03, not VM 102");

    // The older name sends the same request.
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_create_qemu_template",
        json!({"node": "pve01", "vmid": 150, "confirm": true}),
    )
    .await;
    assert_request(&req, "POST", "/nodes/pve01/qemu/150/template", &[], &[]);

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_delete",
        json!({"node": "pve01", "vmid": 150, "purge": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "DELETE",
        "/nodes/pve01/qemu/150",
        &[("purge", "1")],
        &[],
    );
    wait_task(&mut mcp, &upid).await;
    fails(
        &mut mcp,
        &emu,
        "pve_get_qemu_status",
        json!({"node": "pve01", "vmid": 150}),
        "PROXMOX_NOT_FOUND",
    )
    .await;
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lxc_lifecycle_round_trip() {
    let (emu, mut mcp) = start().await;
    let template = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst";
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_create",
        json!({"node": "pve01", "vmid": 250, "ostemplate": template, "hostname": "ct-250",
               "memory": 1024, "swap": 256, "rootfs": "local-lvm:8",
               "net0": "name=eth0,bridge=vmbr0,ip=dhcp", "mp0": "local-lvm:10,mp=/srv/data",
               "password": "correct-horse-battery", "unprivileged": true,
               "features": "nesting=1"}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc",
        &[],
        &[
            ("vmid", "250"),
            ("ostemplate", template),
            ("hostname", "ct-250"),
            ("memory", "1024"),
            ("swap", "256"),
            ("rootfs", "local-lvm:8"),
            ("net0", "name=eth0,bridge=vmbr0,ip=dhcp"),
            ("mp0", "local-lvm:10,mp=/srv/data"),
            ("password", "correct-horse-battery"),
            ("unprivileged", "1"),
            ("features", "nesting=1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_lxc_config",
        json!({"node": "pve01", "vmid": 250}),
    )
    .await;
    assert_eq!(config["hostname"], "ct-250");
    assert_eq!(config["rootfs"], "local-lvm:vm-250-disk-0,size=8G");
    assert_eq!(
        config["mp0"],
        "local-lvm:vm-250-disk-1,size=10G,mp=/srv/data"
    );
    assert!(config.get("password").is_none(), "passwords are not stored");

    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_update_config",
        json!({"node": "pve01", "vmid": 250, "cores": 2, "net1": "name=eth1,bridge=vmbr1",
               "delete": "mp0", "confirm": true}),
    )
    .await;
    assert_eq!(data, Value::Null);
    assert_request(
        &req,
        "PUT",
        "/nodes/pve01/lxc/250/config",
        &[],
        &[
            ("cores", "2"),
            ("net1", "name=eth1,bridge=vmbr1"),
            ("delete", "mp0"),
        ],
    );

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_create_snapshot",
        json!({"node": "pve01", "vmid": 250, "snapname": "base"}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc/250/snapshot",
        &[],
        &[("snapname", "base")],
    );
    wait_task(&mut mcp, &upid).await;
    let (list, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_lxc_snapshots",
        json!({"node": "pve01", "vmid": 250}),
    )
    .await;
    assert_request(&req, "GET", "/nodes/pve01/lxc/250/snapshot", &[], &[]);
    assert_eq!(list[0]["name"], "base");
    assert_eq!(list[1]["name"], "current");
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_rollback_snapshot",
        json!({"node": "pve01", "vmid": 250, "snapname": "base", "start": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc/250/snapshot/base/rollback",
        &[],
        &[("start", "1")],
    );
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_delete_snapshot",
        json!({"node": "pve01", "vmid": 250, "snapname": "base", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "DELETE",
        "/nodes/pve01/lxc/250/snapshot/base",
        &[],
        &[],
    );

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_clone",
        json!({"node": "pve01", "vmid": 250, "newid": 251, "hostname": "ct-251", "full": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc/250/clone",
        &[],
        &[("newid", "251"), ("hostname", "ct-251"), ("full", "1")],
    );
    wait_task(&mut mcp, &upid).await;

    // A running container does not move without `restart` — Proxmox's refusal — and
    // moves with it.
    let (error, _) = fails(
        &mut mcp,
        &emu,
        "pve_lxc_migrate",
        json!({"node": "pve01", "vmid": 201, "target": "pve02", "confirm": true}),
        "PROXMOX_SERVER_ERROR",
    )
    .await;
    assert!(
        error["message"].as_str().unwrap().contains("--restart"),
        "{error}"
    );
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_migrate",
        json!({"node": "pve01", "vmid": 201, "target": "pve02", "restart": true,
               "timeout": 60, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc/201/migrate",
        &[],
        &[("target", "pve02"), ("restart", "1"), ("timeout", "60")],
    );
    wait_task(&mut mcp, &upid).await;
    let (status, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_lxc_status",
        json!({"node": "pve02", "vmid": 201}),
    )
    .await;
    assert_eq!(status["status"], "running");

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_lxc_delete",
        json!({"node": "pve01", "vmid": 250, "force": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "DELETE",
        "/nodes/pve01/lxc/250",
        &[("force", "1")],
        &[],
    );
    wait_task(&mut mcp, &upid).await;
    fails(
        &mut mcp,
        &emu,
        "pve_get_lxc_config",
        json!({"node": "pve01", "vmid": 250}),
        "PROXMOX_NOT_FOUND",
    )
    .await;
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_cloudinit_agent_and_restores() {
    let (emu, mut mcp) = start().await;
    let (isos, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_iso_images",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/storage/local/content",
        &[("content", "iso")],
        &[],
    );
    assert!(!isos.as_array().unwrap().is_empty());
    assert!(
        isos.as_array()
            .unwrap()
            .iter()
            .all(|v| v["content"] == "iso")
    );
    let (tmpls, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_storage_templates",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/storage/local/content",
        &[("content", "vztmpl")],
        &[],
    );
    assert!(
        tmpls
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["content"] == "vztmpl")
    );
    // `content` is fixed: a client cannot widen the list.
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_list_iso_images",
        json!({"node": "pve01", "storage": "local", "content": "backup"}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(requests.is_empty());

    let (templates, _) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_templates",
        json!({"node": "pve01"}),
    )
    .await;
    let (vms, _) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_vms",
        json!({"node": "pve01"}),
    )
    .await;
    assert_eq!(
        vms.as_array().unwrap().len(),
        2,
        "pve01 has VM 101 and template 9000"
    );
    assert_eq!(templates.as_array().unwrap().len(), 1);
    assert_eq!(templates[0]["vmid"], 9000);

    // sshkeys: percent-encoded before the form layer, so Proxmox decodes it once from
    // the form and once from `format: urlencoded`.
    let keys =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOk+x/y= ops@example.com\nssh-rsa AAAAB3Nz other@host";
    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_set_qemu_cloudinit",
        json!({"node": "pve01", "vmid": 101, "ciuser": "ops", "cipassword": "s3cret-pw",
               "sshkeys": keys, "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1",
               "nameserver": "1.1.1.1", "confirm": true}),
    )
    .await;
    assert_eq!(data, Value::Null);
    let encoded = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIOk%2Bx%2Fy%3D%20ops%40example.com%0Assh-rsa%20AAAAB3Nz%20other%40host";
    assert_request(
        &req,
        "PUT",
        "/nodes/pve01/qemu/101/config",
        &[],
        &[
            ("ciuser", "ops"),
            ("cipassword", "s3cret-pw"),
            ("sshkeys", encoded),
            ("ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1"),
            ("nameserver", "1.1.1.1"),
        ],
    );
    let (dump, req) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/qemu/101/cloudinit/dump",
        &[("type", "user")],
        &[],
    );
    let dump = dump.as_str().unwrap();
    assert!(
        dump.contains("  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOk+x/y= ops@example.com\n"),
        "{dump}"
    );
    assert!(dump.contains("  - ssh-rsa AAAAB3Nz other@host\n"), "{dump}");
    assert!(dump.contains("user: ops"));
    let (network, req) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101, "type": "network"}),
    )
    .await;
    assert_eq!(req.query, vec![("type".to_owned(), "network".to_owned())]);
    assert!(network.as_str().unwrap().contains("address: '10.0.0.5/24'"));

    // Guest agent (VM 101: agent=1, running).
    for (tool, path) in [
        ("pve_get_qemu_agent_info", "info"),
        ("pve_get_qemu_agent_network", "network-get-interfaces"),
        ("pve_get_qemu_agent_osinfo", "get-osinfo"),
        ("pve_get_qemu_agent_fsinfo", "get-fsinfo"),
    ] {
        let (data, req) = ok(&mut mcp, &emu, tool, json!({"node": "pve01", "vmid": 101})).await;
        assert_request(
            &req,
            "GET",
            &format!("/nodes/pve01/qemu/101/agent/{path}"),
            &[],
            &[],
        );
        assert!(data.get("result").is_some(), "{tool}: {data}");
    }
    // VM 102 is stopped; template 9000 has the agent but VM 102's node is pve03 — ask
    // a VM without the agent enabled: Proxmox's message and the agent error code.
    ok(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve03", "vmid": 102, "agent": "0", "confirm": true}),
    )
    .await;
    let (error, _) = fails(
        &mut mcp,
        &emu,
        "pve_get_qemu_agent_info",
        json!({"node": "pve03", "vmid": 102}),
        "QEMU_GUEST_AGENT_UNAVAILABLE",
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("No QEMU guest agent configured")
    );

    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "command": ["ls", "-la", "/var/log"], "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu/101/agent/exec",
        &[],
        &[
            ("command", "ls"),
            ("command", "-la"),
            ("command", "/var/log"),
        ],
    );
    assert_eq!(
        req.form[0],
        ("command".to_owned(), "ls".to_owned()),
        "argv order kept"
    );
    assert!(data["pid"].as_u64().is_some());
    // The reference's string form still works: split on whitespace.
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "command": "uptime -p", "confirm": true}),
    )
    .await;
    assert_eq!(pairs(&req.form), [("command", "uptime"), ("command", "-p")]);

    // Restores: QEMU sends `archive`; LXC sends the schema's ostemplate + restore=1.
    let archive = "local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst";
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_restore_qemu_backup",
        json!({"node": "pve01", "vmid": 160, "archive": archive, "storage": "local-lvm",
               "unique": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu",
        &[],
        &[
            ("vmid", "160"),
            ("archive", archive),
            ("storage", "local-lvm"),
            ("unique", "1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 160}),
    )
    .await;
    assert_eq!(config["name"], "vm-web");
    let ct_archive = "local:backup/vzdump-lxc-201-2025_11_23-01_00_41.tar.zst";
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_restore_lxc_backup",
        json!({"node": "pve01", "vmid": 260, "archive": ct_archive, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc",
        &[],
        &[
            ("vmid", "260"),
            ("ostemplate", ct_archive),
            ("restore", "1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_lxc_config",
        json!({"node": "pve01", "vmid": 260}),
    )
    .await;
    assert_eq!(config["hostname"], "ct-docker");
    // Restoring over an existing guest needs `force`.
    let (error, _) = fails(
        &mut mcp,
        &emu,
        "pve_restore_lxc_backup",
        json!({"node": "pve01", "vmid": 260, "archive": ct_archive, "confirm": true}),
        "PROXMOX_SERVER_ERROR",
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );
    assert!(mcp.shutdown().await.success());
}

/// Valid arguments for a tool, without `confirm`.
fn sample_args(spec: &catalog::ToolSpec) -> Value {
    let mut args = serde_json::Map::new();
    for p in spec.params.iter().filter(|p| p.required && !p.fixed) {
        let value = match p.name {
            "node" => json!("pve01"),
            "vmid" => json!(101),
            "newid" => json!(777),
            "snapname" => json!("snap1"),
            "target" => json!("pve02"),
            "disk" => json!("scsi0"),
            "size" => json!("+1G"),
            "archive" => json!("local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst"),
            "ostemplate" => json!("local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"),
            "command" => json!(["true"]),
            "storage" => json!("local"),
            other => panic!("{}: no sample for {other}", spec.name),
        };
        args.insert(p.name.into(), value);
    }
    if let Some(first) = spec.at_least_one_of.first() {
        let value = match spec.param(first).map(|p| p.kind) {
            Some(catalog::ParamKind::Integer) => json!(1),
            Some(catalog::ParamKind::Boolean) => json!(true),
            _ => json!("x"),
        };
        let key = if spec.param(first).is_some_and(|p| p.index.is_some()) {
            format!("{first}0")
        } else {
            (*first).to_owned()
        };
        args.insert(key, value);
    }
    Value::Object(args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_tools_refuse_without_confirm_and_send_nothing() {
    let (emu, mut mcp) = start().await;
    let mut checked = 0;
    for name in GUEST_TOOLS {
        let spec = catalog::find(name).unwrap();
        if !spec.confirm {
            continue;
        }
        let args = sample_args(spec);
        for confirm in [None, Some(json!(false))] {
            let mut args = args.clone();
            if let Some(value) = &confirm {
                args["confirm"] = value.clone();
            }
            let (error, requests) =
                fails(&mut mcp, &emu, name, args, "CONFIRMATION_REQUIRED").await;
            assert!(requests.is_empty(), "{name} sent {requests:?}");
            assert_eq!(
                error["message"],
                format!("Tool '{name}' requires explicit confirmation.")
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 17, "confirm-gated guest tools");
    // The at-least-one-of guard comes first and also sends nothing.
    let (error, requests) = fails(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "digest": "abc", "confirm": true}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(requests.is_empty());
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("At least one mutable field")
    );
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_keys_are_validated_before_any_request() {
    let (emu, mut mcp) = start().await;
    for (key, tool) in [
        ("net99", "pve_qemu_update_config"),
        ("net32", "pve_qemu_update_config"),
        ("net05", "pve_qemu_update_config"),
        ("scsi31", "pve_qemu_update_config"),
        ("virtio16", "pve_qemu_update_config"),
        ("mp256", "pve_lxc_update_config"),
        ("net", "pve_lxc_update_config"),
    ] {
        let vmid = if tool.contains("lxc") { 201 } else { 101 };
        let (error, requests) = fails(
            &mut mcp,
            &emu,
            tool,
            json!({"node": "pve01", "vmid": vmid, key: "virtio,bridge=vmbr0", "confirm": true}),
            "TOOL_INPUT_REJECTED",
        )
        .await;
        assert!(requests.is_empty(), "{key}: {requests:?}");
        assert!(error["message"].as_str().unwrap().contains(key), "{error}");
    }
    // In range: accepted and sent under the client's key.
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "net31": "virtio,bridge=vmbr0", "confirm": true}),
    )
    .await;
    assert_eq!(pairs(&req.form), [("net31", "virtio,bridge=vmbr0")]);
    // Other bad input: a wrong resize size and a bad snapshot name never leave.
    for (tool, args) in [
        (
            "pve_qemu_resize_disk",
            json!({"node": "pve01", "vmid": 101, "disk": "scsi0", "size": "-5G", "confirm": true}),
        ),
        (
            "pve_qemu_create_snapshot",
            json!({"node": "pve01", "vmid": 101, "snapname": "1bad name"}),
        ),
        (
            "pve_exec_qemu_guest_command",
            json!({"node": "pve01", "vmid": 101, "command": [], "confirm": true}),
        ),
        ("pve_qemu_create", json!({"node": "pve01", "vmid": 42})),
    ] {
        let (_, requests) = fails(&mut mcp, &emu, tool, args, "TOOL_INPUT_REJECTED").await;
        assert!(requests.is_empty(), "{tool}");
    }
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_arguments_reach_proxmox_but_never_the_log() {
    let emu = emulator().await;
    let log_file = tempfile::NamedTempFile::new().unwrap();
    let mut mcp = McpProcess::spawn_with_log(
        &["run"],
        &with_policy(env_for(&emu), FULL_ADVANCED),
        "trace",
        log_file.reopen().unwrap(),
    );
    mcp.initialize().await;
    let (password, cipassword) = ("ct-root-pw-7f3a9c", "vm-ci-pw-b81d2e");
    ok(
        &mut mcp,
        &emu,
        "pve_lxc_create",
        json!({"node": "pve01", "vmid": 270, "password": password,
               "ostemplate": "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}),
    )
    .await;
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_set_qemu_cloudinit",
        json!({"node": "pve01", "vmid": 101, "cipassword": cipassword, "confirm": true}),
    )
    .await;
    assert_eq!(pairs(&req.form), [("cipassword", cipassword)]);
    // A failing call with a secret does not echo it either.
    fails(
        &mut mcp,
        &emu,
        "pve_lxc_create",
        json!({"node": "pve01", "vmid": 270, "password": password,
               "ostemplate": "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}),
        "PROXMOX_SERVER_ERROR",
    )
    .await;
    assert!(mcp.shutdown().await.success());
    let log = std::fs::read_to_string(log_file.path()).unwrap();
    assert!(
        log.contains("pve_lxc_create"),
        "the log is being written: {log}"
    );
    for secret in [password, cipassword] {
        assert!(!log.contains(secret), "secret in the log:\n{log}");
    }
}
