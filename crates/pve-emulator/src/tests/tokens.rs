//! Several API tokens, one per Proxmox user, and the ACL denials a test gives one of them:
//! each token is served as itself (UPIDs, task lists, recorded requests) and a denial
//! narrows only the token it names, the way a real PVE refuses with 403.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Harness, data, message};

const ALICE: &str = "PVEAPIToken=alice@pve!mcp=alice-secret";
const BOB: &str = "PVEAPIToken=bob@pve!ops=bob-secret";

/// A plain-HTTP emulator that also accepts Alice's and Bob's tokens.
async fn two_tokens() -> Harness {
    let h = Harness::plain().await;
    h.emu.add_token("alice@pve!mcp", "alice-secret");
    h.emu.add_token("bob@pve!ops", "bob-secret");
    h
}

/// The UPID string a successful task-starting POST answered.
fn upid(status: u16, body: &Value) -> String {
    data(status, body).as_str().unwrap().to_string()
}

#[tokio::test]
async fn each_token_starts_tasks_as_its_own_user() {
    let h = two_tokens().await;
    let start = "/nodes/pve03/qemu/102/status/start";
    let (status, body) = h.call_as(ALICE, Method::POST, start, &[]).await;
    let alice_upid = upid(status, &body);
    assert!(
        alice_upid.ends_with(":qmstart:102:alice@pve!mcp:"),
        "{alice_upid}"
    );
    let stop = "/nodes/pve03/qemu/102/status/stop";
    let (status, body) = h.call_as(BOB, Method::POST, stop, &[]).await;
    let bob_upid = upid(status, &body);
    assert!(bob_upid.ends_with(":qmstop:102:bob@pve!ops:"), "{bob_upid}");
    // The configured token is unchanged.
    let (status, body) = h.post("/nodes/pve01/qemu/101/status/reboot", &[]).await;
    let svc_upid = upid(status, &body);
    assert!(
        svc_upid.ends_with(":qmreboot:101:svc_mcp@pve!emu:"),
        "{svc_upid}"
    );

    let (status, body) = h.get("/nodes/pve03/tasks").await;
    let users: Vec<(Value, Value)> = data(status, &body)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["user"].clone(), t["tokenid"].clone()))
        .collect();
    assert_eq!(
        users,
        [
            (json!("bob@pve"), json!("ops")),
            (json!("alice@pve"), json!("mcp"))
        ]
    );
    let (status, body) = h.get("/cluster/tasks").await;
    let upids: Vec<&str> = data(status, &body)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["upid"].as_str().unwrap())
        .collect();
    assert_eq!(upids, [&svc_upid, &bob_upid, &alice_upid]);
    let (status, body) = h
        .get(&format!(
            "/nodes/pve03/tasks/{}/status",
            super::enc(&alice_upid)
        ))
        .await;
    let task = data(status, &body);
    assert_eq!(
        (&task["user"], &task["tokenid"]),
        (&json!("alice@pve"), &json!("mcp"))
    );

    let recorded: Vec<(String, Option<String>)> = h
        .emu
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| (r.path, r.token_id))
        .collect();
    assert_eq!(
        recorded,
        [
            (start.to_string(), Some("alice@pve!mcp".to_string())),
            (stop.to_string(), Some("bob@pve!ops".to_string())),
            (
                "/nodes/pve01/qemu/101/status/reboot".to_string(),
                Some("svc_mcp@pve!emu".to_string())
            ),
        ]
    );
}

#[tokio::test]
async fn a_denial_refuses_only_its_token_and_changes_nothing() {
    let h = two_tokens().await;
    h.emu.deny("alice@pve!mcp", "/vms/101");
    let stop = "/nodes/pve01/qemu/101/status/stop";
    let (status, body) = h.call_as(ALICE, Method::POST, stop, &[]).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/101, VM.PowerMgmt)\n"
    );
    let config = "/nodes/pve01/qemu/101/config";
    let (status, body) = h.call_as(ALICE, Method::GET, config, &[]).await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/101, VM.Audit)\n"
    );
    let (status, body) = h
        .call_as(
            ALICE,
            Method::PUT,
            config,
            &[("description", "alice was here")],
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/101, VM.Config.Options)\n"
    );
    // An unknown route stays 501: PVE finds the handler before it checks permissions.
    let (status, _) = h
        .call_as(
            ALICE,
            Method::GET,
            "/nodes/pve01/qemu/101/no-such-thing",
            &[],
        )
        .await;
    assert_eq!(status, 501);

    // Nothing changed, and no task was started.
    let (status, body) = h.get("/nodes/pve01/qemu/101/status/current").await;
    assert_eq!(data(status, &body)["status"], "running");
    let (status, body) = h.get(config).await;
    assert!(data(status, &body).get("description").is_none(), "{body}");
    let (status, body) = h.get("/cluster/tasks").await;
    assert_eq!(data(status, &body), &json!([]));

    // Alice keeps the rest; Bob and the configured token keep VM 101.
    let (status, body) = h
        .call_as(
            ALICE,
            Method::GET,
            "/nodes/pve03/qemu/102/status/current",
            &[],
        )
        .await;
    assert_eq!(data(status, &body)["status"], "stopped");
    let (status, _) = h.get(config).await;
    assert_eq!(status, 200);
    let (status, body) = h.call_as(BOB, Method::POST, stop, &[]).await;
    assert!(upid(status, &body).ends_with(":bob@pve!ops:"));
    let denied = h
        .emu
        .requests()
        .into_iter()
        .find(|r| r.path == stop)
        .unwrap();
    assert_eq!(denied.token_id.as_deref(), Some("alice@pve!mcp"));
    assert!(denied.authorized);
}

