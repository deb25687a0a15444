//! Task endpoints: list, status, log, and stopping a running task.
//!
//! Invariant: a UPID is only found through the node that ran it (the node in
//! the path must be the UPID's node), a malformed UPID is a parameter error,
//! and a well-formed unknown one is "no such task" — as in Proxmox.

use serde_json::{Value, json};

use super::super::api::{ApiError, Call, RawBody};
use super::super::stamps::unix_now;
use super::super::task::{Task, Upid};

/// Proxmox's default page size for task lists and logs.
const DEFAULT_LIMIT: i64 = 50;

fn page_bounds(call: &Call<'_>, len: usize) -> (usize, usize) {
    let start = usize::try_from(call.int("start").unwrap_or(0).max(0)).unwrap_or(0);
    let limit = usize::try_from(call.int("limit").unwrap_or(DEFAULT_LIMIT).max(0)).unwrap_or(0);
    let start = start.min(len);
    (start, (start + limit).min(len))
}

fn status_matches(task: &Task, filter: &str) -> bool {
    let Some(exit) = task.exitstatus() else {
        // Running tasks have no final status; only an explicit
        // "running"-style filter could want them, and Proxmox has none.
        return false;
    };
    let class = if exit == "OK" {
        "ok"
    } else if exit.starts_with("WARNINGS") {
        "warning"
    } else {
        "error"
    };
    filter
        .split(',')
        .any(|f| f.trim().eq_ignore_ascii_case(class))
}

/// `GET /nodes/{node}/tasks`, newest first, with the documented filters.
pub(in super::super) fn list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node");
    let vmid = call.int("vmid").map(|v| v.to_string());
    let typefilter = call.str("typefilter");
    let userfilter = call.str("userfilter");
    let errors_only = call.flag("errors");
    // Without `source`, running tasks are listed too (without status), so
    // a freshly started task shows up in the node's task history.
    let source = call.str("source").unwrap_or("all");
    let since = call.int("since");
    let until = call.int("until");
    let statusfilter = call.str("statusfilter");
    let matching: Vec<&Task> = call
        .st
        .tasks
        .iter()
        .rev()
        .filter(|t| t.upid.node == node)
        .filter(|t| match source {
            "active" => t.is_running(),
            "archive" => !t.is_running(),
            _ => true,
        })
        .filter(|t| vmid.as_deref().is_none_or(|v| t.upid.id == v))
        .filter(|t| typefilter.is_none_or(|f| t.upid.kind == f))
        .filter(|t| userfilter.is_none_or(|f| t.upid.user.contains(f)))
        .filter(|t| !errors_only || t.exitstatus().is_some_and(|s| s != "OK"))
        .filter(|t| since.is_none_or(|s| i64::from(t.upid.starttime) >= s))
        .filter(|t| until.is_none_or(|u| i64::from(t.upid.starttime) <= u))
        .filter(|t| statusfilter.is_none_or(|f| status_matches(t, f)))
        .collect();
    let (from, to) = page_bounds(call, matching.len());
    let rows: Vec<Value> = matching[from..to].iter().map(|t| t.list_entry()).collect();
    let total = matching.len();
    call.attrib("total", json!(total));
    Ok(Value::Array(rows))
}

/// `GET /cluster/tasks`: the recent tasks of every node, newest first, as the cluster's
/// task index lists them (each with its user and token id).
pub(in super::super) fn cluster_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(Value::Array(
        call.st.tasks.iter().rev().map(Task::list_entry).collect(),
    ))
}

/// Finds the task named by the `{upid}` capture on the `{node}` capture.
fn task<'c>(call: &'c mut Call<'_>) -> Result<&'c mut Task, ApiError> {
    let upid = call.cap("upid").to_string();
    let node = call.cap("node").to_string();
    if Upid::parse(&upid).is_none() {
        return Err(ApiError::param(
            "upid",
            format!("unable to parse worker upid '{upid}'"),
        ));
    }
    call.st
        .task_mut(&node, &upid)
        .ok_or_else(|| ApiError::server("no such task"))
}

/// `GET /nodes/{node}/tasks/{upid}/status`.
pub(in super::super) fn status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(task(call)?.status_entry())
}

/// `GET /nodes/{node}/tasks/{upid}/log`: `[{n, t}]` lines from `start`
/// (0-based) for `limit` lines, with the line count in `total`; with
/// `download=1` the whole log as plain text.
pub(in super::super) fn log(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let lines = task(call)?.log_lines();
    if call.flag("download") {
        let mut body = lines.join("\n");
        body.push('\n');
        call.raw = Some(RawBody {
            content_type: "text/plain",
            body,
        });
        return Ok(Value::Null);
    }
    let (from, to) = page_bounds(call, lines.len());
    let rows: Vec<Value> = lines[from..to]
        .iter()
        .enumerate()
        .map(|(i, t)| json!({ "n": from + i + 1, "t": t }))
        .collect();
    call.attrib("total", json!(lines.len()));
    Ok(Value::Array(rows))
}

/// `DELETE /nodes/{node}/tasks/{upid}`: stops a running task.
pub(in super::super) fn stop(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let task = task(call)?;
    if task.is_running() {
        task.stopped = Some((unix_now(), "interrupted by signal".to_string()));
        task.stopped_at = Some(std::time::Instant::now());
    }
    Ok(Value::Null)
}
