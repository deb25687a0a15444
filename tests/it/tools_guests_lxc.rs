//! LXC lifecycle round trip through the built binary against the emulator: create →
//! config → update → snapshots → clone → migrate (refused running, then with restart) →
//! delete → NOT_FOUND, asserting each request Proxmox received.

use crate::common;

use common::guests::{assert_request, fails, ok, start, wait_task};
use serde_json::{Value, json};

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
               "features": "nesting=1", "confirm": true}),
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
        json!({"node": "pve01", "vmid": 250, "snapname": "base", "confirm": true}),
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
        json!({"node": "pve01", "vmid": 250, "newid": 251, "hostname": "ct-251", "full": true, "confirm": true}),
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
