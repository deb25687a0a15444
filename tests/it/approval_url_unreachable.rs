//! A client that declared only URL elicitation asks a person on the approval page, and is never
//! downgraded to the model's `confirm` where this server cannot send it there. Over the real
//! Streamable HTTP transport against the emulator: without sessions (`MCP_STATELESS=true`) an
//! older client's request that declares only URL elicitation, and a 2026-07-28 client that does
//! (it is sent no `elicitation/create`), are refused with `APPROVAL_UNAVAILABLE` naming the
//! settings that fix it — `confirm: true` and all, with the dry run saying so — while a
//! configured webhook still asks the person, with the call's question in the notice (for a request
//! declaring form elicitation too). Every
//! refusal leaves the emulator's log without a single request that could change something.
//! (The stdio case without a page listener is in `approval_url.rs`.)

use crate::approval_common;
use crate::common;
use crate::harness;
use crate::link_common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use approval_common::{args, changes, code, envelope};
use harness::{TOKEN, pve_client, rpc_reply};
use link_common::{Receiver, decide};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use pve_emulator::Emulator;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Value, json};

/// The request `_meta` of a client whose elicitation capability is `elicitation`.
fn declaring(elicitation: Value) -> Value {
    json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": elicitation}})
}

/// The request `_meta` of a client that declares URL elicitation only.
fn url_only() -> Value {
    declaring(json!({"url": {}}))
}

/// A stateless transport (`MCP_STATELESS=true`) for `emu` at the `full` tier, plus `policy`.
async fn serve_stateless(emu: &Emulator, policy: &[(&str, &str)]) -> HttpServer {
    let mut vars = vec![("PVE_ACCESS_TIER", "full")];
    vars.extend_from_slice(policy);
    let settings = Settings::from_lookup(|k| {
        vars.iter()
            .find(|(key, _)| *key == k)
            .map(|(_, v)| (*v).to_owned())
    })
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
    let vars: HashMap<&str, &str> = HashMap::from([
        ("MCP_PORT", "0"),
        ("MCP_AUTH_TOKEN", TOKEN),
        ("MCP_STATELESS", "true"),
    ]);
    let mut settings =
        HttpSettings::from_lookup(|k| vars.get(k).map(|v| (*v).to_owned())).expect("settings");
    settings.ready_cache = Duration::ZERO;
    http::start(server, settings).await.expect("starts")
}

/// A raw 2025-11-25 `tools/call` of `pve_stop_qemu_vm` without a session, declaring URL
/// elicitation only in its `_meta`, with `extra` arguments; the tool result.
async fn raw_stop(address: std::net::SocketAddr, extra: Value) -> Value {
    raw_stop_with(address, extra, url_only()).await
}

/// [`raw_stop`] with the request `_meta` given.
async fn raw_stop_with(address: std::net::SocketAddr, extra: Value, meta: Value) -> Value {
    let mut arguments = json!({"node": "pve01", "vmid": 101});
    arguments
        .as_object_mut()
        .expect("object")
        .extend(extra.as_object().expect("object").clone());
    let params = json!({"name": "pve_stop_qemu_vm", "arguments": arguments, "_meta": meta});
    let response = harness::client()
        .post(format!("http://{address}/mcp"))
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
    rpc_reply(response, 7).await["result"].clone()
}

