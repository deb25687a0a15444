//! The end of every call: redact → audit → envelope, for the pipeline and the task stage alike.
//!
//! `seal` masks the outcome (per field, by the server's tier) and writes the outcome audit
//! line; `finish` logs, cuts an answer over the output cap and renders the envelope; `conclude`
//! is both. It lives below `dispatch`, `pipeline` and `tasks` (all three end calls here) and
//! imports none of them. Invariant: every answer passes `finish`, so none exceeds the cap.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::time::Instant;

use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::audit::{self, AuditLog};
use crate::catalog::Tier;
use crate::envelope::{CallMeta, ToolFailure, render};
use crate::redact;
use crate::registry::Entry;

/// Logs the outcome, cuts an answer over the size cap (with a note on how to page), and
/// renders the envelope with the call's meta.
pub fn finish(
    entry: &Entry,
    started: Instant,
    outcome: Result<Value, ToolFailure>,
    attempts: u32,
    approval: Option<&'static str>,
) -> CallToolResult {
    let meta = CallMeta {
        tool: entry.wire_name,
        alias_for: entry.alias_for,
        duration: started.elapsed(),
        attempts,
        retries: attempts.saturating_sub(1),
        approval,
        cluster: entry.cluster,
    };
    // DEBUG, not INFO: at the default level a per-call line cost more CPU than the call's own
    // code (see docs/PERFORMANCE.md); `RUST_LOG=nandi_proxmox_mcp=debug` brings it back.
    match &outcome {
        Ok(_) => tracing::debug!(
            tool = entry.wire_name,
            ms = meta.duration.as_millis() as u64,
            "tool call ok"
        ),
        Err(f) => tracing::debug!(tool = entry.wire_name, code = f.code, "tool call failed"),
    }
    // The one place every answer passes: nothing larger than the cap reaches the client.
    let outcome = outcome.map(|data| crate::lean::cap(data, entry.spec, entry.output_cap));
    render(outcome, &meta)
}

/// What the last stages of a call need besides its outcome: the server's configured tier
/// (what redaction may reveal), the audit trail (`None`: not recorded, e.g. a dry-run) and
/// the client's raw arguments (masked before they are recorded or echoed).
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// `policy::Settings::tier` of the server.
    pub tier: Tier,
    /// Where the call is recorded, if it is.
    pub audit: Option<&'a AuditLog>,
    /// The arguments as the client sent them.
    pub arguments: Option<&'a Map<String, Value>>,
    /// Who asked ([`crate::identity::Caller::label`]), named on the audit line.
    pub caller: Option<&'a str>,
}

/// The end of every call: redact → envelope → audit. `approval` is how a gated call was
/// approved (`person`, `confirm-flag`).
pub async fn conclude(
    record: &Record<'_>,
    entry: &Entry,
    started: Instant,
    mut outcome: Result<Value, ToolFailure>,
    attempts: u32,
    approval: Option<&'static str>,
) -> CallToolResult {
    seal(record, entry, started, &mut outcome, approval).await;
    finish(entry, started, outcome, attempts, approval)
}

/// Redact → audit, without rendering: for callers that build the answer themselves (a task
/// handle) after the outcome is final.
pub async fn seal(
    record: &Record<'_>,
    entry: &Entry,
    started: Instant,
    outcome: &mut Result<Value, ToolFailure>,
    approval: Option<&'static str>,
) {
    redact::redact_outcome(entry.spec, record.tier, record.arguments, outcome);
    if let Some(log) = record.audit {
        let call = audit::call::Call {
            spec: entry.spec,
            wire_name: entry.wire_name,
            alias_for: entry.alias_for,
            arguments: record.arguments,
            approval,
            caller: record.caller,
        };
        audit::call::record_call(log, &call, outcome, started.elapsed()).await;
    }
}
