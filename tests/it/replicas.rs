//! Two replicas of the built binary behind no load balancer at all: one 2026-07-28 client
//! flow alternates between them. The tool list comes from A; an approval-gated stop is asked
//! by A and its answered retry runs on B (both read `PVE_APPROVAL_KEY_FILE`); the task B
//! started is polled from A. A replica with its own random key refuses a state sealed by A,
//! with nothing sent to Proxmox — the shared key is what makes the flow work.

use crate::common;
use crate::mcp_tasks_client;

use std::process::Stdio;
use std::time::Duration;

use common::{emulator, env_for};
use mcp_tasks_client::{ClientSetup, TestClient, completed_result, poll_to_end};
use pve_emulator::Emulator;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const TOKEN: &str = "3f9a0c7d51e2b846a9d03c5e7f1b2a8d6c4e0f9b3a5d7c1e8f2a4b6c9d0e1f3a";
const SHARED_KEY: &str = "9c1e7a5b3d8f2a4c6e0b1d3f5a7c9e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a2c";

/// A server process on a free port; killed when dropped.
struct Replica {
    url: String,
    _child: tokio::process::Child,
}

/// Starts the built binary over stateless HTTP for `emu`, with `key_file` if given.
async fn replica(
    emu: &Emulator,
    home: &std::path::Path,
    key_file: Option<&std::path::Path>,
) -> Replica {
    let mut command = tokio::process::Command::new(common::binary());
    command
        .arg("run")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("RUST_LOG", "info")
        .env("PVE_ACCESS_TIER", "full")
        .env("MCP_TRANSPORT", "http")
        .env("MCP_PORT", "0")
        .env("MCP_STATELESS", "true")
        .env("MCP_AUTH_TOKEN", TOKEN)
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in env_for(emu) {
        command.env(key, value);
    }
    if let Some(path) = key_file {
        command.env("PVE_APPROVAL_KEY_FILE", path);
    }
    let mut child = command.spawn().expect("replica starts");
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    // One deadline for the whole wait: a chatty process cannot keep the loop alive.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let url = loop {
        let line = tokio::time::timeout_at(deadline, stderr.next_line())
            .await
            .expect("listening within 20 s")
            .expect("stderr readable")
            .expect("replica exited before listening");
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on ".len()..];
            break rest.split_whitespace().next().expect("url").to_owned();
        }
    };
    // Keep draining the log so the replica never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    Replica { url, _child: child }
}

/// A 2026-07-28 client without sessions, declaring the tasks extension and elicitation.
async fn connect(replica: &Replica) -> RunningService<RoleClient, TestClient> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(replica.url.clone()).auth_header(TOKEN);
    TestClient::new(ClientSetup {
        tasks: true,
        approve: Some(true),
    })
    .serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("2026-07-28 client connects over HTTP")
}

fn stop(vmid: u64) -> CallToolRequestParams {
    CallToolRequestParams::new("pve_stop_qemu_vm").with_arguments(
        json!({"node": "pve01", "vmid": vmid})
            .as_object()
            .cloned()
            .expect("object"),
    )
}

/// The sealed state of the approval question a replica asks for `params`.
async fn ask(
    client: &RunningService<RoleClient, TestClient>,
    params: CallToolRequestParams,
) -> String {
    match client
        .peer()
        .call_tool_once(params)
        .await
        .expect("answered")
    {
        CallToolResponse::InputRequired(asked) => {
            let requests = asked.input_requests.expect("input requests");
            assert!(requests.contains_key("approval"), "{requests:?}");
            asked.request_state.expect("sealed state")
        }
        other => panic!("a gated call asks first, got {other:?}"),
    }
}

