//! A composite handler's view of the REST client: requests counted, typed argument reads
//! and guest paths built from validated arguments.
//!
//! Invariant: every path segment taken from an argument is percent-encoded, and every
//! request goes through the shared client (its retries, timeouts and cancellation).

use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::envelope::{ToolFailure, codes, failure_from, not_configured};
use crate::pve::{self, ApiRequest, PveError};
use crate::schema::{ArgValue, ValidArgs};

/// The REST client of one composite call, counting the attempts made.
pub(super) struct Calls<'a> {
    client: &'a pve::Client,
    cancel: &'a CancellationToken,
    /// Attempts so far, over every request of the call.
    pub attempts: u32,
}

impl<'a> Calls<'a> {
    /// The client, or the "not configured" failure.
    pub fn new(
        client: Option<&'a pve::Client>,
        cancel: &'a CancellationToken,
    ) -> Result<Calls<'a>, ToolFailure> {
        client
            .map(|client| Calls {
                client,
                cancel,
                attempts: 0,
            })
            .ok_or_else(not_configured)
    }

    /// Sends one request; the answer's `data` or Proxmox's error.
    pub async fn send(&mut self, request: ApiRequest) -> Result<Value, PveError> {
        let outcome = self.client.call(request, self.cancel).await;
        self.attempts += outcome.attempts;
        outcome.result
    }

    /// A GET whose failure ends the call.
    pub async fn get(&mut self, path: String) -> Result<Value, ToolFailure> {
        self.send(ApiRequest::get(path)).await.map_err(failure_from)
    }

    /// A GET whose failure is kept as a finding (its message).
    pub async fn try_get(&mut self, path: String) -> Result<Value, String> {
        self.send(ApiRequest::get(path))
            .await
            .map_err(|e| e.to_string())
    }

    /// Whether the call was cancelled (the client stops too).
    pub fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Waits, unless the call is cancelled first.
    pub async fn pause(&self, delay: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = self.cancel.cancelled() => {}
        }
    }
}

/// A required string argument (validation already enforced presence).
pub(super) fn text<'v>(args: &'v ValidArgs, name: &str) -> Result<&'v str, ToolFailure> {
    args.str(name).ok_or_else(|| missing(name))
}

/// An integer argument.
pub(super) fn integer(args: &ValidArgs, name: &str) -> Option<i64> {
    match args.values.get(name) {
        Some(ArgValue::Int(i)) => Some(*i),
        _ => None,
    }
}

fn missing(name: &str) -> ToolFailure {
    ToolFailure::new(
        codes::TOOL_INPUT_REJECTED,
        format!("{name} is required; nothing was sent to Proxmox."),
    )
}

/// `/nodes/<node>/qemu/<vmid>` for the validated `node` and `vmid`.
pub(super) fn qemu_path(args: &ValidArgs) -> Result<String, ToolFailure> {
    let node = text(args, "node")?;
    let vmid = integer(args, "vmid").ok_or_else(|| missing("vmid"))?;
    Ok(format!(
        "/nodes/{}/qemu/{vmid}",
        pve::encode_path_segment(node)
    ))
}

/// Whether a config `agent` value enables the agent (`1`, `enabled=1`, `1,fstrim…`).
pub(super) fn agent_enabled(config: &Value) -> bool {
    let text = match config.get("agent") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return false,
    };
    let first = text.split(',').next().unwrap_or("");
    matches!(
        first.strip_prefix("enabled=").unwrap_or(first),
        "1" | "yes" | "on" | "true"
    )
}

/// One finding of a diagnosis.
pub(super) fn finding(severity: &str, finding: impl Into<String>, advice: &str) -> Value {
    serde_json::json!({"severity": severity, "finding": finding.into(), "advice": advice})
}
