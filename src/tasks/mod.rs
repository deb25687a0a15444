//! Long Proxmox work the MCP way: a task-starting call becomes an MCP Task (SEP-2663) for
//! clients that declared the tasks extension, or is followed to its end with `wait: true`;
//! `tasks/get` and `tasks/cancel` read and stop the Proxmox task behind a task id.
//!
//! Invariants: the task id is derived from the UPID (see [`id`]), so no store is shared
//! and a later session of the same caller can still read it until the TTL; it opens for no
//! other caller (see [`bound_id`]); a Proxmox task is stopped only
//! by `tasks/cancel` after the same approval `pve_stop_task` needs; following (progress,
//! waits) only reads and never stops the task when the wait ends; followers are bounded
//! per session and per process (see [`follow`]): a wait beyond the bound is refused with
//! `TOO_MANY_WAITS`, an MCP task beyond it is read only when the client asks (`tasks/get`).

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

pub mod bound_id;
mod cancel;
pub mod exec_task;
pub mod follow;
pub mod id;
pub mod plan_task;
pub mod progress;
pub mod pve_io;
pub mod seal;

use std::future::Future;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, ErrorCode, GetTaskResult, MetaObject, Task,
    TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::envelope::{CallMeta, ToolFailure, codes, not_configured, render};
use crate::identity::{Caller, Owner};
use crate::outcome;
use crate::pve;
use crate::registry::Entry;
use crate::schema::ValidArgs;
use crate::state::AppState;

use crate::catalog::{Backend, CompositeOp, ToolSpec};
use exec_task::ExecHandle;
use follow::{Busy, Ending, FollowerSlot, ProgressSink, Session, Snapshot, Watch};
use id::{IdError, TaskHandle};

/// Error code of a followed task that stopped with an exit status other than OK.
pub const TASK_FAILED: &str = "TASK_FAILED";
/// Error code of a wait that ended before the task did.
pub const TASK_WAIT_TIMEOUT: &str = "TASK_WAIT_TIMEOUT";
/// Default time a `wait: true` call or `pve_wait_task` follows a task (seconds).
pub const DEFAULT_WAIT_SECS: u64 = 300;
/// Suggested `tasks/get` polling interval.
const POLL_INTERVAL_MS: u64 = 1_000;
/// Suggested `tasks/get` polling interval of a task no background follower watches (the
/// follower cap was reached): every `tasks/get` reads Proxmox, so ask for the pace a
/// settled follower keeps.
const LAZY_POLL_INTERVAL_MS: u64 = 5_000;
/// The tool whose approval a `tasks/cancel` needs (and whose arguments bind it).
const STOP_TOOL: &str = "pve_stop_task";

pub use cancel::cancel;

tokio::task_local! {
    static PROGRESS: Option<ProgressSink>;
    static SESSION: Option<Session>;
}

/// The progress sink of the request, when the client sent a progress token.
pub fn progress_sink(context: &RequestContext<RoleServer>) -> Option<ProgressSink> {
    context.meta.get_progress_token().map(|token| ProgressSink {
        peer: context.peer.clone(),
        token,
        cluster: None,
    })
}

/// Runs a dispatch with the request's progress sink and session in scope, so a composite
/// handler that follows a task (`pve_wait_task`) can report progress and take a follower
/// slot of its session without knowing the client.
pub async fn progress_scope<F: Future>(
    context: &RequestContext<RoleServer>,
    cluster: Option<&'static str>,
    work: F,
) -> F::Output {
    let session = Some(Session::of(context));
    let sink = progress_sink(context).map(|sink| sink.in_cluster(cluster));
    PROGRESS.scope(sink, SESSION.scope(session, work)).await
}

/// The progress sink in scope (see [`progress_scope`]), if any.
pub fn current_sink() -> Option<ProgressSink> {
    PROGRESS.try_with(Clone::clone).ok().flatten()
}

/// The session in scope (see [`progress_scope`]), if any.
pub fn current_session() -> Option<Session> {
    SESSION.try_with(Clone::clone).ok().flatten()
}

