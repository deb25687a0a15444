//! Several clusters, one server: two emulators on loopback with different tiers (`lab` full,
//! `prod` read-only) behind one in-process server, driven by rmcp's client side. The listing
//! is the union with a `cluster` enum; each call reaches only its cluster (the emulators'
//! request logs say so); a tool `prod` does not allow is refused with 0 requests anywhere and
//! the error names `lab`; the same VMID on both clusters is kept apart (status, the person's
//! question, the audit line's `instance`, task ids that cannot be edited to point at the other
//! cluster); one cluster down does not fail the cross-cluster overview; and one cluster is
//! byte-for-byte today's listing.

use crate::mcp_tasks_client;

use std::path::Path;
use std::time::Duration;

use mcp_tasks_client::{
    ClientSetup, call, call_once, connect, emulator_with_pace, envelope, pve_client, settings,
};
use nandi_proxmox_mcp::audit::{AuditLog, AuditTarget};
use nandi_proxmox_mcp::clusters::Clusters;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use pve_emulator::Emulator;
use rmcp::model::{CallToolResponse, GetTaskParams};
use serde_json::{Value, json};

const FULL: &[(&str, &str)] = &[];
const READ_ONLY: &[(&str, &str)] = &[
    ("PVE_ACCESS_TIER", "read-only"),
    ("PVE_MODULE_MODE", "core"),
];

fn state(emu: &Emulator, vars: &[(&str, &str)], audit: &AuditLog, name: &str) -> AppState {
    let settings = settings(vars);
    AppState {
        registry: Registry::build(&settings),
        settings,
        pve: Some(pve_client(emu)),
        connection_note: format!("test {name}"),
        ssh: None,
        ssh_note: String::new(),
        audit: audit.clone().with_instance(name),
        pbs: Vec::new(),
    }
}

struct Two {
    lab: Emulator,
    prod: Emulator,
    audit_file: tempfile::TempDir,
    server: Server,
}

impl Two {
    async fn start() -> Two {
        mcp_tasks_client::isolate_schema_cache();
        let lab = emulator_with_pace(Duration::from_millis(20)).await;
        let prod = emulator_with_pace(Duration::from_millis(20)).await;
        let audit_file = tempfile::tempdir().unwrap();
        let audit = AuditLog::new(AuditTarget::File(audit_file.path().join("audit.jsonl")));
        let clusters = Clusters::new(
            vec![
                ("lab".into(), state(&lab, FULL, &audit, "lab")),
                ("prod".into(), state(&prod, READ_ONLY, &audit, "prod")),
            ],
            None,
        )
        .unwrap();
        let server = Server::with_clusters(clusters);
        lab.clear_requests();
        prod.clear_requests();
        Two {
            lab,
            prod,
            audit_file,
            server,
        }
    }

    fn audit_lines(&self) -> Vec<Value> {
        read_lines(&self.audit_file.path().join("audit.jsonl"))
    }
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const ASKS: ClientSetup = ClientSetup {
    tasks: false,
    approve: Some(true),
};

#[tokio::test]
async fn the_listing_is_the_union_and_every_tool_takes_a_cluster() {
    let two = Two::start().await;
    let (client, _) = connect(two.server.clone(), ClientSetup::default()).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} listed"))
    };
    // A full-tier tool is listed because lab allows it, though prod does not.
    for name in ["pve_list_nodes", "pve_qemu_create", "pve_stop_qemu_vm"] {
        let schema = Value::Object(find(name).input_schema.as_ref().clone());
        assert_eq!(
            schema["properties"]["cluster"]["enum"],
            json!(["lab", "prod"]),
            "{name}"
        );
        let required = schema["required"].as_array().unwrap();
        assert!(required.contains(&json!("cluster")), "{name}: {schema}");
    }
    let info = client.peer_info().unwrap();
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("lab") && instructions.contains("prod"),
        "{instructions}"
    );
}

