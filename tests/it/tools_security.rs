//! Access-control and firewall tools through the built binary over stdio, against the
//! emulator over HTTPS: what Proxmox receives, the envelope, the confirmation gate,
//! QEMU and LXC guest firewalls, stateful round-trips, and secrets kept out of the log.

use crate::common;
use crate::security_cases;

use std::collections::BTreeSet;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use nandi_proxmox_mcp::catalog::{self, Category};
use pve_emulator::{Emulator, RecordedRequest};
use security_cases::cases;
use serde_json::{Value, json};

const FULL_ADVANCED: &[(&str, &str)] =
    &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];

fn mine(category: Category) -> bool {
    matches!(category, Category::Access | Category::Firewall)
}

/// Query and form parameters of a request, sorted.
fn sent(request: &RecordedRequest) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = request
        .query
        .iter()
        .chain(request.form.iter())
        .cloned()
        .collect();
    all.sort();
    all
}

fn expected(params: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    all.sort();
    all
}

async fn full_server(emu: &Emulator) -> McpProcess {
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(emu), FULL_ADVANCED));
    mcp.initialize().await;
    mcp
}

/// Calls `tool` and returns the envelope, asserting success.
async fn ok(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args.clone()).await;
    assert_ne!(result["isError"], true, "{tool} {args}: {result}");
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{tool} {args}: {env}");
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_sends_exactly_its_request() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let cases = cases();
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.tool).collect();
    let all: BTreeSet<&str> = catalog::all()
        .filter(|s| mine(s.category))
        .map(|s| s.name)
        .collect();
    assert_eq!(covered, all, "every access and firewall tool has a case");
    for case in &cases {
        emu.clear_requests();
        let env = ok(&mut mcp, case.tool, case.args.clone()).await;
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
        assert_eq!(sent(request), expected(case.params), "{}", case.tool);
        assert!(request.authorized);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_tools_refuse_without_confirm_and_send_nothing() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let gated: BTreeSet<&str> = catalog::all()
        .filter(|s| mine(s.category) && s.confirm)
        .map(|s| s.name)
        .collect();
    for name in [
        "pve_create_user",
        "pve_create_api_token",
        "pve_create_cluster_firewall_rule",
        "pve_create_guest_firewall_rule",
    ] {
        assert!(gated.contains(name), "{name} must be confirm-gated");
    }
    let tools = mcp.list_tools().await;
    let mut refused = BTreeSet::new();
    for case in cases().into_iter().filter(|c| gated.contains(c.tool)) {
        let listed = tools.iter().find(|t| t["name"] == case.tool).unwrap();
        assert_eq!(
            listed["_meta"]["anthropic/requiresUserInteraction"], true,
            "{}",
            case.tool
        );
        assert_eq!(listed["annotations"]["destructiveHint"], true);
        for confirm in [None, Some(false)] {
            let mut args = case.args.clone();
            let map = args.as_object_mut().unwrap();
            map.remove("confirm");
            if let Some(c) = confirm {
                map.insert("confirm".into(), json!(c));
            }
            let result = mcp.call(case.tool, args).await;
            assert_eq!(result["isError"], true, "{}", case.tool);
            assert_eq!(
                envelope(&result)["error"]["code"],
                "CONFIRMATION_REQUIRED",
                "{}",
                case.tool
            );
        }
        refused.insert(case.tool);
    }
    assert_eq!(refused, gated);
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_settings_list_no_security_write_tool() {
    let emu = emulator().await;
    let writes: BTreeSet<&str> = catalog::all()
        .filter(|s| mine(s.category) && !s.effect.is_read())
        .map(|s| s.name)
        .collect();
    assert_eq!(writes.len(), 13);
    let reads: BTreeSet<&str> = catalog::all()
        .filter(|s| mine(s.category) && s.effect.is_read())
        .map(|s| s.name)
        .collect();
    for (policy, expect_reads) in [
        (vec![], false),
        (vec![("PVE_ACCESS_TIER", "full")], false),
        (vec![("PVE_MODULE_MODE", "advanced")], true),
        (
            vec![
                ("PVE_ACCESS_TIER", "read-execute"),
                ("PVE_MODULE_MODE", "advanced"),
            ],
            true,
        ),
    ] {
        let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), &policy));
        mcp.initialize().await;
        let listed: BTreeSet<String> = mcp
            .list_tools()
            .await
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        for name in &writes {
            assert!(!listed.contains(*name), "{name} listed under {policy:?}");
        }
        for name in &reads {
            assert_eq!(listed.contains(*name), expect_reads, "{name} {policy:?}");
        }
        mcp.shutdown().await;
    }
    assert!(emu.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_firewall_reaches_vms_and_containers() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let vm = ok(
        &mut mcp,
        "pve_list_guest_firewall_rules",
        json!({"node": "pve01", "guest_type": "qemu", "vmid": 101}),
    )
    .await;
    assert_eq!(vm["data"][0]["macro"], "HTTPS", "{vm}");
    let ct = ok(
        &mut mcp,
        "pve_list_guest_firewall_rules",
        json!({"node": "pve01", "guest_type": "lxc", "vmid": 201}),
    )
    .await;
    assert_eq!(ct["data"], json!([]));
    // The wrong kind addresses another API subtree, where the guest does not exist.
    let wrong = mcp
        .call(
            "pve_list_guest_firewall_rules",
            json!({"node": "pve01", "guest_type": "qemu", "vmid": 201}),
        )
        .await;
    assert_eq!(wrong["isError"], true);
    assert_eq!(envelope(&wrong)["error"]["code"], "PROXMOX_NOT_FOUND");
    // guest_type is required and closed: no request for a missing or unknown kind.
    emu.clear_requests();
    for args in [
        json!({"node": "pve01", "vmid": 101}),
        json!({"node": "pve01", "guest_type": "openvz", "vmid": 101}),
        json!({"node": "pve01", "guest_type": "qemu/../lxc", "vmid": 101}),
    ] {
        let result = mcp.call("pve_list_guest_firewall_rules", args).await;
        let env = envelope(&result);
        assert_eq!(env["error"]["code"], "TOOL_INPUT_REJECTED", "{env}");
        assert!(env["error"]["details"]["errors"]["guest_type"].is_string());
    }
    assert!(emu.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_and_acl_round_trip() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let userids = |env: &Value| -> Vec<String> {
        env["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["userid"].as_str().unwrap().to_owned())
            .collect()
    };
    ok(
        &mut mcp,
        "pve_create_user",
        json!({"userid": "dave@pve", "password": "another-long-pass", "firstname": "Dave",
               "confirm": true}),
    )
    .await;
    let list = ok(&mut mcp, "pve_list_users", json!({})).await;
    assert!(userids(&list).contains(&"dave@pve".to_owned()), "{list}");
    let dave = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["userid"] == "dave@pve")
        .unwrap();
    assert_eq!(dave["firstname"], "Dave");
    assert_eq!(dave["enable"], 1);
    assert!(
        !dave.to_string().contains("another-long-pass"),
        "no password in any answer"
    );
    // Creating it twice is Proxmox's error, with its text.
    let again = mcp
        .call(
            "pve_create_user",
            json!({"userid": "dave@pve", "confirm": true}),
        )
        .await;
    assert_eq!(again["isError"], true);
    assert!(
        envelope(&again)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );

    ok(
        &mut mcp,
        "pve_update_acl",
        json!({"path": "/vms/101", "roles": "PVEAuditor", "users": "dave@pve", "confirm": true}),
    )
    .await;
    let acls = ok(&mut mcp, "pve_list_acls", json!({})).await;
    let grant = json!({"path": "/vms/101", "type": "user", "ugid": "dave@pve",
                       "roleid": "PVEAuditor", "propagate": 1});
    assert!(acls["data"].as_array().unwrap().contains(&grant), "{acls}");
    ok(
        &mut mcp,
        "pve_update_acl",
        json!({"path": "/vms/101", "roles": "PVEAuditor", "users": "dave@pve", "delete": true,
               "confirm": true}),
    )
    .await;
    let acls = ok(&mut mcp, "pve_list_acls", json!({})).await;
    assert!(!acls["data"].as_array().unwrap().contains(&grant), "{acls}");
    // A grant must name someone: refused before any request.
    emu.clear_requests();
    let nobody = mcp
        .call(
            "pve_update_acl",
            json!({"path": "/", "roles": "PVEAuditor", "confirm": true}),
        )
        .await;
    assert_eq!(envelope(&nobody)["error"]["code"], "TOOL_INPUT_REJECTED");
    assert!(emu.requests().is_empty());

    ok(
        &mut mcp,
        "pve_delete_user",
        json!({"userid": "dave@pve", "confirm": true}),
    )
    .await;
    let list = ok(&mut mcp, "pve_list_users", json!({})).await;
    assert!(!userids(&list).contains(&"dave@pve".to_owned()), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_secret_is_returned_but_never_logged() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let env = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_MODULE_MODE", "advanced"),
            ("RUST_LOG", "trace"),
        ],
    );
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &env, &log);
    mcp.initialize().await;
    let password = "Pa55-word-never-logged";
    ok(
        &mut mcp,
        "pve_create_user",
        json!({"userid": "erin@pve", "password": password, "confirm": true}),
    )
    .await;
    let created = ok(
        &mut mcp,
        "pve_create_api_token",
        json!({"userid": "erin@pve", "tokenid": "backup", "privsep": false, "confirm": true}),
    )
    .await;
    assert_eq!(created["data"]["full-tokenid"], "erin@pve!backup");
    assert_eq!(created["data"]["info"]["privsep"], 0);
    let secret = created["data"]["value"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 36, "{secret}");
    // A second token gets a different secret.
    let other = ok(
        &mut mcp,
        "pve_create_api_token",
        json!({"userid": "erin@pve", "tokenid": "other", "confirm": true}),
    )
    .await;
    assert_ne!(other["data"]["value"], created["data"]["value"]);
    let listed = ok(
        &mut mcp,
        "pve_list_api_tokens",
        json!({"userid": "erin@pve"}),
    )
    .await;
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tokenid"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["backup", "other"]);
    assert!(
        !listed.to_string().contains(&secret),
        "lists never show secrets"
    );
    ok(
        &mut mcp,
        "pve_delete_api_token",
        json!({"userid": "erin@pve", "tokenid": "backup", "confirm": true}),
    )
    .await;
    let listed = ok(
        &mut mcp,
        "pve_list_api_tokens",
        json!({"userid": "erin@pve"}),
    )
    .await;
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert!(mcp.shutdown().await.success());

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("pve_create_api_token"),
        "the log was captured at trace level: {text}"
    );
    assert!(
        !text.contains(&secret),
        "token secret in the server log: {}",
        text.lines()
            .filter(|l| l.contains(&secret))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(!text.contains(password), "password in the server log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firewall_rules_round_trip_by_position_and_digest() {
    let emu = emulator().await;
    let mut mcp = full_server(&emu).await;
    let guest = json!({"node": "pve01", "guest_type": "lxc", "vmid": 201});
    let with = |extra: Value| {
        let mut args = guest.clone();
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    for (dport, comment) in [("22", "ssh"), ("80", "web")] {
        ok(
            &mut mcp,
            "pve_create_guest_firewall_rule",
            with(
                json!({"type": "in", "action": "ACCEPT", "proto": "tcp", "dport": dport,
                        "comment": comment, "confirm": true}),
            ),
        )
        .await;
    }
    let list = ok(&mut mcp, "pve_list_guest_firewall_rules", guest.clone()).await;
    let rules = list["data"].as_array().unwrap();
    // New rules go to the top, as Proxmox inserts them.
    assert_eq!(rules.len(), 2);
    assert_eq!(
        (rules[0]["pos"].clone(), rules[0]["comment"].clone()),
        (json!(0), json!("web"))
    );
    assert_eq!(
        (rules[1]["pos"].clone(), rules[1]["dport"].clone()),
        (json!(1), json!("22"))
    );
    // `moveto` past the end moves the top rule last (Proxmox: before the rule now there).
    let digest = rules[0]["digest"].as_str().unwrap().to_owned();
    ok(
        &mut mcp,
        "pve_update_guest_firewall_rule",
        with(json!({"pos": 0, "moveto": 2, "digest": digest, "confirm": true})),
    )
    .await;
    let list = ok(&mut mcp, "pve_list_guest_firewall_rules", guest.clone()).await;
    let comments: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["comment"].as_str().unwrap())
        .collect();
    assert_eq!(comments, ["ssh", "web"]);
    let digest = list["data"][0]["digest"].as_str().unwrap().to_owned();

    ok(
        &mut mcp,
        "pve_update_guest_firewall_rule",
        with(json!({"pos": 1, "source": "10.1.0.0/16", "digest": digest, "confirm": true})),
    )
    .await;
    // The ruleset changed, so the old digest no longer fits: nothing is touched.
    let stale = mcp
        .call(
            "pve_delete_guest_firewall_rule",
            with(json!({"pos": 0, "digest": digest, "confirm": true})),
        )
        .await;
    assert_eq!(stale["isError"], true);
    assert!(
        envelope(&stale)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("modified"),
        "{stale}"
    );
    let list = ok(&mut mcp, "pve_list_guest_firewall_rules", guest.clone()).await;
    let rules = list["data"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[1]["source"], "10.1.0.0/16");
    let fresh = rules[0]["digest"].as_str().unwrap().to_owned();
    assert_ne!(fresh, digest);
    ok(
        &mut mcp,
        "pve_delete_guest_firewall_rule",
        with(json!({"pos": 0, "digest": fresh, "confirm": true})),
    )
    .await;
    let list = ok(&mut mcp, "pve_list_guest_firewall_rules", guest.clone()).await;
    let rules = list["data"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        (rules[0]["pos"].clone(), rules[0]["comment"].clone()),
        (json!(0), json!("web"))
    );

    // The cluster ruleset and the options round-trip the same way.
    let before = ok(&mut mcp, "pve_list_cluster_firewall_rules", json!({})).await;
    let seeded = before["data"].as_array().unwrap().len();
    ok(
        &mut mcp,
        "pve_create_cluster_firewall_rule",
        json!({"type": "out", "action": "REJECT", "dest": "+blocked", "pos": seeded,
               "confirm": true}),
    )
    .await;
    let after = ok(&mut mcp, "pve_list_cluster_firewall_rules", json!({})).await;
    assert_eq!(after["data"][seeded]["action"], "REJECT", "{after}");
    ok(
        &mut mcp,
        "pve_update_cluster_firewall_options",
        json!({"enable": 1, "policy_out": "REJECT", "confirm": true}),
    )
    .await;
    let options = ok(&mut mcp, "pve_get_cluster_firewall_options", json!({})).await;
    assert_eq!(options["data"]["enable"], 1);
    assert_eq!(options["data"]["policy_out"], "REJECT");
    assert!(options["data"]["digest"].is_string());
    // Ports need a protocol: Proxmox's 400 comes back with its per-parameter detail.
    let bad = mcp
        .call(
            "pve_create_cluster_firewall_rule",
            json!({"type": "in", "action": "ACCEPT", "dport": "22", "confirm": true}),
        )
        .await;
    let env = envelope(&bad);
    assert_eq!(env["ok"], false);
    assert!(
        env["error"]["details"].to_string().contains("dport"),
        "{env}"
    );
}
