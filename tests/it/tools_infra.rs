//! Every infrastructure tool (cluster, storage, backup, network, pools, monitoring)
//! called through the built binary over stdio against the emulator over HTTPS:
//! what the emulator received (method, path, parameters), the envelope, the confirm
//! gates, the filters the reference never sent, and the stateful round trips.

use crate::common;

use std::collections::BTreeSet;

use common::{McpProcess, emulator, envelope, full_server};
use nandi_proxmox_mcp::catalog::{self, Category};
use pve_emulator::Emulator;
use serde_json::{Value, json};

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
        // REST rows only: SSH and composite rows have their own suites.
        .filter(|s| s.backend.method_and_path().is_some())
        .filter(|s| !s.name.contains("restore") && !s.name.contains("_agent_"))
        .filter(|s| !common::peer::PEER_TOOLS.contains(&s.name))
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
            json!({"storage": "local", "confirm": true}),
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
            json!({"schedule": "sun 03:00", "storage": "local", "vmid": "101,201", "mode": "snapshot", "id": "job-test", "confirm": true}),
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
                "pve_preview_prune_backups",
                "GET",
                "/nodes/pve01/storage/local/prunebackups",
                &[("prune-backups", "keep-last=1"), ("vmid", "101")],
            ),
            json!({"node": "pve01", "storage": "local", "prune-backups": "keep-last=1", "vmid": 101}),
        ),
        (
            case(
                "pve_prune_backups",
                "DELETE",
                "/nodes/pve01/storage/local/prunebackups",
                &[("prune-backups", "keep-last=1"), ("vmid", "101")],
            ),
            json!({"node": "pve01", "storage": "local", "prune-backups": "keep-last=1", "vmid": 101, "confirm": true}),
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
                    // Sent unless the caller asks to prune (issue 37).
                    ("remove", "0"),
                ],
            ),
            json!({"node": "pve01", "vmid": "101", "storage": "local", "mode": "snapshot", "compress": "zstd", "confirm": true}),
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
            json!({"poolid": "lab", "comment": "Lab guests", "confirm": true}),
        ),
        (
            case(
                "pve_update_pool",
                "PUT",
                "/pools",
                &[("poolid", "lab"), ("vms", "102"), ("storage", "local-lvm")],
            ),
            json!({"poolid": "lab", "vms": "102", "storage": "local-lvm", "confirm": true}),
        ),
        (
            case("pve_get_pool", "GET", "/pools", &[("poolid", "lab")]),
            json!({"poolid": "lab"}),
        ),
        (
            case(
                "pve_delete_pool",
                "DELETE",
                "/pools",
                &[("poolid", "emptied")],
            ),
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
    // The listed metrics tools take the timeframe and consolidation as arguments.
    for (target, path, mut args) in [
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
        args["timeframe"] = json!("day");
        args["cf"] = json!("MAX");
        cases.push(Case {
            tool: format!("pve_get_{target}_metrics").leak(),
            args,
            method: "GET",
            path,
            params: &[("timeframe", "day"), ("cf", "MAX")],
        });
    }
    cases
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
    // A routine change (one unpruned backup) first reads its target's facts: plain GETs that
    // are not the tool's own request.
    let all = emu.requests();
    let requests: Vec<_> = if all.iter().any(|r| r.method != "GET") {
        all.iter().filter(|r| r.method != "GET").cloned().collect()
    } else {
        all.clone()
    };
    assert_eq!(requests.len(), 1, "{}: {all:?}", case.tool);
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
        .call(
            "pve_create_pool",
            json!({"poolid": "emptied", "confirm": true}),
        )
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
        if (case.tool.contains("_metrics_") || case.tool.ends_with("_metrics"))
            && case.tool != "pve_get_cluster_metrics_overview"
        {
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
        // Superseded names (the per-timespan metrics) stay callable but are not listed.
        if spec.superseded_by.is_some() {
            continue;
        }
        let listed = tools
            .iter()
            .find(|t| t["name"] == case.tool)
            .unwrap_or_else(|| panic!("{} listed under full/advanced", case.tool));
        assert_eq!(
            listed["_meta"]["anthropic/requiresUserInteraction"] == true,
            spec.always_gated(),
            "{}: human gate",
            case.tool
        );
        if !spec.always_gated() {
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
        "pve_create_backup_job",
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
        // Every change needs approval, and so does a read of guarded storage settings; a
        // backup of one guest that prunes nothing is routine, so not every backup call asks.
        "pve_get_storage_config",
        "pve_create_pool",
        // A prune deletes backups: always asked.
        "pve_prune_backups",
    ]
    .into();
    assert_eq!(gated, expected);
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
}

/// Every reference tool of these categories (restores and guest-agent reads aside)
/// has a row here, so allow-lists naming them keep working.
#[test]
#[cfg_attr(no_reference_tools, ignore = "needs ../shared/spec beside the project")]
fn every_reference_infra_tool_has_a_row() {
    let reference: Vec<Value> = serde_json::from_value(common::reference_tools()).expect("JSON");
    let wanted: BTreeSet<String> = reference
        .iter()
        .filter(|t| t["kind"] == "canonical")
        .filter(|t| CATEGORIES.iter().any(|c| t["category"] == c.as_str()))
        .filter_map(|t| t["name"].as_str())
        .filter(|n| !n.contains("restore") && !n.contains("_agent_"))
        .map(str::to_owned)
        .collect();
    let ours: BTreeSet<String> = infra_tools().into_iter().map(str::to_owned).collect();
    let missing: Vec<&String> = wanted.difference(&ours).collect();
    assert!(missing.is_empty(), "missing rows: {missing:?}");
    let extra: Vec<&String> = ours.difference(&wanted).collect();
    assert_eq!(
        extra,
        [
            "pve_apply_network_changes",
            "pve_get_lxc_metrics",
            "pve_get_node_metrics",
            "pve_get_qemu_metrics",
            "pve_preview_prune_backups",
            "pve_prune_backups"
        ],
        "new tools"
    );
}