/// Asserts that `text` names every one of `settings`.
fn names_all(text: &str, settings: &[&str]) {
    for setting in settings {
        assert!(text.contains(setting), "lacks {setting}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sessions_a_url_only_request_is_refused_despite_confirm() {
    let emu = common::emulator().await;
    let http = serve_stateless(&emu, &[]).await;
    let dry = raw_stop(http.local_addr(), json!({"dry_run": true})).await;
    let path = dry["structuredContent"]["data"]["decision"]["approval"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(path.starts_with("refused ("), "{dry}");
    names_all(&path, &["MCP_STATELESS=true", "PVE_HUMAN_APPROVAL=confirm"]);
    emu.clear_requests();

    let refused = raw_stop(http.local_addr(), json!({"confirm": true})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let error = &refused["structuredContent"]["error"];
    assert_eq!(error["code"], "APPROVAL_UNAVAILABLE", "{refused}");
    names_all(
        error["hint"].as_str().unwrap_or_default(),
        &[
            "MCP_STATELESS=false",
            "PVE_APPROVAL_NOTIFY",
            "PVE_HUMAN_APPROVAL=confirm",
        ],
    );
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    http.shutdown().await;
    emu.shutdown().await;
}

/// With a webhook, the same request is put to a person there — the notice carries the call's
/// own question — and the page's decline ends it with nothing sent. So is a request declaring
/// form elicitation, which this server cannot ask without a session either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sessions_a_webhook_asks_with_the_calls_own_question() {
    let emu = common::emulator().await;
    let receiver = Receiver::start(200).await;
    let hook = format!("http://{}/hook", receiver.addr);
    let http = serve_stateless(
        &emu,
        &[
            ("PVE_APPROVAL_NOTIFY", hook.as_str()),
            ("PVE_APPROVAL_TIMEOUT_SECS", "60"),
        ],
    )
    .await;
    let address = http.local_addr();
    for (n, meta) in [url_only(), declaring(json!({"form": {}}))]
        .into_iter()
        .enumerate()
    {
        let calling = tokio::spawn(raw_stop_with(
            address,
            json!({"confirm": true}),
            meta.clone(),
        ));
        let notice = receiver.nth(n + 1).await;
        let body: Value = serde_json::from_str(&notice.body).expect("JSON notice");
        let question = body["question"].as_str().unwrap_or_default();
        assert!(question.contains("VM 101"), "{meta}: {body}");
        // `confirm: true` approved nothing: the call waits for the page.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!calling.is_finished(), "{meta}");
        let link = body["link"].as_str().expect("link");
        let (status, html) = decide(link, "decline").await;
        assert_eq!(status, 200, "{html}");
        let result = calling.await.expect("call task");
        assert_eq!(
            result["structuredContent"]["error"]["code"], "CONFIRMATION_DECLINED",
            "{meta}: {result}"
        );
    }
    assert!(changes(&emu).is_empty(), "{:?}", emu.requests());
    http.shutdown().await;
    emu.shutdown().await;
}

/// A 2026-07-28 client that declares URL elicitation only, counting any question it is sent.
#[derive(Clone, Default)]
struct NewerUrlClient {
    asked: Arc<Mutex<usize>>,
}

impl ClientHandler for NewerUrlClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("url-2026-test", "1.0"))
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        *self.asked.lock().expect("lock") += 1;
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_that_asks_only_on_the_page_is_refused_not_confirmed() {
    let emu = common::emulator().await;
    let http = serve_stateless(&emu, &[]).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(TOKEN);
    let person = NewerUrlClient::default();
    let client = person
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("connects over HTTP");
    let stop = |extra: Value| {
        let mut arguments = json!({"node": "pve01", "vmid": 101});
        arguments
            .as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        CallToolRequestParams::new("pve_stop_qemu_vm").with_arguments(args(arguments))
    };
    let dry = client
        .call_tool(stop(json!({"dry_run": true})))
        .await
        .expect("answered");
    let path = envelope(&dry)["data"]["decision"]["approval"].clone();
    let path = path.as_str().unwrap_or_default();
    assert!(path.starts_with("refused ("), "{path}");
    names_all(path, &["2026-07-28", "PVE_HUMAN_APPROVAL=confirm"]);
    emu.clear_requests();

    let refused = client
        .call_tool(stop(json!({"confirm": true})))
        .await
        .expect("answered");
    assert_eq!(code(&refused), "APPROVAL_UNAVAILABLE");
    names_all(
        envelope(&refused)["error"]["hint"]
            .as_str()
            .unwrap_or_default(),
        &[
            "form elicitation",
            "PVE_APPROVAL_NOTIFY",
            "PVE_HUMAN_APPROVAL=confirm",
        ],
    );
    assert_eq!(*person.asked.lock().expect("lock"), 0);
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    client.cancel().await.ok();
    http.shutdown().await;
    emu.shutdown().await;
}
