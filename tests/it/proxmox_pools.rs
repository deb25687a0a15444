//! Pools as PVE 9 routes them, and validation no stricter than Proxmox's schema, through the built
//! binary against the emulator: `type` needs `poolid`, nested pools (`lab/web`) travel as a
//! `poolid` parameter and are accepted by the create, clone and restore tools, and VM names,
//! `vmid` lists, the overview `type` and log/task page sizes accept what Proxmox accepts.

use crate::common;

use common::guests::{assert_request, fails, ok, start, wait_task};
use nandi_proxmox_mcp::pve::{ApiRequest, Client, Connection, TlsMode};
use pve_emulator::EmulatorOptions;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_routes_pools_as_pve9_does() {
    let emu = common::emulator().await;
    let opts = EmulatorOptions::default();
    let client = Client::new(&Connection {
        host: emu.host().to_owned(),
        port: emu.port(),
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: TlsMode::Fingerprint(emu.cert_fingerprint().expect("TLS")),
    })
    .expect("client");
    let cancel = CancellationToken::new();
    let typed = client
        .call(ApiRequest::get("/pools").param("type", "qemu"), &cancel)
        .await;
    let err = typed.result.expect_err("type without poolid is refused");
    assert_eq!(err.status(), Some(400), "{err}");
    assert!(err.to_string().contains("poolid"), "{err}");

    let one = client
        .call(
            ApiRequest::get("/pools")
                .param("poolid", "emu-pool")
                .param("type", "qemu"),
            &cancel,
        )
        .await
        .result
        .expect("type with poolid");
    let pools = one.as_array().expect("a list");
    assert_eq!(pools.len(), 1);
    assert_eq!(pools[0]["poolid"], "emu-pool");
    assert!(pools[0]["members"].is_array(), "{one}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pools_no_longer_sends_a_type_proxmox_refuses() {
    let (emu, mut mcp) = start().await;
    let (error, sent) = fails(
        &mut mcp,
        &emu,
        "pve_list_pools",
        json!({"type": "qemu"}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(sent.is_empty(), "{sent:?}");
    assert!(
        error["hint"]
            .as_str()
            .unwrap_or("")
            .contains("Valid parameters"),
        "{error}"
    );
    let (pools, req) = ok(&mut mcp, &emu, "pve_list_pools", json!({})).await;
    assert_request(&req, "GET", "/pools", &[], &[]);
    assert!(pools.as_array().is_some_and(|p| !p.is_empty()), "{pools}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_pools_travel_as_a_parameter_and_guests_can_join_them() {
    let (emu, mut mcp) = start().await;
    for id in ["lab", "lab/web"] {
        let (_, req) = ok(
            &mut mcp,
            &emu,
            "pve_create_pool",
            json!({"poolid": id, "confirm": true}),
        )
        .await;
        assert_request(&req, "POST", "/pools", &[], &[("poolid", id)]);
    }

    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_create",
        json!({"node": "pve01", "vmid": 170, "name": "web-170", "pool": "lab/web", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu",
        &[],
        &[("vmid", "170"), ("name", "web-170"), ("pool", "lab/web")],
    );
    wait_task(&mut mcp, &upid).await;
    let (upid, _) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 170, "newid": 171, "pool": "lab/web", "confirm": true}),
    )
    .await;
    wait_task(&mut mcp, &upid).await;
    let archive = "local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst";
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_restore_qemu_backup",
        json!({"node": "pve01", "vmid": 172, "archive": archive, "pool": "lab/web",
               "confirm": true}),
    )
    .await;
    assert!(
        req.form
            .contains(&("pool".to_owned(), "lab/web".to_owned())),
        "{req:?}"
    );
    wait_task(&mut mcp, &upid).await;

    let (pool, req) = ok(&mut mcp, &emu, "pve_get_pool", json!({"poolid": "lab/web"})).await;
    assert_request(&req, "GET", "/pools", &[("poolid", "lab/web")], &[]);
    let members: Vec<&str> = pool[0]["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    for vm in ["qemu/170", "qemu/171", "qemu/172"] {
        assert!(members.contains(&vm), "{vm} missing from {members:?}");
    }

    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_update_pool",
        json!({"poolid": "lab/web", "vms": "170 171;172", "delete": true, "comment": "web tier",
               "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "PUT",
        "/pools",
        &[],
        &[
            ("poolid", "lab/web"),
            ("vms", "170 171;172"),
            ("delete", "1"),
            ("comment", "web tier"),
        ],
    );
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_delete_pool",
        json!({"poolid": "lab/web", "confirm": true}),
    )
    .await;
    assert_request(&req, "DELETE", "/pools", &[("poolid", "lab/web")], &[]);
    let (pools, _) = ok(&mut mcp, &emu, "pve_list_pools", json!({})).await;
    let ids: Vec<&str> = pools
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|p| p["poolid"].as_str())
        .collect();
    assert!(ids.contains(&"lab") && !ids.contains(&"lab/web"), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vm_names_follow_proxmox_dns_name() {
    let (emu, mut mcp) = start().await;
    // VM names: Proxmox's dns-name has no 63-character cap...
    let long_name = format!("{}.example", "a".repeat(80));
    let (upid, _) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_create",
        json!({"node": "pve01", "vmid": 180, "name": long_name, "confirm": true}),
    )
    .await;
    wait_task(&mut mcp, &upid).await;
    // ...but does refuse what is not a DNS name.
    for bad in ["web-", "a..b", "-web", "web_1"] {
        let (error, sent) = fails(
            &mut mcp,
            &emu,
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 180, "name": bad, "confirm": true}),
            "TOOL_INPUT_REJECTED",
        )
        .await;
        assert!(sent.is_empty(), "{bad}: {sent:?}");
        assert!(
            error["details"]["errors"]["name"].is_string(),
            "{bad}: {error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vmid_lists_take_commas_semicolons_and_spaces() {
    let (emu, mut mcp) = start().await;
    // vmid lists: commas, semicolons and spaces, as Proxmox splits them.
    let backups_of_201 = async |mcp: &mut common::McpProcess| {
        let (backups, _) = ok(
            mcp,
            &emu,
            "pve_list_backups",
            json!({"node": "pve01", "storage": "local", "vmid": 201}),
        )
        .await;
        backups.as_array().map_or(0, Vec::len)
    };
    let before = backups_of_201(&mut mcp).await;
    for list in ["101 201", "101;201", "101, 201"] {
        let (upid, req) = ok(
            &mut mcp,
            &emu,
            "pve_run_backup",
            json!({"node": "pve01", "vmid": list, "storage": "local", "confirm": true}),
        )
        .await;
        assert!(
            req.form.contains(&("vmid".to_owned(), list.to_owned())),
            "{req:?}"
        );
        wait_task(&mut mcp, &upid).await;
    }
    assert_eq!(
        backups_of_201(&mut mcp).await,
        before + 3,
        "every list form backs up 201"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_offers_sdn() {
    let (emu, mut mcp) = start().await;
    // The overview offers every kind /cluster/resources knows, SDN included.
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_get_cluster_metrics_overview",
        json!({"type": "sdn"}),
    )
    .await;
    assert_request(&req, "GET", "/cluster/resources", &[("type", "sdn")], &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_and_log_page_sizes_have_no_made_up_maximum() {
    let (emu, mut mcp) = start().await;
    // Page sizes: Proxmox sets no maximum.
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_tasks",
        json!({"node": "pve01", "limit": 1000}),
    )
    .await;
    assert_request(&req, "GET", "/nodes/pve01/tasks", &[("limit", "1000")], &[]);
    let (upid, _) = ok(
        &mut mcp,
        &emu,
        "pve_run_backup",
        json!({"node": "pve01", "vmid": "101", "storage": "local", "confirm": true}),
    )
    .await;
    wait_task(&mut mcp, &upid).await;
    let upid = upid.as_str().expect("a UPID").to_owned();
    ok(
        &mut mcp,
        &emu,
        "pve_get_task_log",
        json!({"node": "pve01", "upid": upid, "limit": 500_000}),
    )
    .await;
    ok(
        &mut mcp,
        &emu,
        "pve_get_node_syslog",
        json!({"node": "pve01", "limit": 500_000}),
    )
    .await;
}
