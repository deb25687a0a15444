//! `pve_exec_qemu_guest_command`: start an argv through the guest agent, then follow
//! `agent/exec-status` until the program exits or the call's own timeout passes.
//!
//! For clients with the MCP tasks extension the handler answers once the program started
//! ([`detached_scope`]); `tasks/get` then reads `exec-status` ([`render_status`]).
//!
//! Invariant: the argv is sent as Proxmox's array (one form key per item, never joined
//! into a shell line); stdout and stderr come back capped with truncation flags, as data.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::calls::{Calls, integer, qemu_path};
use crate::envelope::{ToolFailure, codes, failure_from};
use crate::pve::ApiRequest;
use crate::schema::{ArgValue, ValidArgs};
/// The answer's shape is shared with the task follower (`tasks::exec_task`), which owns it.
pub use crate::tasks::exec_task::{OUTPUT_CAP, render_status};
use crate::tasks::exec_task::{render, truthy};

/// First and longest pause between status polls.
const FIRST_POLL: Duration = Duration::from_millis(100);
const LONGEST_POLL: Duration = Duration::from_millis(1_000);

tokio::task_local! {
    static DETACHED: bool;
}

/// Runs `work` with the exec handler told to answer as soon as the program started (the
/// caller turns the pid into an MCP task that `tasks/get` follows).
pub async fn detached_scope<F: std::future::Future>(detached: bool, work: F) -> F::Output {
    DETACHED.scope(detached, work).await
}

fn detached() -> bool {
    DETACHED.try_with(|d| *d).unwrap_or(false)
}

/// Runs the argv and follows it; see the module docs.
pub(super) async fn run(calls: &mut Calls<'_>, args: &ValidArgs) -> Result<Value, ToolFailure> {
    let base = qemu_path(args)?;
    let argv = match args.values.get("command") {
        Some(ArgValue::List(items)) if !items.is_empty() => items.clone(),
        _ => {
            return Err(ToolFailure::new(
                codes::TOOL_INPUT_REJECTED,
                "command must be a non-empty argv array; nothing was sent to Proxmox.",
            ));
        }
    };
    let timeout = Duration::from_secs(integer(args, "timeout").unwrap_or(30).clamp(1, 600) as u64);
    let mut start = ApiRequest::post(format!("{base}/agent/exec"));
    for item in &argv {
        start = start.param("command", item.clone());
    }
    if let Some(input) = args.str("input-data") {
        start = start.param("input-data", input);
    }
    let started = calls.send(start).await.map_err(failure_from)?;
    let pid = started.get("pid").and_then(Value::as_i64).ok_or_else(|| {
        ToolFailure::new(
            codes::TOOL_INPUT_REJECTED,
            format!("The guest agent did not return a pid: {started}"),
        )
    })?;
    if detached() {
        return Ok(json!({"pid": pid, "exited": false}));
    }
    let deadline = Instant::now() + timeout;
    let mut delay = FIRST_POLL;
    loop {
        let status = calls
            .send(
                ApiRequest::get(format!("{base}/agent/exec-status")).param("pid", pid.to_string()),
            )
            .await
            .map_err(failure_from)?;
        if truthy(status.get("exited")) {
            return Ok(render(pid, &status, true));
        }
        if Instant::now() >= deadline || calls.cancelled() {
            let mut out = render(pid, &status, false);
            out["note"] = json!(format!(
                "Still running after {}s; the program keeps running in the guest.",
                timeout.as_secs()
            ));
            return Ok(out);
        }
        calls
            .pause(delay.min(deadline.saturating_duration_since(Instant::now())))
            .await;
        delay = (delay * 2).min(LONGEST_POLL);
    }
}