/// The refusal of a wait beyond the follower cap. `started`: the call already started the
/// task (`wait: true`), so the model must follow it rather than start it again.
pub fn too_many_waits(busy: Busy, upid: &pve::Upid, started: bool) -> ToolFailure {
    let (limit, scope) = busy.limit();
    let what = if started {
        format!(
            "The Proxmox task {upid} was started, but is not waited for: {limit} task waits already run in {scope}. Do not start it again."
        )
    } else {
        format!(
            "{limit} task waits already run in {scope}; this wait was not started. The Proxmox task {upid} is unaffected."
        )
    };
    ToolFailure::new(codes::TOO_MANY_WAITS, what)
        .with_hint("Call pve_wait_task with this node and upid again in a minute, or read its state now with pve_get_task_status.")
        .with_details(json!({
            "upid": upid.to_string(),
            "node": upid.node,
            "started": started,
            "limit": limit,
            "scope": if busy == Busy::Session { "session" } else { "server" },
        }))
}

/// Whether this request asked to be answered as an MCP task: its own `_meta` declares the
/// tasks extension (SEP-2663 — "unless the request declared the tasks extension
/// capability"). A session's `initialize` declaration alone does not count: clients such as
/// the MCP Inspector (2.12) declare the extension once and then make plain calls they never
/// follow, so a task would leave the person with `working` and no outcome; a client that
/// follows a call declares it on that call (2026-07-28 framing, `@modelcontextprotocol/ext-tasks`).
pub fn client_follows_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

/// Whether this call of `spec` is a guest-agent program to answer as an MCP task.
pub fn answers_exec_as_task(spec: &ToolSpec, context: &RequestContext<RoleServer>) -> bool {
    spec.backend == Backend::Composite(CompositeOp::QemuGuestExec) && client_follows_tasks(context)
}

/// The task for a guest program that started and has not exited yet.
/// The key that seals guest-program task ids: shared by replicas with the approval key.
pub(crate) fn exec_seal_key(state: &AppState) -> ring::hmac::Key {
    exec_task::seal_key(state.settings.approval_key.as_ref().map(|k| k.expose()))
}

fn exec_task(state: &AppState, call: &Dispatched<'_>, owner: &Owner) -> Option<CallToolResponse> {
    let data = call.outcome.as_ref().ok()?;
    let pid = data.get("pid").and_then(Value::as_i64)?;
    if data.get("exited").and_then(Value::as_bool) != Some(false) {
        return None;
    }
    let node = call.args.str("node")?;
    let vmid = match call.args.values.get("vmid") {
        Some(crate::schema::ArgValue::Int(v)) => u32::try_from(*v).ok()?,
        _ => return None,
    };
    let handle = ExecHandle::new(node, vmid, pid);
    let ttl_ms = u64::try_from(state.settings.task_ttl.as_millis()).unwrap_or(u64::MAX);
    let id = handle.encode(&exec_seal_key(state));
    let task = Task::new(
        bound_id::bind(state, call.entry.cluster, owner, id),
        TaskStatus::Working,
        handle.created_at(),
        rmcp::task_manager::current_timestamp(),
    )
    .with_ttl_ms(ttl_ms)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
    .with_status_message(format!("guest program started (pid {pid}) in VM {vmid}"));
    let mut meta = Map::new();
    meta.insert("pid".into(), pid.into());
    meta.insert("node".into(), node.into());
    meta.insert("vmid".into(), vmid.into());
    if let Some(cluster) = call.entry.cluster {
        meta.insert("cluster".into(), cluster.into());
    }
    Some(CallToolResponse::Task(
        CreateTaskResult::new(task).with_meta(MetaObject(meta)),
    ))
}

/// A call that reached its backend, as the task stage sees it.
#[derive(Debug)]
pub struct Dispatched<'a> {
    /// The tool called.
    pub entry: &'a Entry,
    /// Its validated arguments (`wait`, `wait_timeout`).
    pub args: &'a ValidArgs,
    /// What the backend answered.
    pub outcome: &'a Result<Value, ToolFailure>,
    /// Requests made.
    pub attempts: u32,
    /// When the call started.
    pub started: Instant,
    /// How it was approved, if it was gated.
    pub approved_by: Option<&'static str>,
    /// The REST client the call used (the person's own under per-person identity): the
    /// task is followed with the same rights it was started with.
    pub pve: Option<&'a crate::pve::Client>,
    /// A step of a plan: a started Proxmox task is followed to its end here, never handed
    /// out as an MCP task (the plan is the caller's one task).
    pub inline: bool,
}

