//! Every infrastructure tool (cluster, storage, backup, network, pools, monitoring)
//! called through the built binary over stdio against the emulator over HTTPS:
//! what the emulator received (method, path, parameters), the envelope, the confirm
//! gates, the filters the reference never sent, and the stateful round trips.

mod common;

use std::collections::BTreeSet;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use nandi_proxmox_mcp::catalog::{self, Category};
use nandi_proxmox_mcp::emulator::Emulator;
use serde_json::{Value, json};

const FULL_ADVANCED: &[(&str, &str)] =
    &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];

const CATEGORIES: [Category; 6] = [
    Category::Cluster,
    Category::Storage,
    Category::Backup,
    Category::Network,
    Category::Pools,
    Category::Monitoring,
];

/// Rows owned by the infrastructure part (restores and guest-agent reads live with guests).
fn infra_tools() -> BTreeSet<&'static str> {
    catalog::all()
        .filter(|s| CATEGORIES.contains(&s.category))
        .filter(|s| !s.name.contains("restore") && !s.name.contains("_agent_"))
        .map(|s| s.name)
        .collect()
}

/// One expected exchange: the tool and its arguments, then the one request it must send.
struct Case {
    tool: &'static str,
    args: Value,
    method: &'static str,
    path: &'static str,
    params: &'static [(&'static str, &'static str)],
}

const fn case(
    tool: &'static str,
    method: &'static str,
    path: &'static str,
    params: &'static [(&'static str, &'static str)],
) -> (
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
) {
    (tool, method, path, params)
}

