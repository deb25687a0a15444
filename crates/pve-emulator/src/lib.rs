//! An in-process emulator of the Proxmox VE REST API (`/api2/json`).
//!
//! Tests and `run --demo` start it on 127.0.0.1 (random port) and point the
//! real REST client at it over HTTPS (fresh self-signed certificate) or plain
//! HTTP. It answers like pveproxy closely enough that a wrong request fails:
//! exact token auth (one token per emulated user, with ACL denials a test chooses), the
//! `{"data": ...}` envelope, Proxmox's error shapes,
//! strict parameter schemas, 501 for unimplemented routes, percent-decoded
//! paths, and tasks that run for a while before they finish.
//!
//! Invariant: the server lives exactly as long as the [`Emulator`] value —
//! dropping it (or [`Emulator::shutdown`]) stops the listener and every open
//! connection. Nothing is ever printed: stdout belongs to the MCP channel of
//! the embedding process, so diagnostics go through `tracing` only.

mod acl;
mod api;
mod apidata;
mod auth;
mod dispatch;
mod faults;
mod guest_params;
mod handlers;
mod pbs;
mod route;
mod routes;
mod routes_guests;
mod routes_infra;
mod routes_peer;
mod routes_security;
mod seed;
mod seed_security;
mod server;
mod stamps;
mod state;
mod state_infra;
mod state_peer;
mod state_security;
mod task;
mod tls;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use tokio::task::JoinHandle;

pub use faults::{Fault, FaultKind};
pub use pbs::{PbsEmulator, PbsOptions, PbsSnapshotSeed, PbsSnapshotView};
pub use tls::fingerprint_of;

use faults::FaultSet;
use state::EmuState;
use tls::TlsMaterial;

/// Default time between two progress lines of an emulated task (milliseconds).
pub const DEFAULT_PROGRESS_PACE_MS: u64 = 400;

/// How to start an emulator.
#[derive(Debug, Clone)]
pub struct EmulatorOptions {
    /// Serve HTTPS with a fresh self-signed certificate (default) instead of
    /// plain HTTP.
    pub tls: bool,
    /// User part of the accepted API token (default `svc_mcp`).
    pub user: String,
    /// Realm of that user (default `pve`).
    pub realm: String,
    /// Token name (default `emu`).
    pub token_name: String,
    /// Token secret (default `emulator-secret-token`).
    pub token_secret: String,
    /// How long a task stays "running" before it stops with "OK"
    /// (default 250 ms).
    pub task_duration: Duration,
    /// Time between two progress lines of the tasks that print progress (clone, disk move,
    /// backup, migration, restore: four steps, so a clone runs about 1.6 s by default).
    pub progress_pace: Duration,
    /// Three nodes plus the "emu-cluster" record (default) instead of a
    /// standalone `pve01`.
    pub cluster: bool,
    /// Replace the token user's seeded grants by one role on `/` holding
    /// exactly these privileges (unknown names ignored), so a test can see
    /// what a token lacking some privilege experiences; `None` (default)
    /// keeps the seeded grants.
    pub privileges: Option<Vec<String>>,
    /// `(node, address)` pairs replacing a node's `ip` in `/cluster/status`
    /// (default none: `127.0.0.1`, `127.0.0.2`, … in node order). Lets SSH
    /// routing tests point a node at a test `sshd` or at a hostile value.
    pub node_addresses: Vec<(String, String)>,
}

impl Default for EmulatorOptions {
    fn default() -> Self {
        Self {
            tls: true,
            user: "svc_mcp".into(),
            realm: "pve".into(),
            token_name: "emu".into(),
            token_secret: "emulator-secret-token".into(),
            task_duration: Duration::from_millis(250),
            progress_pace: Duration::from_millis(DEFAULT_PROGRESS_PACE_MS),
            cluster: true,
            privileges: None,
            node_addresses: Vec::new(),
        }
    }
}

/// Why an emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// The loopback listener could not be created.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(#[from] std::io::Error),
    /// The self-signed certificate could not be generated.
    #[error("cannot generate the emulator certificate: {0}")]
    Certificate(String),
    /// The TLS server configuration was refused by rustls.
    #[error("cannot configure TLS: {0}")]
    Tls(String),
}

