//! The Streamable HTTP transport on 127.0.0.1:0, driven by a real HTTP client: authentication,
//! Host/Origin guard, limits (413, 429, 405, session bound), sessions (404, DELETE), MCP calls end
//! to end against the emulator over real HTTPS, `/health` and `/ready` (the binary: `http_binary.rs`).

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use nandi_proxmox_mcp::emulator::{Emulator, EmulatorOptions, Fault, FaultKind};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::pve;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "test-token-0123456789abcdef";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http client")
}

fn pve_client(emu: &Emulator) -> pve::Client {
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

fn mcp_server(pve: Option<pve::Client>) -> Server {
    let settings = Settings::from_lookup(|_| None).expect("default policy");
    Server::new(AppState {
        registry: Registry::build(&settings),
        settings,
        pve,
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
    })
}

/// A running transport plus what tests need to talk to it.
struct Running {
    http: HttpServer,
    base: String,
    client: reqwest::Client,
}

impl Running {
    fn addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(self.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    }

    fn authed(&self, body: &Value) -> reqwest::RequestBuilder {
        self.post(body).bearer_auth(TOKEN)
    }

    /// Initializes a session with the right token and returns its id.
    async fn session(&self) -> String {
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

    /// A request inside session `id`, answered by the reply with JSON-RPC id `rpc_id`.
    async fn call(&self, id: &str, rpc_id: u64, method: &str, params: Value) -> Value {
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

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}})
}

/// The JSON-RPC message with `id` from an SSE or JSON response body.
async fn rpc_reply(response: Response, id: u64) -> Value {
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
async fn start(vars: &[(&str, &str)], pve: Option<pve::Client>) -> Running {
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

async fn json_of(response: Response) -> Value {
    let text = response.text().await.expect("body");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

async fn error_body(response: Response) -> Value {
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "application/json"
    );
    let body: Value = json_of(response).await;
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["error"]["code"].is_i64(), "{body}");
    body
}

#[tokio::test]
async fn requests_without_the_right_token_are_refused_and_reach_no_tool() {
    let emu = common::emulator().await;
    let srv = start(&[], Some(pve_client(&emu))).await;

    let missing = srv.post(&initialize()).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    let challenge = missing
        .headers()
        .get("www-authenticate")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert_eq!(
        error_body(missing).await["error"]["message"],
        "Unauthorized"
    );

    let wrong = srv
        .post(&initialize())
        .bearer_auth("test-token-0123456789abcdeX")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(
        wrong.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
    let basic = srv
        .post(&initialize())
        .header("authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);

    // A valid session does not help a request that lacks the token.
    let id = srv.session().await;
    emu.clear_requests();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "pve_list_nodes", "arguments": {}}});
    for auth in [None, Some("Bearer nope-nope-nope-nope-nope")] {
        let mut request = srv.post(&call).header("mcp-session-id", &id);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        assert_eq!(
            request.send().await.unwrap().status(),
            StatusCode::UNAUTHORIZED
        );
    }
    assert!(
        emu.requests().is_empty(),
        "a refused request reached Proxmox"
    );

    // The right token works.
    let reply = srv.call(&id, 8, "tools/call", call["params"].clone()).await;
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    srv.http.shutdown().await;
}

#[tokio::test]
async fn foreign_host_and_origin_headers_are_refused() {
    let srv = start(&[], None).await;
    let port = srv.addr().port();
    for (host, origin, expected) in [
        ("evil.example".to_owned(), None, StatusCode::FORBIDDEN),
        (format!("evil.example:{port}"), None, StatusCode::FORBIDDEN),
        (format!("0.0.0.0:{port}"), None, StatusCode::FORBIDDEN),
        (
            format!("localhost:{port}"),
            Some("http://evil.example".to_owned()),
            StatusCode::FORBIDDEN,
        ),
        (
            format!("localhost:{port}"),
            Some("http://localhost:5173".to_owned()),
            StatusCode::FORBIDDEN,
        ),
        (
            format!("localhost:{port}"),
            Some("null".to_owned()),
            StatusCode::FORBIDDEN,
        ),
        (format!("127.0.0.1:{port}"), None, StatusCode::OK),
        (format!("localhost:{port}"), None, StatusCode::OK),
        (format!("[::1]:{port}"), None, StatusCode::OK),
        (
            format!("localhost:{port}"),
            Some(format!("http://localhost:{port}")),
            StatusCode::OK,
        ),
        (
            format!("127.0.0.1:{port}"),
            Some(format!("http://127.0.0.1:{port}")),
            StatusCode::OK,
        ),
    ] {
        let mut request = srv.authed(&initialize()).header("host", &host);
        if let Some(origin) = &origin {
            request = request.header("origin", origin);
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.status(),
            expected,
            "Host {host}, Origin {origin:?}"
        );
        if expected == StatusCode::FORBIDDEN {
            let body = error_body(response).await;
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Forbidden"),
                "{body}"
            );
        }
    }
    // The guard covers every route, not only /mcp.
    let health = srv
        .client
        .get(srv.url("/health"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::FORBIDDEN);
    srv.http.shutdown().await;
}

