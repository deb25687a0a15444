//! The Streamable HTTP transport, continued: wrong methods and unknown sessions, the session
//! bound and idle expiry, MCP calls end to end against the emulator, `/health` and `/ready`.

use crate::common;
use crate::harness;

use harness::*;

use std::time::Duration;

use pve_emulator::{Fault, FaultKind};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn wrong_methods_unknown_paths_and_sessions_get_json_errors() {
    let srv = start(&[], None).await;
    let put = srv
        .client
        .put(srv.url("/mcp"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(put.headers().contains_key("allow"));
    assert_eq!(
        error_body(put).await["error"]["message"],
        "Method not allowed"
    );
    let post_health = srv.client.post(srv.url("/health")).send().await.unwrap();
    assert_eq!(post_health.status(), StatusCode::METHOD_NOT_ALLOWED);
    error_body(post_health).await;

    let unknown = srv.client.get(srv.url("/admin")).send().await.unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(unknown.headers()["x-content-type-options"], "nosniff");
    assert_eq!(unknown.headers()["cache-control"], "no-store");
    error_body(unknown).await;

    let stale = srv
        .authed(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .header("mcp-session-id", "no-such-session")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), StatusCode::NOT_FOUND);
    assert_eq!(error_body(stale).await["error"]["code"], -32001);

    let not_json = srv
        .client
        .post(srv.url("/mcp"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    let parse_error = error_body(not_json).await;
    assert_eq!(parse_error["error"]["code"], -32700);
    // JSON-RPC 2.0 §5: no id could be read, so the reply's id member is null.
    assert_eq!(parse_error.get("id"), Some(&Value::Null), "{parse_error}");

    // JSON, but no JSON-RPC message (or a batch): Invalid Request (-32600), not a parse error.
    for body in [
        json!({"id": 5, "method": "tools/list"}),
        json!({"jsonrpc": "1.0", "id": 5, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 5}),
        json!("tools/list"),
        json!([{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}]),
    ] {
        let invalid = srv.authed(&body).send().await.unwrap();
        assert_eq!(invalid.status(), StatusCode::BAD_REQUEST, "{body}");
        let reply = error_body(invalid).await;
        assert_eq!(reply["error"]["code"], -32600, "{body}: {reply}");
        assert_eq!(reply.get("id"), Some(&Value::Null), "{body}: {reply}");
    }
    srv.http.shutdown().await;
}

#[tokio::test]
async fn delete_ends_a_session_and_the_live_session_bound_holds() {
    let srv = start(&[("MCP_MAX_SESSIONS", "2")], None).await;
    let first = srv.session().await;
    let second = srv.session().await;
    // Both sessions hold an event stream open, so neither is idle and none can make room.
    let _busy = [
        srv.open_stream(&first).await,
        srv.open_stream(&second).await,
    ];
    let third = srv.authed(&initialize()).send().await.unwrap();
    assert_eq!(third.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(third.headers().contains_key("retry-after"));
    error_body(third).await;

    let deleted = srv
        .client
        .delete(srv.url("/mcp"))
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &first)
        .send()
        .await
        .unwrap();
    // 200, not rmcp's 202: official SDKs report 202 as a failed termination.
    assert_eq!(deleted.status(), StatusCode::OK);
    let after = srv
        .authed(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .header("mcp-session-id", &first)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    // The freed slot can be used again.
    srv.session().await;
    srv.http.shutdown().await;
}

#[tokio::test]
async fn idle_sessions_expire() {
    let srv = start(&[("MCP_SESSION_IDLE_TIMEOUT_MS", "300")], None).await;
    let id = srv.session().await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    let after = srv
        .authed(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::NOT_FOUND);
    srv.http.shutdown().await;
}

#[tokio::test]
async fn tools_list_and_a_tool_call_work_end_to_end() {
    let emu = common::emulator().await;
    let srv = start(&[], Some(pve_client(&emu))).await;
    let id = srv.session().await;
    let list = srv.call(&id, 2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "pve_list_nodes"));

    let call = srv
        .call(
            &id,
            3,
            "tools/call",
            json!({"name": "pve_list_nodes", "arguments": {}}),
        )
        .await;
    let result = &call["result"];
    assert_eq!(result["isError"], json!(false), "{call}");
    let envelope = common::envelope(result);
    assert_eq!(envelope["ok"], true);
    let nodes: Vec<&str> = envelope["data"]
        .as_array()
        .expect("node list")
        .iter()
        .filter_map(|n| n["node"].as_str())
        .collect();
    assert!(nodes.contains(&"pve01"), "{nodes:?}");

    // Concurrent requests in one session each get their own SSE stream and answer.
    let replies = futures::future::join_all(
        (10..13).map(|rpc_id| srv.call(&id, rpc_id, "tools/list", json!({}))),
    )
    .await;
    assert!(
        replies
            .iter()
            .all(|r| r["result"]["tools"] == list["result"]["tools"])
    );

    // A second session shares the same server state and works independently.
    let other = srv.session().await;
    assert_ne!(other, id);
    let again = srv.call(&other, 2, "tools/list", json!({})).await;
    assert_eq!(again["result"]["tools"], list["result"]["tools"]);
    srv.http.shutdown().await;
}

#[tokio::test]
async fn health_is_static_and_ready_follows_proxmox() {
    let emu = common::emulator().await;
    let srv = start(&[], Some(pve_client(&emu))).await;
    let health: Value = srv
        .client
        .get(srv.url("/health"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str::<Value>(&t).expect("JSON"))
        .unwrap();
    assert_eq!(
        health,
        json!({"ok": true, "service": "nandi-proxmox-mcp", "mode": "http"})
    );

    let ready = srv.client.get(srv.url("/ready")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let body: Value = json_of(ready).await;
    assert_eq!(body["ready"], true);
    assert_eq!(body["proxmox"], "reachable");

    emu.arm_fault(Fault::new(FaultKind::Status(500), 10).on_prefix("/version"));
    let faulted = srv.client.get(srv.url("/ready")).send().await.unwrap();
    assert_eq!(faulted.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = json_of(faulted).await;
    assert_eq!(body["ready"], false);
    emu.clear_faults();
    let back = srv.client.get(srv.url("/ready")).send().await.unwrap();
    assert_eq!(back.status(), StatusCode::OK);

    emu.shutdown().await;
    let down = srv.client.get(srv.url("/ready")).send().await.unwrap();
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    srv.http.shutdown().await;

    // Without a configured Proxmox every call would fail: not ready (503).
    let bare = start(&[], None).await;
    let answer = bare.client.get(bare.url("/ready")).send().await.unwrap();
    assert_eq!(answer.status().as_u16(), 503);
    let body: Value = answer
        .text()
        .await
        .map(|t| serde_json::from_str::<Value>(&t).expect("JSON"))
        .unwrap();
    assert_eq!(body["ready"], false);
    assert_eq!(body["proxmox"], "not configured");
    bare.http.shutdown().await;
}
