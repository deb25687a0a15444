//! An MCP client on rmcp's client side for the task, progress and wait tests: declares the
//! tasks extension (or not) and form elicitation (or not), records the progress
//! notifications it receives, and answers approval questions as told. Also builds
//! in-process servers over a duplex pipe, and a server process over stdio.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::pve;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use pve_emulator::{Emulator, EmulatorOptions};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, GetTaskParams, GetTaskResult, Implementation,
    ProgressNotificationParam, TaskPayload,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};

/// What the client declares and how it answers.
#[derive(Debug, Clone, Default)]
pub struct ClientSetup {
    /// Declare `io.modelcontextprotocol/tasks`.
    pub tasks: bool,
    /// Declare form elicitation and answer approval questions with this (true = approve).
    pub approve: Option<bool>,
}

/// The client handler.
#[derive(Debug, Clone, Default)]
pub struct TestClient {
    setup: ClientSetup,
    /// Progress notifications received, in order.
    pub progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    /// Approval questions received.
    pub questions: Arc<Mutex<Vec<String>>>,
}

impl TestClient {
    /// A client with `setup`.
    pub fn new(setup: ClientSetup) -> TestClient {
        TestClient {
            setup,
            ..TestClient::default()
        }
    }

    /// The progress notifications so far.
    pub fn progress(&self) -> Vec<ProgressNotificationParam> {
        self.progress.lock().unwrap().clone()
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = match self.setup.approve {
            Some(_) => ClientCapabilities::builder().enable_elicitation().build(),
            None => ClientCapabilities::builder().build(),
        };
        if self.setup.tasks {
            capabilities.extensions = ClientCapabilities::builder()
                .enable_tasks()
                .build()
                .extensions;
        }
        ClientConfig::new(capabilities, Implementation::new("tasks-test", "1.0"))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.questions.lock().unwrap().push(message.clone());
        }
        Ok(match self.setup.approve {
            Some(true) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }
}

/// A connected client.
pub type Client = RunningService<RoleClient, TestClient>;

/// Settings with every tool exposed plus `vars`.
pub fn settings(vars: &[(&str, &str)]) -> Settings {
    let mut map: HashMap<String, String> = HashMap::from([
        ("PVE_ACCESS_TIER".to_owned(), "full".to_owned()),
        ("PVE_MODULE_MODE".to_owned(), "advanced".to_owned()),
    ]);
    for (k, v) in vars {
        map.insert((*k).to_owned(), (*v).to_owned());
    }
    Settings::from_lookup(|k| map.get(k).cloned()).expect("settings")
}

/// A REST client for `emu`.
pub fn pve_client(emu: &Emulator) -> pve::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
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

/// An in-process server for `emu` with every tool exposed plus `vars`.
pub fn server(emu: &Emulator, vars: &[(&str, &str)]) -> Server {
    let settings = settings(vars);
    isolate_schema_cache();
    Server::new(AppState {
        registry: Registry::build(&settings),
        settings,
        pve: Some(pve_client(emu)),
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit: nandi_proxmox_mcp::audit::AuditLog::off(),
        pbs: Vec::new(),
    })
}

/// Connects a client with `setup` to `server` over an in-process duplex pipe.
pub async fn connect(server: Server, setup: ClientSetup) -> (Client, TestClient) {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let handler = TestClient::new(setup);
    let client = handler
        .clone()
        .serve(client_io)
        .await
        .expect("client connects");
    (client, handler)
}

/// Starts an emulator whose progress-printing tasks take a step every `pace`.
pub async fn emulator_with_pace(pace: Duration) -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_millis(100),
        progress_pace: pace,
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator starts")
}

/// `tools/call` params.
pub fn call(name: &'static str, args: Value) -> CallToolRequestParams {
    let arguments: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    CallToolRequestParams::new(name).with_arguments(arguments)
}

/// `params` declared as a call the client follows as an MCP task: the tasks extension in
/// the request's own `_meta`, as SEP-2663 asks (a session's `initialize` alone does not count).
pub fn as_task(mut params: CallToolRequestParams) -> CallToolRequestParams {
    let mut meta = params.meta.take().unwrap_or_default();
    meta.set_client_capabilities(ClientCapabilities::builder().enable_tasks().build());
    params.meta = Some(meta);
    params
}

/// `tools/call` params for `client`: declared as a task call when its setup follows tasks.
pub fn call_for(client: &Client, name: &'static str, args: Value) -> CallToolRequestParams {
    let params = call(name, args);
    if client.service().setup.tasks {
        as_task(params)
    } else {
        params
    }
}

/// Calls a tool and returns the raw response (complete, task, or input required).
pub async fn call_once(client: &Client, name: &'static str, args: Value) -> CallToolResponse {
    client
        .peer()
        .call_tool_once(call_for(client, name, args))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Calls a tool that answers a complete result and returns its envelope.
pub async fn envelope(client: &Client, name: &'static str, args: Value) -> (bool, Value) {
    match call_once(client, name, args).await {
        CallToolResponse::Complete(result) => (
            result.is_error.unwrap_or(false),
            result.structured_content.expect("structured content"),
        ),
        other => panic!("{name}: expected a complete result, got {other:?}"),
    }
}

/// Polls `tasks/get` until the task is terminal (at most `limit`).
pub async fn poll_to_end(client: &Client, task_id: &str, limit: Duration) -> GetTaskResult {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let got = client
            .peer()
            .get_task(GetTaskParams::new(task_id))
            .await
            .expect("tasks/get");
        if got.task.status().is_terminal() {
            return got;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {task_id} still working"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `result` object of a completed task.
pub fn completed_result(got: &GetTaskResult) -> Value {
    match &got.task.payload {
        TaskPayload::Completed { result } => Value::Object(result.clone()),
        other => panic!("expected completed, got {other:?}"),
    }
}

/// The Proxmox task's status as the emulator reports it.
pub async fn emulator_task_status(emu: &Emulator, upid: &str) -> Value {
    let node = upid.split(':').nth(1).expect("node");
    let path = format!(
        "/nodes/{node}/tasks/{}/status",
        pve::encode_path_segment(upid)
    );
    pve_client(emu)
        .call(
            pve::ApiRequest::get(path),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .result
        .expect("task status")
}

/// Percentages (progress of notifications that carry a total of 100).
pub fn percentages(progress: &[ProgressNotificationParam]) -> Vec<f64> {
    progress
        .iter()
        .filter(|p| p.total == Some(100.0))
        .map(|p| p.progress)
        .collect()
}

/// Keeps this test process's API-schema cache files in its own directory under `target/tmp`,
/// so an in-process server never reads or writes the user's `~/.cache/nandi-proxmox-mcp`.
pub fn isolate_schema_cache() {
    nandi_proxmox_mcp::composite::api_call_cache::use_cache_dir(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("schema-cache-{}", std::process::id())),
    );
}