/// Every infrastructure tool once, in an order where each write succeeds.
fn cases() -> Vec<Case> {
    let table: Vec<(_, Value)> = vec![
        (
            case("pve_get_cluster_status", "GET", "/cluster/status", &[]),
            json!({}),
        ),
        (
            case(
                "pve_list_cluster_resources",
                "GET",
                "/cluster/resources",
                &[("type", "vm")],
            ),
            json!({"type": "vm"}),
        ),
        (
            case("pve_get_next_vmid", "GET", "/cluster/nextid", &[]),
            json!({}),
        ),
        (
            case(
                "pve_get_cluster_log",
                "GET",
                "/cluster/log",
                &[("max", "5")],
            ),
            json!({"max": 5}),
        ),
        (
            case("pve_get_cluster_options", "GET", "/cluster/options", &[]),
            json!({}),
        ),
        (
            case(
                "pve_list_cluster_replication",
                "GET",
                "/cluster/replication",
                &[],
            ),
            json!({}),
        ),
        (
            case(
                "pve_get_cluster_ha_status",
                "GET",
                "/cluster/ha/status/current",
                &[],
            ),
            json!({}),
        ),
        (
            case(
                "pve_list_cluster_backup_info",
                "GET",
                "/cluster/backup-info",
                &[],
            ),
            json!({}),
        ),
        (
            case("pve_list_storage", "GET", "/storage", &[("type", "dir")]),
            json!({"type": "dir"}),
        ),
        (
            case("pve_get_storage_config", "GET", "/storage/local", &[]),
            json!({"storage": "local"}),
        ),
        (
            case(
                "pve_list_node_storage",
                "GET",
                "/nodes/pve01/storage",
                &[("content", "backup"), ("enabled", "1")],
            ),
            json!({"node": "pve01", "content": "backup", "enabled": true}),
        ),
        (
            case(
                "pve_get_storage_status",
                "GET",
                "/nodes/pve01/storage/local/status",
                &[],
            ),
            json!({"node": "pve01", "storage": "local"}),
        ),
        (
            case(
                "pve_list_storage_content",
                "GET",
                "/nodes/pve01/storage/local/content",
                &[("content", "iso")],
            ),
            json!({"node": "pve01", "storage": "local", "content": "iso"}),
        ),
        (
            case(
                "pve_create_storage",
                "POST",
                "/storage",
                &[
                    ("storage", "nas"),
                    ("type", "nfs"),
                    ("content", "backup,iso"),
                    ("server", "192.168.1.20"),
                    ("export", "/export/pve"),
                ],
            ),
            json!({"storage": "nas", "type": "nfs", "content": "backup,iso", "server": "192.168.1.20", "export": "/export/pve", "confirm": true}),
        ),
        (
            case(
                "pve_update_storage",
                "PUT",
                "/storage/nas",
                &[("nodes", "pve01,pve02"), ("disable", "0")],
            ),
            json!({"storage": "nas", "nodes": "pve01,pve02", "disable": false, "confirm": true}),
        ),
        (
            case("pve_delete_storage", "DELETE", "/storage/nas", &[]),
            json!({"storage": "nas", "confirm": true}),
        ),
        (
            case("pve_list_backup_jobs", "GET", "/cluster/backup", &[]),
            json!({}),
        ),
        (
            case(
                "pve_create_backup_job",
                "POST",
                "/cluster/backup",
                &[
                    ("schedule", "sun 03:00"),
                    ("storage", "local"),
                    ("vmid", "101,201"),
                    ("mode", "snapshot"),
                    ("id", "job-test"),
                ],
            ),
            json!({"schedule": "sun 03:00", "storage": "local", "vmid": "101,201", "mode": "snapshot", "id": "job-test"}),
        ),
        (
            case("pve_get_backup_job", "GET", "/cluster/backup/job-test", &[]),
            json!({"id": "job-test"}),
        ),
        (
            case(
                "pve_delete_backup_job",
                "DELETE",
                "/cluster/backup/job-test",
                &[],
            ),
            json!({"id": "job-test", "confirm": true}),
        ),
        (
            case(
                "pve_list_backups",
                "GET",
                "/nodes/pve01/storage/local/content",
                &[("vmid", "101"), ("content", "backup")],
            ),
            json!({"node": "pve01", "storage": "local", "vmid": 101}),
        ),
        (
            case(
                "pve_run_backup",
                "POST",
                "/nodes/pve01/vzdump",
                &[
                    ("vmid", "101"),
                    ("storage", "local"),
                    ("mode", "snapshot"),
                    ("compress", "zstd"),
                ],
            ),
            json!({"node": "pve01", "vmid": "101", "storage": "local", "mode": "snapshot", "compress": "zstd"}),
        ),
        (
            case("pve_list_networks", "GET", "/nodes/pve01/network", &[]),
            json!({"node": "pve01"}),
        ),
        (
            case("pve_get_network", "GET", "/nodes/pve01/network/vmbr0", &[]),
            json!({"node": "pve01", "iface": "vmbr0"}),
        ),
        (
            case(
                "pve_list_node_bridges",
                "GET",
                "/nodes/pve01/network",
                &[("type", "bridge")],
            ),
            json!({"node": "pve01"}),
        ),
        (
            case(
                "pve_list_node_bonds",
                "GET",
                "/nodes/pve01/network",
                &[("type", "bond")],
            ),
            json!({"node": "pve01"}),
        ),
        (
            case(
                "pve_list_node_physical_nics",
                "GET",
                "/nodes/pve01/network",
                &[("type", "eth")],
            ),
            json!({"node": "pve01"}),
        ),
        (
            case(
                "pve_create_network",
                "POST",
                "/nodes/pve01/network",
                &[
                    ("iface", "vmbr1"),
                    ("type", "bridge"),
                    ("bridge_ports", "eno2"),
                    ("bridge_vlan_aware", "1"),
                    ("autostart", "1"),
                ],
            ),
            json!({"node": "pve01", "iface": "vmbr1", "type": "bridge", "bridge_ports": "eno2", "bridge_vlan_aware": true, "autostart": true, "confirm": true}),
        ),
        (
            case(
                "pve_update_network",
                "PUT",
                "/nodes/pve01/network/vmbr1",
                &[
                    ("type", "bridge"),
                    ("cidr", "10.10.0.1/24"),
                    ("comments", "lab"),
                ],
            ),
            json!({"node": "pve01", "iface": "vmbr1", "type": "bridge", "cidr": "10.10.0.1/24", "comments": "lab", "confirm": true}),
        ),
        (
            case(
                "pve_delete_network",
                "DELETE",
                "/nodes/pve01/network/vmbr1",
                &[],
            ),
            json!({"node": "pve01", "iface": "vmbr1", "confirm": true}),
        ),
        (
            case(
                "pve_apply_network_changes",
                "PUT",
                "/nodes/pve01/network",
                &[],
            ),
            json!({"node": "pve01", "confirm": true}),
        ),
        (case("pve_list_pools", "GET", "/pools", &[]), json!({})),
        (
            case(
                "pve_create_pool",
                "POST",
                "/pools",
                &[("poolid", "lab"), ("comment", "Lab guests")],
            ),
            json!({"poolid": "lab", "comment": "Lab guests"}),
        ),
        (
            case(
                "pve_update_pool",
                "PUT",
                "/pools/lab",
                &[("vms", "102"), ("storage", "local-lvm")],
            ),
            json!({"poolid": "lab", "vms": "102", "storage": "local-lvm", "confirm": true}),
        ),
        (
            case("pve_get_pool", "GET", "/pools/lab", &[]),
            json!({"poolid": "lab"}),
        ),
        (
            case("pve_delete_pool", "DELETE", "/pools/emptied", &[]),
            json!({"poolid": "emptied", "confirm": true}),
        ),
        (
            case(
                "pve_get_cluster_metrics_overview",
                "GET",
                "/cluster/resources",
                &[("type", "vm")],
            ),
            json!({}),
        ),
        (
            case("pve_get_node_version", "GET", "/nodes/pve02/version", &[]),
            json!({"node": "pve02"}),
        ),
        (
            case("pve_get_node_dns", "GET", "/nodes/pve02/dns", &[]),
            json!({"node": "pve02"}),
        ),
        (
            case("pve_get_node_time", "GET", "/nodes/pve02/time", &[]),
            json!({"node": "pve02"}),
        ),
        (
            case(
                "pve_get_node_syslog",
                "GET",
                "/nodes/pve02/syslog",
                &[("service", "pveproxy"), ("limit", "100")],
            ),
            json!({"node": "pve02", "service": "pveproxy"}),
        ),
        (
            case(
                "pve_list_node_services",
                "GET",
                "/nodes/pve02/services",
                &[],
            ),
            json!({"node": "pve02"}),
        ),
    ];
    let mut cases: Vec<Case> = table
        .into_iter()
        .map(|((tool, method, path, params), args)| Case {
            tool,
            args,
            method,
            path,
            params,
        })
        .collect();
    for span in ["hour", "day", "week", "month", "year"] {
        for (target, path, args) in [
            ("node", "/nodes/pve01/rrddata", json!({"node": "pve01"})),
            (
                "qemu",
                "/nodes/pve01/qemu/101/rrddata",
                json!({"node": "pve01", "vmid": 101}),
            ),
            (
                "lxc",
                "/nodes/pve01/lxc/201/rrddata",
                json!({"node": "pve01", "vmid": 201}),
            ),
        ] {
            let tool: &'static str = format!("pve_get_{target}_metrics_{span}").leak();
            let params: &'static [(&str, &str)] =
                vec![("timeframe", span), ("cf", "AVERAGE")].leak();
            cases.push(Case {
                tool,
                args,
                method: "GET",
                path,
                params,
            });
        }
    }
    cases
}