#[tokio::test]
async fn a_denial_names_the_privilege_the_served_schema_checks() {
    let h = two_tokens().await;
    let schema = json!([{"path": "/nodes", "info": {}, "children": [
        {"path": "/nodes/{node}/qemu/{vmid}/config", "info": {"PUT": {"permissions": {"check":
            ["perm", "/vms/{vmid}", ["VM.Config.Disk", "VM.Config.Options"], "any", 1]}}}},
        {"path": "/nodes/{node}/qemu/{vmid}/status/start", "info": {"POST": {"permissions":
            {"check": ["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]}}}}
    ]}]);
    h.emu.serve_api_schema(schema.to_string());
    h.emu.deny("bob@pve!ops", "/vms");
    let (status, body) = h
        .call_as(
            BOB,
            Method::PUT,
            "/nodes/pve03/qemu/102/config",
            &[("description", "x")],
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/102, VM.Config.Disk|VM.Config.Options)\n"
    );
    let (status, body) = h
        .call_as(BOB, Method::POST, "/nodes/pve03/qemu/102/status/start", &[])
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/102, VM.PowerMgmt)\n"
    );
    // The schema names no privilege for the status read: the fallback one.
    let (status, body) = h
        .call_as(BOB, Method::GET, "/nodes/pve03/lxc/203/status/current", &[])
        .await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/203, VM.Audit)\n"
    );
    let (status, _) = h
        .call_as(BOB, Method::GET, "/nodes/pve03/status", &[])
        .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_wrong_secret_or_unknown_token_is_refused() {
    let h = two_tokens().await;
    for auth in [
        "PVEAPIToken=alice@pve!mcp=bob-secret",
        "PVEAPIToken=alice@pve!mcp=emulator-secret-token",
        "PVEAPIToken=carol@pve!mcp=alice-secret",
        "PVEAPIToken=alice@pve!mcp",
    ] {
        let (status, body) = h.call_as(auth, Method::GET, "/version", &[]).await;
        assert_eq!(status, 401, "{auth}");
        assert_eq!(message(&body), "authentication failure\n");
    }
    let (status, _) = h.call_as(ALICE, Method::GET, "/version", &[]).await;
    assert_eq!(status, 200);
    let recorded: Vec<(bool, Option<String>)> = h
        .emu
        .requests()
        .into_iter()
        .map(|r| (r.authorized, r.token_id))
        .collect();
    assert_eq!(
        recorded,
        [
            (false, None),
            (false, None),
            (false, None),
            (false, None),
            (true, Some("alice@pve!mcp".to_string()))
        ]
    );
}

#[tokio::test]
async fn added_tokens_are_listed_with_their_users_grants() {
    let h = two_tokens().await;
    let (status, body) = h.get("/access/users/bob@pve/token").await;
    assert_eq!(data(status, &body)[0]["tokenid"], "ops");
    // Bob, unknown until his token was added, got the configured token user's grants.
    let (status, body) = h.get("/access/permissions").await;
    let svc = data(status, &body).clone();
    let (status, body) = h
        .get_q("/access/permissions", &[("userid", "bob@pve!ops")])
        .await;
    assert_eq!(data(status, &body), &svc);
    // Without `userid` the permissions are the calling token's (Alice is an admin).
    let (status, body) = h
        .call_as(ALICE, Method::GET, "/access/permissions", &[])
        .await;
    let own = data(status, &body).clone();
    let (status, body) = h
        .get_q("/access/permissions", &[("userid", "alice@pve!mcp")])
        .await;
    assert_eq!(data(status, &body), &own);
    assert_ne!(own, svc);
}
