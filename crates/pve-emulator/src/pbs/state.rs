//! The emulated backup server: datastores with their namespaces and snapshots, the sync and
//! verification jobs, the worker tasks, and the denials a test armed.
//!
//! Invariant: every snapshot belongs to an existing datastore and namespace (a namespace's
//! parents exist too, the root "" always), and a task's effect is applied exactly once —
//! by [`PbsState::settle`], which every request and every test accessor runs first, so what
//! is read always reflects every task that has finished by then.

use std::collections::BTreeSet;
use std::time::Duration;

use super::error::PbsError;
use super::task::{Effect, PbsTask, SnapRef, Upid};

/// One datastore.
#[derive(Debug, Clone)]
pub(super) struct Datastore {
    /// Its name.
    pub name: String,
    /// Size of the underlying storage in bytes.
    pub total: u64,
    /// Its namespaces, the root "" included.
    pub namespaces: BTreeSet<String>,
    /// Finished garbage collections.
    pub gc_runs: usize,
    /// The UPID of the last garbage collection started.
    pub gc_last: Option<String>,
}

/// One backup snapshot.
#[derive(Debug, Clone)]
pub(super) struct Snapshot {
    /// Datastore holding it.
    pub store: String,
    /// Namespace ("" for the root).
    pub ns: String,
    /// `vm`, `ct` or `host`.
    pub backup_type: String,
    /// Guest id or host name.
    pub backup_id: String,
    /// Unix seconds.
    pub backup_time: i64,
    /// Sum of its archive sizes.
    pub size: u64,
    /// Last verification: (ok, UPID of the verify task).
    pub verify: Option<(bool, String)>,
    /// Protected from prune and removal.
    pub protected: bool,
    /// A verification of it fails.
    pub corrupt: bool,
    /// Its notes; the first line is the listed comment.
    pub notes: String,
    /// Owner auth id.
    pub owner: String,
}

impl Snapshot {
    /// Its identity inside the store.
    pub fn key(&self) -> SnapRef {
        (
            self.ns.clone(),
            self.backup_type.clone(),
            self.backup_id.clone(),
            self.backup_time,
        )
    }

    /// `vm/101/2024-12-01T10:00:00Z`, how PBS names a snapshot in messages and logs.
    pub fn name(&self) -> String {
        let time = chrono::DateTime::from_timestamp(self.backup_time, 0)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        format!("{}/{}/{time}", self.backup_type, self.backup_id)
    }
}

/// A sync or verification job.
#[derive(Debug, Clone)]
pub(super) struct Job {
    /// Job id.
    pub id: String,
    /// Local datastore.
    pub store: String,
    /// Remote (sync jobs only).
    pub remote: String,
    /// Remote datastore (sync jobs only).
    pub remote_store: String,
    /// Finished runs.
    pub runs: usize,
    /// The UPID of the last run started.
    pub last: Option<String>,
}

/// Everything the emulated server holds.
#[derive(Debug)]
pub(super) struct PbsState {
    /// Node name (`pbs01`).
    pub node: String,
    /// How long a task runs.
    pub task_duration: Duration,
    /// The token's privileges; `None` means all.
    pub privileges: Option<Vec<String>>,
    /// Datastores in creation order.
    pub stores: Vec<Datastore>,
    /// Every snapshot of every store.
    pub snapshots: Vec<Snapshot>,
    /// Sync jobs.
    pub sync_jobs: Vec<Job>,
    /// Verification jobs.
    pub verify_jobs: Vec<Job>,
    /// Tasks, oldest first.
    pub tasks: Vec<PbsTask>,
    /// Path prefixes answered with 403.
    pub denials: Vec<String>,
    pid: u32,
    pstart: u32,
    next_task: u32,
}

/// Every privilege an unrestricted token holds.
pub(super) const ALL_PRIVILEGES: &[&str] = &[
    "Datastore.Allocate",
    "Datastore.Audit",
    "Datastore.Backup",
    "Datastore.Modify",
    "Datastore.Prune",
    "Datastore.Read",
    "Datastore.Verify",
    "Remote.Audit",
    "Remote.DatastoreBackup",
    "Remote.DatastoreModify",
    "Remote.DatastorePrune",
    "Remote.Modify",
    "Remote.Read",
    "Sys.Audit",
    "Sys.Modify",
];

impl PbsState {
    /// An empty server named `node`.
    pub fn new(node: String, task_duration: Duration, privileges: Option<Vec<String>>) -> Self {
        Self {
            node,
            task_duration,
            privileges,
            stores: Vec::new(),
            snapshots: Vec::new(),
            sync_jobs: Vec::new(),
            verify_jobs: Vec::new(),
            tasks: Vec::new(),
            denials: Vec::new(),
            pid: rand::random_range(1000..60_000),
            pstart: rand::random_range(10_000..9_000_000),
            next_task: 0,
        }
    }

