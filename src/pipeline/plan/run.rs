//! Running a judged plan: each step as a call of its own tool ([`super::super::run_call`] as an
//! [`AsStep`]), in order, and the rollback of the steps that ran when one fails or the call
//! is cancelled.
//!
//! Invariants: a step runs only after every step before it succeeded, and is never cut short
//! (a cancel takes effect between steps); a rollback reverts every step that ran (failed steps
//! whose request went out included), last first, each through the
//! undo tool and its own checks, under a cancellation token of its own (a cancelled plan still
//! rolls back); what could not be undone is named. Progress, for a client that asked for it,
//! is the plan's own — one notification per step and per revert, always rising — and never a
//! step's (a step's context carries no progress token).

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::{APPLY_TOOL, Judged, PLAN_APPROVAL, ROLLBACK_APPROVAL, UNDO_TOOL};
use crate::approval::Approver;
use crate::clusters::Clusters;
use crate::envelope::{ToolFailure, codes};
use crate::pipeline::leases::LEASED;
use crate::pipeline::{AsStep, Ran, run_call};
use crate::tasks::follow::ProgressSink;
use crate::tasks::plan_task::PlanTask;

/// The plan's progress: notifications (none when the client sent no progress token) and,
/// for a plan run as an MCP task, the task's status message.
pub(super) struct Progress<'a> {
    sink: Option<ProgressSink>,
    task: Option<&'a PlanTask>,
    /// The last value sent: every next one is higher.
    sent: Option<f64>,
}

