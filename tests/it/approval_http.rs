//! Approval by a person over Streamable HTTP: the question travels on the session's SSE
//! stream to rmcp's HTTP client; accept runs the call, decline sends nothing.

use crate::approval_common;
use crate::common;
use crate::harness;

use std::collections::HashMap;
use std::time::Duration;

use approval_common::{Answer, Person, call, changes, code, envelope};
use harness::{TOKEN, pve_client};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

async fn serve(emu: &pve_emulator::Emulator) -> HttpServer {
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
    let vars: HashMap<&str, &str> = HashMap::from([("MCP_PORT", "0"), ("MCP_AUTH_TOKEN", TOKEN)]);
    let mut settings =
        HttpSettings::from_lookup(|k| vars.get(k).map(|v| (*v).to_owned())).expect("settings");
    settings.ready_cache = Duration::ZERO;
    http::start(server, settings).await.expect("starts")
}

async fn connect(http: &HttpServer, person: Person) -> RunningService<RoleClient, Person> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(TOKEN);
    person
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("connects over HTTP")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_is_asked_over_http_and_decides() {
    let emu = common::emulator().await;
    let http = serve(&emu).await;

    let person = Person::new(Answer::Decline);
    let client = connect(&http, person.clone()).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");
    assert_eq!(person.questions().len(), 1);
    // A remote caller is named in the question, so the person knows whose request it is.
    let question = person.questions()[0].clone();
    assert!(
        question.ends_with("Requested by: static token"),
        "{question}"
    );
    assert!(changes(&emu).is_empty());
    client.cancel().await.ok();

    let person = Person::new(Answer::Accept);
    let client = connect(&http, person.clone()).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person");
    assert_eq!(changes(&emu).len(), 1);
    client.cancel().await.ok();
}