#[tokio::test]
async fn each_call_reaches_only_the_cluster_it_names() {
    let two = Two::start().await;
    let (client, _) = connect(two.server.clone(), ClientSetup::default()).await;
    let (err, body) = envelope(&client, "pve_list_nodes", json!({"cluster": "lab"})).await;
    assert!(!err, "{body}");
    assert_eq!(body["meta"]["cluster"], "lab");
    assert!(!two.lab.requests().is_empty());
    assert!(two.prod.requests().is_empty(), "prod was not asked");
    two.lab.clear_requests();
    let (err, body) = envelope(&client, "pve_list_nodes", json!({"cluster": "prod"})).await;
    assert!(!err, "{body}");
    assert_eq!(body["meta"]["cluster"], "prod");
    assert!(two.lab.requests().is_empty(), "lab was not asked");
    assert!(!two.prod.requests().is_empty());
    // No request carries the argument itself.
    for r in two.prod.requests() {
        assert!(r.query.iter().all(|(k, _)| k != "cluster"), "{r:?}");
    }
    // Without a default, the cluster must be named; an unknown one is refused too.
    two.prod.clear_requests();
    for args in [
        json!({}),
        json!({"cluster": "staging"}),
        json!({"cluster": 3}),
    ] {
        let (err, body) = envelope(&client, "pve_list_nodes", args.clone()).await;
        assert!(err, "{args}: {body}");
        assert_eq!(body["error"]["code"], "TOOL_INPUT_REJECTED", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("lab, prod")
        );
    }
    assert!(two.lab.requests().is_empty() && two.prod.requests().is_empty());
}

#[tokio::test]
async fn a_tool_prod_does_not_allow_is_refused_naming_lab_and_nothing_is_sent() {
    let two = Two::start().await;
    let (client, handler) = connect(two.server.clone(), ASKS).await;
    let args = json!({"cluster": "prod", "node": "pve01", "vmid": 101});
    let (err, body) = envelope(&client, "pve_stop_qemu_vm", args).await;
    assert!(err, "{body}");
    assert_eq!(body["error"]["code"], "CLUSTER_NOT_ALLOWED", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("prod") && message.contains("allowed in: lab"),
        "{message}"
    );
    assert_eq!(body["meta"]["cluster"], "prod");
    assert_eq!(body["meta"]["attempts"], 0);
    assert!(two.prod.requests().is_empty(), "0 requests reach prod");
    assert!(two.lab.requests().is_empty(), "nor lab");
    assert!(handler.questions.lock().unwrap().is_empty(), "nobody asked");
    let lines = two.audit_lines();
    let refused = lines.last().expect("the refusal is audited");
    assert_eq!(refused["instance"], "prod", "{refused}");
    assert_eq!(refused["decision"], "refused", "{refused}");
    assert_eq!(refused["tool"], "pve_stop_qemu_vm");
}

