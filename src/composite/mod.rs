//! Composite tools: handlers that make several requests (diagnoses, overviews), follow a
//! task or guard a request beyond what a row can declare (download address guard, the
//! generic API call checked against the cluster's schema), and the undo tools (a revert
//! planned and checked before the gate).
//!
//! Invariant: a handler receives arguments already validated (and, where gated, approved)
//! by the pipeline, reaches Proxmox only through the shared REST client or SSH router in
//! [`Backends`], and returns one outcome with the number of attempts made.

// Failures are the cold path and are rendered once; boxing them would only add noise
// (as in `dispatch`).
#![allow(clippy::result_large_err)]

pub mod address_guard;
mod api_call;
pub mod api_call_cache;
pub mod api_call_check;
pub mod api_call_schema;
mod backup_health;
mod calls;
mod clusters_overview;
mod diagnose;
mod download;
pub mod exec;
mod leases;
mod overview;
pub mod undo_change;
mod wait_task;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::backends::Backends;
use crate::catalog::{CompositeOp, ToolSpec};
use crate::envelope::ToolFailure;
use crate::schema::ValidArgs;

use calls::Calls;

/// What the checks before the gate learned about a call (see [`precheck`]).
#[derive(Debug, Default)]
pub struct Prechecked {
    /// What the cluster's own schema says the call does (a plain read when it says nothing).
    pub learned: crate::effects::Classified,
    /// The generic call as the checks judged it, sent as judged (no second lookup).
    api_call: Option<api_call::Judged>,
    /// A revert as planned and checked before the gate.
    undo: Option<crate::undo::Plan>,
}

/// The guards of a composite operation that need no approval, run before anyone is asked:
/// the generic call's structural and schema checks (which return what the cluster's schema
/// says the call does), the download's address guard. Other operations pass.
pub async fn precheck(
    op: CompositeOp,
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Result<Prechecked, ToolFailure> {
    match op {
        CompositeOp::ApiCall => {
            let judged = api_call::judge(backends, spec, args, cancel).await?;
            Ok(Prechecked {
                learned: api_call::by_cluster(&judged),
                api_call: Some(judged),
                undo: None,
            })
        }
        CompositeOp::UndoChange => {
            let plan = undo_change::judge(backends, args, cancel).await?;
            Ok(Prechecked {
                learned: plan.classified.clone(),
                api_call: None,
                undo: Some(plan),
            })
        }
        CompositeOp::DownloadToStorage => download::guard(args, &backends.settings.download_allow)
            .await
            .map(|_| Prechecked::default()),
        _ => Ok(Prechecked::default()),
    }
}

/// Runs one composite operation (`prechecked`: what [`precheck`] found for this call).
pub async fn execute(
    op: CompositeOp,
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    prechecked: Prechecked,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    if op == CompositeOp::WaitTask {
        return wait_task::run(backends, args, cancel).await;
    }
    if op == CompositeOp::ApiCall {
        return api_call::execute(backends, spec, args, prechecked.api_call, cancel).await;
    }
    if op == CompositeOp::UndoChange {
        return undo_change::execute(backends, args, prechecked.undo, cancel).await;
    }
    if op == CompositeOp::ListChanges {
        return (undo_change::list(backends).await, 0);
    }
    if op == CompositeOp::ClustersOverview {
        return clusters_overview::run(backends, cancel).await;
    }
    if op == CompositeOp::ListLeases {
        return (Ok(leases::list(backends)), 0);
    }
    if op == CompositeOp::Capabilities {
        // Works without Proxmox too: it then reports what it can.
        let mut calls = Calls::new(backends.pve, cancel).ok();
        let result = overview::capabilities(backends, calls.as_mut()).await;
        return (result, calls.map_or(0, |c| c.attempts));
    }
    let mut calls = match Calls::new(backends.pve, cancel) {
        Ok(calls) => calls,
        Err(failure) => return (Err(failure), 0),
    };
    let result = match op {
        CompositeOp::QemuAgentDiagnose => diagnose::agent(&mut calls, args).await,
        CompositeOp::QemuBootDiagnose => diagnose::boot(&mut calls, args).await,
        CompositeOp::QemuGuestExec => exec::run(&mut calls, args).await,
        CompositeOp::InventoryOverview => overview::inventory(&mut calls).await,
        CompositeOp::BackupHealth => backup_health::run(&mut calls, args).await,
        CompositeOp::DownloadToStorage => {
            download::run(&mut calls, args, &backends.settings.download_allow).await
        }
        CompositeOp::Capabilities
        | CompositeOp::ApiCall
        | CompositeOp::WaitTask
        | CompositeOp::ListChanges
        | CompositeOp::UndoChange
        | CompositeOp::ListLeases
        | CompositeOp::ProvisionQemu
        | CompositeOp::ApplyPlan
        | CompositeOp::ClustersOverview => Err(unavailable(op, spec)),
    };
    (result, calls.attempts)
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
