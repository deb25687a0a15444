//! URL-mode elicitation over the real Streamable HTTP transport: rmcp's client side declares
//! only URL elicitation, receives `elicitation/create` with `mode: "url"`, and a person decides
//! on the approval page over HTTP (no bearer token). The client's `accept` only means "opened";
//! the page decides, the client is told with `notifications/elicitation/complete`, and the
//! emulator's request log shows one request after Approve and none otherwise.

use crate::approval_common;
use crate::common;
use crate::harness;
use crate::link_common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use approval_common::{args, changes, code, envelope};
use harness::{TOKEN, pve_client};
use link_common::{decide, open, post_form};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use pve_emulator::Emulator;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, CustomNotification,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::{Value, json};

/// A client that declares URL elicitation only, answers every URL question with `action`
/// and records the questions and the notifications it gets.
#[derive(Clone)]
struct UrlClient {
    action: ElicitationAction,
    /// Declare form elicitation too (form questions are counted and declined).
    both: bool,
    /// How many form questions arrived.
    forms: Arc<Mutex<usize>>,
    /// `(url, elicitationId)` of every URL question.
    asked: Arc<Mutex<Vec<(String, String)>>>,
    /// `(method, params)` of every custom notification.
    told: Arc<Mutex<Vec<(String, Value)>>>,
}

impl UrlClient {
    fn new(action: ElicitationAction) -> UrlClient {
        UrlClient {
            action,
            both: false,
            forms: Arc::default(),
            asked: Arc::default(),
            told: Arc::default(),
        }
    }

    /// A client that declares both form and URL elicitation.
    fn both(action: ElicitationAction) -> UrlClient {
        UrlClient {
            both: true,
            ..UrlClient::new(action)
        }
    }