/// The task stage, after dispatch: a UPID from a task-starting tool becomes an MCP task
/// (client declared the tasks extension) or is followed to its end (`wait: true`).
/// `None` leaves the answer as it is.
pub async fn after_dispatch(
    state: &AppState,
    call: Dispatched<'_>,
    context: &RequestContext<RoleServer>,
) -> Option<CallToolResponse> {
    let spec = call.entry.spec;
    // The id handed out opens only for this caller (see `bound_id`).
    let owner = Caller::of(context).owner;
    if answers_exec_as_task(spec, context) && !call.inline {
        return exec_task(state, &call, &owner);
    }
    if !spec.starts_task {
        return None;
    }
    let upid = call.outcome.as_ref().ok().and_then(pve_io::upid_of)?;
    let client = call.pve?;
    if client_follows_tasks(context) && !call.inline {
        let handle = TaskHandle::new(upid.clone(), call.entry.wire_name);
        let mut poll_interval = POLL_INTERVAL_MS;
        if let Some(sink) = progress_sink(context).map(|s| s.in_cluster(call.entry.cluster)) {
            let session = Session::of(context);
            match follow::claim(Some(&session)) {
                Ok(slot) => {
                    let ttl = state.settings.task_ttl;
                    spawn_background_progress(
                        client.clone(),
                        upid.clone(),
                        ttl,
                        sink,
                        session,
                        slot,
                    );
                }
                Err(busy) => {
                    tracing::debug!(
                        ?busy,
                        "follower cap reached; the task is read on tasks/get only"
                    );
                    poll_interval = LAZY_POLL_INTERVAL_MS;
                }
            }
        }
        let ttl_ms = u64::try_from(state.settings.task_ttl.as_millis()).unwrap_or(u64::MAX);
        let now = rmcp::task_manager::current_timestamp();
        let task = Task::new(
            bound_id::bind(state, call.entry.cluster, &owner, handle.encode()),
            TaskStatus::Working,
            handle.created_at(),
            now,
        )
        .with_ttl_ms(ttl_ms)
        .with_poll_interval_ms(poll_interval)
        .with_status_message(format!("Proxmox task {upid} started"));
        let mut meta = Map::new();
        meta.insert("upid".into(), upid.to_string().into());
        meta.insert("node".into(), upid.node.clone().into());
        if let Some(cluster) = call.entry.cluster {
            meta.insert("cluster".into(), cluster.into());
        }
        return Some(CallToolResponse::Task(
            CreateTaskResult::new(task).with_meta(MetaObject(meta)),
        ));
    }
    if !call.args.wait && !call.inline {
        return None;
    }
    let session = Session::of(context);
    let outcome = match follow::claim(Some(&session)) {
        Ok(_slot) => {
            let requested = call.args.wait_timeout.unwrap_or(DEFAULT_WAIT_SECS);
            let limit = Duration::from_secs(follow::capped_secs(requested));
            let sink = progress_sink(context).map(|s| s.in_cluster(call.entry.cluster));
            let ended = follow::follow(
                client,
                &upid,
                Some(Instant::now() + limit),
                sink.as_ref(),
                Some(&session),
                false,
                &context.ct,
            )
            .await;
            ended.and_then(|ending| outcome_of(ending, limit))
        }
        Err(busy) => Err(too_many_waits(busy, &upid, true)),
    };
    Some(
        outcome::finish(
            call.entry,
            call.started,
            outcome,
            call.attempts,
            call.approved_by,
        )
        .into(),
    )
}

/// What a follow means for the caller: success, a failed task, a timeout.
pub fn outcome_of(ending: Ending, limit: Duration) -> Result<Value, ToolFailure> {
    match ending {
        Ending::Stopped(snapshot) => stopped(&snapshot),
        Ending::TimedOut(snapshot) => Err(ToolFailure::new(
            TASK_WAIT_TIMEOUT,
            format!(
                "The Proxmox task {} was still running after {} s; it keeps running.",
                snapshot.upid,
                limit.as_secs()
            ),
        )
        .with_hint("Call pve_wait_task with this node and upid to wait longer, or pve_stop_task to stop it.")
        .with_details(snapshot.to_json())),
        Ending::Cancelled => Err(ToolFailure::new(
            TASK_WAIT_TIMEOUT,
            "The wait was cancelled; the Proxmox task keeps running.",
        )),
    }
}

