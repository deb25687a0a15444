//! Stateful round trips of the infrastructure tools through the built binary against
//! the emulator: what a write changes is what the next read shows (storages, backup
//! jobs and runs, pools, staged and applied network changes), and the parameters the
//! reference lacked (cf, syslog paging, overview type, cluster log max) work end to end.

use crate::common;

use std::collections::BTreeSet;

use common::{emulator, fails, full_server, ids, ok};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_round_trip() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let created = ok(
        &mut mcp,
        "pve_create_storage",
        json!({"storage": "scratch", "type": "dir", "path": "/mnt/scratch", "content": "iso,backup", "confirm": true}),
    )
    .await;
    assert_eq!(created, json!({"storage": "scratch", "type": "dir"}));
    let list = ok(&mut mcp, "pve_list_storage", json!({})).await;
    assert!(ids(&list, "storage").contains(&"scratch".to_owned()));
    let node_list = ok(
        &mut mcp,
        "pve_list_node_storage",
        json!({"node": "pve02", "content": "iso"}),
    )
    .await;
    assert!(ids(&node_list, "storage").contains(&"scratch".to_owned()));

    let config = ok(
        &mut mcp,
        "pve_get_storage_config",
        json!({"storage": "scratch", "confirm": true}),
    )
    .await;
    assert_eq!(config["path"], "/mnt/scratch");
    let digest = config["digest"].as_str().expect("digest").to_owned();
    ok(
        &mut mcp,
        "pve_update_storage",
        json!({"storage": "scratch", "nodes": "pve01", "digest": digest, "confirm": true}),
    )
    .await;
    let error = fails(
        &mut mcp,
        "pve_get_storage_status",
        json!({"node": "pve02", "storage": "scratch"}),
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not available on node"),
        "{error}"
    );
    ok(
        &mut mcp,
        "pve_get_storage_status",
        json!({"node": "pve01", "storage": "scratch"}),
    )
    .await;
    let on_pve02 = ok(&mut mcp, "pve_list_node_storage", json!({"node": "pve02"})).await;
    assert!(!ids(&on_pve02, "storage").contains(&"scratch".to_owned()));
    // Disabled: still listed, but not among the enabled ones.
    ok(
        &mut mcp,
        "pve_update_storage",
        json!({"storage": "scratch", "disable": true, "confirm": true}),
    )
    .await;
    let all = ok(&mut mcp, "pve_list_node_storage", json!({"node": "pve01"})).await;
    let scratch = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["storage"] == "scratch")
        .expect("listed");
    assert_eq!(
        (scratch["enabled"].clone(), scratch["active"].clone()),
        (json!(0), json!(0))
    );
    let enabled = ok(
        &mut mcp,
        "pve_list_node_storage",
        json!({"node": "pve01", "enabled": true}),
    )
    .await;
    assert_eq!(ids(&enabled, "storage"), ["local", "local-lvm"]);

    // A dir storage needs its path: Proxmox's 400 detail comes back, nothing is stored.
    let error = fails(
        &mut mcp,
        "pve_create_storage",
        json!({"storage": "broken", "type": "dir", "confirm": true}),
    )
    .await;
    assert!(error["details"].to_string().contains("path"), "{error}");

    ok(
        &mut mcp,
        "pve_delete_storage",
        json!({"storage": "scratch", "confirm": true}),
    )
    .await;
    let list = ok(&mut mcp, "pve_list_storage", json!({})).await;
    assert_eq!(ids(&list, "storage"), ["local", "local-lvm"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_job_and_run_round_trip() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    ok(
        &mut mcp,
        "pve_create_backup_job",
        json!({"schedule": "daily", "storage": "local", "all": true, "exclude": "9000", "enabled": false, "id": "nightly", "confirm": true}),
    )
    .await;
    let jobs = ok(&mut mcp, "pve_list_backup_jobs", json!({})).await;
    assert_eq!(ids(&jobs, "id"), ["backup-emu-1", "nightly"]);
    let job = ok(&mut mcp, "pve_get_backup_job", json!({"id": "nightly"})).await;
    assert_eq!(
        (job["all"].clone(), job["enabled"].clone()),
        (json!(1), json!(0))
    );
    // Without a guest selection nothing is sent.
    emu.clear_requests();
    let error = fails(
        &mut mcp,
        "pve_create_backup_job",
        json!({"schedule": "daily", "storage": "local"}),
    )
    .await;
    assert_eq!(error["code"], "TOOL_INPUT_REJECTED");
    assert!(emu.requests().is_empty());
    ok(
        &mut mcp,
        "pve_delete_backup_job",
        json!({"id": "nightly", "confirm": true}),
    )
    .await;
    let jobs = ok(&mut mcp, "pve_list_backup_jobs", json!({})).await;
    assert_eq!(ids(&jobs, "id"), ["backup-emu-1"]);
    fails(&mut mcp, "pve_get_backup_job", json!({"id": "nightly"})).await;

    // A run is a task; its archive then shows among the backups (content=backup only).
    let before = ok(
        &mut mcp,
        "pve_list_backups",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    assert_eq!(before.as_array().unwrap().len(), 2);
    let upid = ok(
        &mut mcp,
        "pve_run_backup",
        json!({"node": "pve01", "vmid": "201", "notes-template": "{{guestname}}", "confirm": true}),
    )
    .await;
    let upid = upid.as_str().expect("UPID");
    assert!(upid.contains(":vzdump:201:"), "{upid}");
    let status = ok(
        &mut mcp,
        "pve_get_task_status",
        json!({"node": "pve01", "upid": upid}),
    )
    .await;
    assert_eq!(status["type"], "vzdump");
    let after = ok(
        &mut mcp,
        "pve_list_backups",
        json!({"node": "pve01", "storage": "local", "vmid": 201}),
    )
    .await;
    let after = after.as_array().unwrap();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(
        after
            .iter()
            .all(|b| b["content"] == "backup" && b["vmid"] == 201)
    );
    let everything = ok(
        &mut mcp,
        "pve_list_storage_content",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    let contents: BTreeSet<&str> = everything
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["content"].as_str())
        .collect();
    assert_eq!(contents, ["backup", "iso", "snippets", "vztmpl"].into());
    // Guest disks: only those of guests on the node asked, typed by guest kind.
    let disks = ok(
        &mut mcp,
        "pve_list_storage_content",
        json!({"node": "pve02", "storage": "local-lvm"}),
    )
    .await;
    assert_eq!(ids(&disks, "volid"), ["local-lvm:vm-202-disk-0"]);
    assert_eq!(disks[0]["content"], "rootdir");
    assert_eq!(disks[0]["size"], 8_u64 << 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_round_trip() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    ok(
        &mut mcp,
        "pve_create_pool",
        json!({"poolid": "lab", "comment": "Lab", "confirm": true}),
    )
    .await;
    let pools = ok(&mut mcp, "pve_list_pools", json!({})).await;
    assert_eq!(ids(&pools, "poolid"), ["emu-pool", "lab"]);
    // 101 is in emu-pool: moving it needs allow-move.
    let error = fails(
        &mut mcp,
        "pve_update_pool",
        json!({"poolid": "lab", "vms": "101", "confirm": true}),
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("already a pool member"),
        "{error}"
    );
    ok(
        &mut mcp,
        "pve_update_pool",
        json!({"poolid": "lab", "vms": "101,102", "storage": "local-lvm", "allow-move": true, "comment": "Lab guests", "confirm": true}),
    )
    .await;
    let pool = ok(&mut mcp, "pve_get_pool", json!({"poolid": "lab"})).await;
    // PVE 9's `GET /pools?poolid=` answers a one-entry list.
    let pool = &pool[0];
    assert_eq!(pool["poolid"], "lab");
    assert_eq!(pool["comment"], "Lab guests");
    let members = ids(&pool["members"], "id");
    assert!(
        members.contains(&"qemu/101".to_owned()) && members.contains(&"qemu/102".to_owned()),
        "{members:?}"
    );
    assert!(
        members.contains(&"storage/pve01/local-lvm".to_owned()),
        "{members:?}"
    );
    let only_storage = ok(
        &mut mcp,
        "pve_get_pool",
        json!({"poolid": "lab", "type": "storage"}),
    )
    .await;
    assert!(
        only_storage[0]["members"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["type"] == "storage")
    );
    let error = fails(
        &mut mcp,
        "pve_delete_pool",
        json!({"poolid": "lab", "confirm": true}),
    )
    .await;
    assert!(
        error["message"].as_str().unwrap().contains("not empty"),
        "{error}"
    );
    ok(
        &mut mcp,
        "pve_update_pool",
        json!({"poolid": "lab", "vms": "101,102", "storage": "local-lvm", "delete": true, "confirm": true}),
    )
    .await;
    ok(
        &mut mcp,
        "pve_delete_pool",
        json!({"poolid": "lab", "confirm": true}),
    )
    .await;
    let pools = ok(&mut mcp, "pve_list_pools", json!({})).await;
    assert_eq!(ids(&pools, "poolid"), ["emu-pool"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_changes_are_staged_until_applied() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let node = json!({"node": "pve02"});
    let bridges = ok(&mut mcp, "pve_list_node_bridges", node.clone()).await;
    assert_eq!(ids(&bridges, "iface"), ["vmbr0"]);
    let bonds = ok(&mut mcp, "pve_list_node_bonds", node.clone()).await;
    assert_eq!(ids(&bonds, "iface"), ["bond0"]);
    let nics = ok(&mut mcp, "pve_list_node_physical_nics", node.clone()).await;
    assert_eq!(ids(&nics, "iface"), ["eno1", "eno2", "eno3"]);

    ok(
        &mut mcp,
        "pve_create_network",
        json!({"node": "pve02", "iface": "vmbr9", "type": "bridge", "cidr": "10.9.0.2/24", "confirm": true}),
    )
    .await;
    let staged = ok(
        &mut mcp,
        "pve_get_network",
        json!({"node": "pve02", "iface": "vmbr9"}),
    )
    .await;
    assert_eq!(staged["address"], "10.9.0.2");
    assert!(
        staged.get("active").is_none(),
        "staged, not running: {staged}"
    );
    // The update needs the type; the wrong one is Proxmox's 400.
    let error = fails(
        &mut mcp,
        "pve_update_network",
        json!({"node": "pve02", "iface": "vmbr9", "type": "bond", "mtu": 9000, "confirm": true}),
    )
    .await;
    assert!(error["details"].to_string().contains("type"), "{error}");
    ok(
        &mut mcp,
        "pve_update_network",
        json!({"node": "pve02", "iface": "vmbr9", "type": "bridge", "mtu": 9000, "confirm": true}),
    )
    .await;
    // Other nodes are untouched.
    let other = ok(&mut mcp, "pve_list_node_bridges", json!({"node": "pve01"})).await;
    assert_eq!(ids(&other, "iface"), ["vmbr0"]);

    let upid = ok(
        &mut mcp,
        "pve_apply_network_changes",
        json!({"node": "pve02", "confirm": true}),
    )
    .await;
    assert!(upid.as_str().unwrap().starts_with("UPID:pve02:"), "{upid}");
    let live = ok(
        &mut mcp,
        "pve_get_network",
        json!({"node": "pve02", "iface": "vmbr9"}),
    )
    .await;
    assert_eq!(
        (live["active"].clone(), live["mtu"].clone()),
        (json!(1), json!(9000))
    );

    ok(
        &mut mcp,
        "pve_delete_network",
        json!({"node": "pve02", "iface": "vmbr9", "confirm": true}),
    )
    .await;
    let still_running = ok(&mut mcp, "pve_list_node_bridges", node.clone()).await;
    assert_eq!(
        ids(&still_running, "iface"),
        ["vmbr0"],
        "staged removal hides it"
    );
    ok(
        &mut mcp,
        "pve_apply_network_changes",
        json!({"node": "pve02", "confirm": true}),
    )
    .await;
    fails(
        &mut mcp,
        "pve_get_network",
        json!({"node": "pve02", "iface": "vmbr9"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_syslog_and_overview_take_their_new_parameters() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let avg = ok(
        &mut mcp,
        "pve_get_node_metrics_day",
        json!({"node": "pve01"}),
    )
    .await;
    emu.clear_requests();
    let max = ok(
        &mut mcp,
        "pve_get_node_metrics_day",
        json!({"node": "pve01", "cf": "MAX"}),
    )
    .await;
    let query = &emu.requests()[0].query;
    assert!(query.contains(&("cf".into(), "MAX".into())), "{query:?}");
    assert!(
        query.contains(&("timeframe".into(), "day".into())),
        "{query:?}"
    );
    let (avg, max) = (avg.as_array().unwrap(), max.as_array().unwrap());
    let step = avg[1]["time"].as_u64().unwrap() - avg[0]["time"].as_u64().unwrap();
    assert_eq!(step, 1_800, "a day has 30-minute points");
    assert!(max[5]["cpu"].as_f64().unwrap() > avg[5]["cpu"].as_f64().unwrap());
    // The timeframe is fixed by the tool, never an argument.
    let error = fails(
        &mut mcp,
        "pve_get_node_metrics_day",
        json!({"node": "pve01", "timeframe": "year"}),
    )
    .await;
    assert_eq!(error["code"], "TOOL_INPUT_REJECTED");

    let page = ok(
        &mut mcp,
        "pve_get_node_syslog",
        json!({"node": "pve01", "start": 10, "limit": 5}),
    )
    .await;
    let page = page.as_array().unwrap();
    assert_eq!(page.len(), 5);
    assert_eq!(page[0]["n"], 11);
    let corosync = ok(
        &mut mcp,
        "pve_get_node_syslog",
        json!({"node": "pve01", "service": "corosync"}),
    )
    .await;
    assert!(
        corosync
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["t"].as_str().unwrap().contains(" corosync["))
    );
    let default_page = ok(&mut mcp, "pve_get_node_syslog", json!({"node": "pve01"})).await;
    assert_eq!(
        default_page.as_array().unwrap().len(),
        100,
        "the reference's 100 lines stay the default"
    );

    let nodes = ok(
        &mut mcp,
        "pve_get_cluster_metrics_overview",
        json!({"type": "node"}),
    )
    .await;
    assert!(
        nodes
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] == "node")
    );
    let guests = ok(&mut mcp, "pve_get_cluster_metrics_overview", json!({})).await;
    assert!(
        guests
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] == "qemu" || r["type"] == "lxc")
    );

    emu.clear_requests();
    let log = ok(&mut mcp, "pve_get_cluster_log", json!({"max": 2})).await;
    assert_eq!(log.as_array().unwrap().len(), 2);
    assert_eq!(
        emu.requests()[0].query,
        [("max".to_owned(), "2".to_owned())]
    );
}