/// `params` retried with `state` and an approving answer.
fn approved(params: CallToolRequestParams, state: String) -> CallToolRequestParams {
    params.with_request_state(state).with_input_responses(
        [(
            "approval".to_owned(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]
        .into_iter()
        .collect(),
    )
}

fn changes(emu: &Emulator) -> Vec<String> {
    emu.requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_flow_alternates_between_two_replicas_sharing_the_approval_key() {
    let emu = emulator().await;
    let home = tempfile::tempdir().expect("temp home");
    let key_file = home.path().join("approval.key");
    std::fs::write(&key_file, format!("{SHARED_KEY}\n")).expect("key file");
    let a = replica(&emu, home.path(), Some(&key_file)).await;
    let b = replica(&emu, home.path(), Some(&key_file)).await;
    assert_ne!(a.url, b.url);
    let on_a = connect(&a).await;
    let on_b = connect(&b).await;

    // 1. List on A.
    let tools = on_a.peer().list_all_tools().await.expect("tools/list on A");
    assert!(tools.iter().any(|t| t.name == "pve_stop_qemu_vm"));

    // 2. A asks; the answered retry goes to B, which runs it as an MCP task.
    let state = ask(&on_a, stop(101)).await;
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    let task_id = match on_b
        .peer()
        .call_tool_once(approved(stop(101), state))
        .await
        .expect("answered on B")
    {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("B runs the approved stop as a task, got {other:?}"),
    };
    let sent = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].ends_with("/qemu/101/status/stop"), "{sent:?}");

    // 3. A reads the task B started, to its end.
    let done = poll_to_end(&on_a, &task_id, Duration::from_secs(15)).await;
    let result: Value = completed_result(&done);
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["data"]["exitstatus"], "OK",
        "{result}"
    );
    // B reads it too: the id needs no store on either side.
    let from_b = on_b
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("tasks/get on B");
    assert!(from_b.task.status().is_terminal(), "{from_b:?}");

    on_a.cancel().await.ok();
    on_b.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_with_another_key_refuses_the_answer_and_sends_nothing() {
    let emu = emulator().await;
    let home = tempfile::tempdir().expect("temp home");
    let key_file = home.path().join("approval.key");
    std::fs::write(&key_file, SHARED_KEY).expect("key file");
    let a = replica(&emu, home.path(), Some(&key_file)).await;
    let lone = replica(&emu, home.path(), None).await;
    let on_a = connect(&a).await;
    let on_lone = connect(&lone).await;

    let state = ask(&on_a, stop(101)).await;
    let response = on_lone
        .peer()
        .call_tool_once(approved(stop(101), state))
        .await
        .expect("answered");
    let CallToolResponse::Complete(result) = response else {
        panic!("a foreign state is refused outright, got {response:?}");
    };
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let envelope = result.structured_content.expect("envelope");
    assert_eq!(
        envelope["error"]["code"], "APPROVAL_STATE_INVALID",
        "{envelope}"
    );
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));

    on_a.cancel().await.ok();
    on_lone.cancel().await.ok();
}

/// The JSON-RPC message of a POST answer, JSON or a one-event SSE stream.
async fn rpc_answer(response: reqwest::Response) -> Value {
    let text = response.text().await.expect("body");
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .unwrap_or(text.as_str())
        .to_owned();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn post(url: &str, body: Value) -> reqwest::RequestBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http client")
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_mcp_stateless_an_older_client_needs_no_session_on_any_replica() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let emu = emulator().await;
    let home = tempfile::tempdir().expect("temp home");
    let a = replica(&emu, home.path(), None).await;
    let b = replica(&emu, home.path(), None).await;

    let init = post(
        &a.url,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "replicas-test", "version": "1"}}}),
    )
    .send()
    .await
    .expect("initialize on A");
    assert_eq!(init.status(), reqwest::StatusCode::OK);
    assert!(
        init.headers().get("mcp-session-id").is_none(),
        "a stateless replica hands out no session: {:?}",
        init.headers()
    );
    let answer = rpc_answer(init).await;
    assert_eq!(
        answer["result"]["protocolVersion"], "2025-06-18",
        "{answer}"
    );

    // The next request of the same client lands on B, without any session id.
    let listed = post(
        &b.url,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    )
    .send()
    .await
    .expect("tools/list on B");
    assert_eq!(listed.status(), reqwest::StatusCode::OK);
    // Without a session a plain request is answered as one JSON body, not an SSE stream.
    assert_eq!(
        listed.headers()["content-type"].to_str().unwrap(),
        "application/json",
        "{:?}",
        listed.headers()
    );
    let answer = rpc_answer(listed).await;
    let tools = answer["result"]["tools"].as_array().expect("tools");
    assert!(
        tools.iter().any(|t| t["name"] == "pve_stop_qemu_vm"),
        "{answer}"
    );
}

/// With no session, a 2025-06-18 client cannot be sent an elicitation request (its answer
/// would have nowhere to go), so a stateless replica must not wait for one: the gated call is
/// refused at once (the client declared elicitation, and a stateless replica cannot ask it), and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_replica_never_waits_on_a_question_it_cannot_deliver() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let emu = emulator().await;
    let home = tempfile::tempdir().expect("temp home");
    let a = replica(&emu, home.path(), None).await;
    let init = post(
        &a.url,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "replicas-test", "version": "1"}}}),
    )
    .send()
    .await
    .expect("initialize");
    assert_eq!(init.status(), reqwest::StatusCode::OK);
    let started = std::time::Instant::now();
    let call = post(
        &a.url,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "pve_stop_qemu_vm", "arguments": {"node": "pve01", "vmid": 101}}}),
    )
    .send()
    .await
    .expect("tools/call");
    let answer = rpc_answer(call).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "answered without waiting for a person: {:?}",
        started.elapsed()
    );
    let envelope = &answer["result"]["structuredContent"];
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        envelope["error"]["code"], "APPROVAL_UNAVAILABLE",
        "{answer}"
    );
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
}
