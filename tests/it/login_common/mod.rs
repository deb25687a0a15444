//! The OAuth approval sign-in's test setup, shared by `approval_login` and
//! `approval_login_edges`: the transport in OAuth mode in front of the emulator with a webhook
//! receiver, rmcp's client side with the caller's token, and a browser that signs in at the test
//! issuer and decides on the page.
#![allow(dead_code)]
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::approval_common::args;
use crate::harness::{isolate_schema_cache, pve_client};
use crate::link_common::{Page, Receiver, browser, post_form};
use crate::oauth_issuer::{Issuer, RESOURCE};
use nandi_proxmox_mcp::audit::{AuditLog, AuditTarget};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use pve_emulator::Emulator;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

pub const CLIENT_ID: &str = "pve-approval";

/// The server, its webhook receiver, its audit file and the caller's token.
pub struct Setup {
    pub http: HttpServer,
    pub receiver: Receiver,
    pub audit: std::path::PathBuf,
    pub _dir: tempfile::TempDir,
    pub caller_token: String,
}

/// The transport in OAuth mode at tier `full`, telling `receiver` about every gated call.
pub async fn serve(
    issuer: &Issuer,
    emu: &Emulator,
    policy: &[(&str, &str)],
    timeout: &str,
) -> Setup {
    let receiver = Receiver::start(200).await;
    let hook = format!("http://{}/hook", receiver.addr);
    let mut vars: HashMap<&str, String> = HashMap::from([
        ("PVE_ACCESS_TIER", "full".to_owned()),
        ("PVE_APPROVAL_NOTIFY", hook),
        ("PVE_APPROVAL_TIMEOUT_SECS", timeout.to_owned()),
    ]);
    for (k, v) in policy {
        vars.insert(k, (*v).to_owned());
    }
    let settings = Settings::from_lookup(|k| vars.get(k).cloned()).expect("policy");
    isolate_schema_cache();
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let server = Server::new(AppState {
        registry: Registry::build(&settings),
        settings,
        pve: Some(pve_client(emu)),
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit: AuditLog::new(AuditTarget::File(audit.clone())),
        pbs: Vec::new(),
    });
    let vars: HashMap<&str, String> = HashMap::from([
        ("MCP_PORT", "0".to_owned()),
        ("MCP_AUTH_MODE", "oauth".to_owned()),
        ("MCP_OAUTH_ISSUER", issuer.url.clone()),
        ("MCP_OAUTH_RESOURCE", RESOURCE.to_owned()),
        ("MCP_OAUTH_APPROVAL_CLIENT_ID", CLIENT_ID.to_owned()),
    ]);
    let mut http_settings = HttpSettings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    http_settings.ready_cache = Duration::ZERO;
    let http = http::start(server, http_settings).await.expect("starts");
    // The caller: alice, through the client `claude`, with every scope.
    let caller_token = issuer.token(&issuer.claims());
    Setup {
        http,
        receiver,
        audit,
        _dir: dir,
        caller_token,
    }
}

pub type Client = Arc<RunningService<RoleClient, ()>>;

/// rmcp's client side with the caller's token; it declares no elicitation, so the webhook asks.
pub async fn connect(setup: &Setup) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(format!(
        "http://{}/mcp",
        setup.http.local_addr()
    ))
    .auth_header(setup.caller_token.clone());
    Arc::new(
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("connects over HTTP"),
    )
}

/// Starts `pve_stop_qemu_vm` on VM 101 in the background.
pub fn stop(client: &Client) -> tokio::task::JoinHandle<CallToolResult> {
    let client = client.clone();
    tokio::spawn(async move {
        client
            .call_tool(
                CallToolRequestParams::new("pve_stop_qemu_vm")
                    .with_arguments(args(json!({"node": "pve01", "vmid": 101}))),
            )
            .await
            .expect("call answered")
    })
}

/// The link of the `n`th notice.
pub async fn link(setup: &Setup, n: usize) -> String {
    let notice = setup.receiver.nth(n).await;
    let body: Value = serde_json::from_str(&notice.body).expect("JSON notice");
    body["link"].as_str().expect("link").to_owned()
}

/// `name=value` of cookie `name` among a response's `Set-Cookie` headers, and the whole header.
pub fn set_cookie(headers: &reqwest::header::HeaderMap, name: &str) -> Option<(String, String)> {
    headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| {
            let pair = v.split(';').next().unwrap_or_default().to_owned();
            (pair, v.to_owned())
        })
}

/// The way back from the issuer: the callback URL and the browser-binding cookie.
pub struct Started {
    pub callback: String,
    pub binding: String,
}

/// Opens `link/login`, follows the redirect to the issuer, which consents and sends the browser
/// back: the callback URL (not opened yet).
pub async fn start_sign_in(link: &str) -> Started {
    let browser = browser();
    let login = browser
        .get(format!("{link}/login"))
        .send()
        .await
        .expect("login answers");
    assert_eq!(login.status(), 303);
    let authorize = login.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );
    assert!(authorize.contains("client_id=pve-approval"), "{authorize}");
    let (binding, whole) = set_cookie(login.headers(), "pve_approval_login").expect("binding");
    assert!(
        whole.contains("HttpOnly") && whole.contains("SameSite=Lax"),
        "{whole}"
    );
    let consent = browser
        .get(&authorize)
        .send()
        .await
        .expect("issuer answers");
    assert_eq!(consent.status(), 303);
    let callback = consent.headers()["location"].to_str().unwrap().to_owned();
    assert!(callback.contains("/approve/callback?"), "{callback}");
    Started { callback, binding }
}

/// The callback opened with `cookie`: status, page and the session cookie it set, if any.
pub async fn come_back(callback: &str, cookie: Option<&str>) -> (Page, Option<(String, String)>) {
    let mut request = browser().get(callback);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.expect("callback answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let session = set_cookie(&headers, "pve_approval");
    let html = response.text().await.unwrap_or_default();
    (
        Page {
            status,
            headers,
            html,
        },
        session,
    )
}

/// A full sign-in for `link` as the issuer's current user.
pub async fn sign_in(link: &str) -> (Page, Option<(String, String)>) {
    let started = start_sign_in(link).await;
    come_back(&started.callback, Some(&started.binding)).await
}

/// Posts `decision` with the page's own fields and `cookie`.
pub async fn post(link: &str, page: &Page, decision: &str, cookie: Option<&str>) -> u16 {
    let mut headers = vec![("sec-fetch-site", "same-origin")];
    if let Some(cookie) = cookie {
        headers.push(("cookie", cookie));
    }
    let (token, call) = (page.hidden("token"), page.hidden("call"));
    post_form(
        link,
        &[("token", &token), ("call", &call), ("decision", decision)],
        &headers,
    )
    .await
    .0
}

/// The audit records of approved lines.
pub fn approved_lines(setup: &Setup) -> Vec<Value> {
    std::fs::read_to_string(&setup.audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["approval"] == "person-link")
        .collect()
}

pub async fn close(client: Client) {
    if let Ok(client) = Arc::try_unwrap(client) {
        client.cancel().await.ok();
    }
}