/// One API request as the emulator received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// HTTP method (`GET`, `POST`, ...).
    pub method: String,
    /// Percent-decoded path after `/api2/json` (e.g. `/nodes/pve01/status`).
    pub path: String,
    /// The same path exactly as sent, still percent-encoded (e.g. `/nodes/a%2Fb/status`), so a
    /// test can check how each segment was encoded.
    pub raw_path: String,
    /// Decoded query-string pairs, in order.
    pub query: Vec<(String, String)>,
    /// Decoded body parameters (form-urlencoded, or a JSON object's scalar
    /// members), in order.
    pub form: Vec<(String, String)>,
    /// Whether the request carried an API token the emulator accepts, with its exact
    /// secret (also recorded for requests a fault answered).
    pub authorized: bool,
    /// The id (`user@realm!name`) of the token that authenticated the request; `None`
    /// when none did.
    pub token_id: Option<String>,
}

/// How many requests the emulator remembers; beyond it the older half is dropped, so
/// `run --demo` serving for days keeps a flat memory profile. Tests see far fewer.
pub(crate) const MAX_RECORDED_REQUESTS: usize = 4096;

/// State shared between the [`Emulator`] handle and the request handlers.
struct Shared {
    /// The accepted API tokens and their denials.
    tokens: Mutex<auth::Tokens>,
    state: Mutex<EmuState>,
    faults: Mutex<FaultSet>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// What `/pve-docs/api-viewer/apidata.js` answers.
    api_docs: Mutex<apidata::ApiDocs>,
    /// How many times apidata.js was fetched.
    api_docs_fetches: std::sync::atomic::AtomicUsize,
}

/// Locks a mutex, recovering from poisoning: a panicking handler must not
/// turn every later request into a second panic, and the data it guards
/// stays structurally valid between statements.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Replaces `userid`'s ACL entries by one propagating role on `/` holding
/// exactly `privileges` (names no built-in role knows are dropped).
fn restrict_privileges(state: &mut EmuState, userid: &str, privileges: &[String]) {
    use state_security::{Acl, Role, UgKind};
    let sec = &mut state.security;
    let known: Vec<&'static str> = sec.roles.iter().flat_map(|r| r.privs.clone()).collect();
    let privs: Vec<&'static str> = privileges
        .iter()
        .filter_map(|p| known.iter().copied().find(|k| k == p))
        .collect();
    sec.roles.push(Role {
        roleid: "EmuRestricted".into(),
        privs,
        special: false,
    });
    sec.acls
        .retain(|a| !(a.kind == UgKind::User && a.ugid == userid));
    sec.acls.push(Acl {
        path: "/".into(),
        kind: UgKind::User,
        ugid: userid.into(),
        roleid: "EmuRestricted".into(),
        propagate: true,
    });
}