#[tokio::test]
async fn listed_hosts_and_origins_are_allowed() {
    let srv = start(
        &[
            ("MCP_ALLOWED_HOSTS", "mcp.example.lan:8443"),
            ("MCP_ALLOWED_ORIGINS", "https://console.example.com"),
        ],
        None,
    )
    .await;
    for (host, origin) in [
        ("mcp.example.lan", "https://mcp.example.lan:8443"),
        ("mcp.example.lan:8443", "https://console.example.com"),
    ] {
        let response = srv
            .authed(&initialize())
            .header("host", host)
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{host} {origin}");
    }
    srv.http.shutdown().await;
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_it_is_read() {
    let srv = start(&[("MCP_MAX_BODY_SIZE_BYTES", "1024")], None).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x".repeat(2000)}});
    let response = srv.authed(&big).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        error_body(response).await["error"]["message"],
        "Request entity too large"
    );

    // Announce 10 MB and send none of it: the answer must come without waiting for the body.
    let mut socket = tokio::net::TcpStream::connect(srv.addr()).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 10000000\r\n\r\n",
        srv.addr().port()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
        .await
        .expect("answered without the body")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");

    // A chunked body (no Content-Length) is cut off while it is read, also with 413.
    let mut socket = tokio::net::TcpStream::connect(srv.addr()).await.unwrap();
    let chunk = "a".repeat(2000);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
        .await
        .expect("answered")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("Request entity too large"), "{text}");
    srv.http.shutdown().await;
}

#[tokio::test]
async fn the_rate_limit_answers_429_with_headers() {
    let srv = start(&[("MCP_RATE_LIMIT_MAX", "3")], None).await;
    for i in 0..3 {
        let response = srv.authed(&initialize()).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "request {i}");
        assert_eq!(response.headers()["ratelimit-limit"], "3");
        assert_eq!(
            response.headers()["ratelimit-remaining"],
            (2 - i).to_string().as_str()
        );
    }
    let limited = srv.authed(&initialize()).send().await.unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let headers = limited.headers().clone();
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "retry-after {retry}");
    assert_eq!(headers["ratelimit-remaining"], "0");
    assert!(headers.contains_key("ratelimit-reset"));
    assert!(!headers.contains_key("x-ratelimit-limit"));
    assert_eq!(
        error_body(limited).await["error"]["message"],
        "Too Many Requests"
    );
    // Health checks are not rate-limited.
    let health = srv.client.get(srv.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    srv.http.shutdown().await;
}

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
    assert_eq!(error_body(not_json).await["error"]["code"], -32700);
    srv.http.shutdown().await;
}

#[tokio::test]
async fn delete_ends_a_session_and_the_live_session_bound_holds() {
    let srv = start(&[("MCP_MAX_SESSIONS", "2")], None).await;
    let first = srv.session().await;
    let _second = srv.session().await;
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
    assert!(deleted.status().is_success(), "{}", deleted.status());
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

    // Without a configured Proxmox there is nothing to wait for.
    let bare = start(&[], None).await;
    let body: Value = bare
        .client
        .get(bare.url("/ready"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str::<Value>(&t).expect("JSON"))
        .unwrap();
    assert_eq!(body["ready"], true);
    assert_eq!(body["proxmox"], "not configured");
    bare.http.shutdown().await;
}
