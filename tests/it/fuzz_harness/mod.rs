//! The whole server in-process for the fuzz and fault-matrix suites: the real `Server`
//! (registry, validation, gate, dispatch, REST client) served over a tokio duplex and spoken
//! to by rmcp's own client, against the emulator over real HTTPS.
//!
//! Invariant: nothing here short-cuts the call pipeline; a call made through [`InProcess`]
//! takes the same path as one from an MCP client over stdio, and every request Proxmox would
//! see is the one the emulator records.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::pve;
use nandi_proxmox_mcp::registry::{Capabilities, Registry};
use nandi_proxmox_mcp::server::{AppState, Server};
use pve_emulator::{Emulator, EmulatorOptions};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
use serde_json::Value;

/// Panics seen by the hook [`count_panics`] installs: on the thread that installed it and on
/// the threads of a [`runtime`], not elsewhere in the process (tests/it runs every module's
/// tests in one process, and their panics are not the fuzz's).
pub static PANICS: AtomicUsize = AtomicUsize::new(0);

/// The name of a [`runtime`]'s threads (workers and blocking pool).
pub const RUNTIME_THREAD: &str = "fuzz-runtime";

/// A two-worker runtime whose threads [`count_panics`] watches: the fuzz's servers run here.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(RUNTIME_THREAD)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Counts every panic on this thread and on a [`runtime`]'s (server tasks included) before
/// the default hook reports it.
pub fn count_panics() {
    let caller = std::thread::current().id();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let here = std::thread::current();
        if here.id() == caller || here.name() == Some(RUNTIME_THREAD) {
            PANICS.fetch_add(1, Ordering::SeqCst);
        }
        default_hook(info);
    }));
}

/// The emulator, and a server talking to it, driven by an MCP client over a duplex pipe.
pub struct InProcess {
    /// The Proxmox the server talks to.
    pub emulator: Emulator,
    /// The client side of the MCP session.
    pub client: RunningService<RoleClient, ()>,
    /// `tools/list` as the client saw it.
    pub tools: Vec<Tool>,
}

/// The REST connection settings for `emulator`, pinned to its certificate.
pub fn connection_for(emulator: &Emulator) -> pve::Connection {
    let options = EmulatorOptions::default();
    pve::Connection {
        host: emulator.host().to_owned(),
        port: emulator.port(),
        user: options.user,
        realm: options.realm,
        token_name: options.token_name,
        token_secret: options.token_secret,
        tls: emulator
            .cert_fingerprint()
            .map_or(pve::TlsMode::Insecure, pve::TlsMode::Fingerprint),
    }
}

/// Serves a fresh server with the policy `env` (e.g. `PVE_ACCESS_TIER=full`) against
/// `emulator`, and connects a client to it.
pub async fn serve(emulator: Emulator, env: &[(&str, &str)]) -> InProcess {
    let client = pve::Client::new(&connection_for(&emulator)).expect("REST client");
    let client = serve_with(Some(client), env).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    InProcess {
        emulator,
        client,
        tools,
    }
}

/// A server with the given REST client (or none) and policy, and a client connected to it.
pub async fn serve_with(
    pve: Option<pve::Client>,
    env: &[(&str, &str)],
) -> RunningService<RoleClient, ()> {
    let lookup = |key: &str| {
        env.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
    };
    let settings = Settings::from_lookup(lookup).expect("policy settings");
    let registry = Registry::build_for(
        &settings,
        Capabilities {
            ssh: false,
            pbs: false,
        },
    );
    isolate_schema_cache();
    let server = Server::new(AppState {
        registry,
        settings,
        pve,
        connection_note: "in-process test server".into(),
        ssh: None,
        ssh_note: "SSH is not configured in this test.".into(),
        audit: nandi_proxmox_mcp::audit::AuditLog::off(),
        pbs: Vec::new(),
    });
    let (server_io, client_io) = tokio::io::duplex(1 << 22);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("MCP handshake")
}

/// Starts the default emulator (HTTPS, 3 nodes, 100 ms tasks).
pub async fn emulator() -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_millis(100),
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator starts")
}

/// Policy exposing every tool, approvals by the `confirm` flag.
pub const EVERYTHING: &[(&str, &str)] = &[
    ("PVE_ACCESS_TIER", "full"),
    ("PVE_MODULE_MODE", "advanced"),
    ("PVE_HUMAN_APPROVAL", "confirm"),
];

/// One `tools/call` (no MRTR rounds), bounded by `limit`; `Err` carries why no result came.
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    arguments: Value,
    limit: Duration,
) -> Result<CallToolResult, String> {
    let Value::Object(arguments) = arguments else {
        return Err("arguments must be an object".into());
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    match tokio::time::timeout(limit, client.call_tool_once(params)).await {
        Err(_) => Err(format!("{name}: no answer within {limit:?}")),
        Ok(Err(e)) => Err(format!("{name}: {e}")),
        Ok(Ok(CallToolResponse::Complete(result))) => Ok(result),
        Ok(Ok(other)) => Err(format!("{name}: not a final result: {other:?}")),
    }
}

/// The `{ok, data|error, meta}` envelope of a result, checked equal to its text twin.
pub fn envelope(result: &CallToolResult) -> Value {
    let structured = result
        .structured_content
        .clone()
        .expect("structured content");
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .expect("text content");
    let parsed: Value = serde_json::from_str(&text).expect("text is JSON");
    assert_eq!(parsed, structured, "text and structuredContent differ");
    structured
}

/// Keeps this test process's API-schema cache files in its own directory under `target/tmp`,
/// so an in-process server never reads or writes the user's `~/.cache/nandi-proxmox-mcp`.
pub fn isolate_schema_cache() {
    nandi_proxmox_mcp::composite::api_call_cache::use_cache_dir(schema_cache_dir());
}

/// The directory [`isolate_schema_cache`] chooses (the same as tests/it's other harnesses').
pub fn schema_cache_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("schema-cache-{}", std::process::id()))
}

/// Removes the schema cache files of this process, so the next lookup that misses memory
/// fetches `apidata.js`: every module of tests/it shares the process and its cache directory,
/// and any in-process server's first lookup writes the emulator's schema there.
pub fn forget_cached_schemas() {
    for entry in std::fs::read_dir(schema_cache_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        let _ = std::fs::remove_file(entry.path());
    }
}
