//! A plan applied as an MCP task: the plan runs in the background after its one approval,
//! and `tasks/get` reads its step, then its answer; `tasks/cancel` stops it, which rolls back
//! the steps that ran.
//!
//! Unlike a Proxmox task, a plan has no state outside this process, so its tasks live in a
//! bounded store here ([`MAX_PLAN_TASKS`]; a finished one is kept for the task TTL). Its inner
//! id is `plan.<plan id>` (the id its audit lines carry), sealed to its caller like every
//! other id ([`super::bound_id`]).
//!
//! Invariants: a plan task is read and cancelled only through an id that opened for its
//! caller; an id this process does not hold is unknown, with the error any unknown id gets;
//! the store never holds more than [`MAX_PLAN_TASKS`] entries (a plan that finds it full of
//! running plans runs in its call instead); a cancel only cancels the plan's token — the plan's
//! own rollback then runs, audited as every revert is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResponse, CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, MetaObject,
    TaskPayload,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::id::IdError;
use crate::identity::Owner;
use crate::state::AppState;

/// Inner ids of plan tasks start with this and a `.`.
const PREFIX: &str = "plan";
/// At most this many plan tasks are held at once (running or finished).
pub const MAX_PLAN_TASKS: usize = 64;

/// One plan task's state.
#[derive(Debug)]
pub struct PlanTask {
    /// Its inner id (`plan.<plan id>`).
    pub inner: String,
    /// When it was made (RFC 3339), as the task's `createdAt`.
    pub created_at: String,
    /// Stops the plan (and so starts its rollback).
    pub cancel: CancellationToken,
    progress: Mutex<Progress>,
}

#[derive(Debug)]
struct Progress {
    message: String,
    /// The plan's answer once it ended, and when.
    ended: Option<(Map<String, Value>, Instant)>,
}

/// What `tasks/get` sees of a plan task.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// Still running: the step it is at.
    Working(String),
    /// Ended: its answer (a `CallToolResult`), and whether it ended by `tasks/cancel`.
    Ended {
        /// The plan's answer.
        result: Map<String, Value>,
        /// Whether `tasks/cancel` stopped it.
        cancelled: bool,
    },
}

impl PlanTask {
    /// Records the step the plan is at.
    pub fn tell(&self, message: &str) {
        if let Ok(mut progress) = self.progress.lock() {
            message.clone_into(&mut progress.message);
        }
    }

    /// Records the plan's answer.
    pub fn finish(&self, result: &CallToolResult) {
        let map = match serde_json::to_value(result) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        if let Ok(mut progress) = self.progress.lock() {
            progress.ended = Some((map, Instant::now()));
        }
    }

    /// What `tasks/get` shows now.
    pub fn seen(&self) -> Seen {
        let Ok(progress) = self.progress.lock() else {
            return Seen::Working(String::new());
        };
        match &progress.ended {
            Some((result, _)) => Seen::Ended {
                result: result.clone(),
                cancelled: self.cancel.is_cancelled(),
            },
            None => Seen::Working(progress.message.clone()),
        }
    }

    fn expired(&self, ttl: Duration) -> bool {
        self.progress
            .lock()
            .map(|p| p.ended.as_ref().is_some_and(|(_, at)| at.elapsed() > ttl))
            .unwrap_or(false)
    }

    fn running(&self) -> bool {
        self.progress
            .lock()
            .map(|p| p.ended.is_none())
            .unwrap_or(false)
    }
}

/// The answer of an approved plan's call: its MCP task, bound to `owner` (and `cluster`).
pub fn created(
    state: &AppState,
    cluster: Option<&str>,
    owner: &Owner,
    task: &PlanTask,
    steps: usize,
) -> CallToolResponse {
    let id = super::bound_id::bind(state, cluster, owner, task.inner.clone());
    let record = super::working_task(state, &id, task.created_at.clone())
        .with_status_message(format!("plan of {steps} steps approved; starting"));
    let mut meta = Map::new();
    meta.insert("plan".into(), task.inner[PREFIX.len() + 1..].into());
    meta.insert("steps".into(), steps.into());
    CallToolResponse::Task(CreateTaskResult::new(record).with_meta(MetaObject(meta)))
}

