//! Handlers of the routes that act: garbage collection, verification, prune, the sync and
//! verification jobs.
//!
//! Invariant: an action that PBS runs as a worker answers its UPID at once and changes
//! the datastore only when that task finishes (see `state.rs`); prune is synchronous and
//! removes exactly the snapshots PBS's selection does not keep, never a protected one, and
//! nothing on a dry run.

use serde_json::{Value, json};

use super::api::{Call, PbsError};
use super::prune::{self, Candidate, KEEP_OPTIONS, Mark};
use super::state::PbsState;
use super::task::{Effect, PbsTask, SnapRef};

/// A worker about to start: its type and id, what it does, how it ends, its log.
struct Work<'a> {
    kind: &'a str,
    id: &'a str,
    effect: Effect,
    failure: Option<String>,
    head: Vec<String>,
    tail: Vec<String>,
}

/// Starts `work` as a task of `caller` and returns its UPID.
fn spawn(st: &mut PbsState, caller: &str, work: Work<'_>) -> Value {
    let upid = st.next_upid(work.kind, work.id, caller);
    let task = PbsTask::started(
        upid,
        st.task_duration,
        Some(work.effect),
        work.failure,
        work.head,
        work.tail,
    );
    let text = task.text.clone();
    tracing::debug!(upid = %text, "PBS emulator task started");
    st.tasks.push(task);
    json!(text)
}

/// `POST /admin/datastore/{store}/gc`.
pub(super) fn start_gc(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    call.st.store(&store)?;
    if call.st.running("garbage_collection", &store) {
        return Err(PbsError::bad("garbage collection already running"));
    }
    let head = vec![
        format!("starting garbage collection on store {store}"),
        "Start GC phase1 (mark used chunks)".to_owned(),
    ];
    let tail = vec![
        "Start GC phase2 (sweep unused chunks)".to_owned(),
        "Removed garbage: 0 B".to_owned(),
        "Removed chunks: 0".to_owned(),
        "Pending removals: 0 B (in 0 chunks)".to_owned(),
    ];
    let caller = call.caller.clone();
    let work = Work {
        kind: "garbage_collection",
        id: &store,
        effect: Effect::Gc(store.clone()),
        failure: None,
        head,
        tail,
    };
    let upid = spawn(call.st, &caller, work);
    call.st.store_mut(&store)?.gc_last = upid.as_str().map(str::to_owned);
    Ok(upid)
}

/// What a verification selects: snapshots of the store, optionally one namespace subtree
/// (to `max_depth` levels), one group or one snapshot.
struct Selection {
    ns: String,
    max_depth: i64,
    backup_type: Option<String>,
    backup_id: Option<String>,
    backup_time: Option<i64>,
    ignore_verified: bool,
    outdated_after: Option<i64>,
}

/// The snapshots a verification of `store` checks, oldest first, and the worker id.
fn verify_targets(st: &PbsState, store: &str, sel: &Selection) -> Vec<SnapRef> {
    let now = chrono::Utc::now().timestamp();
    let depth = |ns: &str| ns.split('/').filter(|p| !p.is_empty()).count() as i64;
    let base = depth(&sel.ns);
    let mut list: Vec<SnapRef> = st
        .snapshots
        .iter()
        .filter(|s| s.store == store)
        .filter(|s| match (&sel.backup_type, &sel.backup_id) {
            (Some(_), Some(_)) => s.ns == sel.ns,
            _ => {
                (sel.ns.is_empty() || s.ns == sel.ns || s.ns.starts_with(&format!("{}/", sel.ns)))
                    && depth(&s.ns) - base <= sel.max_depth
            }
        })
        .filter(|s| sel.backup_type.as_ref().is_none_or(|t| &s.backup_type == t))
        .filter(|s| sel.backup_id.as_ref().is_none_or(|i| &s.backup_id == i))
        .filter(|s| sel.backup_time.is_none_or(|t| s.backup_time == t))
        // A single snapshot is always verified; otherwise PBS's `verify_filter`.
        .filter(|s| {
            sel.backup_time.is_some()
                || !sel.ignore_verified
                || s.verify.as_ref().is_none_or(|(_, upid)| {
                    let started = super::task::Upid::parse(upid).map_or(0, |u| u.starttime);
                    sel.outdated_after
                        .is_some_and(|days| days == 0 || (now - started) / 86_400 > days)
                })
        })
        .map(super::state::Snapshot::key)
        .collect();
    list.sort();
    list
}

