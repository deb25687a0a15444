//! The audit stage of a tool call: which calls are recorded, what their line says, and the
//! fail-closed check before a change is sent.
//!
//! Recorded: every call of a tool that changes something (its effect is not `read`) — sent
//! to Proxmox (`executed`) or stopped before (`rejected`: bad input, no connection) — and
//! every refusal by an approval gate (`refused`), read tools included. Invariant: a change is
//! never sent when its line could not be written right now ([`ensure_change_recordable`]);
//! arguments reach the file only through `redact::mask_arguments`.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{AUDIT_LOG_UNAVAILABLE, AuditEntry, AuditLog};
use crate::catalog::{Backend, ToolSpec};
use crate::envelope::{ToolFailure, codes};
use crate::redact;

/// Error codes of refusals by an approval gate; each one is recorded.
pub const GATE_REFUSALS: &[&str] = &[
    codes::CONFIRMATION_REQUIRED,
    codes::CONFIRMATION_DECLINED,
    codes::CONFIRMATION_CANCELLED,
    codes::CONFIRMATION_TIMEOUT,
    codes::APPROVAL_UNAVAILABLE,
    codes::APPROVAL_STATE_INVALID,
];

/// Error codes of calls stopped before anything was sent.
const NOT_SENT: &[&str] = &[
    codes::TOOL_INPUT_REJECTED,
    codes::PROXMOX_NOT_CONFIGURED,
    "SSH_DISABLED",
];

/// Refuses a change of `spec` before it is sent when the audit log cannot be written
/// (fail closed). Reads always pass.
pub async fn ensure_change_recordable(log: &AuditLog, spec: &ToolSpec) -> Result<(), ToolFailure> {
    if spec.effect.is_read() || !log.is_enabled() {
        return Ok(());
    }
    let check = log.clone();
    let result = tokio::task::spawn_blocking(move || check.ensure_writable())
        .await
        .unwrap_or_else(|e| {
            Err(super::AuditError::Unavailable {
                reason: format!("the audit check stopped: {e}"),
            })
        });
    result.map_err(|e| refusal(spec, &e))
}

/// The failure returned when a change is refused because it could not be recorded.
pub fn refusal(spec: &ToolSpec, error: &super::AuditError) -> ToolFailure {
    ToolFailure::new(
        AUDIT_LOG_UNAVAILABLE,
        format!(
            "Refused: {} changes the cluster and every change is recorded in the audit log, but {error}.",
            spec.name
        ),
    )
    .with_hint(
        "Nothing was sent to Proxmox. Fix the audit log (free space, permissions, or point PVE_AUDIT_LOG at a writable file) and retry; PVE_AUDIT_LOG=off runs without an audit trail.",
    )
}

/// How a finished call is classified, or `None` when it is not recorded.
pub fn decision_for(spec: &ToolSpec, outcome: &Result<Value, ToolFailure>) -> Option<&'static str> {
    let code = outcome.as_ref().err().map(|f| f.code);
    match code {
        Some(code) if GATE_REFUSALS.contains(&code) => Some("refused"),
        Some(AUDIT_LOG_UNAVAILABLE) => None,
        _ if spec.effect.is_read() => None,
        Some(code) if NOT_SENT.contains(&code) => Some("rejected"),
        _ => Some("executed"),
    }
}

/// Builds the line of a finished call from plain inputs. `masked_arguments` must come from
/// `redact::mask_arguments`; `approval` says how the change was approved, if it was.
#[allow(clippy::too_many_arguments)]
pub fn entry(
    wire_name: &str,
    canonical: Option<&str>,
    masked_arguments: Value,
    decision: &str,
    approval: Option<String>,
    outcome: &str,
    pve_status: Option<u16>,
    upid: Option<String>,
    duration: Duration,
) -> AuditEntry {
    AuditEntry {
        tool: wire_name.to_owned(),
        canonical: canonical.map(str::to_owned),
        arguments: masked_arguments,
        decision: decision.to_owned(),
        approval,
        outcome: outcome.to_owned(),
        pve_status,
        upid,
        duration,
    }
}

/// The task a successful answer started: a UPID string, or an object's `upid`.
pub fn upid_of(outcome: &Result<Value, ToolFailure>) -> Option<String> {
    let data = outcome.as_ref().ok()?;
    let text = match data {
        Value::String(s) => s.as_str(),
        Value::Object(map) => map.get("upid")?.as_str()?,
        _ => return None,
    };
    text.starts_with("UPID:").then(|| text.to_owned())
}

/// Proxmox's HTTP status: from a failure's details, or 200 for a REST success.
pub fn pve_status_of(spec: &ToolSpec, outcome: &Result<Value, ToolFailure>) -> Option<u16> {
    match outcome {
        Ok(_) if !matches!(spec.backend, Backend::Ssh(_)) => Some(200),
        Ok(_) => None,
        Err(failure) => failure
            .details
            .as_ref()?
            .get("status")?
            .as_u64()
            .and_then(|s| u16::try_from(s).ok()),
    }
}

/// Who was called, with what, and how it was approved: the plain inputs of a line besides
/// its outcome.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The row.
    pub spec: &'a ToolSpec,
    /// The name the client used.
    pub wire_name: &'a str,
    /// The canonical name when `wire_name` is an alias.
    pub alias_for: Option<&'a str>,
    /// The client's raw arguments (masked here, before they are written).
    pub arguments: Option<&'a Map<String, Value>>,
    /// How a gated call was approved (`person`, `confirm-flag`).
    pub approval: Option<&'a str>,
}

/// The last stage of a call: appends its line when it is recorded. A line that cannot be
/// written after the fact is reported on stderr (the change already happened); while the
/// file stays unwritable, further changes are refused by [`ensure_change_recordable`].
pub async fn record_call(
    log: &AuditLog,
    call: &Call<'_>,
    outcome: &Result<Value, ToolFailure>,
    duration: Duration,
) {
    if !log.is_enabled() {
        return;
    }
    let Some(decision) = decision_for(call.spec, outcome) else {
        return;
    };
    let masked = redact::mask_arguments(call.spec, call.arguments.unwrap_or(&Map::new()));
    let line = entry(
        call.wire_name,
        call.alias_for,
        masked,
        decision,
        call.approval.map(str::to_owned),
        outcome.as_ref().err().map_or("ok", |f| f.code),
        pve_status_of(call.spec, outcome),
        upid_of(outcome),
        duration,
    );
    if let Err(e) = log.append(line).await {
        tracing::error!(tool = call.wire_name, error = %e, "audit line not written");
    }
}
