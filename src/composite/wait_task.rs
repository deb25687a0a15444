//! `pve_wait_task`: follow a Proxmox task to its end and answer its exit status and log
//! tail, with progress notifications when the client asked for them.
//!
//! Invariants: waiting only reads; when the wait ends first (timeout, MCP cancellation,
//! the session ending), the Proxmox task keeps running. A wait holds a follower slot of its
//! session; beyond the cap it is refused with `TOO_MANY_WAITS` before any request, and it
//! never lasts longer than [`follow::MAX_FOLLOW_SECS`], whatever `timeout` asks.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::backends::Backends;
use crate::envelope::{ToolFailure, codes, not_configured};
use crate::pve::Upid;
use crate::schema::{ArgValue, ValidArgs};
use crate::tasks::{self, follow};

/// Follows the task named by `node` + `upid` for at most `timeout` seconds (capped at
/// [`follow::MAX_FOLLOW_SECS`]).
pub async fn run(
    backends: &Backends<'_>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let Some(client) = backends.pve else {
        return (Err(not_configured()), 0);
    };
    let upid = match args.str("upid").map(Upid::parse) {
        Some(Ok(upid)) => upid,
        Some(Err(err)) => {
            return (
                Err(ToolFailure::new(
                    codes::TOOL_INPUT_REJECTED,
                    err.to_string(),
                )),
                0,
            );
        }
        None => {
            return (
                Err(ToolFailure::new(
                    codes::TOOL_INPUT_REJECTED,
                    "upid is required",
                )),
                0,
            );
        }
    };
    let seconds = match args.values.get("timeout") {
        Some(ArgValue::Int(s)) => u64::try_from(*s).unwrap_or(tasks::DEFAULT_WAIT_SECS),
        _ => tasks::DEFAULT_WAIT_SECS,
    };
    let limit = Duration::from_secs(follow::capped_secs(seconds));
    let session = tasks::current_session();
    let _slot = match follow::claim(session.as_ref()) {
        Ok(slot) => slot,
        Err(busy) => return (Err(tasks::too_many_waits(busy, &upid, false)), 0),
    };
    let sink = tasks::current_sink();
    let ended = follow::follow(
        client,
        &upid,
        Some(Instant::now() + limit),
        sink.as_ref(),
        session.as_ref(),
        false,
        cancel,
    )
    .await;
    let outcome = ended.and_then(|ending| tasks::outcome_of(ending, limit));
    (outcome, 1)
}
