//! Running a judged plan: each step as a call of its own tool ([`super::super::run_call`] as an
//! [`AsStep`]), in order, and the rollback of the steps that ran when one fails or the call
//! is cancelled.
//!
//! Invariants: a step runs only after every step before it succeeded; a rollback reverts every
//! step that ran (failed steps whose request went out included), last first, each through the
//! undo tool and its own checks, under a cancellation token of its own (a cancelled plan still
//! rolls back); what could not be undone is named.

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::{Judged, PLAN_APPROVAL, ROLLBACK_APPROVAL, UNDO_TOOL};
use crate::approval::Approver;
use crate::clusters::Clusters;
use crate::envelope::{ToolFailure, codes};
use crate::pipeline::{AsStep, Ran, run_call};

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
) -> Result<Vec<Done>, ToolFailure> {
    let mut done: Vec<Done> = Vec::with_capacity(judged.len());
    for (i, j) in judged.iter().enumerate() {
        let step = AsStep {
            approved_by: PLAN_APPROVAL,
            approved: Some(j.clearance),
        };
        let ran = call_step(
            clusters,
            approver,
            context,
            j.step.tool,
            &j.step.arguments,
            cluster,
            step,
        )
        .await;
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
                let rolled =
                    rollback(clusters, approver, &undisturbed(context), &done, cluster).await;
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
        context,
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
) -> Rolled {
    let mut steps = Vec::new();
    let mut failed = 0;
    for (i, step) in done.iter().enumerate().rev() {
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
