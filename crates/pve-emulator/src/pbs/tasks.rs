//! Handlers of `/nodes/{node}/tasks…`: the task list with PBS's filters, a task's status
//! and log, and aborting a running task.
//!
//! Invariant: a task is addressed by its percent-decoded UPID exactly as it was handed out;
//! the list is newest first and, like PBS, carries the number of matches as `total`.

use serde_json::{Value, json};

use super::api::{Call, PbsError};
use super::state::PbsState;
use super::task::{PbsTask, Upid};

/// The task the `{upid}` capture names: a malformed UPID is a parameter error.
fn addressed<'c>(call: &'c Call<'_>) -> Result<&'c PbsTask, PbsError> {
    let text = call.cap("upid");
    if Upid::parse(text).is_none() {
        return Err(PbsError::param(
            "upid",
            "value does not match the regex pattern",
        ));
    }
    call.st.task(text)
}

/// Whether `task` belongs to datastore `store` (PBS's `check_job_store`): its worker id
/// names the store, or it is a run of a job of that store (whose worker id is the job id).
fn of_store(st: &PbsState, task: &PbsTask, store: &str) -> bool {
    let id = &task.upid.id;
    let jobs = match task.upid.kind.as_str() {
        "syncjob" => &st.sync_jobs,
        "verificationjob" => &st.verify_jobs,
        _ => return id == store || id.starts_with(&format!("{store}:")),
    };
    jobs.iter().any(|j| &j.id == id && j.store == store)
}

/// `GET /nodes/{node}/tasks`.
pub(super) fn list(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let start = usize::try_from(call.int("start").unwrap_or(0)).unwrap_or(0);
    let limit = usize::try_from(call.int("limit").unwrap_or(50)).unwrap_or(0);
    let running = call.opt_flag("running").unwrap_or(false);
    let errors = call.opt_flag("errors").unwrap_or(false);
    let store = call.str("store");
    let typefilter = call.str("typefilter");
    let userfilter = call.str("userfilter");
    let since = call.int("since");
    let until = call.int("until");
    let matches: Vec<&PbsTask> = call
        .st
        .tasks
        .iter()
        .rev()
        .filter(|t| !running || t.is_running())
        .filter(|t| !errors || t.exitstatus().is_some_and(|s| s != "OK"))
        .filter(|t| store.is_none_or(|s| of_store(call.st, t, s)))
        .filter(|t| typefilter.is_none_or(|f| t.upid.kind.contains(f)))
        .filter(|t| userfilter.is_none_or(|f| t.upid.auth_id.contains(f)))
        .filter(|t| since.is_none_or(|s| t.upid.starttime >= s))
        .filter(|t| until.is_none_or(|u| t.upid.starttime <= u))
        .collect();
    let total = matches.len();
    let page: Vec<Value> = matches
        .into_iter()
        .skip(start)
        .take(limit)
        .map(PbsTask::list_entry)
        .collect();
    call.attrib("total", json!(total));
    Ok(Value::Array(page))
}

/// `GET /nodes/{node}/tasks/{upid}/status`.
pub(super) fn status(call: &mut Call<'_>) -> Result<Value, PbsError> {
    Ok(addressed(call)?.status_entry())
}

/// `GET /nodes/{node}/tasks/{upid}/log`: lines `{n, t}` numbered from 1, `start` lines
/// skipped, at most `limit` (default 50) returned, `total` all lines so far.
pub(super) fn log(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let start = usize::try_from(call.int("start").unwrap_or(0)).unwrap_or(0);
    let limit = usize::try_from(call.int("limit").unwrap_or(50)).unwrap_or(0);
    let test_status = call.opt_flag("test-status").unwrap_or(false);
    let task = addressed(call)?;
    let lines = task.log_lines();
    let running = task.is_running();
    let total = lines.len();
    let page: Vec<Value> = lines
        .into_iter()
        .enumerate()
        .skip(start)
        .take(limit)
        .map(|(i, t)| json!({"n": i + 1, "t": t}))
        .collect();
    call.attrib("total", json!(total));
    if test_status {
        call.attrib("active", json!(running));
    }
    Ok(Value::Array(page))
}

/// `DELETE /nodes/{node}/tasks/{upid}`: aborts the task if it still runs.
pub(super) fn stop(call: &mut Call<'_>) -> Result<Value, PbsError> {
    addressed(call)?;
    let text = call.cap("upid").to_owned();
    let now = chrono::Utc::now().timestamp();
    if let Some(task) = call.st.tasks.iter_mut().find(|t| t.text == text)
        && task.is_running()
    {
        task.aborted = Some(now);
        tracing::debug!(upid = %text, "PBS emulator task aborted");
    }
    Ok(Value::Null)
}
