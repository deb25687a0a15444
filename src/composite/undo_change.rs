//! The undo tools' handlers, and the capture of a call's undo record for the pipeline.
//!
//! `pve_undo_change` is planned before the gate ([`judge`]): the record is loaded, checked
//! against Proxmox (stale → `UNDO_STALE`, nothing asked) and its requests classified, which
//! the gate merges, so a person is asked about exactly what the revert sends; [`execute`]
//! plans again and refuses if the plan moved while the person decided, then sends it.
//! [`capture`] gives the pipeline what a change's revert needs, from the requests the call
//! sends: the REST row's rendered request, the generic `pve_api_write` as judged, or a
//! revert's own requests (undo of an undo).
//!
//! Invariant: the revert sends exactly the requests it was approved for — the REST client's
//! clearance refuses anything beyond the classified effects, and a re-plan that differs is
//! refused before anything is sent.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Prechecked;
use crate::backends::{Backends, build_request};
use crate::catalog::{Backend, CompositeOp, ToolSpec};
use crate::envelope::{ToolFailure, codes, not_configured};
use crate::pve::ApiRequest;
use crate::schema::{ArgValue, ValidArgs};
use crate::undo::{self, Capture, Plan};

fn record_id(args: &ValidArgs) -> Result<u64, ToolFailure> {
    match args.values.get("id") {
        Some(ArgValue::Int(id)) if *id > 0 => Ok(id.unsigned_abs()),
        _ => Err(ToolFailure::new(
            codes::TOOL_INPUT_REJECTED,
            "id is required: a change's id from pve_list_changes; nothing was sent to Proxmox.",
        )),
    }
}

/// Plans the revert of the record `id` names, checked against Proxmox (reads only).
pub async fn judge(
    backends: &Backends<'_>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Result<Plan, ToolFailure> {
    let id = record_id(args)?;
    let client = backends.pve.ok_or_else(not_configured)?;
    undo::revert::prepare(backends.undo, client, id, cancel).await
}

/// Plans the revert of the record `id` names from the record alone (no read): for a step of
/// a plan, whose checks against Proxmox run when its turn comes.
pub async fn judge_from_record(
    backends: &Backends<'_>,
    args: &ValidArgs,
) -> Result<Plan, ToolFailure> {
    undo::revert::planned(backends.undo, record_id(args)?).await
}

/// Sends the planned revert (planned again: a plan that moved since is refused).
pub async fn execute(
    backends: &Backends<'_>,
    args: &ValidArgs,
    approved: Option<Plan>,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let Some(client) = backends.pve else {
        return (Err(not_configured()), 0);
    };
    let now = match judge(backends, args, cancel).await {
        Ok(plan) => plan,
        Err(failure) => return (Err(failure), 0),
    };
    if let Some(approved) = approved
        && approved.requests != now.requests
    {
        return (
            Err(ToolFailure::new(
                codes::UNDO_STALE,
                format!(
                    "Change {} changed while the revert waited for approval; nothing was sent.",
                    now.record.id
                ),
            )
            .with_hint("List the changes again and revert anew.")),
            0,
        );
    }
    undo::revert::send(client, &now, cancel).await
}

/// The listing of the recorded changes.
pub async fn list(backends: &Backends<'_>) -> Result<Value, ToolFailure> {
    undo::revert::listing(backends.undo).await
}

/// The requests a call sends that undo records are kept for, and the record it reverts:
/// a REST row's one rendered request, the generic write as judged, or a revert's planned
/// requests.
fn outgoing(
    spec: &'static ToolSpec,
    args: &ValidArgs,
    prechecked: &Prechecked,
) -> (Vec<ApiRequest>, Option<u64>) {
    match spec.backend {
        Backend::Rest { method, path } => {
            (vec![build_request(spec, method, path, args, &[])], None)
        }
        Backend::Composite(CompositeOp::ApiCall) => match &prechecked.api_call {
            Some(judged) => (vec![judged.request()], None),
            None => (Vec::new(), None),
        },
        Backend::Composite(CompositeOp::UndoChange) => match &prechecked.undo {
            Some(plan) => (plan.requests.clone(), Some(plan.record.id)),
            None => (Vec::new(), None),
        },
        _ => (Vec::new(), None),
    }
}

/// What reverting this call's change needs, read before it is sent (`None`: nothing it
/// sends is recorded). The pipeline calls [`Capture::commit`] once the outcome is known.
pub async fn capture(
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    prechecked: &Prechecked,
    cancel: &CancellationToken,
) -> Option<Capture> {
    let (requests, reverts) = outgoing(spec, args, prechecked);
    if requests.is_empty() {
        return None;
    }
    Capture::before(
        backends.undo,
        backends.pve,
        spec.name,
        &requests,
        reverts,
        cancel,
    )
    .await
}
