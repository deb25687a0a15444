//! An in-process emulator of the Proxmox Backup Server REST API (`/api2/json`), beside the
//! PVE one: datastores, namespaces, snapshots, garbage collection, verification, prune,
//! sync and verification jobs, and the worker tasks they run.
//!
//! Invariant: the server lives exactly as long as the [`PbsEmulator`] value — dropping it
//! (or [`PbsEmulator::shutdown`]) stops the listener and every open connection. Every route
//! it serves is one of the pinned PBS 4 schema with only parameters that schema declares
//! (the `tests/schema.rs` oracle). Nothing is printed: diagnostics go through `tracing`.

mod api;
mod error;
mod ops;
mod prune;
mod routes;
mod seed;
mod server;
mod state;
mod store;
mod task;
mod tasks;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum_server::tls_rustls::RustlsConfig;
use tokio::task::JoinHandle;

use crate::tls::TlsMaterial;
use crate::{EmulatorError, RecordedRequest, lock};
use state::{Datastore, Job, PbsState, Snapshot};

/// How to start a PBS emulator.
#[derive(Debug, Clone)]
pub struct PbsOptions {
    /// Serve HTTPS with a fresh self-signed certificate (default) instead of plain HTTP.
    pub tls: bool,
    /// User of the accepted API token (default `mcp`).
    pub user: String,
    /// Realm of that user (default `pbs`).
    pub realm: String,
    /// Token name (default `mcp`).
    pub token_name: String,
    /// Token secret (default `pbs-emulator-secret-0001`).
    pub token_secret: String,
    /// Node name (default `pbs01`).
    pub node: String,
    /// How long a task runs before it stops (default 300 ms).
    pub task_duration: Duration,
    /// The token's privileges on `/` (propagating); `None` (default) holds every privilege
    /// (all `Datastore.*`, `Remote.*`, `Sys.Audit`, `Sys.Modify`). A route needing a
    /// privilege the token lacks answers 403 `permission check failed`, as PBS does.
    pub privileges: Option<Vec<String>>,
}

impl Default for PbsOptions {
    fn default() -> Self {
        Self {
            tls: true,
            user: "mcp".into(),
            realm: "pbs".into(),
            token_name: "mcp".into(),
            token_secret: "pbs-emulator-secret-0001".into(),
            node: "pbs01".into(),
            task_duration: Duration::from_millis(300),
            privileges: None,
        }
    }
}

/// A snapshot to put into a datastore before a test runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PbsSnapshotSeed {
    /// Datastore (must exist).
    pub store: String,
    /// Namespace: "" for the root, nested as `a/b` (created when missing).
    pub ns: String,
    /// `vm`, `ct` or `host`.
    pub backup_type: String,
    /// Guest id or host name.
    pub backup_id: String,
    /// Unix seconds.
    pub backup_time: i64,
    /// Sum of its archive sizes, bytes.
    pub size: u64,
    /// `None` never verified, `Some(true)` verified ok, `Some(false)` verification failed.
    pub verified: Option<bool>,
    /// Protected from prune and removal.
    pub protected: bool,
    /// A verification of it fails.
    pub corrupt: bool,
    /// Its comment (the first line of its notes).
    pub comment: Option<String>,
}

/// A snapshot as the emulator holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PbsSnapshotView {
    /// Namespace ("" for the root).
    pub ns: String,
    /// `vm`, `ct` or `host`.
    pub backup_type: String,
    /// Guest id or host name.
    pub backup_id: String,
    /// Unix seconds.
    pub backup_time: i64,
    /// Last verification result, `None` when never verified.
    pub verified: Option<bool>,
    /// Protected from prune and removal.
    pub protected: bool,
    /// Its notes.
    pub notes: String,
}

/// State shared between the [`PbsEmulator`] handle and the request handlers.
struct PbsShared {
    state: Mutex<PbsState>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// The one accepted `Authorization` value.
    auth_header: String,
    /// `user@realm!name`.
    token_id: String,
    secret: String,
}

