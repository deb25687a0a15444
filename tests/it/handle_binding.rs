//! Every handle is bound to the caller who made it, over real HTTP with a real token issuer
//! (the test's own, on loopback), rmcp's client side and the emulator: alice's MCP task id,
//! guest-program task id, approval `requestState` and HTTP session open for nobody else. Bob —
//! holding a token of the same issuer with the same admin scope, so no tier stands in for the
//! binding — gets exactly the answer an unknown handle gets, and Proxmox receives nothing.

use crate::approval_common;
use crate::harness;
use crate::mcp_tasks_client;
use crate::oauth_issuer;

use std::time::Duration;

use approval_common::{Answer, Person, args};
use harness::{client, initialize, oauth_server, post_mcp, pve_client, rpc_reply};
use mcp_tasks_client::{ClientSetup, TestClient, call_once, emulator_with_pace};
use nandi_proxmox_mcp::transport::http::HttpServer;
use oauth_issuer::Issuer;
use pve_emulator::Emulator;
use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const TASKS: ClientSetup = ClientSetup {
    tasks: true,
    approve: None,
};

/// The OAuth transport at tier `full`/advanced in front of `emu`; stateful, `confirm: true`
/// approves (no person is needed for the task tests); `stateless` (`MCP_STATELESS`), a person
/// is asked.
async fn serve(issuer: &Issuer, emu: &Emulator, stateless: bool) -> HttpServer {
    let mut policy = vec![("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];
    if !stateless {
        policy.push(("PVE_HUMAN_APPROVAL", "confirm"));
    }
    let stateless = if stateless { "true" } else { "false" };
    oauth_server(
        &issuer.url,
        Some(pve_client(emu)),
        &policy,
        &[("MCP_STATELESS", stateless)],
    )
    .await
}

/// An admin token for `subject` (client `claude`).
fn token_for(issuer: &Issuer, subject: &str) -> String {
    let mut claims = issuer.claims();
    claims["sub"] = json!(subject);
    issuer.token(&claims)
}

fn transport(http: &HttpServer, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(token.to_owned());
    StreamableHttpClientTransport::from_config(config)
}

/// rmcp's client side over HTTP with `token`, declaring the tasks extension.
async fn tasks_client(http: &HttpServer, token: &str) -> mcp_tasks_client::Client {
    TestClient::new(TASKS)
        .serve(transport(http, token))
        .await
        .expect("connects over HTTP")
}

/// The error of `tasks/get` and of `tasks/cancel` for `task_id`, as JSON (code, message, data).
async fn refusals(client: &mcp_tasks_client::Client, task_id: &str) -> (Value, Value) {
    let get = client
        .peer()
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect_err("tasks/get is refused");
    let cancel = client
        .peer()
        .cancel_task(CancelTaskParams::new(task_id))
        .await
        .expect_err("tasks/cancel is refused");
    (error_json(get), error_json(cancel))
}

fn error_json(err: rmcp::ServiceError) -> Value {
    match err {
        rmcp::ServiceError::McpError(e) => {
            json!({"code": e.code.0, "message": e.message, "data": e.data})
        }
        other => panic!("expected an MCP error, got {other:?}"),
    }
}

/// `id` with its last character changed: an id this server never issued.
fn unknown_like(id: &str) -> String {
    let mut chars: Vec<char> = id.chars().collect();
    let last = chars.last_mut().expect("non-empty id");
    *last = if *last == '0' { '1' } else { '0' };
    chars.into_iter().collect()
}

/// Bob reads, follows and cancels with `task_id` as if it were unknown; nothing reaches the
/// emulator while he tries; alice still reads her task.
async fn only_alice_opens(
    emu: &Emulator,
    alice: &mcp_tasks_client::Client,
    bob: &mcp_tasks_client::Client,
    task_id: &str,
) {
    let before = emu.requests().len();
    let as_bob = refusals(bob, task_id).await;
    let unknown = refusals(bob, &unknown_like(task_id)).await;
    assert_eq!(as_bob, unknown, "bob's answer differs from an unknown id's");
    assert!(
        as_bob.0["message"]
            .as_str()
            .unwrap_or("")
            .contains("unknown task"),
        "{as_bob:?}"
    );
    assert_eq!(
        emu.requests().len(),
        before,
        "bob's attempts reached Proxmox: {:?}",
        &emu.requests()[before..]
    );
    alice
        .peer()
        .get_task(GetTaskParams::new(task_id))
        .await
        .expect("alice still reads her own task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bob_cannot_read_follow_or_cancel_alices_tasks() {
    let issuer = Issuer::start().await;
    let emu = emulator_with_pace(Duration::from_millis(200)).await;
    let http = serve(&issuer, &emu, false).await;
    let alice = tasks_client(&http, &token_for(&issuer, "alice")).await;
    let bob = tasks_client(&http, &token_for(&issuer, "bob")).await;

    // A Proxmox task (a clone) and a guest program, each answered as an MCP task.
    let clone = json!({"node": "pve01", "vmid": 101, "newid": 731, "full": true, "confirm": true});
    let CallToolResponse::Task(cloned) = call_once(&alice, "pve_qemu_clone", clone).await else {
        panic!("expected a task for the clone");
    };
    let program = json!({"node": "pve01", "vmid": 101, "command": ["sleep", "2"], "confirm": true});
    let CallToolResponse::Task(started) =
        call_once(&alice, "pve_exec_qemu_guest_command", program).await
    else {
        panic!("expected a task for the guest program");
    };
    only_alice_opens(&emu, &alice, &bob, &cloned.task.task_id).await;
    only_alice_opens(&emu, &alice, &bob, &started.task.task_id).await;

    // The same client id with another subject is another owner too: bob's id is not alice's.
    let mut claims = issuer.claims();
    claims["sub"] = json!("alice ");
    let near_alice = tasks_client(&http, &issuer.token(&claims)).await;
    let (got, _) = refusals(&near_alice, &cloned.task.task_id).await;
    assert!(
        got["message"]
            .as_str()
            .unwrap_or("")
            .contains("unknown task"),
        "{got}"
    );

    for c in [alice, bob, near_alice] {
        c.cancel().await.ok();
    }
    http.shutdown().await;
}

/// A raw request on `/mcp` with `token`, `session` and `method`; status and body text.
async fn raw(
    http: &HttpServer,
    method: reqwest::Method,
    token: &str,
    session: &str,
    body: Option<Value>,
) -> (StatusCode, String) {
    let mut request = client()
        .request(method, format!("http://{}/mcp", http.local_addr()))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("mcp-session-id", session);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.expect("send");
    let status = response.status();
    (status, response.text().await.unwrap_or_default())
}

/// An initialized session for `token`; its id.
async fn open_session(http: &HttpServer, token: &str) -> String {
    let response = post_mcp(http, token, &initialize(), None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    rpc_reply(response, 1).await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _) = raw(http, reqwest::Method::POST, token, &id, Some(note)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bobs_token_on_alices_session_is_an_unknown_session_on_every_method() {
    let issuer = Issuer::start().await;
    let emu = emulator_with_pace(Duration::from_millis(20)).await;
    let http = serve(&issuer, &emu, false).await;
    let (alice, bob) = (token_for(&issuer, "alice"), token_for(&issuer, "bob"));
    let session = open_session(&http, &alice).await;
    let unknown = "0123456789abcdef0123456789abcdef";
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let before = emu.requests().len();
    for method in [
        reqwest::Method::POST,
        reqwest::Method::GET,
        reqwest::Method::DELETE,
    ] {
        let body = (method == reqwest::Method::POST).then(|| list.clone());
        let as_bob = raw(&http, method.clone(), &bob, &session, body.clone()).await;
        let as_unknown = raw(&http, method.clone(), &bob, unknown, body).await;
        let expected = if method == reqwest::Method::DELETE {
            StatusCode::OK
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(as_bob.0, expected, "{method}: {as_bob:?}");
        assert_eq!(
            as_bob, as_unknown,
            "{method}: bob's answer differs from an unknown session's"
        );
    }
    assert_eq!(emu.requests().len(), before);
    // Bob's DELETE closed nothing: alice's session still answers her.
    let (status, text) = raw(&http, reqwest::Method::POST, &alice, &session, Some(list)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(text.contains("pve_list_nodes"), "{text}");
    http.shutdown().await;
}

/// rmcp's client side as a stateless 2026-07-28 peer with `token`, that can ask a person.
async fn stateless_peer(http: &HttpServer, token: &str) -> RunningService<RoleClient, Person> {
    let person = Person {
        version: ProtocolVersion::V_2026_07_28,
        ..Person::new(Answer::Accept)
    };
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    person
        .serve_with_lifecycle(transport(http, token), lifecycle)
        .await
        .expect("connects over HTTP")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bob_cannot_answer_alices_approval_state() {
    let issuer = Issuer::start().await;
    let emu = emulator_with_pace(Duration::from_millis(20)).await;
    let http = serve(&issuer, &emu, true).await;
    let alice = stateless_peer(&http, &token_for(&issuer, "alice")).await;
    let bob = stateless_peer(&http, &token_for(&issuer, "bob")).await;
    let stop = || {
        CallToolRequestParams::new("pve_stop_qemu_vm")
            .with_arguments(args(json!({"node": "pve01", "vmid": 101})))
    };
    let CallToolResponse::InputRequired(asked) =
        alice.call_tool_once(stop()).await.expect("answered")
    else {
        panic!("a gated call asks first");
    };
    let state = asked.request_state.expect("sealed state");
    let answer = || {
        [(
            "approval".to_owned(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]
        .into_iter()
        .collect()
    };
    let posts = || emu.requests().iter().filter(|r| r.method == "POST").count();
    // Bob answers alice's question with her sealed state: refused as a state not his.
    let retry = stop()
        .with_request_state(state.clone())
        .with_input_responses(answer());
    let CallToolResponse::Complete(refused) = bob.call_tool_once(retry).await.expect("answered")
    else {
        panic!("expected a complete (refused) result");
    };
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let text = serde_json::to_string(&refused.structured_content).unwrap_or_default();
    assert!(text.contains("APPROVAL_STATE_INVALID"), "{text}");
    assert_eq!(posts(), 0, "{:?}", emu.requests());
    // The same state still opens for alice, once.
    let retry = stop()
        .with_request_state(state)
        .with_input_responses(answer());
    let CallToolResponse::Complete(ran) = alice.call_tool_once(retry).await.expect("answered")
    else {
        panic!("expected a complete result");
    };
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(posts(), 1);
    alice.cancel().await.ok();
    bob.cancel().await.ok();
    http.shutdown().await;
}