/// Starts a verification worker of `kind` (`verify` or `verificationjob`).
fn start_verify(
    call: &mut Call<'_>,
    store: &str,
    sel: &Selection,
    kind: &str,
    id: &str,
    job: Option<String>,
) -> Result<Value, PbsError> {
    let targets = verify_targets(call.st, store, sel);
    let mut head = vec![format!("verify datastore {store}")];
    let mut tail = Vec::new();
    let mut failed = Vec::new();
    for key in &targets {
        let Some(i) = call.st.find_snapshot(store, key) else {
            continue;
        };
        let snap = &call.st.snapshots[i];
        head.push(format!("  verify {store}:{}", snap.name()));
        tail.push(format!("  check {}", "index.json.blob"));
        if snap.corrupt {
            tail.push(format!(
                "verify {store}:{} failed: chunk checksum mismatch",
                snap.name()
            ));
            failed.push(snap.name());
        }
    }
    if failed.is_empty() {
        tail.push(format!("verified {} snapshot(s)", targets.len()));
    } else {
        tail.push("Failed to verify the following snapshots/groups:".to_owned());
        tail.extend(failed.iter().map(|f| format!("\t{f}")));
    }
    let failure = (!failed.is_empty())
        .then(|| "verification failed - please check the log for details".to_owned());
    let effect = Effect::Verify {
        store: store.to_owned(),
        targets,
        job,
    };
    let caller = call.caller.clone();
    let work = Work {
        kind,
        id,
        effect,
        failure,
        head,
        tail,
    };
    Ok(spawn(call.st, &caller, work))
}

/// `POST /admin/datastore/{store}/verify`.
pub(super) fn verify(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    call.st.store(&store)?;
    let ns = call.ns();
    call.st.check_ns(&store, &ns)?;
    let sel = Selection {
        ns: ns.clone(),
        max_depth: call.int("max-depth").unwrap_or(7),
        backup_type: call.str("backup-type").map(str::to_owned),
        backup_id: call.str("backup-id").map(str::to_owned),
        backup_time: call.int("backup-time"),
        ignore_verified: call.opt_flag("ignore-verified").unwrap_or(true),
        outdated_after: call.int("outdated-after"),
    };
    let worker_id = match (&sel.backup_type, &sel.backup_id) {
        (Some(t), Some(id)) if ns.is_empty() => format!("{store}:{t}/{id}"),
        (Some(t), Some(id)) => format!("{store}:{ns}:{t}/{id}"),
        (None, None) if sel.backup_time.is_none() => store.clone(),
        _ => {
            return Err(PbsError::bad(
                "parameters do not specify a backup group or snapshot",
            ));
        }
    };
    start_verify(call, &store, &sel, "verify", &worker_id, None)
}

/// `POST /admin/datastore/{store}/prune`.
pub(super) fn prune(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    let ns = call.ns();
    call.st.check_ns(&store, &ns)?;
    let backup_type = call.str("backup-type").unwrap_or("").to_owned();
    let backup_id = call.str("backup-id").unwrap_or("").to_owned();
    let mut keeps = Vec::new();
    for option in KEEP_OPTIONS {
        // Validated as at least 1 before the handler runs.
        if let Some(n) = call.int(option) {
            keeps.push((option, u64::try_from(n).unwrap_or(0)));
        }
    }
    let dry_run = call.opt_flag("dry-run").unwrap_or(false);
    let mut group: Vec<usize> = (0..call.st.snapshots.len())
        .filter(|&i| {
            let s = &call.st.snapshots[i];
            s.store == store
                && s.ns == ns
                && s.backup_type == backup_type
                && s.backup_id == backup_id
        })
        .collect();
    // Newest first, as PBS lists the prune result.
    group.sort_by_key(|&i| std::cmp::Reverse(call.st.snapshots[i].backup_time));
    let candidates: Vec<Candidate> = group
        .iter()
        .map(|&i| Candidate {
            time: call.st.snapshots[i].backup_time,
            protected: call.st.snapshots[i].protected,
        })
        .collect();
    let marks = prune::select(&candidates, &keeps);
    let mut result = Vec::new();
    let mut doomed = Vec::new();
    for (&i, mark) in group.iter().zip(&marks) {
        let snap = &call.st.snapshots[i];
        let keep = *mark != Mark::Remove;
        result.push(json!({
            "backup-type": snap.backup_type, "backup-id": snap.backup_id,
            "backup-time": snap.backup_time, "keep": keep,
            "protected": *mark == Mark::Protected,
        }));
        if !keep && !dry_run {
            doomed.push(snap.key());
        }
    }
    call.st
        .snapshots
        .retain(|s| !(s.store == store && doomed.contains(&s.key())));
    tracing::debug!(%store, removed = doomed.len(), dry_run, "PBS emulator prune");
    Ok(Value::Array(result))
}