/// A running emulator. Dropping it stops the server.
pub struct Emulator {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tls: Option<TlsMaterial>,
    handle: axum_server::Handle<SocketAddr>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl Emulator {
    /// Starts an emulator on 127.0.0.1 with a random port. Must be called
    /// inside a Tokio runtime; the server runs as a task of that runtime.
    pub async fn start(opts: EmulatorOptions) -> Result<Emulator, EmulatorError> {
        // The certificate is generated even for plain HTTP so the nodes'
        // `ssl_fingerprint` fields look like a real installation's.
        let material = TlsMaterial::generate()?;
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let tokens = auth::Tokens::new(
            format!("{}@{}!{}", opts.user, opts.realm, opts.token_name),
            &opts.token_secret,
        );
        let mut state = seed::seed(
            opts.cluster,
            material.fingerprint.clone(),
            opts.task_duration,
            format!("{}@{}", opts.user, opts.realm),
            opts.token_name.clone(),
        );
        state.progress_pace = opts.progress_pace;
        if let Some(privileges) = &opts.privileges {
            restrict_privileges(
                &mut state,
                &format!("{}@{}", opts.user, opts.realm),
                privileges,
            );
        }
        for (name, address) in &opts.node_addresses {
            if let Some(node) = state.nodes.iter_mut().find(|n| &n.name == name) {
                node.ip.clone_from(address);
            }
        }
        let shared = Arc::new(Shared {
            tokens: Mutex::new(tokens),
            state: Mutex::new(state),
            faults: Mutex::new(FaultSet::default()),
            requests: Mutex::new(Vec::new()),
            api_docs: Mutex::new(apidata::ApiDocs::default()),
            api_docs_fetches: std::sync::atomic::AtomicUsize::new(0),
        });
        let app = axum::Router::new()
            .fallback(server::entry)
            .with_state(Arc::clone(&shared))
            .into_make_service();
        let handle = axum_server::Handle::new();
        let server = if opts.tls {
            let config = RustlsConfig::from_config(material.server_config()?);
            let server = axum_server::from_tcp_rustls(listener, config)?
                .handle(handle.clone())
                .http1_only();
            tokio::spawn(server.serve(app))
        } else {
            let server = axum_server::from_tcp(listener)?
                .handle(handle.clone())
                .http1_only();
            tokio::spawn(server.serve(app))
        };
        tracing::info!(%addr, tls = opts.tls, cluster = opts.cluster, "Proxmox emulator started");
        Ok(Emulator {
            shared,
            addr,
            tls: opts.tls.then_some(material),
            handle,
            server: Some(server),
        })
    }

    /// The host the emulator listens on (`127.0.0.1`).
    pub fn host(&self) -> &str {
        "127.0.0.1"
    }

    /// The port the emulator listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `https://127.0.0.1:PORT` (or `http://` without TLS).
    pub fn base_url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}:{}", self.host(), self.port())
    }

    /// SHA-256 fingerprint of the served certificate, `AB:CD:...` uppercase
    /// (as Proxmox shows it); `None` without TLS.
    pub fn cert_fingerprint(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.fingerprint.clone())
    }

    /// The served certificate in PEM, usable as a CA file; `None` without TLS.
    pub fn cert_pem(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.cert_pem.clone())
    }

    /// The `Authorization` header value the emulator accepts
    /// (`PVEAPIToken=svc_mcp@pve!emu=emulator-secret-token` by default).
    pub fn token_header(&self) -> String {
        lock(&self.shared.tokens).default_header().to_owned()
    }

    /// Accepts another API token besides the configured one: requests with
    /// `Authorization: PVEAPIToken=<token_id>=<secret>` are served as that token
    /// (`token_id` is `user@realm!name`). The user and token also appear in the access
    /// lists (an unknown user with the configured token user's grants); tasks the token
    /// starts carry `token_id` as their UPID's user.
    pub fn add_token(&self, token_id: &str, secret: &str) {
        tracing::debug!(token_id, "emulator token added");
        let mut tokens = lock(&self.shared.tokens);
        tokens.add(token_id, secret);
        let template = tokens
            .default_id()
            .split_once('!')
            .map_or("", |(user, _)| user)
            .to_owned();
        drop(tokens);
        auth::register(&mut lock(&self.shared.state).security, token_id, &template);
    }

    /// From now on, answers every request of `token_id` whose ACL path is `acl_path` or below
    /// it (e.g. `/vms/101` covers `/nodes/pve01/qemu/101/status/start` and its config) with
    /// 403 and PVE's message `Permission check failed (<acl path>, <privilege>)`, and changes
    /// nothing. The privilege is the one the served schema's permission check names, else
    /// a sensible one by method and path; other tokens are unaffected.
    pub fn deny(&self, token_id: &str, acl_path: &str) {
        tracing::debug!(token_id, acl_path, "emulator ACL denial armed");
        lock(&self.shared.tokens).deny(token_id, acl_path);
    }

    /// Arms a fault after those already armed.
    pub fn arm_fault(&self, fault: Fault) {
        tracing::debug!(?fault, "emulator fault armed");
        lock(&self.shared.faults).arm(fault);
    }

    /// Makes the next tasks of worker type `kind` (e.g. `qmclone`) end with `exitstatus`
    /// instead of `OK`, the way a real worker reports an error.
    pub fn fail_tasks(&self, kind: &str, exitstatus: &str) {
        lock(&self.shared.state)
            .task_failures
            .push((kind.to_owned(), exitstatus.to_owned()));
    }

    /// Sets one configuration key of guest `vmid` as a person would in the web UI (say
    /// `protection` = 1, or `tags`); `false` when there is no such guest.
    pub fn set_guest_option(&self, vmid: u32, key: &str, value: serde_json::Value) -> bool {
        let mut st = lock(&self.shared.state);
        let Some(guest) = st.guests.iter_mut().find(|g| g.vmid == vmid) else {
            return false;
        };
        guest.config.insert(key.to_owned(), value);
        true
    }

    /// Adds a storage that holds backups, as `pvesm add` would: `kind` is its plugin (`pbs`
    /// for a Proxmox Backup Server datastore), `shared` whether every node sees the same one.
    pub fn add_backup_storage(&self, id: &str, kind: &str, shared: bool) {
        let mut extra = serde_json::Map::new();
        if shared {
            extra.insert("shared".into(), 1.into());
        }
        lock(&self.shared.state).storages.push(state::Storage {
            id: id.to_owned(),
            kind: kind.to_owned(),
            content: "backup".into(),
            extra,
            total: 1 << 40,
            used: 1 << 36,
        });
    }

    /// Adds a backup archive of guest `vmid` to `storage`, made at `ctime` (Unix seconds),
    /// verified `ok` / `failed` or never (`None`); returns its volid.
    pub fn add_backup(
        &self,
        storage: &str,
        vmid: u32,
        ctime: u64,
        verified: Option<&str>,
    ) -> String {
        let kind = if (200..300).contains(&vmid) {
            "ct"
        } else {
            "vm"
        };
        let volid = format!("{storage}:backup/{kind}/{vmid}/{ctime}");
        lock(&self.shared.state)
            .infra
            .volumes
            .push(state_infra::Volume {
                storage: storage.to_owned(),
                volid: volid.clone(),
                content: "backup".into(),
                format: "pbs-vm".into(),
                size: 1 << 30,
                vmid: Some(vmid),
                ctime,
                notes: None,
                verification: verified.map(str::to_owned),
                protected: false,
            });
        volid
    }

    /// Puts guest `vmid` under HA with `state` (`started`, …), as `ha-manager add` would.
    pub fn manage_by_ha(&self, vmid: u32, state: &str) {
        lock(&self.shared.state)
            .ha_managed
            .push((vmid, state.to_owned()));
    }

    /// Disarms every fault.
    pub fn clear_faults(&self) {
        lock(&self.shared.faults).clear();
    }

    /// API requests received so far, in arrival order, including those refused by auth or
    /// answered by a fault — the newest ones only, at most `MAX_RECORDED_REQUESTS`.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Serves `array_json` (the JSON text of an `apidata.js` schema array, e.g. the official
    /// PVE schema) at `/pve-docs/api-viewer/apidata.js` instead of the schema generated
    /// from the emulator's own routes.
    pub fn serve_api_schema(&self, array_json: String) {
        *lock(&self.shared.api_docs) =
            apidata::ApiDocs::Custom(Arc::new(apidata::CustomSchema::new(array_json)));
    }

    /// Answers `/pve-docs/api-viewer/apidata.js` with 404 from now on.
    pub fn hide_api_schema(&self) {
        *lock(&self.shared.api_docs) = apidata::ApiDocs::Missing;
    }

    /// The schema array generated from the emulator's routes (served by default).
    pub fn generated_api_schema() -> &'static str {
        apidata::generated_array()
    }

    /// How many times `/pve-docs/api-viewer/apidata.js` was requested.
    pub fn api_schema_fetches(&self) -> usize {
        self.shared
            .api_docs_fetches
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Stops the server, closing every connection (including hung ones),
    /// and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        self.handle.shutdown();
        if let Some(server) = self.server.take() {
            match server.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "emulator server ended with an error"),
                Err(e) => tracing::warn!(error = %e, "emulator server task failed"),
            }
        }
        tracing::info!(addr = %self.addr, "Proxmox emulator stopped");
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // Idempotent: after `shutdown` this is a no-op.
        self.handle.shutdown();
    }
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("base_url", &self.base_url())
            .field("fingerprint", &self.cert_fingerprint())
            .finish_non_exhaustive()
    }
}