impl<'a> Progress<'a> {
    /// The progress of the plan call `context` carries (and of its `task`).
    pub fn of(context: &RequestContext<RoleServer>, task: Option<&'a PlanTask>) -> Progress<'a> {
        Progress {
            sink: crate::tasks::progress_sink(context),
            task,
            sent: None,
        }
    }

    /// One notification: `message`, at the next value (or `at`, when that is higher), out of
    /// `total` when known.
    pub async fn tell(&mut self, at: Option<usize>, total: Option<usize>, message: String) {
        if let Some(task) = self.task {
            task.tell(&message);
        }
        let Some(sink) = &self.sink else {
            return;
        };
        #[allow(clippy::cast_precision_loss)] // a plan has at most a few dozen steps
        let wanted = at.map_or(0.0, |n| n as f64);
        let progress = self.sent.map_or(wanted, |last| wanted.max(last + 1.0));
        self.sent = Some(progress);
        let mut params = rmcp::model::ProgressNotificationParam::new(sink.token.clone(), progress)
            .with_message(message);
        if let Some(total) = total {
            #[allow(clippy::cast_precision_loss)]
            let total = total as f64;
            params = params.with_total(total);
        }
        // A client that stopped listening does not stop the plan.
        let _ = sink.peer.notify_progress(params).await;
    }
}

/// The ready-made call that reverts a finished plan: one `pve_apply_plan` of its steps'
/// reverts, last first (`null` when no step left an undo record).
pub(super) fn revert_call(done: &[Done]) -> Value {
    let steps: Vec<Value> = done
        .iter()
        .rev()
        .filter_map(|d| d.undo)
        .map(|id| json!({"tool": UNDO_TOOL, "arguments": {"id": id}}))
        .collect();
    if steps.is_empty() {
        return Value::Null;
    }
    json!({"tool": APPLY_TOOL, "arguments": {"steps": steps}})
}

/// A step's context: the plan's, without its progress token (the plan reports progress).
fn quiet(context: &RequestContext<RoleServer>) -> RequestContext<RoleServer> {
    let mut step = context.clone();
    step.meta.0.0.remove("progressToken");
    step
}

/// What a step came to.
#[derive(Debug, Clone)]
pub struct Done {
    /// The step's tool.
    pub tool: &'static str,
    /// Its answer's structured content (the envelope).
    pub answer: Value,
    /// Its undo record, when one was written.
    pub undo: Option<u64>,
}

/// Runs the steps in order; on the first failure (or a cancel), undoes the ones that ran.
pub(super) async fn run_steps(
    clusters: &Clusters,
    approver: &Approver,
    context: &RequestContext<RoleServer>,
    judged: &[Judged],
    cluster: Option<&'static str>,
    progress: &mut Progress<'_>,
) -> Result<Vec<Done>, ToolFailure> {
    let mut done: Vec<Done> = Vec::with_capacity(judged.len());
    let total = judged.len();
    for (i, j) in judged.iter().enumerate() {
        let message = format!("Step {} of {total}: {}", i + 1, j.step.tool);
        progress.tell(Some(i), Some(total), message).await;
        let step = AsStep {
            approved_by: j.leased.as_ref().map_or(PLAN_APPROVAL, |_| LEASED),
            approved: Some(j.clearance),
        };
        // A step in flight is never cut short: a cancel takes effect once it ended (its
        // Proxmox task followed to the end), so the rollback finds what it made.
        let calm = undisturbed(context);
        let (tool, arguments) = (j.step.tool, &j.step.arguments);
        let ran = call_step(clusters, approver, &calm, tool, arguments, cluster, step).await;
        match answer_of(&ran) {
            Ok(answer) if !context.ct.is_cancelled() => done.push(Done {
                tool: j.step.tool,
                answer,
                undo: ran.undo,
            }),
            outcome => {
                let why = match outcome {
                    Err(why) => why,
                    Ok(_) => "the call was cancelled".to_owned(),
                };
                // What ran of a step that failed after its request (a task that failed) is
                // undone with the rest.
                if let Some(undo) = ran.undo {
                    done.push(Done {
                        tool: j.step.tool,
                        answer: Value::Null,
                        undo: Some(undo),
                    });
                }
                let calm = undisturbed(context);
                let rolled = rollback(clusters, approver, &calm, &done, cluster, progress).await;
                let failure = ToolFailure::new(
                    codes::PLAN_FAILED,
                    format!(
                        "Step {} ({}) failed: {why}. {}",
                        i + 1,
                        j.step.tool,
                        rolled.summary
                    ),
                )
                .with_details(json!({"failed_step": i + 1, "rollback": rolled.steps}));
                return Err(failure);
            }
        }
    }
    let message = format!("All {total} steps ran");
    progress.tell(Some(total), Some(total), message).await;
    Ok(done)
}

/// Runs one step (or one revert) as a call of its tool.
pub(in crate::pipeline) async fn call_step(
    clusters: &Clusters,
    approver: &Approver,
    context: &RequestContext<RoleServer>,
    tool: &'static str,
    arguments: &Map<String, Value>,
    cluster: Option<&'static str>,
    step: AsStep,
) -> Ran {
    let mut arguments = arguments.clone();
    if let Some(cluster) = cluster {
        arguments.insert(crate::schema::CLUSTER.into(), cluster.into());
    }
    let Some(entry) = clusters.listing().get(tool).cloned() else {
        let error = json!({"error": {"code": codes::EFFECT_NOT_APPROVED, "message": format!("{tool} is not exposed by the policy in force")}});
        return Ran::from(rmcp::model::CallToolResult::structured_error(error));
    };
    let request = CallToolRequestParams::new(tool).with_arguments(arguments);
    Box::pin(run_call(
        clusters,
        approver,
        &entry,
        &request,
        &quiet(context),
        Some(step),
    ))
    .await
}

/// The step's envelope when it succeeded, else why it failed, in words.
pub(in crate::pipeline) fn answer_of(ran: &Ran) -> Result<Value, String> {
    let CallToolResponse::Complete(result) = &ran.response else {
        return Err("it did not answer in this call".to_owned());
    };
    let content = result.structured_content.clone().unwrap_or(Value::Null);
    if result.is_error.unwrap_or(false) {
        let error = &content["error"];
        return Err(format!(
            "{} {}",
            error["code"].as_str().unwrap_or("ERROR"),
            error["message"].as_str().unwrap_or("")
        ));
    }
    Ok(content)
}

/// The call's context with a cancellation token of its own: a plan cancelled by its caller
/// still rolls back (the caller's token is already cancelled, and would stop every revert).
pub(super) fn undisturbed(context: &RequestContext<RoleServer>) -> RequestContext<RoleServer> {
    let mut calm = context.clone();
    calm.ct = tokio_util::sync::CancellationToken::new();
    calm
}

/// What a rollback came to: per step, undone or why not; and one sentence.
pub(super) struct Rolled {
    /// Per step: undone, or why not.
    pub steps: Vec<Value>,
    /// One sentence.
    pub summary: String,
}

/// Undoes the steps that ran, last first, each from its undo record.
pub(super) async fn rollback(
    clusters: &Clusters,
    approver: &Approver,
    context: &RequestContext<RoleServer>,
    done: &[Done],
    cluster: Option<&'static str>,
    progress: &mut Progress<'_>,
) -> Rolled {
    let mut steps = Vec::new();
    let mut failed = 0;
    for (i, step) in done.iter().enumerate().rev() {
        let message = format!("Undoing step {} ({})", i + 1, step.tool);
        progress.tell(None, None, message).await;
        let Some(id) = step.undo else {
            failed += 1;
            steps.push(json!({"step": i + 1, "tool": step.tool, "undone": false, "why": "no undo record was written for it"}));
            continue;
        };
        let mut arguments = Map::new();
        arguments.insert("id".into(), id.into());
        let revert = AsStep {
            approved_by: ROLLBACK_APPROVAL,
            approved: None,
        };
        let ran = call_step(
            clusters, approver, context, UNDO_TOOL, &arguments, cluster, revert,
        )
        .await;
        match answer_of(&ran) {
            Ok(_) => {
                steps.push(json!({"step": i + 1, "tool": step.tool, "undone": true, "change": id}))
            }
            Err(why) => {
                failed += 1;
                steps.push(json!({"step": i + 1, "tool": step.tool, "undone": false, "change": id, "why": why}));
            }
        }
    }
    let summary = match (done.is_empty(), failed) {
        (true, _) => "Nothing had run, so nothing was undone.".to_owned(),
        (false, 0) if steps.len() == done.len() => format!(
            "The {} step(s) that ran were undone, last first.",
            done.len()
        ),
        (false, 0) => "Rolled back last first (see details.rollback).".to_owned(),
        (false, n) => format!(
            "Rolled back last first; {n} step(s) could not be undone (see details.rollback)."
        ),
    };
    Rolled { steps, summary }
}
