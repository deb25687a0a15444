//! The audit stage of a tool call: which calls are recorded, what their lines say, and the
//! fail-closed checks before a change is sent.
//!
//! Recorded: every call the caller says changes something (`is_change`; today: its effect
//! is not `read`, or it passed an approval gate) — a `sending` line written and synced
//! *before* the request ([`record_intent`]), then its outcome (`executed`), or `rejected`
//! when it was stopped before (bad input, no connection) — and every refusal by an approval
//! gate (`refused`), read tools included. Invariant: a change is never sent unless its
//! `sending` line is on disk; any write or sync error refuses it with
//! `AUDIT_LOG_UNAVAILABLE`. Arguments reach the file only through `redact::mask_arguments`.
//! Every line written while a plan runs ([`in_plan`]) names the plan, so its question, its
//! steps and its rollback read as one.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{AUDIT_LOG_UNAVAILABLE, AuditEntry, AuditLog};
use crate::catalog::{Backend, ToolSpec};
use crate::envelope::{ToolFailure, codes};
use crate::redact;

tokio::task_local! {
    static PLAN: String;
}

/// Runs a plan's work with its id in scope: every audit line written meanwhile (the plan
/// call's, its steps', its reverts') carries `"plan": id`.
pub async fn in_plan<F: std::future::Future>(id: String, work: F) -> F::Output {
    PLAN.scope(id, work).await
}

/// The plan the running call belongs to, if any.
pub fn plan_of_this_call() -> Option<String> {
    PLAN.try_with(Clone::clone).ok()
}

/// Error codes of refusals by an approval gate, the tier in force (a caller's credentials
/// below the tool's tier, an effect beyond the approved ones) or the kill switch; each one
/// is recorded, and none of them sent anything.
pub const GATE_REFUSALS: &[&str] = &[
    codes::EFFECT_NOT_APPROVED,
    codes::CONFIRMATION_REQUIRED,
    codes::CONFIRMATION_DECLINED,
    codes::CONFIRMATION_CANCELLED,
    codes::CONFIRMATION_TIMEOUT,
    codes::APPROVAL_UNAVAILABLE,
    codes::APPROVAL_STATE_INVALID,
    codes::FROZEN,
    codes::CLUSTER_NOT_ALLOWED,
    codes::POLICY_DENIED,
    codes::PERSON_NOT_MAPPED,
    codes::SSH_NOT_PER_PERSON,
];

/// Error codes of calls stopped before anything was sent.
const NOT_SENT: &[&str] = &[
    codes::TOOL_INPUT_REJECTED,
    codes::UNDO_STALE,
    codes::UNDO_NOT_REVERTIBLE,
    codes::PROXMOX_NOT_CONFIGURED,
    "SSH_DISABLED",
];

