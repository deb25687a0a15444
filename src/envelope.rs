//! The result envelope every tool call returns, success or failure.
//!
//! Shape (kept from the reference so existing prompts and parsers keep working):
//! `{ok: true, data, meta}` or `{ok: false, error: {code, message, hint?, details?, impact?}, meta}`
//! with `meta = {tool, aliasFor?, durationMs, attempts, retries, timestamp}` (`attempts`: requests
//! actually sent, 0 when nothing was). Invariants: every failure is also flagged `isError: true`
//! on the MCP result, and the same JSON is sent as text (for older clients) and as
//! `structuredContent`; no string of a failure exceeds a few kB, whatever client input or
//! Proxmox's echo of it was placed there.

use std::time::Duration;

use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

/// Stable error codes a caller can branch on (the reference's list plus our additions).
pub mod codes {
    /// Arguments failed validation or a cross-field rule; nothing was sent.
    pub const TOOL_INPUT_REJECTED: &str = "TOOL_INPUT_REJECTED";
    /// A confirm-gated tool was called without `confirm: true`; nothing was sent.
    pub const CONFIRMATION_REQUIRED: &str = "CONFIRMATION_REQUIRED";
    /// No Proxmox connection is configured for this server.
    pub const PROXMOX_NOT_CONFIGURED: &str = "PROXMOX_NOT_CONFIGURED";
    /// The person declined the approval question; nothing was sent.
    pub const CONFIRMATION_DECLINED: &str = "CONFIRMATION_DECLINED";
    /// The person dismissed the question, or it could not be asked; nothing was sent.
    pub const CONFIRMATION_CANCELLED: &str = "CONFIRMATION_CANCELLED";
    /// Nobody answered the approval question in time; nothing was sent.
    pub const CONFIRMATION_TIMEOUT: &str = "CONFIRMATION_TIMEOUT";
    /// A person's approval is required and this client cannot ask one; nothing was sent.
    pub const APPROVAL_UNAVAILABLE: &str = "APPROVAL_UNAVAILABLE";
    /// An MRTR approval state was forged, edited, replayed, expired or for another call.
    pub const APPROVAL_STATE_INVALID: &str = "APPROVAL_STATE_INVALID";
    /// A request's effects were not covered by the call's approval (or need a higher tier);
    /// nothing was sent.
    pub const EFFECT_NOT_APPROVED: &str = "EFFECT_NOT_APPROVED";
    /// Changes are frozen (`nandi-proxmox-mcp freeze`): the call would do more than a plain
    /// read; nothing was sent and nobody was asked. `unfreeze` lifts it.
    pub const FROZEN: &str = "FROZEN";
    /// Too many task waits run at once in this session or server; this one was not started
    /// (the Proxmox task is unaffected). Call again later or read `pve_get_task_status`.
    pub const TOO_MANY_WAITS: &str = "TOO_MANY_WAITS";
    /// The named cluster's policy (tier, module mode, lists) does not allow the tool; nothing
    /// was sent to any cluster. The message names the clusters where it is allowed.
    pub const CLUSTER_NOT_ALLOWED: &str = "CLUSTER_NOT_ALLOWED";
    /// The recorded change's target changed since (another config digest or values, the
    /// snapshot or clone gone, another power state): the revert was refused before anyone
    /// was asked; only reads were sent.
    pub const UNDO_STALE: &str = "UNDO_STALE";
    /// The recorded change cannot be reverted (already reverted, or nothing the server can
    /// undo); nothing was sent.
    pub const UNDO_NOT_REVERTIBLE: &str = "UNDO_NOT_REVERTIBLE";
    /// A `deny` rule of the operator's policy (docs/POLICY.md) matched the call; nothing was
    /// sent (but the target's plain reads a rule needed) and nobody was asked.
    pub const POLICY_DENIED: &str = "POLICY_DENIED";
    /// Per-person Proxmox identity is on (`PVE_PEOPLE_FILE`) and the OAuth caller has no
    /// entry in it; nothing was sent.
    pub const PERSON_NOT_MAPPED: &str = "PERSON_NOT_MAPPED";
    /// An SSH tool was called by a caller acting under their own Proxmox identity: SSH runs
    /// as the server's host account, which Proxmox's ACLs do not limit; nothing was run.
    pub const SSH_NOT_PER_PERSON: &str = "SSH_NOT_PER_PERSON";
    /// A step of a plan failed (or the guest it built never became reachable); the steps
    /// that ran were undone, last first — `details.rollback` says what could not be.
    pub const PLAN_FAILED: &str = "PLAN_FAILED";
}

/// Maps a Proxmox client error to the envelope, keeping Proxmox's message and details.
pub fn failure_from(err: crate::pve::PveError) -> ToolFailure {
    ToolFailure {
        code: err.code(),
        message: err.to_string(),
        hint: err.hint(),
        details: err.details(),
        impact: None,
    }
}

/// The failure of a call refused because changes are frozen; nothing was sent.
pub fn frozen(tool: &str, frozen: &crate::effects::Frozen) -> ToolFailure {
    ToolFailure::new(
        codes::FROZEN,
        format!(
            "Refused: {tool} would do more than a plain read, and {}. Nothing was sent to Proxmox.",
            frozen.summary()
        ),
    )
    .with_hint(frozen.hint())
}

