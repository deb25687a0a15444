//! A client that can ask a person is always asked, over real HTTP against the in-process
//! transport and the emulator: with `MCP_STATELESS=true` an older client that declared
//! elicitation (or whose request does not say) is refused with `APPROVAL_UNAVAILABLE` rather
//! than run on the model's `confirm`; a session that declared elicitation is asked whatever a
//! request's `_meta` claims; a stateless 2026-07-28 client gets an `InputRequiredResult`; and a
//! client that says it cannot ask keeps the confirm flag. Every refusal sends nothing to
//! Proxmox (no POST in the emulator's log).

use crate::approval_common;
use crate::common;
use crate::harness;

use std::collections::HashMap;
use std::time::Duration;

use approval_common::{Answer, Person, args, call, code, envelope};
use harness::{TOKEN, pve_client, rpc_reply};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use pve_emulator::Emulator;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ProtocolVersion,
    RequestMetaObject,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

/// The transport for `emu` at the `full` tier, with or without sessions.
async fn serve(emu: &Emulator, stateless: bool) -> HttpServer {
    let settings = Settings::from_lookup(|k| (k == "PVE_ACCESS_TIER").then(|| "full".to_owned()))
        .expect("policy");
    harness::isolate_schema_cache();
    let server = Server::new(AppState {
        registry: Registry::build(&settings),
        settings,
        pve: Some(pve_client(emu)),
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit: nandi_proxmox_mcp::audit::AuditLog::off(),
        pbs: Vec::new(),
    });
    let stateless = if stateless { "true" } else { "false" };
    let vars: HashMap<&str, &str> = HashMap::from([
        ("MCP_PORT", "0"),
        ("MCP_AUTH_TOKEN", TOKEN),
        ("MCP_STATELESS", stateless),
    ]);
    let mut settings =
        HttpSettings::from_lookup(|k| vars.get(k).map(|v| (*v).to_owned())).expect("settings");
    settings.ready_cache = Duration::ZERO;
    http::start(server, settings).await.expect("starts")
}

/// rmcp's HTTP client side as `person`, with `lifecycle`.
async fn connect(
    http: &HttpServer,
    person: Person,
    lifecycle: ClientLifecycleMode,
) -> RunningService<RoleClient, Person> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(TOKEN);
    person
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            lifecycle,
        )
        .await
        .expect("connects over HTTP")
}

/// A 2025-11-25 client that declares form elicitation (or not) in `initialize`.
fn older(answer: Answer, can_ask: bool) -> Person {
    Person {
        version: ProtocolVersion::V_2025_11_25,
        can_ask,
        ..Person::new(answer)
    }
}

/// The gated stop of VM 101, with the model's `confirm: true`.
fn confirmed_stop() -> Value {
    json!({"node": "pve01", "vmid": 101, "confirm": true})
}

/// Requests the emulator received that could start something (POST).
fn posts(emu: &Emulator) -> usize {
    emu.requests().iter().filter(|r| r.method == "POST").count()
}

/// Request `_meta` carrying the client's own capabilities (per-request capabilities).
fn meta_with(capabilities: ClientCapabilities) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    meta
}

/// A raw 2025-11-25 `tools/call` without a session, its `_meta` as given; the tool result.
async fn raw_call(http: &HttpServer, arguments: Value, meta: Option<Value>) -> Value {
    let mut params = json!({"name": "pve_stop_qemu_vm", "arguments": arguments});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let response = harness::client()
        .post(format!("http://{}/mcp", http.local_addr()))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
                .to_string(),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let reply = rpc_reply(response, 7).await;
    reply["result"].clone()
}

