//! Harness for the HTTP transport tests: a transport on 127.0.0.1:0 serving an
//! emulator-backed server, a plain HTTP client, and JSON-RPC helpers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::pve;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use pve_emulator::{Emulator, EmulatorOptions};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

pub const TOKEN: &str = "test-token-0123456789abcdef";

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http client")
}

pub fn pve_client(emu: &Emulator) -> pve::Client {
    let opts = EmulatorOptions::default();
    pve::Client::new(&pve::Connection {
        host: emu.host().to_owned(),
        port: emu.port(),
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: pve::TlsMode::Fingerprint(emu.cert_fingerprint().expect("https emulator")),
    })
    .expect("pve client")
}

pub fn mcp_server(pve: Option<pve::Client>) -> Server {
    server_with(
        Settings::from_lookup(|_| None).expect("default policy"),
        pve,
    )
}

/// An in-process server with `settings`, in front of `pve`, its audit off.
pub fn server_with(settings: Settings, pve: Option<pve::Client>) -> Server {
    server_audited(settings, pve, nandi_proxmox_mcp::audit::AuditLog::off())
}

/// An in-process server with `settings`, in front of `pve`, writing `audit`.
pub fn server_audited(
    settings: Settings,
    pve: Option<pve::Client>,
    audit: nandi_proxmox_mcp::audit::AuditLog,
) -> Server {
    isolate_schema_cache();
    Server::new(AppState {
        registry: Registry::build(&settings),
        settings,
        pve,
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit,
        pbs: Vec::new(),
    })
}

/// Settings from these variables alone.
pub fn settings_of(vars: &[(&str, &str)]) -> Settings {
    Settings::from_lookup(|k| {
        vars.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("settings")
}

/// The guests the emulator has, by VMID (from its own cluster resources).
pub async fn guest_ids(emu: &Emulator) -> Vec<i64> {
    let data = pve_client(emu)
        .call(
            pve::ApiRequest::get("/cluster/resources"),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .result
        .expect("resources");
    let mut ids: Vec<i64> = data
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["vmid"].as_i64())
        .collect();
    ids.sort_unstable();
    ids
}

/// The requests beyond a read the emulator received, as `METHOD path`.
pub fn change_lines(emu: &Emulator) -> Vec<String> {
    emu.requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// A running transport plus what tests need to talk to it.
pub struct Running {
    pub http: HttpServer,
    pub base: String,
    pub client: reqwest::Client,
}

impl Running {
    pub fn addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(self.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    }

    pub fn authed(&self, body: &Value) -> reqwest::RequestBuilder {
        self.post(body).bearer_auth(TOKEN)
    }

    /// Initializes a session with the right token and returns its id.
    pub async fn session(&self) -> String {
        let response = self.authed(&initialize()).send().await.expect("send");
        assert_eq!(response.status(), StatusCode::OK);
        let id = response
            .headers()
            .get("mcp-session-id")
            .expect("session id")
            .to_str()
            .unwrap()
            .to_owned();
        let reply = rpc_reply(response, 1).await;
        assert_eq!(reply["result"]["serverInfo"]["name"], "nandi-proxmox-mcp");
        let note = self
            .authed(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .header("mcp-session-id", &id)
            .send()
            .await
            .expect("send");
        assert_eq!(note.status(), StatusCode::ACCEPTED);
        id
    }

    /// Opens the standalone event stream (GET) of session `id`; it stays open while the
    /// returned response is alive.
    pub async fn open_stream(&self, id: &str) -> Response {
        let response = self
            .client
            .get(self.url("/mcp"))
            .bearer_auth(TOKEN)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .expect("send");
        assert_eq!(response.status(), StatusCode::OK);
        response
    }

    /// A request inside session `id`, answered by the reply with JSON-RPC id `rpc_id`.
    pub async fn call(&self, id: &str, rpc_id: u64, method: &str, params: Value) -> Value {
        let response = self
            .authed(&json!({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}))
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .expect("send");
        assert_eq!(response.status(), StatusCode::OK);
        rpc_reply(response, rpc_id).await
    }
}

pub fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}})
}

/// The JSON-RPC message with `id` from an SSE or JSON response body.
pub async fn rpc_reply(response: Response, id: u64) -> Value {
    let is_sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
    let text = response.text().await.expect("body");
    if !is_sse {
        return serde_json::from_str(&text).expect("JSON body");
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["id"] == json!(id))
        .unwrap_or_else(|| panic!("no reply with id {id} in SSE body: {text}"))
}

/// Starts the transport with `vars` (plus MCP_PORT=0 and the test token unless overridden).
pub async fn start(vars: &[(&str, &str)], pve: Option<pve::Client>) -> Running {
    let mut map: HashMap<String, String> = HashMap::from([
        ("MCP_PORT".to_owned(), "0".to_owned()),
        ("MCP_AUTH_TOKEN".to_owned(), TOKEN.to_owned()),
    ]);
    for (k, v) in vars {
        map.insert((*k).to_owned(), (*v).to_owned());
    }
    let mut settings = HttpSettings::from_lookup(|k| map.get(k).cloned()).expect("settings");
    settings.ready_cache = Duration::ZERO;
    let http = http::start(mcp_server(pve), settings)
        .await
        .expect("starts");
    let base = format!("http://{}", http.local_addr());
    Running {
        http,
        base,
        client: client(),
    }
}

pub async fn json_of(response: Response) -> Value {
    let text = response.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

pub async fn error_body(response: Response) -> Value {
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "application/json"
    );
    let body: Value = json_of(response).await;
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["error"]["code"].is_i64(), "{body}");
    body
}

/// Keeps this test process's API-schema cache files in its own directory under `target/tmp`,
/// so an in-process server never reads or writes the user's `~/.cache/nandi-proxmox-mcp`.
pub fn isolate_schema_cache() {
    nandi_proxmox_mcp::composite::api_call_cache::use_cache_dir(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("schema-cache-{}", std::process::id())),
    );
}

/// The transport in OAuth mode for the issuer at `issuer_url` (resource
/// `https://mcp.example.test/mcp`), in front of `pve`, with policy variables `policy` and
/// transport variables `extra` on top of the OAuth ones.
pub async fn oauth_server(
    issuer_url: &str,
    pve: Option<pve::Client>,
    policy: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> HttpServer {
    let settings = Settings::from_lookup(|k| {
        policy
            .iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("policy");
    oauth_serve(issuer_url, server_with(settings, pve), extra).await
}

/// [`oauth_server`] for a server built by the test.
pub async fn oauth_serve(issuer_url: &str, server: Server, extra: &[(&str, &str)]) -> HttpServer {
    let mut vars: HashMap<&str, String> = HashMap::from([
        ("MCP_PORT", "0".to_owned()),
        ("MCP_AUTH_MODE", "oauth".to_owned()),
        ("MCP_OAUTH_ISSUER", issuer_url.to_owned()),
        (
            "MCP_OAUTH_RESOURCE",
            "https://mcp.example.test/mcp".to_owned(),
        ),
    ]);
    for (k, v) in extra {
        vars.insert(k, (*v).to_owned());
    }
    let settings = HttpSettings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    http::start(server, settings).await.expect("starts")
}

/// `POST /mcp` of `body` with bearer `token` (and `session`, if any), as a 2025-06-18 client.
pub async fn post_mcp(
    http: &HttpServer,
    token: &str,
    body: &Value,
    session: Option<&str>,
) -> Response {
    let mut request = client()
        .post(format!("http://{}/mcp", http.local_addr()))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request.send().await.expect("send")
}