/// The failure of a call that needs Proxmox when none is configured.
pub fn not_configured() -> ToolFailure {
    ToolFailure::new(
        codes::PROXMOX_NOT_CONFIGURED,
        "No Proxmox connection is configured for this server.",
    )
    .with_hint(
        "Run `nandi-proxmox-mcp setup` (or set PROXMOX_HOST, PROXMOX_USER, PROXMOX_TOKEN_NAME and PROXMOX_TOKEN_SECRET, or NANDI_PROXMOX_CONFIG) and restart the server. `nandi-proxmox-mcp run --demo` tries the server against a built-in emulator.",
    )
}

/// A failed call, as the caller sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    /// Stable machine-readable code.
    pub code: &'static str,
    /// What went wrong, keeping Proxmox's own words where there are some.
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
    /// Structured detail (e.g. per-parameter errors).
    pub details: Option<Value>,
    /// For confirmation refusals: what the action would do.
    pub impact: Option<String>,
}

impl ToolFailure {
    /// A failure with a code and message only.
    pub fn new(code: &'static str, message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            code,
            message: message.into(),
            hint: None,
            details: None,
            impact: None,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> ToolFailure {
        self.hint = Some(hint.into());
        self
    }

    /// Adds structured details.
    pub fn with_details(mut self, details: Value) -> ToolFailure {
        self.details = Some(details);
        self
    }

    fn to_json(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.into());
        error.insert(
            "message".into(),
            cap_echo(&self.message, MESSAGE_CHARS).into(),
        );
        if let Some(hint) = &self.hint {
            error.insert("hint".into(), cap_echo(hint, MESSAGE_CHARS).into());
        }
        if let Some(details) = &self.details {
            error.insert("details".into(), cap_strings(details));
        }
        if let Some(impact) = &self.impact {
            error.insert("impact".into(), impact.clone().into());
        }
        Value::Object(error)
    }
}

/// Longest message or hint of a failure, in characters.
const MESSAGE_CHARS: usize = 4000;
/// Longest string (or object key) inside a failure's details, in characters.
const DETAIL_CHARS: usize = 1000;

/// `text` itself when it has at most `max` characters, else its start and a note of how much was
/// left out: a failure never carries a huge argument (or Proxmox's echo of one) back whole.
pub fn cap_echo(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… [{} more characters]", total - max)
}

/// A copy of `value` with every string and object key capped at [`DETAIL_CHARS`].
fn cap_strings(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(cap_echo(s, DETAIL_CHARS)),
        Value::Array(items) => Value::Array(items.iter().map(cap_strings).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (cap_echo(k, DETAIL_CHARS), cap_strings(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Who was called and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct CallMeta {
    /// The wire name the client used.
    pub tool: &'static str,
    /// For an alias, the canonical name.
    pub alias_for: Option<&'static str>,
    /// Wall time from the first attempt.
    pub duration: Duration,
    /// Requests actually sent to Proxmox (or SSH commands run); 0 when the call stopped before.
    pub attempts: u32,
    /// Attempts beyond the first.
    pub retries: u32,
    /// How a gated call was approved (`person`, `confirm-flag`); `None` when not gated.
    pub approval: Option<&'static str>,
    /// The cluster the call acted on, when the server serves several (`meta.cluster`).
    pub cluster: Option<&'static str>,
}

impl CallMeta {
    fn to_json(&self) -> Value {
        let mut meta = Map::new();
        meta.insert("tool".into(), self.tool.into());
        if let Some(cluster) = self.cluster {
            meta.insert("cluster".into(), cluster.into());
        }
        if let Some(canonical) = self.alias_for {
            meta.insert("aliasFor".into(), canonical.into());
        }
        let millis = u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX);
        meta.insert("durationMs".into(), millis.into());
        meta.insert("attempts".into(), self.attempts.into());
        meta.insert("retries".into(), self.retries.into());
        if let Some(approval) = self.approval {
            meta.insert("approval".into(), approval.into());
        }
        meta.insert(
            "timestamp".into(),
            chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                .into(),
        );
        Value::Object(meta)
    }
}

/// Builds the MCP result for a call outcome.
pub fn render(outcome: Result<Value, ToolFailure>, meta: &CallMeta) -> CallToolResult {
    match outcome {
        Ok(data) => CallToolResult::structured(json!({
            "ok": true,
            "data": data,
            "meta": meta.to_json(),
        })),
        Err(failure) => CallToolResult::structured_error(json!({
            "ok": false,
            "error": failure.to_json(),
            "meta": meta.to_json(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_never_carry_a_huge_echo() {
        let huge = "x".repeat(200_000);
        let failure = ToolFailure::new("TOOL_INPUT_REJECTED", format!("bad value {huge}"))
            .with_hint(huge.clone())
            .with_details(json!({"errors": {huge.clone(): huge.clone()}, "list": [huge]}));
        let text = failure.to_json().to_string();
        assert!(text.len() < 12_000, "{} bytes", text.len());
        assert!(text.contains("more characters]"));
        assert_eq!(cap_echo("ok", 5), "ok");
    }

    #[test]
    fn meta_reports_attempts_and_retries() {
        let meta = CallMeta {
            tool: "t",
            alias_for: None,
            duration: Duration::from_millis(5),
            attempts: 2,
            retries: 1,
            approval: None,
            cluster: None,
        };
        let json = meta.to_json();
        assert_eq!(json["attempts"], 2);
        assert_eq!(json["retries"], 1);
    }
}