/// A running PBS emulator. Dropping it stops the server.
pub struct PbsEmulator {
    shared: Arc<PbsShared>,
    addr: SocketAddr,
    tls: Option<TlsMaterial>,
    handle: axum_server::Handle<SocketAddr>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

impl PbsEmulator {
    /// Starts an empty PBS emulator on 127.0.0.1 with a random port (add datastores and
    /// snapshots, or call [`PbsEmulator::seed_demo`]). Must run inside a Tokio runtime.
    pub async fn start(opts: PbsOptions) -> Result<PbsEmulator, EmulatorError> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let token_id = format!("{}@{}!{}", opts.user, opts.realm, opts.token_name);
        let shared = Arc::new(PbsShared {
            state: Mutex::new(PbsState::new(
                opts.node.clone(),
                opts.task_duration,
                opts.privileges.clone(),
            )),
            requests: Mutex::new(Vec::new()),
            auth_header: format!("PBSAPIToken={token_id}:{}", opts.token_secret),
            token_id,
            secret: opts.token_secret.clone(),
        });
        let app = axum::Router::new()
            .fallback(server::entry)
            .with_state(Arc::clone(&shared))
            .into_make_service();
        let handle = axum_server::Handle::new();
        let (server, tls) = if opts.tls {
            let material = TlsMaterial::generate()?;
            let config = RustlsConfig::from_config(material.server_config()?);
            let server = axum_server::from_tcp_rustls(listener, config)?
                .handle(handle.clone())
                .http1_only();
            (tokio::spawn(server.serve(app)), Some(material))
        } else {
            let server = axum_server::from_tcp(listener)?
                .handle(handle.clone())
                .http1_only();
            (tokio::spawn(server.serve(app)), None)
        };
        tracing::info!(%addr, tls = opts.tls, node = %opts.node, "PBS emulator started");
        Ok(PbsEmulator {
            shared,
            addr,
            tls,
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

    /// SHA-256 fingerprint of the served certificate, `AB:CD:…` upper-case; `None`
    /// without TLS.
    pub fn cert_fingerprint(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.fingerprint.clone())
    }

    /// The served certificate in PEM; `None` without TLS.
    pub fn cert_pem(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.cert_pem.clone())
    }

    /// The accepted token's id, `user@realm!name` (`mcp@pbs!mcp` by default).
    pub fn token_id(&self) -> String {
        self.shared.token_id.clone()
    }

