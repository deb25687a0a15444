//! Composite tools: handlers that make several requests (diagnoses, overviews), follow a
//! task or guard a request beyond what a row can declare (download address guard, the
//! generic API call checked against the cluster's schema).
//!
//! Invariant: a handler receives arguments already validated (and, where gated, approved)
//! by the pipeline, reaches Proxmox only through the shared REST client or SSH router in
//! [`Backends`], and returns one outcome with the number of attempts made.

mod wait_task;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalog::{CompositeOp, ToolSpec};
use crate::dispatch::Backends;
use crate::envelope::ToolFailure;
use crate::schema::ValidArgs;

/// Runs one composite operation.
pub async fn execute(
    op: CompositeOp,
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    // Each arm is filled in with its handler as the operation's tools are added; no row
    // uses an operation before its handler exists (tests/catalog.rs calls every row).
    match op {
        CompositeOp::WaitTask => wait_task::run(backends, args, cancel).await,
        _ => (Err(unavailable(op, spec)), 0),
    }
}

fn unavailable(op: CompositeOp, spec: &ToolSpec) -> ToolFailure {
    ToolFailure::new(
        crate::envelope::codes::TOOL_INPUT_REJECTED,
        format!(
            "{} ({}) is not available in this build.",
            spec.name,
            op.describe()
        ),
    )
}