    /// The `n`th URL question (1-based), waiting up to 20 s.
    async fn nth_link(&self, n: usize) -> (String, String) {
        for _ in 0..400 {
            if let Some(asked) = self.asked.lock().unwrap().get(n - 1) {
                return asked.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no URL question arrived");
    }

    /// Waits up to 10 s for a notification with `method`.
    async fn told(&self, method: &str) -> Option<Value> {
        for _ in 0..200 {
            if let Some((_, params)) = self.told.lock().unwrap().iter().find(|(m, _)| m == method) {
                return Some(params.clone());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

impl ClientHandler for UrlClient {
    fn get_info(&self) -> ClientConfig {
        let elicitation = if self.both {
            json!({"form": {}, "url": {}})
        } else {
            json!({"url": {}})
        };
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({ "elicitation": elicitation })).expect("capabilities");
        ClientConfig::new(
            capabilities,
            Implementation::new("url-approval-test", "1.0"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        match request {
            ElicitRequestParams::UrlElicitationParams {
                url,
                elicitation_id,
                ..
            } => {
                self.asked.lock().unwrap().push((url, elicitation_id));
                Ok(ElicitResult::new(self.action.clone()))
            }
            // Counted (a client declaring both may get one) and declined.
            _ => {
                *self.forms.lock().unwrap() += 1;
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.told.lock().unwrap().push((
            notification.method.clone(),
            notification.params.clone().unwrap_or(Value::Null),
        ));
    }
}

async fn serve(emu: &Emulator, timeout: &str) -> HttpServer {
    serve_via(emu, timeout, "form").await
}

/// [`serve`] with `PVE_APPROVAL_VIA` (`form` or `url`: the question for clients declaring both).
async fn serve_via(emu: &Emulator, timeout: &str, via: &str) -> HttpServer {
    let vars = [
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_APPROVAL_TIMEOUT_SECS", timeout),
        ("PVE_APPROVAL_VIA", via),
    ];
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
    let vars: HashMap<&str, &str> = HashMap::from([("MCP_PORT", "0"), ("MCP_AUTH_TOKEN", TOKEN)]);
    let mut settings =
        HttpSettings::from_lookup(|k| vars.get(k).map(|v| (*v).to_owned())).expect("settings");
    settings.ready_cache = Duration::ZERO;
    http::start(server, settings).await.expect("starts")
}

type Client = Arc<RunningService<RoleClient, UrlClient>>;

async fn connect(http: &HttpServer, person: UrlClient) -> Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(TOKEN);
    Arc::new(
        person
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("connects over HTTP"),
    )
}

/// Starts a call of `pve_stop_qemu_vm` on `vmid` in the background.
fn stop(client: &Client, vmid: u64) -> tokio::task::JoinHandle<CallToolResult> {
    let client = client.clone();
    tokio::spawn(async move {
        client
            .call_tool(
                CallToolRequestParams::new("pve_stop_qemu_vm")
                    .with_arguments(args(json!({"node": "pve01", "vmid": vmid}))),
            )
            .await
            .expect("call answered")
    })
}

async fn close(client: Client) {
    if let Ok(client) = Arc::try_unwrap(client) {
        client.cancel().await.ok();
    }
}

/// A dry run tells the path a real call would take: for a client that declared only URL
/// elicitation, on a server whose approval page it can reach, the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_tells_a_url_client_it_would_be_asked_on_the_page() {
    let emu = common::emulator().await;
    let http = serve(&emu, "60").await;
    let person = UrlClient::new(ElicitationAction::Accept);
    let client = connect(&http, person.clone()).await;
    let result = client
        .call_tool(
            CallToolRequestParams::new("pve_stop_qemu_vm")
                .with_arguments(args(json!({"node": "pve01", "vmid": 101, "dry_run": true}))),
        )
        .await
        .expect("answered");
    let decision = &envelope(&result)["data"]["decision"];
    assert_eq!(decision["needsApproval"], true, "{decision}");
    assert_eq!(
        decision["approval"], "person (approval page, URL elicitation)",
        "{decision}"
    );
    assert!(
        person.asked.lock().unwrap().is_empty(),
        "a dry run asks nobody"
    );
    assert!(changes(&emu).is_empty());
    close(client).await;
    http.shutdown().await;
    emu.shutdown().await;
}

/// Without a page a person can reach (stdio, no `PVE_APPROVAL_LISTEN`, no webhook), a client
/// that declared only URL elicitation is still one that asks on the page: never downgraded to
/// the model's `confirm`. A dry run says it would be refused, and its gated call — `confirm:
/// true` and all — is refused naming the settings that fix it, with no link sent and no request
/// made. `PVE_HUMAN_APPROVAL=confirm`, the operator's explicit choice, still lets it through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_reachable_page_a_url_client_is_refused_not_confirmed() {
    let emu = common::emulator().await;
    let connect_stdio = |mode: &'static str| {
        let env = common::with_policy(
            common::env_for(&emu),
            &[("PVE_ACCESS_TIER", "full"), ("PVE_HUMAN_APPROVAL", mode)],
        );
        let (command, home) = approval_common::run_command(&env);
        let person = UrlClient::new(ElicitationAction::Accept);
        async move {
            let client = person
                .clone()
                .serve(rmcp::transport::TokioChildProcess::new(command).expect("spawn"))
                .await
                .expect("connects over stdio");
            (client, person, home)
        }
    };
    let call = |extra: Value| {
        let mut arguments = json!({"node": "pve01", "vmid": 101});
        arguments
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        CallToolRequestParams::new("pve_stop_qemu_vm").with_arguments(args(arguments))
    };
    let (client, person, _home) = connect_stdio("auto").await;
    let dry = client
        .call_tool(call(json!({"dry_run": true})))
        .await
        .expect("answered");
    let path = envelope(&dry)["data"]["decision"]["approval"].clone();
    let path = path.as_str().unwrap_or_default();
    assert!(
        path.starts_with("refused (this client asks a person only on the approval page"),
        "{path}"
    );
    for setting in ["PVE_APPROVAL_LISTEN", "PVE_HUMAN_APPROVAL=confirm"] {
        assert!(path.contains(setting), "{setting}: {path}");
    }
    emu.clear_requests();
    let refused = client
        .call_tool(call(json!({"confirm": true})))
        .await
        .expect("answered");
    assert_eq!(code(&refused), "APPROVAL_UNAVAILABLE");
    let error = &envelope(&refused)["error"];
    let hint = error["hint"].as_str().unwrap_or_default();
    for setting in ["PVE_APPROVAL_LISTEN", "PVE_HUMAN_APPROVAL=confirm"] {
        assert!(hint.contains(setting), "hint lacks {setting}: {error}");
    }
    assert!(
        person.asked.lock().unwrap().is_empty(),
        "no link without a reachable page"
    );
    // Not even the reads that would word a question nobody can be asked.
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    client.cancel().await.ok();

    // The operator's explicit choice: the model confirms, nobody is asked.
    let (client, person, _home) = connect_stdio("confirm").await;
    let ran = client
        .call_tool(call(json!({"confirm": true})))
        .await
        .expect("answered");
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    assert_eq!(envelope(&ran)["meta"]["approval"], "confirm-flag");
    assert!(person.asked.lock().unwrap().is_empty());
    assert_eq!(changes(&emu).len(), 1, "{:?}", emu.requests());
    client.cancel().await.ok();
    emu.shutdown().await;
}

/// A client that declares both modes gets the form question by default and the page with
/// `PVE_APPROVAL_VIA=url`; a dry run says which, and a real call asks that way only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_via_chooses_the_question_for_a_client_that_declares_both() {
    let emu = common::emulator().await;
    for (via, expected) in [
        ("form", "person (elicitation)"),
        ("url", "person (approval page, URL elicitation)"),
    ] {
        let http = serve_via(&emu, "60", via).await;
        let person = UrlClient::both(ElicitationAction::Decline);
        let client = connect(&http, person.clone()).await;
        let dry = client
            .call_tool(
                CallToolRequestParams::new("pve_stop_qemu_vm")
                    .with_arguments(args(json!({"node": "pve01", "vmid": 101, "dry_run": true}))),
            )
            .await
            .expect("answered");
        assert_eq!(
            envelope(&dry)["data"]["decision"]["approval"],
            expected,
            "{via}"
        );
        // A real call, declined in the client either way: which question came?
        let result = stop(&client, 101).await.expect("call task");
        assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{via}");
        let (forms, links) = (
            *person.forms.lock().unwrap(),
            person.asked.lock().unwrap().len(),
        );
        assert_eq!(
            (forms, links),
            if via == "url" { (0, 1) } else { (1, 0) },
            "{via}"
        );
        assert!(changes(&emu).is_empty());
        close(client).await;
        http.shutdown().await;
    }
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_question_is_decided_on_the_page_and_the_client_is_told() {
    let emu = common::emulator().await;
    let http = serve(&emu, "60").await;
    let person = UrlClient::new(ElicitationAction::Accept);
    let client = connect(&http, person.clone()).await;
    let calling = stop(&client, 101);
    let (link, elicitation_id) = person.nth_link(1).await;
    assert!(
        link.starts_with(&format!("http://{}/approve/", http.local_addr())),
        "{link}"
    );
    // The client's accept only said "opened": nothing runs until the page decides.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(changes(&emu).is_empty());
    assert!(!calling.is_finished());

    // No bearer token needed; the page is hardened.
    let page = open(&link).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("VM 101"), "{}", page.html);
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let (token, call) = (page.hidden("token"), page.hidden("call"));
    assert_eq!(token.len(), 64);
    // No token, a wrong token, a cross-site POST, a foreign Origin: nothing decided.
    let wrong = "0".repeat(64);
    let refusals = [
        (
            vec![("call", call.as_str()), ("decision", "approve")],
            vec![],
        ),
        (
            vec![
                ("token", wrong.as_str()),
                ("call", &call),
                ("decision", "approve"),
            ],
            vec![],
        ),
        (
            vec![("token", &token), ("call", &call), ("decision", "approve")],
            vec![("sec-fetch-site", "cross-site")],
        ),
        (
            vec![("token", &token), ("call", &call), ("decision", "approve")],
            vec![("origin", "https://evil.example")],
        ),
    ];
    for (fields, headers) in &refusals {
        let (status, _) = post_form(&link, fields, headers).await;
        assert_eq!(status, 403, "{fields:?} {headers:?}");
    }
    assert!(changes(&emu).is_empty());

    let (status, html) = decide(&link, "approve").await;
    assert_eq!(status, 200, "{html}");
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person-link");
    assert_eq!(changes(&emu).len(), 1);
    let complete = person
        .told("notifications/elicitation/complete")
        .await
        .expect("elicitation/complete arrives");
    assert_eq!(complete["elicitationId"], elicitation_id.as_str());

    // Replaying the used link: 410, nothing more sent.
    let (status, _) = post_form(
        &link,
        &[("token", &token), ("call", &call), ("decision", "approve")],
        &[],
    )
    .await;
    assert_eq!(status, 410);
    assert_eq!(changes(&emu).len(), 1);
    close(client).await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_on_the_page_or_in_the_client_sends_nothing() {
    let emu = common::emulator().await;
    let http = serve(&emu, "60").await;

    let person = UrlClient::new(ElicitationAction::Accept);
    let client = connect(&http, person.clone()).await;
    let calling = stop(&client, 101);
    let (link, _) = person.nth_link(1).await;
    let (status, _) = decide(&link, "decline").await;
    assert_eq!(status, 200);
    assert_eq!(
        code(&calling.await.expect("call task")),
        "CONFIRMATION_DECLINED"
    );
    close(client).await;

    // The client declines showing the page: the call ends, the link is dead.
    let person = UrlClient::new(ElicitationAction::Decline);
    let client = connect(&http, person.clone()).await;
    let calling = stop(&client, 101);
    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");
    let (link, _) = person.nth_link(1).await;
    assert_eq!(open(&link).await.status, 410);
    assert!(changes(&emu).is_empty());
    close(client).await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_link_decides_nothing() {
    let emu = common::emulator().await;
    let http = serve(&emu, "1").await;
    let person = UrlClient::new(ElicitationAction::Accept);
    let client = connect(&http, person.clone()).await;
    let calling = stop(&client, 101);
    let (link, _) = person.nth_link(1).await;
    let page = open(&link).await;
    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    let (status, _) = post_form(
        &link,
        &[
            ("token", &page.hidden("token")),
            ("call", &page.hidden("call")),
            ("decision", "approve"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 410);
    assert!(changes(&emu).is_empty());
    close(client).await;
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_for_one_call_never_approves_another() {
    let emu = common::emulator().await;
    let http = serve(&emu, "60").await;
    let person = UrlClient::new(ElicitationAction::Accept);
    let client = connect(&http, person.clone()).await;
    let call_a = stop(&client, 101);
    let (link_a, _) = person.nth_link(1).await;
    let call_b = stop(&client, 102);
    let (link_b, _) = person.nth_link(2).await;
    assert_ne!(link_a, link_b);
    let page_a = open(&link_a).await;
    let page_b = open(&link_b).await;
    // A's token on B's link, or B's token with A's call digest: nothing decided.
    for fields in [
        [
            ("token", page_a.hidden("token")),
            ("call", page_b.hidden("call")),
        ],
        [
            ("token", page_b.hidden("token")),
            ("call", page_a.hidden("call")),
        ],
    ] {
        let (status, _) = post_form(
            &link_b,
            &[
                ("token", &fields[0].1),
                ("call", &fields[1].1),
                ("decision", "approve"),
            ],
            &[],
        )
        .await;
        assert!(status == 403 || status == 404, "{status}");
    }
    // Approving A runs A only; B still waits, then is declined.
    let (status, _) = decide(&link_a, "approve").await;
    assert_eq!(status, 200);
    let result_a = call_a.await.expect("call A");
    assert_ne!(result_a.is_error, Some(true), "{result_a:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!call_b.is_finished());
    let (status, _) = decide(&link_b, "decline").await;
    assert_eq!(status, 200);
    assert_eq!(
        code(&call_b.await.expect("call B")),
        "CONFIRMATION_DECLINED"
    );
    let sent = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].path, "/nodes/pve01/qemu/101/status/stop");
    close(client).await;
    http.shutdown().await;
}

/// Off loopback, a webhook's link would point at an address a person's browser may not reach:
/// the HTTP transport refuses to start until PVE_APPROVAL_BASE_URL names the public one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_off_loopback_needs_the_public_base_url() {
    let emu = common::emulator().await;
    let start = |base: Option<&'static str>| {
        let mut vars = vec![
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_APPROVAL_NOTIFY", "http://127.0.0.1:9/hook"),
        ];
        vars.extend(base.map(|b| ("PVE_APPROVAL_BASE_URL", b)));
        let settings = Settings::from_lookup(|k| {
            vars.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        })
        .expect("policy");
        let server = Server::new(AppState {
            registry: Registry::build(&settings),
            settings,
            pve: Some(pve_client(&emu)),
            connection_note: "test".into(),
            ssh: None,
            ssh_note: String::new(),
            audit: nandi_proxmox_mcp::audit::AuditLog::off(),
            pbs: Vec::new(),
        });
        let token = "k9Qm2Xv7Lp4Rt8Wz1Nc6Bh3Yd5Fs0Ja9Ge2Ku7Mx4";
        let vars: HashMap<&str, &str> = HashMap::from([
            ("MCP_PORT", "0"),
            ("MCP_HOST", "0.0.0.0"),
            ("MCP_AUTH_TOKEN", token),
        ]);
        let settings =
            HttpSettings::from_lookup(|k| vars.get(k).map(|v| (*v).to_owned())).expect("settings");
        http::start(server, settings)
    };
    let refused = start(None).await.expect_err("refused without a base URL");
    assert!(
        refused.to_string().contains("PVE_APPROVAL_BASE_URL"),
        "{refused}"
    );
    let running = start(Some("https://mcp.example.test/"))
        .await
        .expect("starts with a base URL");
    running.shutdown().await;
}