fn refusal_is_the_operators(error: &Value) {
    let hint = error["hint"].as_str().unwrap_or("");
    for setting in ["MCP_STATELESS", "PVE_HUMAN_APPROVAL=confirm", "2026-07-28"] {
        assert!(hint.contains(setting), "hint lacks {setting}: {error}");
    }
    assert!(!hint.contains("cannot ask a person"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_refuses_an_older_client_that_declared_elicitation_despite_confirm() {
    let emu = common::emulator().await;
    let http = serve(&emu, true).await;

    // Declared in `initialize` only (what a 2025-11-25 client does): the server forgot it.
    let person = older(Answer::Accept, true);
    let client = connect(&http, person.clone(), ClientLifecycleMode::Initialize).await;
    let result = call(&client, "pve_stop_qemu_vm", confirmed_stop()).await;
    assert_eq!(code(&result), "APPROVAL_UNAVAILABLE");
    refusal_is_the_operators(&envelope(&result)["error"]);
    assert!(person.questions().is_empty());
    client.cancel().await.ok();

    // Declared in the request's own capabilities.
    let result = raw_call(
        &http,
        confirmed_stop(),
        Some(json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})),
    )
    .await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error"]["code"],
        "APPROVAL_UNAVAILABLE"
    );
    assert_eq!(posts(&emu), 0, "{:?}", emu.requests());
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_refuses_a_request_that_does_not_carry_its_capabilities() {
    let emu = common::emulator().await;
    let http = serve(&emu, true).await;
    // Nothing in the request says the client cannot ask, and its `initialize` is gone.
    let result = raw_call(&http, confirmed_stop(), None).await;
    assert_eq!(
        result["structuredContent"]["error"]["code"], "APPROVAL_UNAVAILABLE",
        "{result}"
    );
    refusal_is_the_operators(&result["structuredContent"]["error"]);
    assert_eq!(posts(&emu), 0, "{:?}", emu.requests());
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_declared_elicitation_is_asked_whatever_the_request_meta_claims() {
    let emu = common::emulator().await;
    let http = serve(&emu, false).await;
    let person = older(Answer::Decline, true);
    let client = connect(&http, person.clone(), ClientLifecycleMode::Initialize).await;

    // Empty capabilities, then capabilities without elicitation: neither takes it away.
    let claims = [
        ClientCapabilities::default(),
        serde_json::from_value(json!({"experimental": {"example": {}}})).expect("capabilities"),
    ];
    for (asked, claim) in claims.into_iter().enumerate() {
        let mut params =
            CallToolRequestParams::new("pve_stop_qemu_vm").with_arguments(args(confirmed_stop()));
        params.meta = Some(meta_with(claim));
        let result = client.call_tool(params).await.expect("call answered");
        assert_eq!(code(&result), "CONFIRMATION_DECLINED");
        assert_eq!(person.questions().len(), asked + 1);
    }
    assert_eq!(posts(&emu), 0, "{:?}", emu.requests());
    client.cancel().await.ok();
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_2026_client_is_asked_through_input_required() {
    let emu = common::emulator().await;
    let http = serve(&emu, true).await;
    let person = Person {
        version: ProtocolVersion::V_2026_07_28,
        ..Person::new(Answer::Accept)
    };
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = connect(&http, person.clone(), lifecycle).await;
    let stop =
        || CallToolRequestParams::new("pve_stop_qemu_vm").with_arguments(args(confirmed_stop()));

    let response = client.call_tool_once(stop()).await.expect("answered");
    let CallToolResponse::InputRequired(asked) = response else {
        panic!("a gated call asks first, got {response:?}");
    };
    assert!(asked.request_state.is_some());
    assert!(
        asked
            .input_requests
            .expect("requests")
            .contains_key("approval")
    );
    assert_eq!(posts(&emu), 0, "{:?}", emu.requests());

    // rmcp drives the round trip through the person's handler: the accept runs the stop.
    let result: CallToolResult = client.call_tool(stop()).await.expect("answered");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person");
    assert_eq!(person.questions().len(), 1);
    assert_eq!(posts(&emu), 1);
    client.cancel().await.ok();
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_elicitation_keeps_the_confirm_flag() {
    let emu = common::emulator().await;

    // In a session: declared nothing in `initialize`.
    let http = serve(&emu, false).await;
    let client = connect(
        &http,
        older(Answer::Decline, false),
        ClientLifecycleMode::Initialize,
    )
    .await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_REQUIRED");
    assert_eq!(posts(&emu), 0);
    let result = call(&client, "pve_stop_qemu_vm", confirmed_stop()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "confirm-flag");
    assert_eq!(posts(&emu), 1);
    client.cancel().await.ok();
    http.shutdown().await;

    // Without sessions: the request itself says it has no elicitation.
    emu.clear_requests();
    let http = serve(&emu, true).await;
    let own = Some(json!({"io.modelcontextprotocol/clientCapabilities": {}}));
    let result = raw_call(&http, json!({"node": "pve01", "vmid": 101}), own.clone()).await;
    assert_eq!(
        result["structuredContent"]["error"]["code"], "CONFIRMATION_REQUIRED",
        "{result}"
    );
    assert_eq!(posts(&emu), 0);
    let result = raw_call(&http, confirmed_stop(), own).await;
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["meta"]["approval"],
        "confirm-flag"
    );
    assert_eq!(posts(&emu), 1);
    http.shutdown().await;
}