    /// The accepted token's secret.
    pub fn token_secret(&self) -> String {
        self.shared.secret.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PbsState> {
        let mut st = lock(&self.shared.state);
        st.settle();
        st
    }

    /// Adds an empty datastore of `total_bytes` (a second call with the name resizes it).
    pub fn add_datastore(&self, name: &str, total_bytes: u64) {
        let mut st = self.state();
        if let Some(ds) = st.stores.iter_mut().find(|s| s.name == name) {
            ds.total = total_bytes;
            return;
        }
        st.stores.push(Datastore {
            name: name.to_owned(),
            total: total_bytes,
            namespaces: std::iter::once(String::new()).collect(),
            gc_runs: 0,
            gc_last: None,
        });
    }

    /// Adds namespace `ns` (`a/b`, parents included) to datastore `store`.
    pub fn add_namespace(&self, store: &str, ns: &str) {
        self.state().add_namespace(store, ns);
    }

    /// Adds a snapshot (its namespace is created when missing; ignored when the datastore
    /// does not exist or the snapshot already does).
    pub fn add_snapshot(&self, seed: PbsSnapshotSeed) {
        let mut st = self.state();
        let ns = seed.ns.trim_matches('/').to_owned();
        if st.store(&seed.store).is_err() {
            tracing::warn!(store = %seed.store, "PBS emulator: snapshot for an unknown datastore ignored");
            return;
        }
        st.add_namespace(&seed.store, &ns);
        let key = (
            ns.clone(),
            seed.backup_type.clone(),
            seed.backup_id.clone(),
            seed.backup_time,
        );
        if st.find_snapshot(&seed.store, &key).is_some() {
            return;
        }
        let owner = self.shared.token_id.clone();
        let verify = seed.verified.map(|ok| {
            let id = format!("{}:{}/{}", seed.store, seed.backup_type, seed.backup_id);
            (
                ok,
                st.past_upid("verify", &id, seed.backup_time + 600, &owner),
            )
        });
        st.snapshots.push(Snapshot {
            store: seed.store,
            ns,
            backup_type: seed.backup_type,
            backup_id: seed.backup_id,
            backup_time: seed.backup_time,
            size: seed.size,
            verify,
            protected: seed.protected,
            corrupt: seed.corrupt,
            notes: seed.comment.unwrap_or_default(),
            owner,
        });
    }

    /// Adds a pull sync job `id` into `store` from `remote`'s `remote_store`.
    pub fn add_sync_job(&self, id: &str, store: &str, remote: &str, remote_store: &str) {
        self.state().sync_jobs.push(Job {
            id: id.to_owned(),
            store: store.to_owned(),
            remote: remote.to_owned(),
            remote_store: remote_store.to_owned(),
            runs: 0,
            last: None,
        });
    }

    /// Adds a verification job `id` over all of `store`.
    pub fn add_verify_job(&self, id: &str, store: &str) {
        self.state().verify_jobs.push(Job {
            id: id.to_owned(),
            store: store.to_owned(),
            remote: String::new(),
            remote_store: String::new(),
            runs: 0,
            last: None,
        });
    }

    /// The snapshots of `store` now, sorted by namespace, type, id and time.
    pub fn snapshots(&self, store: &str) -> Vec<PbsSnapshotView> {
        let st = self.state();
        let mut list: Vec<PbsSnapshotView> = st
            .snapshots
            .iter()
            .filter(|s| s.store == store)
            .map(|s| PbsSnapshotView {
                ns: s.ns.clone(),
                backup_type: s.backup_type.clone(),
                backup_id: s.backup_id.clone(),
                backup_time: s.backup_time,
                verified: s.verify.as_ref().map(|(ok, _)| *ok),
                protected: s.protected,
                notes: s.notes.clone(),
            })
            .collect();
        list.sort_by(|a, b| {
            (&a.ns, &a.backup_type, &a.backup_id, a.backup_time).cmp(&(
                &b.ns,
                &b.backup_type,
                &b.backup_id,
                b.backup_time,
            ))
        });
        list
    }

    /// Garbage collections of `store` that have finished.
    pub fn gc_runs(&self, store: &str) -> usize {
        self.state().store(store).map_or(0, |s| s.gc_runs)
    }

    /// Finished runs of sync job `id`.
    pub fn sync_runs(&self, id: &str) -> usize {
        self.state()
            .sync_jobs
            .iter()
            .find(|j| j.id == id)
            .map_or(0, |j| j.runs)
    }

    /// Finished runs of verification job `id`.
    pub fn verify_job_runs(&self, id: &str) -> usize {
        self.state()
            .verify_jobs
            .iter()
            .find(|j| j.id == id)
            .map_or(0, |j| j.runs)
    }

    /// From now on, answers every routed request whose decoded path (after `/api2/json`)
    /// starts with `path_prefix` with 403 `permission check failed`, changing nothing.
    pub fn deny(&self, path_prefix: &str) {
        tracing::debug!(path_prefix, "PBS emulator denial armed");
        self.state().denials.push(path_prefix.to_owned());
    }

    /// API requests received so far, in arrival order (the newest ones only, bounded like
    /// the PVE emulator's).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Forgets the recorded requests.
    pub fn clear_requests(&self) {
        lock(&self.shared.requests).clear();
    }

    /// Stops the server, closing every connection, and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        self.handle.shutdown();
        if let Some(server) = self.server.take() {
            match server.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "PBS emulator server ended with an error"),
                Err(e) => tracing::warn!(error = %e, "PBS emulator server task failed"),
            }
        }
        tracing::info!(addr = %self.addr, "PBS emulator stopped");
    }
}

impl Drop for PbsEmulator {
    fn drop(&mut self) {
        // Idempotent: after `shutdown` this is a no-op.
        self.handle.shutdown();
    }
}

impl std::fmt::Debug for PbsEmulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PbsEmulator")
            .field("base_url", &self.base_url())
            .field("token_id", &self.shared.token_id)
            .finish_non_exhaustive()
    }
}
