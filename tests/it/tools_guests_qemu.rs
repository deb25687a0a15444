//! QEMU lifecycle round trip through the built binary against the emulator: create →
//! config shows it → update (digest) → resize → snapshots → clone → migrate → template →
//! delete → NOT_FOUND, asserting each request Proxmox received.

use crate::common;

use common::guests::{assert_request, fails, ok, start, wait_task};
use serde_json::{Value, json};

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
               "ipconfig0": "ip=dhcp", "agent": "1", "onboot": true, "confirm": true}),
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
        json!({"node": "pve01", "vmid": 150, "snapname": "pre-upgrade", "description": "before", "confirm": true}),
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
               "target": "pve02", "full": true, "confirm": true}),
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