fn stopped(snapshot: &Snapshot) -> Result<Value, ToolFailure> {
    if snapshot.state.succeeded() {
        return Ok(snapshot.to_json());
    }
    Err(ToolFailure::new(
        TASK_FAILED,
        format!(
            "The Proxmox task {} ended with: {}",
            snapshot.upid,
            snapshot
                .state
                .exitstatus
                .as_deref()
                .unwrap_or("unknown status")
        ),
    )
    .with_hint("The log tail in details says why; fix the cause before running it again.")
    .with_details(snapshot.to_json()))
}

/// Keeps sending progress for a task answered as an MCP task, until it stops, the TTL or
/// [`follow::MAX_FOLLOW_SECS`] passes, the session ends or the client stops taking
/// notifications; `slot` is held until then.
fn spawn_background_progress(
    client: pve::Client,
    upid: pve::Upid,
    ttl: Duration,
    sink: ProgressSink,
    session: Session,
    slot: FollowerSlot,
) {
    tokio::spawn(async move {
        let _slot = slot;
        let cancel = CancellationToken::new();
        let limit = ttl.min(Duration::from_secs(follow::MAX_FOLLOW_SECS));
        let deadline = Some(Instant::now() + limit);
        let _ = follow::follow(
            &client,
            &upid,
            deadline,
            Some(&sink),
            Some(&session),
            true,
            &cancel,
        )
        .await;
    });
}

pub(crate) fn id_error(err: IdError) -> McpError {
    McpError::new(ErrorCode::INVALID_PARAMS, err.to_string(), None)
}

pub(crate) fn failure_error(failure: ToolFailure) -> McpError {
    // A well-formed id of a task Proxmox does not know is the caller's error, not ours.
    let code = if failure.code == "PROXMOX_NOT_FOUND" {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode::INTERNAL_ERROR
    };
    McpError::new(
        code,
        failure.message.clone(),
        Some(json!({"code": failure.code, "hint": failure.hint})),
    )
}

/// `tasks/get`: the Proxmox task's state; when stopped, the tool result with the exit
/// status and log tail (`isError` when the exit status is not OK).
pub async fn get(
    clusters: &crate::clusters::Clusters,
    task_id: &str,
    context: &RequestContext<RoleServer>,
) -> Result<GetTaskResult, McpError> {
    // With several clusters the id names its cluster (sealed): only that cluster is read.
    let (state, cluster, inner) = bound_id::open(clusters, &Caller::of(context).owner, task_id)?;
    if ExecHandle::claims(inner) {
        return get_exec(state, cluster, task_id, inner, context).await;
    }
    if plan_task::claims(inner) {
        return plan_task::get(state, task_id, inner);
    }
    let handle = TaskHandle::decode(inner, state.settings.task_ttl).map_err(id_error)?;
    // Read with the caller's own Proxmox rights (per-person identity), as the call was made.
    let acting = state
        .acting_for(&Caller::of(context))
        .map_err(|f| failure_error(*f))?;
    let client = acting
        .client
        .as_ref()
        .ok_or_else(|| failure_error(not_configured()))?;
    let started = Instant::now();
    // The log only matters once the task stopped (tail, exit) or for a percentage to show;
    // a running task of another kind costs one status read.
    let mut watch = Watch::new(&handle.upid);
    let current = watch
        .status(client, &context.ct)
        .await
        .map_err(failure_error)?;
    if !current.running || watch.parses_progress() {
        watch
            .catch_up(client, &context.ct)
            .await
            .map_err(failure_error)?;
    }
    let snapshot = watch.snapshot(current);
    let task = working_task(state, task_id, handle.created_at());
    if snapshot.state.running {
        let task = task.with_status_message(snapshot.reading.message.clone());
        return Ok(GetTaskResult::new(DetailedTask::new(
            task,
            TaskPayload::Working,
        )));
    }
    let exitstatus = snapshot
        .state
        .exitstatus
        .as_deref()
        .unwrap_or("unknown status");
    if was_interrupted(exitstatus) {
        // Stopped by tasks/cancel or pve_stop_task: the task was cancelled, not failed.
        return Ok(GetTaskResult::new(DetailedTask::new(
            task.with_status_message(format!("Proxmox task cancelled: {exitstatus}")),
            TaskPayload::Cancelled,
        )));
    }
    let message = format!("Proxmox task stopped: {exitstatus}");
    let tool = state
        .registry
        .get(&handle.tool)
        .map_or("pve_wait_task", |entry| entry.wire_name);
    let meta = CallMeta {
        tool,
        alias_for: None,
        duration: started.elapsed(),
        attempts: 2,
        retries: 0,
        approval: None,
        cluster,
    };
    let result = render(stopped(&snapshot), &meta);
    let result = match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    Ok(GetTaskResult::new(DetailedTask::new(
        task.with_status_message(message),
        TaskPayload::Completed { result },
    )))
}