/// `tasks/get` of a plan: the step it is at, then its answer (or, cancelled, the rollback's
/// summary); an id this process does not hold is unknown.
pub fn get(state: &AppState, task_id: &str, inner: &str) -> Result<GetTaskResult, McpError> {
    let task = global()
        .find(inner)
        .ok_or_else(|| super::id_error(IdError::Unknown))?;
    let record = super::working_task(state, task_id, task.created_at.clone());
    let (record, payload) = match task.seen() {
        Seen::Working(message) => (record.with_status_message(message), TaskPayload::Working),
        Seen::Ended {
            result,
            cancelled: true,
        } => {
            let said = result
                .get("structuredContent")
                .and_then(|c| c.pointer("/error/message"))
                .and_then(Value::as_str)
                .unwrap_or("the plan was cancelled")
                .to_owned();
            (record.with_status_message(said), TaskPayload::Cancelled)
        }
        Seen::Ended { result, .. } => (
            record.with_status_message("plan ended"),
            TaskPayload::Completed { result },
        ),
    };
    Ok(GetTaskResult::new(DetailedTask::new(record, payload)))
}

/// The plan tasks of a process ([`global`]); its own in unit tests.
#[derive(Debug, Default)]
pub struct Store {
    tasks: Mutex<HashMap<String, Arc<PlanTask>>>,
}

/// This process's plan tasks.
pub fn global() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(Store::default)
}

/// Whether an inner id is a plan task's.
pub fn claims(inner: &str) -> bool {
    inner.starts_with(PREFIX) && inner.as_bytes().get(PREFIX.len()) == Some(&b'.')
}

impl Store {
    /// A new plan task for the plan `plan_id`, or `None` when the store is full of running
    /// plans (the plan then runs in its call). Finished tasks older than `ttl` are dropped
    /// first, then, if still full, the oldest finished one.
    pub fn register(&self, plan_id: &str, ttl: Duration) -> Option<Arc<PlanTask>> {
        let mut tasks = self.tasks.lock().ok()?;
        tasks.retain(|_, task| !task.expired(ttl));
        if tasks.len() >= MAX_PLAN_TASKS {
            let oldest = tasks
                .values()
                .filter(|task| !task.running())
                .min_by_key(|task| task.created_at.clone())
                .map(|task| task.inner.clone());
            tasks.remove(&oldest?);
        }
        let inner = format!("{PREFIX}.{plan_id}");
        let task = Arc::new(PlanTask {
            inner: inner.clone(),
            created_at: rmcp::task_manager::current_timestamp(),
            cancel: CancellationToken::new(),
            progress: Mutex::new(Progress {
                message: "approved; starting".to_owned(),
                ended: None,
            }),
        });
        tasks.insert(inner, Arc::clone(&task));
        Some(task)
    }

    /// The plan task `inner` names, if this store holds it.
    pub fn find(&self, inner: &str) -> Option<Arc<PlanTask>> {
        self.tasks.lock().ok()?.get(inner).cloned()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.tasks.lock().map(|t| t.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_store_of_running_plans_takes_no_more_until_one_ends() {
        let store = Store::default();
        let ttl = Duration::from_secs(60);
        let made: Vec<Arc<PlanTask>> = (0..MAX_PLAN_TASKS)
            .map(|i| store.register(&format!("{i:012x}"), ttl).expect("room"))
            .collect();
        assert!(store.register("one-more", ttl).is_none());
        assert_eq!(store.len(), MAX_PLAN_TASKS);
        made[3].finish(&CallToolResult::success(vec![]));
        let next = store.register("after-one-ended", ttl).expect("room");
        assert!(
            store.find(&made[3].inner).is_none(),
            "the finished one made room"
        );
        assert!(store.find(&next.inner).is_some() && store.find(&made[4].inner).is_some());
        assert_eq!(store.len(), MAX_PLAN_TASKS);
    }

    #[test]
    fn a_plan_task_shows_its_step_then_its_answer() {
        let store = Store::default();
        let task = store
            .register("0123456789ab", Duration::from_secs(60))
            .expect("room");
        assert_eq!(task.inner, "plan.0123456789ab");
        task.tell("Step 2 of 3: pve_start_qemu_vm");
        assert_eq!(
            task.seen(),
            Seen::Working("Step 2 of 3: pve_start_qemu_vm".into())
        );
        task.cancel.cancel();
        task.finish(&CallToolResult::success(vec![]));
        assert!(matches!(
            task.seen(),
            Seen::Ended {
                cancelled: true,
                ..
            }
        ));
        assert!(!claims("agentexec.x") && !claims("planx") && claims("plan.x"));
        assert!(store.find("plan.unknown").is_none());
    }
}
