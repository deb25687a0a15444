//! A real MCP client (rmcp's client side) that can answer approval questions, driving the
//! built binary over stdio or the HTTP transport, against the emulator.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pve_emulator::{Emulator, RecordedRequest};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Map, Value, json};

/// What the person answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Accept with the box ticked.
    Accept,
    /// Accept with the box left unticked.
    AcceptUnticked,
    /// Decline.
    Decline,
    /// Dismiss.
    Cancel,
    /// Never answer (the server's timeout decides).
    Silence,
    /// Accept with the box ticked, and choose a lease of this many minutes.
    Lease(u32),
}

/// A client that declares form elicitation (or not) and answers with `answer`.
#[derive(Clone)]
pub struct Person {
    pub answer: Answer,
    pub can_ask: bool,
    pub version: ProtocolVersion,
    /// Every question received.
    pub asked: Arc<Mutex<Vec<String>>>,
    /// The form schema of every question received.
    pub forms: Arc<Mutex<Vec<Value>>>,
}

impl Person {
    pub fn new(answer: Answer) -> Person {
        Person {
            answer,
            can_ask: true,
            version: ProtocolVersion::V_2025_06_18,
            asked: Arc::default(),
            forms: Arc::default(),
        }
    }

    /// A client without the elicitation capability.
    pub fn unable() -> Person {
        Person {
            can_ask: false,
            ..Person::new(Answer::Decline)
        }
    }

    pub fn questions(&self) -> Vec<String> {
        self.asked.lock().expect("lock").clone()
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.can_ask {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("approval-test", "1.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = &request
        {
            self.asked.lock().expect("lock").push(message.clone());
            let schema = serde_json::to_value(requested_schema).unwrap_or_default();
            self.forms.lock().expect("lock").push(schema);
        }
        Ok(match self.answer {
            Answer::Accept => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            Answer::AcceptUnticked => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": false}))
            }
            Answer::Lease(minutes) => ElicitResult::new(ElicitationAction::Accept)
                .with_content(json!({"approve": true, "lease": minutes.to_string()})),
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            Answer::Silence => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                ElicitResult::new(ElicitationAction::Decline)
            }
        })
    }
}

/// Starts the built binary with `env` (a clean environment, empty cwd and HOME) and
/// connects `person` to it over stdio with `initialize`.
pub async fn connect_stdio(
    person: Person,
    env: &[(String, String)],
) -> (RunningService<RoleClient, Person>, tempfile::TempDir) {
    connect_stdio_with(person, env, ClientLifecycleMode::Initialize).await
}

/// Like [`connect_stdio`], as a stateless 2026-07-28 peer (`server/discover`, no session).
pub async fn connect_stateless(
    person: Person,
    env: &[(String, String)],
) -> (RunningService<RoleClient, Person>, tempfile::TempDir) {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    connect_stdio_with(person, env, lifecycle).await
}

/// `nandi-proxmox-mcp run` with a clean environment plus `env`, in an empty cwd and HOME (kept
/// alive by the returned folder), its log discarded: for a client's stdio transport.
pub fn run_command(env: &[(String, String)]) -> (tokio::process::Command, tempfile::TempDir) {
    let home = tempfile::tempdir().expect("temp home");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"));
    command
        .arg("run")
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(home.path())
        .stderr(std::process::Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    (command, home)
}

/// Starts the built binary and connects `person` with the given lifecycle.
pub async fn connect_stdio_with(
    person: Person,
    env: &[(String, String)],
    lifecycle: ClientLifecycleMode,
) -> (RunningService<RoleClient, Person>, tempfile::TempDir) {
    let (command, home) = run_command(env);
    let transport = TokioChildProcess::new(command).expect("spawn");
    let client = person
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("client connects");
    (client, home)
}

/// Arguments as a JSON object.
pub fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("object")
}

/// Calls `tool` and returns the result (MRTR rounds driven by the client).
pub async fn call(
    client: &RunningService<RoleClient, Person>,
    tool: &'static str,
    arguments: Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args(arguments)))
        .await
        .expect("call answered")
}

/// The envelope of a result.
pub fn envelope(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structured content")
}

/// The error code of a failed result.
pub fn code(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    envelope(result)["error"]["code"]
        .as_str()
        .expect("code")
        .to_owned()
}

/// Requests that could change something (anything but GET).
pub fn changes(emu: &Emulator) -> Vec<RecordedRequest> {
    emu.requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .collect()
}
