//! URL-mode approval with a client that answers the URL question late — after the person has
//! decided on the page and the server has sent `notifications/elicitation/complete`, as clients
//! that wait for the person to come back do. The call runs once, and the server logs no rmcp
//! `WARN Error sending response` (the late answer used to reach a dropped receiver).

use crate::approval_common;
use crate::common;
use crate::harness;
use crate::link_common;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use approval_common::{args, changes, envelope};
use harness::{TOKEN, pve_client};
use link_common::decide;
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpSettings};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CustomNotification,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::Notify;

/// Declares URL elicitation only; answers a URL question once `elicitation/complete` arrived.
#[derive(Clone, Default)]
struct LateClient {
    links: Arc<Mutex<Vec<String>>>,
    complete: Arc<Notify>,
}

impl ClientHandler for LateClient {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).expect("capabilities");
        ClientConfig::new(capabilities, Implementation::new("late-url-client", "1.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        if let ElicitRequestParams::UrlElicitationParams { url, .. } = request {
            self.links.lock().unwrap().push(url);
            let _ = tokio::time::timeout(Duration::from_secs(20), self.complete.notified()).await;
        }
        Ok(ElicitResult::new(ElicitationAction::Accept))
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/elicitation/complete" {
            self.complete.notify_one();
        }
    }
}

/// Every log line at WARN and above, from the server and rmcp on this test's threads.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The capture is this test's own: set as the default on its thread and on every thread of
/// its runtime, not process-wide, because the other modules of tests/it run in this process
/// and their servers' warnings are not this test's (and a second global default would panic).
#[test]
fn a_late_answer_to_the_url_question_logs_no_warning() {
    let captured = Captured::default();
    let writer = captured.clone();
    let dispatch = tracing::Dispatch::new(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    );
    let for_workers = dispatch.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        // Each worker keeps the capture as its default for as long as it runs.
        .on_thread_start(move || std::mem::forget(tracing::dispatcher::set_default(&for_workers)))
        .build()
        .expect("runtime");
    let _default = tracing::dispatcher::set_default(&dispatch);
    runtime.block_on(late_answer(&captured));
}

async fn late_answer(captured: &Captured) {
    let emu = common::emulator().await;
    let settings = Settings::from_lookup(|k| (k == "PVE_ACCESS_TIER").then(|| "full".to_owned()))
        .expect("policy");
    harness::isolate_schema_cache();
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
    let vars: HashMap<&str, &str> = HashMap::from([("MCP_PORT", "0"), ("MCP_AUTH_TOKEN", TOKEN)]);
    let settings =
        HttpSettings::from_lookup(|k| vars.get(k).map(|v| (*v).to_owned())).expect("settings");
    let http = http::start(server, settings).await.expect("starts");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(TOKEN);
    let person = LateClient::default();
    let client = Arc::new(
        person
            .clone()
            .serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("connects over HTTP"),
    );
    let calling = {
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
    };
    let mut link = None;
    for _ in 0..400 {
        link = person.links.lock().unwrap().first().cloned();
        if link.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let link = link.expect("a URL question arrived");
    let (status, html) = decide(&link, "approve").await;
    assert_eq!(status, 200, "{html}");
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person-link");
    assert_eq!(changes(&emu).len(), 1);
    // The client's late answer arrives after the call's end; give it time to be handled.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let logged = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    assert!(!logged.contains("Error sending response"), "{logged}");
    if let Ok(client) = Arc::try_unwrap(client) {
        client.cancel().await.ok();
    }
    http.shutdown().await;
}