#[tokio::test]
async fn the_same_vmid_on_both_clusters_is_kept_apart() {
    let two = Two::start().await;
    let (client, handler) = connect(two.server.clone(), ASKS).await;
    let status = |cluster: &'static str| {
        let client = &client;
        async move {
            let args = json!({"cluster": cluster, "node": "pve01", "vmid": 101});
            let (err, body) = envelope(client, "pve_get_qemu_status", args).await;
            assert!(!err, "{body}");
            assert_eq!(body["meta"]["cluster"], cluster);
            body["data"]["status"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(status("lab").await, "running");
    assert_eq!(status("prod").await, "running");
    two.prod.clear_requests();
    let args = json!({"cluster": "lab", "node": "pve01", "vmid": 101, "wait": true});
    let (err, body) = envelope(&client, "pve_stop_qemu_vm", args).await;
    assert!(!err, "{body}");
    assert_eq!(body["meta"]["cluster"], "lab");
    assert!(
        two.prod.requests().is_empty(),
        "the stop never reached prod"
    );
    let questions = handler.questions.lock().unwrap().clone();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(
        questions[0].contains("VM 101")
            && questions[0].contains("in cluster lab")
            && !questions[0].contains("**"),
        "{}",
        questions[0]
    );
    assert_eq!(status("lab").await, "stopped");
    assert_eq!(status("prod").await, "running", "prod's VM 101 untouched");
    let lines = two.audit_lines();
    let stop: Vec<&Value> = lines
        .iter()
        .filter(|l| l["tool"] == "pve_stop_qemu_vm")
        .collect();
    assert!(!stop.is_empty());
    assert!(stop.iter().all(|l| l["instance"] == "lab"), "{stop:?}");
    // A dry run names the cluster too.
    let args = json!({"cluster": "lab", "node": "pve01", "vmid": 101, "dry_run": true});
    let (_, body) = envelope(&client, "pve_start_qemu_vm", args).await;
    assert_eq!(body["data"]["cluster"], "lab", "{body}");
}

#[tokio::test]
async fn a_task_id_is_followed_only_on_its_cluster() {
    let two = Two::start().await;
    let setup = ClientSetup {
        tasks: true,
        approve: Some(true),
    };
    let (client, _) = connect(two.server.clone(), setup).await;
    let args = json!({"cluster": "lab", "node": "pve01", "vmid": 101});
    let params = mcp_tasks_client::call_for(&client, "pve_stop_qemu_vm", args);
    let response = client.peer().call_tool_once(params).await.unwrap();
    let CallToolResponse::Task(created) = response else {
        panic!("expected a task, got {response:?}");
    };
    let id = created.task.task_id.clone();
    assert!(id.starts_with("lab~"), "{id}");
    let got = mcp_tasks_client::poll_to_end(&client, &id, Duration::from_secs(10)).await;
    assert!(got.task.status().is_terminal());
    two.prod.clear_requests();
    // Edited to point at prod (or at no cluster): unknown, and prod is never read.
    for forged in [
        id.replacen("lab~", "prod~", 1),
        id.replacen("lab~", "nope~", 1),
        id.split('~').nth(1).unwrap().to_owned(),
    ] {
        let err = client
            .peer()
            .get_task(GetTaskParams::new(forged.as_str()))
            .await
            .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("unknown task"), "{forged}: {text}");
    }
    assert!(
        two.prod.requests().is_empty(),
        "a lab task id never reads prod"
    );
}

#[tokio::test]
async fn the_overview_reports_every_cluster_even_when_one_is_down() {
    let two = Two::start().await;
    let (client, _) = connect(two.server.clone(), ClientSetup::default()).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    let overview = tools
        .iter()
        .find(|t| t.name == "pve_clusters_overview")
        .expect("listed with several clusters");
    let schema = Value::Object(overview.input_schema.as_ref().clone());
    assert!(schema["properties"].get("cluster").is_none(), "{schema}");
    let (err, body) = envelope(&client, "pve_clusters_overview", json!({})).await;
    assert!(!err, "{body}");
    let clusters = body["data"]["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 2);
    assert_eq!(clusters[0]["cluster"], "lab");
    assert_eq!(clusters[0]["ok"], true);
    assert_eq!(clusters[1]["cluster"], "prod");
    assert!(
        clusters[0]["nodes"]["total"].as_u64().unwrap() > 0,
        "{body}"
    );
    assert!(clusters[1]["guests"].is_object(), "{body}");
    // prod goes down: lab still answers, prod is reported with its error.
    let Two {
        lab, prod, server, ..
    } = two;
    prod.shutdown().await;
    let started = std::time::Instant::now();
    let (err, body) = envelope(&client, "pve_clusters_overview", json!({})).await;
    assert!(!err, "one cluster down never fails the answer: {body}");
    let clusters = body["data"]["clusters"].as_array().unwrap();
    assert_eq!(clusters[0]["ok"], true, "{body}");
    assert_eq!(clusters[1]["ok"], false, "{body}");
    assert!(clusters[1]["error"]["code"].is_string(), "{body}");
    assert_eq!(body["data"]["reachable"], 1);
    assert!(started.elapsed() < Duration::from_secs(25));
    drop((lab, server));
}

/// A server built the old way (`Server::new` over one state) and one built through the
/// cluster set with a single cluster list exactly the same bytes.
#[tokio::test]
async fn one_cluster_lists_exactly_the_bytes_of_today() {
    mcp_tasks_client::isolate_schema_cache();
    let emu = emulator_with_pace(Duration::from_millis(20)).await;
    let audit = AuditLog::off();
    for vars in [FULL, READ_ONLY, &[("PVE_TOOL_SURFACE", "compact")][..]] {
        let old = Server::new(state(&emu, vars, &audit, "x"));
        let new = Server::with_clusters(
            Clusters::new(vec![("only".into(), state(&emu, vars, &audit, "x"))], None).unwrap(),
        );
        let mut listings = Vec::new();
        let mut infos = Vec::new();
        for server in [old, new] {
            let (client, _) = connect(server, ClientSetup::default()).await;
            let tools = client.peer().list_all_tools().await.unwrap();
            listings.push(serde_json::to_string(&tools).unwrap());
            infos.push(client.peer_info().unwrap().instructions.clone());
            let (_, body) = envelope(&client, "pve_list_nodes", json!({})).await;
            assert!(body["meta"].get("cluster").is_none(), "{body}");
        }
        assert_eq!(listings[0], listings[1], "{vars:?}");
        assert_eq!(infos[0], infos[1], "{vars:?}");
        assert!(
            !listings[0].contains("\"cluster\":{\"type\":\"string\",\"enum\""),
            "no cluster argument: {vars:?}"
        );
        assert!(!listings[0].contains("pve_clusters_overview"), "{vars:?}");
    }
    let _ = call_once;
    let _ = call;
}

/// Bytes of name + description + compact JSON of the input schema (as tests/it/budget.rs
/// measures what the model sees), summed over the listing.
fn model_visible(tools: &[rmcp::model::Tool]) -> usize {
    tools
        .iter()
        .map(|tool| {
            tool.name.len()
                + tool.description.as_deref().map_or(0, str::len)
                + serde_json::to_vec(tool.input_schema.as_ref())
                    .unwrap()
                    .len()
        })
        .sum()
}

/// The `cluster` argument's cost: two clusters with the same policy against one. The default
/// listing stays within tests/it/budget.rs's 24,000 B; full/advanced is already at 89 KB with one
/// cluster, so two go past its 90,000 B (docs/PERFORMANCE.md has the figures, and points such
/// setups at the compact surface): there the growth is bounded instead.
#[tokio::test]
async fn two_clusters_cost_stays_within_the_budgets() {
    mcp_tasks_client::isolate_schema_cache();
    let emu = emulator_with_pace(Duration::from_millis(20)).await;
    let audit = AuditLog::off();
    let default = [
        ("PVE_ACCESS_TIER", "read-only"),
        ("PVE_MODULE_MODE", "core"),
    ];
    for (label, vars, budget) in [
        ("default", &default[..], 24_000),
        ("full/advanced", FULL, 90_000),
    ] {
        let one = Clusters::new(vec![("a".into(), state(&emu, vars, &audit, "a"))], None).unwrap();
        let two = Clusters::new(
            vec![
                ("lab".into(), state(&emu, vars, &audit, "lab")),
                ("prod".into(), state(&emu, vars, &audit, "prod")),
            ],
            None,
        )
        .unwrap();
        let (one_tools, two_tools) = (one.listing().tools(), two.listing().tools());
        let (one_bytes, two_bytes) = (model_visible(&one_tools), model_visible(&two_tools));
        eprintln!(
            "{label}: one cluster {} tools, {one_bytes} B; two clusters {} tools, {two_bytes} B (+{} B)",
            one_tools.len(),
            two_tools.len(),
            two_bytes - one_bytes
        );
        if label == "default" {
            assert!(two_bytes <= budget, "{label}: {two_bytes} B over {budget}");
        }
        // The argument costs at most 66 B a tool (`"cluster":{"type":"string","enum":[…]}`
        // and its `required` entry), plus the overview tool.
        let growth = two_bytes - one_bytes;
        assert!(growth <= one_tools.len() * 66 + 500, "{label}: +{growth} B");
    }
}

/// On the compact surface the model meets a tool through `pve_describe_tool`: its schema shows
/// the `cluster` argument as `tools/list` would, and `pve_call_tool` routes by it.
#[tokio::test]
async fn the_compact_surface_describes_and_routes_the_cluster_argument() {
    mcp_tasks_client::isolate_schema_cache();
    let lab = emulator_with_pace(Duration::from_millis(20)).await;
    let prod = emulator_with_pace(Duration::from_millis(20)).await;
    let audit = AuditLog::off();
    let compact = [("PVE_TOOL_SURFACE", "compact")];
    let clusters = Clusters::new(
        vec![
            ("lab".into(), state(&lab, &compact, &audit, "lab")),
            ("prod".into(), state(&prod, &compact, &audit, "prod")),
        ],
        None,
    )
    .unwrap();
    let (client, _) = connect(Server::with_clusters(clusters), ClientSetup::default()).await;
    let (is_error, described) = envelope(
        &client,
        "pve_describe_tool",
        json!({"name": "pve_list_nodes"}),
    )
    .await;
    assert!(!is_error, "{described}");
    let schema = &described["data"]["inputSchema"];
    assert_eq!(
        schema["properties"]["cluster"]["enum"],
        json!(["lab", "prod"]),
        "{described}"
    );
    assert!(
        schema["required"]
            .as_array()
            .unwrap()
            .contains(&json!("cluster")),
        "{described}"
    );
    lab.clear_requests();
    prod.clear_requests();
    let (is_error, answer) = envelope(
        &client,
        "pve_call_tool",
        json!({"name": "pve_list_nodes", "arguments": {"cluster": "prod"}}),
    )
    .await;
    assert!(!is_error, "{answer}");
    assert_eq!(answer["meta"]["cluster"], "prod", "{answer}");
    assert!(lab.requests().is_empty());
    assert!(!prod.requests().is_empty());
}

/// A cluster whose own lists leave the overview out is never read by it: the same reads a
/// call naming that cluster would be refused for. It is reported, unread.
#[tokio::test]
async fn the_overview_never_reads_a_cluster_whose_policy_leaves_it_out() {
    mcp_tasks_client::isolate_schema_cache();
    let lab = emulator_with_pace(Duration::from_millis(20)).await;
    let prod = emulator_with_pace(Duration::from_millis(20)).await;
    let audit = AuditLog::off();
    let clusters = Clusters::new(
        vec![
            ("lab".into(), state(&lab, FULL, &audit, "lab")),
            (
                "prod".into(),
                state(
                    &prod,
                    &[("PVE_TOOL_WHITELIST", "pve_list_nodes")],
                    &audit,
                    "prod",
                ),
            ),
        ],
        None,
    )
    .unwrap();
    let (client, _) = connect(Server::with_clusters(clusters), ClientSetup::default()).await;
    lab.clear_requests();
    prod.clear_requests();
    let (err, body) = envelope(&client, "pve_clusters_overview", json!({})).await;
    assert!(!err, "{body}");
    let clusters = body["data"]["clusters"].as_array().unwrap();
    assert_eq!(clusters[0]["ok"], true, "{body}");
    assert_eq!(
        clusters[1]["error"]["code"], "CLUSTER_NOT_ALLOWED",
        "{body}"
    );
    assert!(!lab.requests().is_empty());
    assert!(prod.requests().is_empty(), "{:?}", prod.requests());
}
