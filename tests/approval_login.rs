//! Who may approve under OAuth, end to end over loopback HTTP: the in-process transport in
//! OAuth mode in front of the emulator, the test issuer (its JWKS, `/authorize` consenting for the
//! test user of the moment, `/token` with PKCE), rmcp's client side calling with the caller's
//! access token, and a webhook receiver getting the link. A person opens the link, signs in at
//! the issuer (authorization code + PKCE), comes back with a session cookie and decides; the
//! emulator's request log shows one request after an admitted person's Approve and none
//! otherwise, and the audit line names the approver.

mod approval_common;
mod common;
#[path = "common/http_harness.rs"]
mod harness;
mod link_common;
#[path = "common/oauth_issuer.rs"]
mod oauth_issuer;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use approval_common::{args, changes, code, envelope};
use harness::{isolate_schema_cache, pve_client};
use link_common::{Page, Receiver, browser, post_form};
use nandi_proxmox_mcp::audit::{AuditLog, AuditTarget};
use nandi_proxmox_mcp::emulator::Emulator;
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::approve_login::MAX_LOGINS;
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use oauth_issuer::{Issuer, RESOURCE};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const CLIENT_ID: &str = "pve-approval";

/// The server, its webhook receiver, its audit file and the caller's token.
struct Setup {
    http: HttpServer,
    receiver: Receiver,
    audit: std::path::PathBuf,
    _dir: tempfile::TempDir,
    caller_token: String,
}