async fn full_server(emu: &Emulator) -> McpProcess {
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(emu), FULL_ADVANCED));
    mcp.initialize().await;
    mcp
}

fn sorted(pairs: &[(String, String)]) -> Vec<(String, String)> {
    let mut pairs = pairs.to_vec();
    pairs.sort();
    pairs
}

/// Calls a tool and checks the one request it sent; returns the envelope.
async fn expect_request(mcp: &mut McpProcess, emu: &Emulator, case: &Case) -> Value {
    emu.clear_requests();
    let result = mcp.call(case.tool, case.args.clone()).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{}: {env}", case.tool);
    assert_ne!(result["isError"], true, "{}", case.tool);
    assert_eq!(env["meta"]["tool"], case.tool);
    let requests = emu.requests();
    assert_eq!(requests.len(), 1, "{}: {requests:?}", case.tool);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        (case.method, case.path),
        "{}",
        case.tool
    );
    let sent = if matches!(case.method, "GET" | "DELETE") {
        assert!(
            request.form.is_empty(),
            "{}: body on {}",
            case.tool,
            case.method
        );
        &request.query
    } else {
        assert!(
            request.query.is_empty(),
            "{}: query on {}",
            case.tool,
            case.method
        );
        &request.form
    };
    let expected: Vec<(String, String)> = case
        .params
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(sorted(sent), sorted(&expected), "{}: parameters", case.tool);
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_infra_tool_sends_the_expected_request() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    // The pool deleted in the table must exist and be empty.
    let setup = mcp
        .call("pve_create_pool", json!({"poolid": "emptied"}))
        .await;
    assert_eq!(envelope(&setup)["ok"], true);

    let cases = cases();
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.tool).collect();
    assert_eq!(
        covered,
        infra_tools(),
        "every infrastructure tool has a case"
    );
    for case in &cases {
        let env = expect_request(&mut mcp, &emu, case).await;
        if case.tool.contains("_metrics_") && case.tool != "pve_get_cluster_metrics_overview" {
            let points = env["data"].as_array().expect("RRD array");
            assert_eq!(points.len(), 70, "{}", case.tool);
            assert!(points[0]["time"].is_u64(), "{}", case.tool);
        }
    }
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_tools_are_refused_without_confirm_and_send_nothing() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let tools = mcp.list_tools().await;
    let mut gated = BTreeSet::new();
    for case in cases() {
        let spec = catalog::find(case.tool).expect("row");
        let listed = tools
            .iter()
            .find(|t| t["name"] == case.tool)
            .unwrap_or_else(|| panic!("{} listed under full/advanced", case.tool));
        assert_eq!(
            listed["_meta"]["anthropic/requiresUserInteraction"] == true,
            spec.confirm,
            "{}: human gate",
            case.tool
        );
        if !spec.confirm {
            continue;
        }
        gated.insert(case.tool);
        let mut args = case.args.clone();
        args.as_object_mut().expect("object").remove("confirm");
        let refused = mcp.call(case.tool, args).await;
        assert_eq!(refused["isError"], true, "{}", case.tool);
        assert_eq!(
            envelope(&refused)["error"]["code"],
            "CONFIRMATION_REQUIRED",
            "{}",
            case.tool
        );
    }
    let expected: BTreeSet<&str> = [
        "pve_create_storage",
        "pve_update_storage",
        "pve_delete_storage",
        "pve_delete_backup_job",
        "pve_create_network",
        "pve_update_network",
        "pve_delete_network",
        "pve_apply_network_changes",
        "pve_update_pool",
        "pve_delete_pool",
    ]
    .into();
    assert_eq!(gated, expected);
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
}

/// Calls a tool that must succeed and returns its `data`.
async fn ok(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{tool}: {env}");
    env["data"].clone()
}

/// Calls a tool that must fail and returns the error object.
async fn fails(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    assert_eq!(result["isError"], true, "{tool}: {result}");
    envelope(&result)["error"].clone()
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .filter_map(|row| row[key].as_str().map(str::to_owned))
        .collect()
}

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
        json!({"storage": "scratch"}),
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
        json!({"schedule": "daily", "storage": "local", "all": true, "exclude": "9000", "enabled": false, "id": "nightly"}),
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
        json!({"node": "pve01", "vmid": "201", "notes-template": "{{guestname}}"}),
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
    assert_eq!(contents, ["backup", "iso", "vztmpl"].into());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_round_trip() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    ok(
        &mut mcp,
        "pve_create_pool",
        json!({"poolid": "lab", "comment": "Lab"}),
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
        only_storage["members"]
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
