//! `tasks/cancel`: stopping the Proxmox task behind an MCP task, with the approval and the
//! audit lines `pve_stop_task` has.
//!
//! Invariant: nothing is sent unless a person (or, where the mode allows, the confirm flag)
//! approved and the `sending` line was written and synced; a task that already ended is
//! acknowledged without a request; while changes are frozen the stop is refused (`FROZEN`)
//! before anyone is asked, and so is a caller whose credentials stay below the stop's tier.

use std::time::Instant;

use rmcp::model::{CallToolRequestParams, ErrorCode};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, json};

use super::exec_task::ExecHandle;
use super::id::TaskHandle;
use super::{STOP_TOOL, failure_error, id_error, pve_io};
use crate::approval::{Approver, Question, Verdict};
use crate::clusters::Clusters;
use crate::envelope::{ToolFailure, not_configured};
use crate::identity::Caller;
use crate::pve;

/// `tasks/cancel`: stops the Proxmox task after the approval `pve_stop_task` needs — a
/// person where the client can ask, else `_meta.confirm: true` where the mode allows it.
/// Audited like `pve_stop_task` (tool `tasks/cancel`, canonical `pve_stop_task`): a refusal
/// line, or a `sending` line written and synced before the DELETE and then its outcome;
/// when the audit log cannot be written the cancel is refused and nothing is sent.
pub async fn cancel(
    clusters: &Clusters,
    approver: &Approver,
    task_id: &str,
    confirmed: bool,
    context: &RequestContext<RoleServer>,
) -> Result<(), McpError> {
    use crate::audit::call as audit;
    let started = Instant::now();
    // With several clusters the id names its cluster (sealed): only that cluster is touched.
    let owner = crate::identity::Caller::of(context).owner;
    let (state, cluster, task_id) = super::bound_id::open(clusters, &owner, task_id)?;
    if super::plan_task::claims(task_id) {
        // The plan's own rollback runs (and is audited) when its token is cancelled.
        let plan = super::plan_task::global().find(task_id);
        plan.ok_or_else(|| id_error(super::id::IdError::Unknown))?
            .cancel
            .cancel();
        return Ok(());
    }
    if ExecHandle::claims(task_id) {
        ExecHandle::decode(
            task_id,
            state.settings.task_ttl,
            &super::exec_seal_key(state),
        )
        .map_err(id_error)?;
        return Err(McpError::new(
            NOT_CANCELLED,
            "A program started through the guest agent cannot be stopped through the Proxmox API; it runs until it exits.",
            None,
        ));
    }
    let handle = TaskHandle::decode(task_id, state.settings.task_ttl).map_err(id_error)?;
    // The stop goes out with the caller's own Proxmox rights (per-person identity).
    let acting = state
        .acting_for(&crate::identity::Caller::of(context))
        .map_err(|f| failure_error(*f))?;
    let client = acting
        .client
        .as_ref()
        .ok_or_else(|| failure_error(not_configured()))?;
    let Some(stop) = state.registry.get(STOP_TOOL) else {
        return Err(McpError::new(
            NOT_CANCELLED,
            format!(
                "Cancelling Proxmox tasks needs {STOP_TOOL}, which the policy in force does not expose."
            ),
            None,
        ));
    };
    let upid = &handle.upid;
    let current = pve_io::read_state(client, upid, &context.ct)
        .await
        .map_err(failure_error)?;
    if !current.running {
        // The tasks extension: cancelling a task in a terminal state is acknowledged, and
        // nothing is sent (there is nothing left to stop).
        return Ok(());
    }
    let mut arguments = Map::new();
    arguments.insert("node".into(), upid.node.clone().into());
    arguments.insert("upid".into(), upid.to_string().into());
    if let Some(cluster) = cluster {
        // Part of what an approval binds: a stop approved on one cluster never stops another.
        arguments.insert(crate::schema::CLUSTER.into(), cluster.into());
    }
    let caller = acting.caller_name(crate::identity::Caller::of(context).label());
    let audit_call = |approval| audit::Call {
        spec: stop.spec,
        wire_name: CANCEL_METHOD,
        alias_for: Some(STOP_TOOL),
        arguments: Some(&arguments),
        approval,
        caller: Some(&caller),
    };
    // The caller's credentials may narrow the server's tier (OAuth scopes): a caller below
    // the stop tool's tier is refused before anyone is asked, like a call of the tool.
    let tier = Caller::of(context).tier_within(state.settings.tier);
    if stop.spec.tier > tier {
        let failure = ToolFailure::new(
            crate::envelope::codes::EFFECT_NOT_APPROVED,
            format!(
                "tasks/cancel needs access tier {} ({STOP_TOOL}); this caller's credentials allow {}. Nothing was sent to Proxmox.",
                stop.spec.tier.as_str(),
                tier.as_str()
            ),
        );
        let outcome = Err(failure.clone());
        audit::record_call(&state.audit, &audit_call(None), &outcome, started.elapsed()).await;
        return Err(refusal(failure));
    }
    // A stop is a change: while changes are frozen it is refused before anyone is asked.
    if let Some(Err(frozen)) = state.settings.freeze.as_ref().map(|f| f.check()) {
        let failure = crate::envelope::frozen(CANCEL_METHOD, &frozen);
        let outcome = Err(failure.clone());
        audit::record_call(&state.audit, &audit_call(None), &outcome, started.elapsed()).await;
        return Err(refusal(failure));
    }
    // A cancel that could not be recorded is refused before anyone is asked (fail closed).
    audit::ensure_change_recordable(&state.audit, stop.spec, true)
        .await
        .map_err(refusal)?;
    let request = CallToolRequestParams::new(STOP_TOOL).with_arguments(arguments.clone());
    let question = Question {
        message: format!(
            "Stop the running Proxmox task '{}' ({}) on node '{}'{}? It is interrupted where it is; work it did is not rolled back.",
            upid.kind,
            if upid.id.is_empty() { "-" } else { &upid.id },
            upid.node,
            in_cluster(cluster)
        ),
        tool: STOP_TOOL,
        destructive: true,
        // A stop destroys: never leased.
        lease: None,
    };
    let approved_by = match approver
        .decide(context, &request, &question, confirmed)
        .await
    {
        // No lease was offered, so none can have been granted.
        Verdict::Approved(by) | Verdict::Leased(by, _) => {
            tracing::info!(approval = by.as_str(), "tasks/cancel approved");
            by.as_str()
        }
        Verdict::Refused(failure) => {
            let outcome = Err(failure.clone());
            audit::record_call(&state.audit, &audit_call(None), &outcome, started.elapsed()).await;
            return Err(refusal(failure));
        }
        Verdict::AskClient(_) => {
            let outcome = Err(ToolFailure::new(
                crate::envelope::codes::APPROVAL_UNAVAILABLE,
                "tasks/cancel cannot carry an approval round trip.",
            ));
            audit::record_call(&state.audit, &audit_call(None), &outcome, started.elapsed()).await;
            return Err(McpError::new(
                NOT_CANCELLED,
                format!(
                    "tasks/cancel cannot carry an approval round trip; call {STOP_TOOL} with this node and upid instead."
                ),
                Some(json!({
                    "code": crate::envelope::codes::APPROVAL_UNAVAILABLE,
                    "node": upid.node,
                    "upid": upid.to_string(),
                })),
            ));
        }
    };
    // Nothing is sent before its `sending` line is written and synced (fail closed).
    audit::record_intent(&state.audit, &audit_call(Some(approved_by)), true)
        .await
        .map_err(refusal)?;
    let path = format!(
        "/nodes/{}/tasks/{}",
        pve::encode_path_segment(&upid.node),
        pve::encode_path_segment(&upid.to_string())
    );
    let request = pve::ApiRequest::new(pve::Method::Delete, path);
    // Approved above: the stop may have exactly the effects of stopping a task.
    let clearance = crate::effects::classify_rest("DELETE", &request.path, &[]).effects;
    let freeze = state.settings.freeze.as_ref();
    let outcome =
        crate::effects::with_clearance(clearance, freeze, client.call(request, &context.ct))
            .await
            .result
            .map(|_| json!({"upid": upid.to_string()}))
            .map_err(crate::envelope::failure_from);
    audit::record_call(
        &state.audit,
        &audit_call(Some(approved_by)),
        &outcome,
        started.elapsed(),
    )
    .await;
    outcome.map(|_| ()).map_err(failure_error)
}

/// ` in cluster 'name'` when the server serves several clusters; else nothing. Plain text,
/// like the rest of the question (no markdown: a client without forms shows it as is).
fn in_cluster(cluster: Option<&str>) -> String {
    cluster.map_or_else(String::new, |c| format!(" in cluster '{c}'"))
}

/// The JSON-RPC code of a `tasks/cancel` this server refuses (a person did not approve the
/// stop, or none could be asked, the freeze, the tier, a guest-agent program): a server error
/// (JSON-RPC 2.0 reserves -32000…-32099 for them), with the envelope's code in `data.code`.
/// Not `-32600` Invalid Request: the request is well formed, so a client must not read the
/// refusal as its own malformed message (docs/TROUBLESHOOTING.md).
pub const NOT_CANCELLED: ErrorCode = ErrorCode(-32000);

/// The wire name `tasks/cancel` lines are recorded under.
const CANCEL_METHOD: &str = "tasks/cancel";

fn refusal(failure: ToolFailure) -> McpError {
    McpError::new(
        NOT_CANCELLED,
        format!("The task was not cancelled: {}", failure.message),
        Some(json!({"code": failure.code, "hint": failure.hint})),
    )
}