/// The transport in OAuth mode at tier `full`, telling `receiver` about every gated call.
async fn serve(issuer: &Issuer, emu: &Emulator, policy: &[(&str, &str)], timeout: &str) -> Setup {
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

type Client = Arc<RunningService<RoleClient, ()>>;

/// rmcp's client side with the caller's token; it declares no elicitation, so the webhook asks.
async fn connect(setup: &Setup) -> Client {
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
fn stop(client: &Client) -> tokio::task::JoinHandle<CallToolResult> {
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
async fn link(setup: &Setup, n: usize) -> String {
    let notice = setup.receiver.nth(n).await;
    let body: Value = serde_json::from_str(&notice.body).expect("JSON notice");
    body["link"].as_str().expect("link").to_owned()
}

/// `name=value` of cookie `name` among a response's `Set-Cookie` headers, and the whole header.
fn set_cookie(headers: &reqwest::header::HeaderMap, name: &str) -> Option<(String, String)> {
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
struct Started {
    callback: String,
    binding: String,
}

/// Opens `link/login`, follows the redirect to the issuer, which consents and sends the browser
/// back: the callback URL (not opened yet).
async fn start_sign_in(link: &str) -> Started {
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
async fn come_back(callback: &str, cookie: Option<&str>) -> (Page, Option<(String, String)>) {
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
async fn sign_in(link: &str) -> (Page, Option<(String, String)>) {
    let started = start_sign_in(link).await;
    come_back(&started.callback, Some(&started.binding)).await
}

/// Posts `decision` with the page's own fields and `cookie`.
async fn post(link: &str, page: &Page, decision: &str, cookie: Option<&str>) -> u16 {
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
fn approved_lines(setup: &Setup) -> Vec<Value> {
    std::fs::read_to_string(&setup.audit)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["approval"] == "person-link")
        .collect()
}

async fn close(client: Client) {
    if let Ok(client) = Arc::try_unwrap(client) {
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_own_sign_in_approves_and_the_audit_names_the_approver() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "60").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;

    // Before sign-in: no question, no form.
    let first = link_common::open(&link).await;
    assert_eq!(first.status, 200);
    assert!(first.html.contains("Sign in"), "{}", first.html);
    assert!(!first.html.contains("VM 101"), "{}", first.html);
    assert!(first.hidden("token").is_empty());

    issuer.sign_in_as("alice", "openid");
    let (page, session) = sign_in(&link).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("VM 101"), "{}", page.html);
    assert!(page.html.contains("oauth:alice"), "{}", page.html);
    let (session, whole) = session.expect("a session cookie");
    let id = link.rsplit('/').next().unwrap();
    for attribute in [
        "HttpOnly",
        "SameSite=Strict",
        &format!("Path=/approve/{id}"),
    ] {
        assert!(whole.contains(attribute), "{whole}");
    }
    assert_eq!(issuer.grants(), 1);

    // The form without the session cookie decides nothing.
    assert_eq!(post(&link, &page, "approve", None).await, 403);
    let forged = format!("pve_approval={}", "0".repeat(64));
    assert_eq!(post(&link, &page, "approve", Some(&forged)).await, 403);
    assert!(changes(&emu).is_empty());

    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person-link");
    assert_eq!(changes(&emu).len(), 1);
    // Used: the session decides nothing more.
    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 410);
    assert_eq!(changes(&emu).len(), 1);

    let lines = approved_lines(&setup);
    assert!(lines.len() >= 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line["approver"], "oauth:alice", "{line}");
        assert_eq!(line["caller"], "oauth:alice (client claude)", "{line}");
    }

    // A decline by the signed-in person is recorded with their name too.
    let calling = stop(&client);
    let second = self::link(&setup, 2).await;
    let (page, session) = sign_in(&second).await;
    let (session, _) = session.expect("a session cookie");
    assert_eq!(post(&second, &page, "decline", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_eq!(
        envelope(&result)["error"]["code"],
        "CONFIRMATION_DECLINED",
        "{result:?}"
    );
    assert_eq!(changes(&emu).len(), 1, "the declined call sent nothing");
    let declined: Vec<Value> = std::fs::read_to_string(&setup.audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["outcome"] == "CONFIRMATION_DECLINED")
        .collect();
    assert_eq!(declined.len(), 1, "{declined:?}");
    assert_eq!(declined[0]["decision"], "refused");
    assert_eq!(declined[0]["approver"], "oauth:alice", "{declined:?}");
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_caller_another_person_is_refused_and_nothing_is_sent() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[("PVE_APPROVERS", "caller")], "4").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;

    // Bob signs in, even with every scope: not the caller.
    issuer.sign_in_as("bob", "openid proxmox:admin proxmox:approve");
    let (page, session) = sign_in(&link).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(page.html.contains("oauth:bob"), "{}", page.html);
    assert!(!page.html.contains("VM 101"), "{}", page.html);
    assert!(session.is_none());
    // Without a session, a post decides nothing (the fields are not even known).
    assert_eq!(post(&link, &page, "approve", None).await, 403);

    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty());
    assert!(approved_lines(&setup).is_empty());
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_an_approvers_scope_a_person_holding_it_approves() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let approvers = [("PVE_APPROVERS", "scope:proxmox:approve")];
    let setup = serve(&issuer, &emu, &approvers, "60").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;

    // The caller themself, without the approvers' scope: refused.
    issuer.sign_in_as("alice", "openid proxmox:admin");
    let (page, session) = sign_in(&link).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());
    // Carol holds the scope (and no tier scope at all).
    issuer.sign_in_as("carol", "openid proxmox:approve");
    let started = start_sign_in(&link).await;
    assert!(started.callback.contains("state="));
    let (page, session) = come_back(&started.callback, Some(&started.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (session, _) = session.expect("a session cookie");
    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(changes(&emu).len(), 1);
    let lines = approved_lines(&setup);
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l["approver"] == "oauth:carol"),
        "{lines:?}"
    );
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_or_replayed_states_and_codes_admit_nobody() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "5").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;
    let base = format!("http://{}/approve/callback", setup.http.local_addr());
    issuer.sign_in_as("alice", "openid");

    // A state this server never issued.
    let forged = format!("{base}?state={}&code=abc", "1".repeat(64));
    let (page, session) = come_back(&forged, None).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());

    // A real state from another browser (no binding cookie): refused, and the state is spent.
    let stolen = start_sign_in(&link).await;
    let (page, session) = come_back(&stolen.callback, None).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());
    let (page, _) = come_back(&stolen.callback, Some(&stolen.binding)).await;
    assert_eq!(page.status, 403, "a spent state: {}", page.html);

    // A good sign-in, then its callback replayed: the state works once.
    let good = start_sign_in(&link).await;
    let (page, session) = come_back(&good.callback, Some(&good.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(session.is_some());
    let (page, session) = come_back(&good.callback, Some(&good.binding)).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());

    // A fresh state carrying an old (spent) code, or a made-up one: the issuer refuses it.
    let old_code = url::Url::parse(&good.callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    for code in [old_code.as_str(), "made-up-code"] {
        let fresh = start_sign_in(&link).await;
        let mut swapped = url::Url::parse(&fresh.callback).unwrap();
        let state = swapped
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .unwrap();
        swapped
            .query_pairs_mut()
            .clear()
            .append_pair("code", code)
            .append_pair("state", &state);
        let (page, session) = come_back(swapped.as_str(), Some(&fresh.binding)).await;
        assert_eq!(page.status, 403, "{code}: {}", page.html);
        assert!(session.is_none());
    }
    // An error answer instead of a code.
    let denied = start_sign_in(&link).await;
    let state = url::Url::parse(&denied.callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let error = format!("{base}?state={state}&error=access_denied");
    assert_eq!(come_back(&error, Some(&denied.binding)).await.0.status, 403);
    assert_eq!(issuer.grants(), 1);

    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty());
    close(client).await;
    setup.http.shutdown().await;
}

/// The `state` a callback URL carries.
fn state_of(callback: &str) -> String {
    url::Url::parse(callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_run_side_by_side_up_to_a_bound_and_token_answers_are_bounded() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "60").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;
    issuer.sign_in_as("alice", "openid");

    // Two browsers start; they come back in the other order and each is admitted.
    let first = start_sign_in(&link).await;
    let second = start_sign_in(&link).await;
    assert_ne!(first.binding, second.binding);
    assert_ne!(state_of(&first.callback), state_of(&second.callback));
    let (page, session) = come_back(&second.callback, Some(&second.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(session.is_some());
    let (page, session) = come_back(&first.callback, Some(&first.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (session, _) = session.expect("a session cookie");

    // A token answer of 64 KiB is read; one byte more is not.
    issuer.token_answer_size(64 * 1024);
    let (padded, admitted) = sign_in(&link).await;
    assert_eq!(padded.status, 200, "{}", padded.html);
    assert!(admitted.is_some());
    issuer.token_answer_size(64 * 1024 + 1);
    let (huge, admitted) = sign_in(&link).await;
    assert_eq!(huge.status, 502, "{}", huge.html);
    assert!(admitted.is_none());
    issuer.token_answer_size(0);
    assert_eq!(issuer.grants(), 4);

    // Sign-ins that never come back are bounded: past the limit the page answers busy.
    let browser = link_common::browser();
    for n in 0..=MAX_LOGINS {
        let status = browser
            .get(format!("{link}/login"))
            .send()
            .await
            .expect("login answers")
            .status()
            .as_u16();
        let want = if n < MAX_LOGINS { 303 } else { 503 };
        assert_eq!(status, want, "sign-in {n}");
    }
    // The sessions already given still decide.
    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(changes(&emu).len(), 1);
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_token_that_is_not_valid_here_admits_nobody_and_says_why() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "4").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;
    issuer.sign_in_as("alice", "openid");
    let now = oauth_issuer::now();
    for (patch, why) in [
        (json!({"exp": now - 3600}), "expired"),
        (json!({"nbf": now + 3600}), "not yet valid"),
        (json!({"iss": "https://other.example"}), "wrong issuer"),
        (
            json!({"aud": "https://other.example/mcp"}),
            "wrong audience",
        ),
        (json!({"exp": null}), "missing claim"),
        (json!({"sub": null}), "no subject"),
    ] {
        issuer.patch_token_claims(patch.clone());
        let (page, session) = sign_in(&link).await;
        assert_eq!(page.status, 403, "{patch}: {}", page.html);
        assert!(
            page.html.contains(&format!(
                "the sign-in&#39;s token is not valid here ({why})"
            )),
            "{patch}: {}",
            page.html
        );
        assert!(session.is_none());
    }
    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty());
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_an_https_address_with_a_path_the_cookies_are_secure_and_scoped() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let base = [("PVE_APPROVAL_BASE_URL", "https://mcp.example.test/pve/")];
    let setup = serve(&issuer, &emu, &base, "4").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let public = link(&setup, 1).await;
    let id = public.rsplit('/').next().unwrap().to_owned();
    assert_eq!(public, format!("https://mcp.example.test/pve/approve/{id}"));
    // The proxy strips `/pve`; the browser's request reaches the server at `/approve/{id}`.
    let local = format!("http://{}/approve/{id}", setup.http.local_addr());
    let login = browser()
        .get(format!("{local}/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let (_, binding) = set_cookie(login.headers(), "pve_approval_login").expect("binding");
    assert!(
        binding.contains("; Path=/pve/approve/callback;"),
        "{binding}"
    );
    assert!(binding.ends_with("; SameSite=Lax; Secure"), "{binding}");
    let authorize = login.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        authorize
            .contains("redirect_uri=https%3A%2F%2Fmcp.example.test%2Fpve%2Fapprove%2Fcallback"),
        "{authorize}"
    );
    // Over plain http on loopback the same cookie carries no `Secure`.
    let plain = serve(&issuer, &emu, &[], "4").await;
    let client_b = connect(&plain).await;
    let calling_b = stop(&client_b);
    let link_b = link(&plain, 1).await;
    let login = browser()
        .get(format!("{link_b}/login"))
        .send()
        .await
        .unwrap();
    let (_, binding) = set_cookie(login.headers(), "pve_approval_login").expect("binding");
    assert!(binding.contains("; Path=/approve/callback;"), "{binding}");
    assert!(!binding.contains("Secure"), "{binding}");
    for (calling, client, http) in [
        (calling, client, setup.http),
        (calling_b, client_b, plain.http),
    ] {
        assert_eq!(
            code(&calling.await.expect("call task")),
            "CONFIRMATION_TIMEOUT"
        );
        close(client).await;
        http.shutdown().await;
    }
    assert!(changes(&emu).is_empty());
}