/// Whether Proxmox's exit status says the task was stopped from outside (a DELETE of the
/// task, which Proxmox reports as `interrupted by signal`).
fn was_interrupted(exitstatus: &str) -> bool {
    exitstatus
        .to_ascii_lowercase()
        .contains("interrupted by signal")
}

/// A task record in the `working` state with this server's TTL and polling interval; the
/// caller sets the message and, when it ended, the payload.
pub(crate) fn working_task(state: &AppState, task_id: &str, created_at: String) -> Task {
    let ttl_ms = u64::try_from(state.settings.task_ttl.as_millis()).unwrap_or(u64::MAX);
    Task::new(
        task_id,
        TaskStatus::Working,
        created_at,
        rmcp::task_manager::current_timestamp(),
    )
    .with_ttl_ms(ttl_ms)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// `tasks/get` of a guest program: `working` until `exec-status` says it exited, then the
/// tool's answer (exit code, capped stdout/stderr); `isError` when the exit code is not 0.
async fn get_exec(
    state: &AppState,
    cluster: Option<&'static str>,
    task_id: &str,
    inner: &str,
    context: &RequestContext<RoleServer>,
) -> Result<GetTaskResult, McpError> {
    let handle = ExecHandle::decode(inner, state.settings.task_ttl, &exec_seal_key(state))
        .map_err(id_error)?;
    let acting = state
        .acting_for(&Caller::of(context))
        .map_err(|f| failure_error(*f))?;
    let client = acting
        .client
        .as_ref()
        .ok_or_else(|| failure_error(not_configured()))?;
    let started = Instant::now();
    let exec_listed = state
        .registry
        .entries()
        .iter()
        .any(|e| e.spec.name == "pve_exec_qemu_guest_command");
    let (exited, data) = handle
        .poll(
            client,
            &context.ct,
            exec_listed,
            state.settings.freeze.as_ref(),
        )
        .await
        .map_err(failure_error)?;
    let task = working_task(state, task_id, handle.created_at());
    if !exited {
        let task = task.with_status_message(format!("guest program {} running", handle.pid));
        return Ok(GetTaskResult::new(DetailedTask::new(
            task,
            TaskPayload::Working,
        )));
    }
    let code = data.get("exitcode").and_then(Value::as_i64);
    let outcome = if code == Some(0) {
        Ok(data)
    } else {
        Err(ToolFailure::new(
            TASK_FAILED,
            format!("The guest program exited with {code:?}."),
        )
        .with_hint("stdout and stderr are in details.")
        .with_details(data))
    };
    let meta = CallMeta {
        tool: "pve_exec_qemu_guest_command",
        alias_for: None,
        duration: started.elapsed(),
        attempts: 1,
        retries: 0,
        approval: None,
        cluster,
    };
    let mut outcome = outcome;
    if let Some(entry) = state.registry.get("pve_exec_qemu_guest_command") {
        let tier = Caller::of(context).tier_within(state.settings.tier);
        crate::redact::redact_outcome(entry.spec, tier, None, &mut outcome);
    }
    let result = match serde_json::to_value(render(outcome, &meta)) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    Ok(GetTaskResult::new(DetailedTask::new(
        task.with_status_message(format!("guest program {} exited", handle.pid)),
        TaskPayload::Completed { result },
    )))
}
