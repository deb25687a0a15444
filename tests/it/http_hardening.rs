//! HTTP hardening, in process against the transport: the session bound counts sessions only and
//! makes room by closing the least recently used idle one, a flood of wrong tokens cannot use up
//! the legitimate client's allowance, and a `tools/call` that repeats a JSON key is refused.

use crate::common;
use crate::harness;

use harness::*;

use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn requests_that_need_no_session_are_not_refused_when_sessions_are_full() {
    let srv = start(&[("MCP_MAX_SESSIONS", "1")], None).await;
    let id = srv.session().await;
    let _busy = srv.open_stream(&id).await;
    // A new session cannot be made: the only one is busy.
    let refused = srv.authed(&initialize()).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Requests that open no session are rmcp's to answer, never the session bound's 503.
    let stateless = [
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
    ];
    for body in stateless {
        let response = srv
            .authed(&body)
            .header("mcp-protocol-version", "2026-07-28")
            .send()
            .await
            .unwrap();
        assert_ne!(
            response.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "{body}: {}",
            response.text().await.unwrap()
        );
    }
    srv.http.shutdown().await;
}

#[tokio::test]
async fn a_full_server_closes_the_least_recently_used_idle_session() {
    let srv = start(&[("MCP_MAX_SESSIONS", "2")], None).await;
    let oldest = srv.session().await;
    let recent = srv.session().await;
    // `oldest` is used after `recent` was opened, so `recent` is now the least recently used.
    srv.call(&oldest, 2, "tools/list", json!({})).await;
    let newest = srv.session().await;
    let evicted = srv
        .authed(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .header("mcp-session-id", &recent)
        .send()
        .await
        .unwrap();
    assert_eq!(evicted.status(), StatusCode::NOT_FOUND);
    for id in [&oldest, &newest] {
        let list = srv.call(id, 4, "tools/list", json!({})).await;
        assert!(list["result"]["tools"].is_array(), "{list}");
    }
    srv.http.shutdown().await;
}

#[tokio::test]
async fn a_flood_of_wrong_tokens_does_not_lock_out_the_right_one() {
    let srv = start(&[("MCP_RATE_LIMIT_MAX", "5")], None).await;
    let mut statuses = Vec::new();
    for _ in 0..40 {
        let response = srv
            .post(&initialize())
            .bearer_auth("wrong-token-0123456789abcdef")
            .send()
            .await
            .unwrap();
        statuses.push(response.status());
    }
    assert!(statuses[..5].iter().all(|s| *s == StatusCode::UNAUTHORIZED));
    assert!(
        statuses[5..]
            .iter()
            .all(|s| *s == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    // Same client address, the right token: its own allowance is untouched.
    let ok = srv.authed(&initialize()).send().await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(ok.headers()["ratelimit-remaining"], "4");
    srv.http.shutdown().await;
}

#[tokio::test]
async fn delete_answers_200() {
    let srv = start(&[], None).await;
    let id = srv.session().await;
    let deleted = srv
        .client
        .delete(srv.url("/mcp"))
        .bearer_auth(TOKEN)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::OK);
    srv.http.shutdown().await;
}

#[tokio::test]
async fn a_tool_call_with_a_repeated_key_is_refused_before_any_proxmox_request() {
    let emu = common::emulator().await;
    let srv = start(&[], Some(pve_client(&emu))).await;
    let id = srv.session().await;
    emu.clear_requests();
    let body = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"pve_get_node_status","arguments":{"node":"pve01","node":"pve02"}}}"#;
    let response = srv
        .client
        .post(srv.url("/mcp"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let reply: Value = rpc_reply(response, 9).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"node\""), "{message}");
    assert!(message.contains("params.arguments.node"), "{message}");
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    // The same call without the repeat still works.
    let ok = srv
        .call(
            &id,
            10,
            "tools/call",
            json!({"name": "pve_get_node_status", "arguments": {"node": "pve01"}}),
        )
        .await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    srv.http.shutdown().await;
}