/// Refuses a change before anyone is asked when the audit log cannot be written now (fail
/// closed; checked on every call, never cached). `is_change` comes from the caller; calls
/// that are not changes always pass. This early check cannot see a full disk: the binding
/// check is [`record_intent`], just before the request.
pub async fn ensure_change_recordable(
    log: &AuditLog,
    spec: &ToolSpec,
    is_change: bool,
) -> Result<(), ToolFailure> {
    if !is_change || !log.is_enabled() {
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

/// Decision of the line written before a change is sent.
pub const SENDING: &str = "sending";

/// Outcome of a `sending` line (its result follows on a later line).
pub const PENDING: &str = "pending";

/// Appends and syncs the `sending` line of an approved change, right before it is sent:
/// the tool, its masked arguments and how it was approved. `Ok` means the line is on disk
/// (or the call is not a change, or the log is `off`) and the request may go out; any
/// error (ENOSPC, EIO, EROFS, EDQUOT, a full tmpfs, `/dev/full`, a cut last line) refuses
/// the call with `AUDIT_LOG_UNAVAILABLE` and nothing may be sent. The line's sequence
/// number comes back when one was written (an undo record links to it).
pub async fn record_intent(
    log: &AuditLog,
    call: &Call<'_>,
    is_change: bool,
) -> Result<Option<u64>, ToolFailure> {
    if !is_change || !log.is_enabled() {
        return Ok(None);
    }
    let masked = redact::mask_arguments(call.arguments.unwrap_or(&Map::new()));
    let mut line = entry(
        call.wire_name,
        call.alias_for,
        masked,
        SENDING,
        call.approval.map(str::to_owned),
        PENDING,
        None,
        None,
        Duration::ZERO,
    );
    line.caller = call.caller.map(str::to_owned);
    // The signed-in person who decided it on the approval page (approved or declined).
    line.approver = crate::approval::approver_of_this_call();
    line.plan = plan_of_this_call();
    match log.append(line).await {
        Ok(appended) => Ok(appended.map(|a| a.seq)),
        Err(e) => {
            tracing::error!(tool = call.wire_name, error = %e, "change refused: audit line not written");
            Err(refusal(call.spec, &e))
        }
    }
}

/// The failure returned when a change is refused because it could not be recorded.
pub fn refusal(spec: &ToolSpec, error: &super::AuditError) -> ToolFailure {
    ToolFailure::new(
        AUDIT_LOG_UNAVAILABLE,
        format!(
            "Refused: {} is recorded in the audit log before it is sent, but {error}.",
            spec.name
        ),
    )
    .with_hint(
        "Nothing was sent to Proxmox. Fix the audit log (free space, permissions, or point PVE_AUDIT_LOG at a writable file) and retry; PVE_AUDIT_LOG=off runs without an audit trail.",
    )
}

/// How a finished call is classified, or `None` when it is not recorded. An `approved` call
/// (it passed a gate) counts as a change even when its row reads.
fn decision_of(
    spec: &ToolSpec,
    approved: bool,
    outcome: &Result<Value, ToolFailure>,
) -> Option<&'static str> {
    let code = outcome.as_ref().err().map(|f| f.code);
    match code {
        Some(code) if GATE_REFUSALS.contains(&code) => Some("refused"),
        Some(AUDIT_LOG_UNAVAILABLE) => None,
        _ if spec.effect.is_read() && !approved => None,
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
        caller: None,
        approver: None,
        plan: None,
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
    /// Who asked ([`crate::identity::Caller::label`]).
    pub caller: Option<&'a str>,
}

/// The last stage of a call: appends its outcome line when it is recorded (a change, a
/// gated call that was approved, or a gate refusal). A line that cannot be written after
/// the fact is reported on stderr: the change already happened, and its `sending` line is
/// on disk; while the file stays unwritable, further changes are refused by
/// [`record_intent`].
pub async fn record_call(
    log: &AuditLog,
    call: &Call<'_>,
    outcome: &Result<Value, ToolFailure>,
    duration: Duration,
) {
    if !log.is_enabled() {
        return;
    }
    // An approved gated read had a `sending` line too, so its outcome is recorded as well.
    let Some(decision) = decision_of(call.spec, call.approval.is_some(), outcome) else {
        return;
    };
    let masked = redact::mask_arguments(call.arguments.unwrap_or(&Map::new()));
    let mut line = entry(
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
    line.caller = call.caller.map(str::to_owned);
    // The signed-in person who decided it on the approval page (approved or declined).
    line.approver = crate::approval::approver_of_this_call();
    line.plan = plan_of_this_call();
    if let Err(e) = log.append(line).await {
        tracing::error!(tool = call.wire_name, error = %e, "audit line not written");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditTarget;
    use serde_json::json;

    fn call<'a>(args: &'a Map<String, Value>, approval: Option<&'a str>) -> Call<'a> {
        Call {
            spec: crate::catalog::find("pve_create_user").unwrap(),
            wire_name: "pve_create_user",
            alias_for: None,
            arguments: Some(args),
            approval,
            caller: Some("oauth:alice"),
        }
    }

    #[tokio::test]
    async fn intent_is_written_masked_before_the_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(AuditTarget::File(path.clone()));
        let args = json!({"userid": "a@pve", "password": "intent-canary-1"});
        let args = args.as_object().unwrap().clone();
        let call = call(&args, Some("confirm-flag"));
        record_intent(&log, &call, false).await.unwrap();
        assert!(!path.exists(), "not a change: no line");
        record_intent(&log, &call, true).await.unwrap();
        record_call(&log, &call, &Ok(Value::Null), Duration::from_millis(3)).await;
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("intent-canary-1"));
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["decision"], SENDING);
        assert_eq!(lines[0]["outcome"], PENDING);
        assert_eq!(lines[0]["approval"], "confirm-flag");
        assert_eq!(lines[0]["caller"], "oauth:alice");
        assert_eq!(lines[1]["caller"], "oauth:alice");
        assert_eq!(lines[1]["decision"], "executed");
        assert!(
            super::super::verify::verify_file(&path)
                .unwrap()
                .is_intact()
        );
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn an_unwritable_intent_refuses() {
        let log = AuditLog::new(AuditTarget::File("/dev/full".into()));
        let args = Map::new();
        let failure = record_intent(&log, &call(&args, None), true)
            .await
            .unwrap_err();
        assert_eq!(failure.code, AUDIT_LOG_UNAVAILABLE);
        assert!(failure.hint.unwrap().contains("Nothing was sent"));
        let off = AuditLog::off();
        record_intent(&off, &call(&args, None), true).await.unwrap();
    }

    #[test]
    fn only_a_rest_call_has_a_proxmox_status() {
        use crate::catalog::Backend;
        let ok: Result<Value, ToolFailure> = Ok(Value::Null);
        let over_ssh = crate::catalog::all()
            .find(|s| matches!(s.backend, Backend::Ssh(_)))
            .unwrap();
        let rest = crate::catalog::all()
            .find(|s| !matches!(s.backend, Backend::Ssh(_)))
            .unwrap();
        assert_eq!(pve_status_of(over_ssh, &ok), None, "{}", over_ssh.name);
        assert_eq!(pve_status_of(rest, &ok), Some(200), "{}", rest.name);
        let rejected = Err(ToolFailure::new("PVE_ERROR", "x").with_details(json!({"status": 403})));
        assert_eq!(pve_status_of(rest, &rejected), Some(403));
    }

    #[test]
    fn an_approved_read_is_recorded_and_an_audit_refusal_is_not() {
        let read = crate::catalog::all().find(|s| s.effect.is_read()).unwrap();
        let ok: Result<Value, ToolFailure> = Ok(Value::Null);
        assert_eq!(decision_of(read, false, &ok), None);
        assert_eq!(decision_of(read, true, &ok), Some("executed"));
        let unavailable = Err(ToolFailure::new(AUDIT_LOG_UNAVAILABLE, "x"));
        assert_eq!(decision_of(read, true, &unavailable), None);
    }
}