/// `GET /admin/sync`.
pub(super) fn sync_jobs(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.str("store");
    let list: Vec<Value> = call
        .st
        .sync_jobs
        .iter()
        .filter(|j| store.is_none_or(|s| s == j.store))
        .map(|j| {
            let mut entry = json!({
                "id": j.id, "store": j.store, "remote": j.remote,
                "remote-store": j.remote_store, "sync-direction": "pull",
                "schedule": "hourly", "remove-vanished": false,
            });
            last_run(call.st, j.last.as_deref(), &mut entry);
            entry
        })
        .collect();
    Ok(Value::Array(list))
}

/// Adds `last-run-*` of the job's last task to `entry`.
fn last_run(st: &PbsState, last: Option<&str>, entry: &mut Value) {
    let Some(task) = last.and_then(|u| st.task(u).ok()) else {
        return;
    };
    entry["last-run-upid"] = json!(task.text);
    if let (Some(status), Some(end)) = (task.exitstatus(), task.endtime()) {
        entry["last-run-state"] = json!(status);
        entry["last-run-endtime"] = json!(end);
    }
}

/// `POST /admin/sync/{id}/run`.
pub(super) fn run_sync(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let id = call.cap("id").to_owned();
    let Some(job) = call.st.sync_jobs.iter().find(|j| j.id == id).cloned() else {
        return Err(PbsError::new(404, format!("job '{id}' does not exist.")));
    };
    if call.st.running("syncjob", &id) {
        return Err(PbsError::bad(format!("job '{id}' already running")));
    }
    let head = vec![
        format!(
            "Starting datastore sync job '{}:{}:{}::{id}'",
            job.remote, job.remote_store, job.store
        ),
        format!(
            "sync datastore '{}' from '{}/{}'",
            job.store, job.remote, job.remote_store
        ),
    ];
    let tail =
        vec!["Finished syncing root namespace, current progress: 0 groups, 0 snapshots".to_owned()];
    let caller = call.caller.clone();
    let work = Work {
        kind: "syncjob",
        id: &id,
        effect: Effect::Sync(id.clone()),
        failure: None,
        head,
        tail,
    };
    let upid = spawn(call.st, &caller, work);
    if let Some(job) = call.st.sync_jobs.iter_mut().find(|j| j.id == id) {
        job.last = upid.as_str().map(str::to_owned);
    }
    Ok(upid)
}

/// `GET /admin/verify`.
pub(super) fn verify_jobs(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.str("store");
    let list: Vec<Value> = call
        .st
        .verify_jobs
        .iter()
        .filter(|j| store.is_none_or(|s| s == j.store))
        .map(|j| {
            let mut entry = json!({
                "id": j.id, "store": j.store, "ignore-verified": true,
                "outdated-after": 30, "schedule": "weekly",
            });
            last_run(call.st, j.last.as_deref(), &mut entry);
            entry
        })
        .collect();
    Ok(Value::Array(list))
}

/// `POST /admin/verify/{id}/run`: verifies the job's store (skipping snapshots verified
/// in the last 30 days, as the job is configured).
pub(super) fn run_verify_job(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let id = call.cap("id").to_owned();
    let Some(job) = call.st.verify_jobs.iter().find(|j| j.id == id).cloned() else {
        return Err(PbsError::new(404, format!("job '{id}' does not exist.")));
    };
    if call.st.running("verificationjob", &id) {
        return Err(PbsError::bad(format!("job '{id}' already running")));
    }
    let sel = Selection {
        ns: String::new(),
        max_depth: 7,
        backup_type: None,
        backup_id: None,
        backup_time: None,
        ignore_verified: true,
        outdated_after: Some(30),
    };
    let upid = start_verify(
        call,
        &job.store,
        &sel,
        "verificationjob",
        &id,
        Some(id.clone()),
    )?;
    if let Some(job) = call.st.verify_jobs.iter_mut().find(|j| j.id == id) {
        job.last = upid.as_str().map(str::to_owned);
    }
    Ok(upid)
}