    /// Whether the token holds `privilege`.
    pub fn has(&self, privilege: &str) -> bool {
        match &self.privileges {
            None => ALL_PRIVILEGES.contains(&privilege),
            Some(list) => list.iter().any(|p| p == privilege),
        }
    }

    /// The datastore `name`, or PBS's refusal.
    pub fn store(&self, name: &str) -> Result<&Datastore, PbsError> {
        self.stores
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| PbsError::bad(format!("datastore '{name}' does not exist")))
    }

    /// The datastore `name`, mutably, or PBS's refusal.
    pub fn store_mut(&mut self, name: &str) -> Result<&mut Datastore, PbsError> {
        self.stores
            .iter_mut()
            .find(|s| s.name == name)
            .ok_or_else(|| PbsError::bad(format!("datastore '{name}' does not exist")))
    }

    /// Checks that `ns` exists in `store`.
    pub fn check_ns(&self, store: &str, ns: &str) -> Result<(), PbsError> {
        if self.store(store)?.namespaces.contains(ns) {
            Ok(())
        } else {
            Err(PbsError::bad(format!(
                "namespace '{ns}' does not exist in datastore '{store}'"
            )))
        }
    }

    /// Adds `ns` and its parents to `store` (nothing when there is no such store).
    pub fn add_namespace(&mut self, store: &str, ns: &str) {
        let Ok(ds) = self.store_mut(store) else {
            return;
        };
        let mut path = String::new();
        for part in ns.split('/').filter(|p| !p.is_empty()) {
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(part);
            ds.namespaces.insert(path.clone());
        }
    }

    /// The index of one snapshot of `store`.
    pub fn find_snapshot(&self, store: &str, key: &SnapRef) -> Option<usize> {
        self.snapshots
            .iter()
            .position(|s| s.store == store && s.key() == *key)
    }

    /// A fresh UPID for a worker of `kind` on `id`, started now by `auth_id`.
    pub fn next_upid(&mut self, kind: &str, id: &str, auth_id: &str) -> Upid {
        self.next_task += 1;
        Upid {
            node: self.node.clone(),
            pid: self.pid,
            pstart: self.pstart,
            task_id: self.next_task,
            starttime: chrono::Utc::now().timestamp(),
            kind: kind.to_owned(),
            id: id.to_owned(),
            auth_id: auth_id.to_owned(),
        }
    }

    /// A UPID of a task that ran at `starttime` (for seeded verification states).
    pub fn past_upid(&mut self, kind: &str, id: &str, starttime: i64, auth_id: &str) -> String {
        let mut upid = self.next_upid(kind, id, auth_id);
        upid.starttime = starttime.max(0);
        upid.render()
    }

    /// Whether a task of `kind` on `id` is running.
    pub fn running(&self, kind: &str, id: &str) -> bool {
        self.tasks
            .iter()
            .any(|t| t.upid.kind == kind && t.upid.id == id && t.is_running())
    }

    /// Applies the effect of every task that has finished since the last call.
    pub fn settle(&mut self) {
        let mut due = Vec::new();
        for task in self.tasks.iter_mut().filter(|t| t.effect_due()) {
            if let Some(effect) = task.effect.take() {
                due.push((effect, task.text.clone()));
            }
        }
        for (effect, upid) in due {
            self.apply(effect, &upid);
        }
    }

    fn apply(&mut self, effect: Effect, upid: &str) {
        match effect {
            Effect::Gc(store) => {
                if let Ok(ds) = self.store_mut(&store) {
                    ds.gc_runs += 1;
                }
            }
            Effect::Verify {
                store,
                targets,
                job,
            } => {
                for key in &targets {
                    if let Some(i) = self.find_snapshot(&store, key) {
                        let snap = &mut self.snapshots[i];
                        snap.verify = Some((!snap.corrupt, upid.to_owned()));
                    }
                }
                if let Some(job) = self
                    .verify_jobs
                    .iter_mut()
                    .find(|j| Some(&j.id) == job.as_ref())
                {
                    job.runs += 1;
                }
            }
            Effect::Sync(id) => {
                if let Some(job) = self.sync_jobs.iter_mut().find(|j| j.id == id) {
                    job.runs += 1;
                }
            }
        }
    }

    /// The task with UPID `text`.
    pub fn task(&self, text: &str) -> Result<&PbsTask, PbsError> {
        self.tasks
            .iter()
            .find(|t| t.text == text)
            .ok_or_else(|| PbsError::bad(format!("no such task '{text}'")))
    }
}
