//! Plans: several calls judged together, approved with one question, applied in order as steps
//! of one call, and rolled back in reverse when a step fails or the call is cancelled.
//!
//! A plan's steps are rows of their own ([`Step`]); the plan row sends nothing itself. Before
//! anything is sent every step is validated against its row, prechecked (the cluster's schema,
//! the server's guards), gated, held against the caller's tier, the kill switch and the
//! operator's rules, and the plan's question lists every step with its reasons. Each step then
//! runs through the ordinary pipeline ([`super::run_call`]) as an [`AsStep`]: audited and undo
//! recorded like any approved call, its Proxmox task followed to its end, and refused if its
//! gate now plans more than the question showed for it. A call that declares the tasks
//! extension gets, once approved, an MCP task ([`crate::tasks::plan_task`]) and the steps run
//! in the background.
//!
//! Invariants: a plan with any step refused sends nothing (reads for the judgement aside); a
//! declined plan sends nothing; a step never sends more than it was approved for; after a
//! failure every step that ran is undone from its undo record, last first, and the answer
//! names what could not be undone.

// Refusals are `ToolFailure`s as everywhere in the pipeline; boxing them here alone would
// buy nothing.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::AsStep;
use crate::approval::{Approver, Question, Verdict};
use crate::catalog::{Backend, CompositeOp, ToolSpec};
use crate::clusters::Clusters;
use crate::dispatch;
use crate::effects::EffectSet;
use crate::envelope::{ToolFailure, codes};
use crate::gate::Gate;
use crate::identity::Caller;
use crate::outcome;
use crate::registry::Entry;
use crate::schema::ValidArgs;
use crate::tasks::plan_task::PlanTask;

mod generic;
mod judge;
mod provision;
mod question;
mod run;
#[cfg(test)]
mod tests;

use judge::{Judging, judge, validate};
use question::{question_text, step_view};
use run::{Progress, rollback, run_steps, undisturbed};

/// How a plan's steps are recorded: `approval` of each step's audit lines.
pub const PLAN_APPROVAL: &str = "plan";
/// How a rollback's reverts are recorded.
pub const ROLLBACK_APPROVAL: &str = "plan-rollback";
/// The undo tool a rollback runs for each step that ran.
const UNDO_TOOL: &str = "pve_undo_change";
/// The plan tool a finished plan's revert is one call of.
const APPLY_TOOL: &str = "pve_apply_plan";

/// Whether the row is a plan (handled here, never dispatched as one call).
pub fn is_plan(spec: &ToolSpec) -> bool {
    matches!(
        spec.backend,
        Backend::Composite(CompositeOp::ProvisionQemu | CompositeOp::ApplyPlan)
    )
}

/// One step: a tool and its arguments, as a call of that tool would carry them.
#[derive(Debug, Clone)]
pub struct Step {
    /// The tool's canonical name.
    pub tool: &'static str,
    /// Its arguments.
    pub arguments: Map<String, Value>,
}

/// A step as it was judged: its gate's effects and reasons.
struct Judged {
    step: Step,
    clearance: EffectSet,
    reasons: Vec<String>,
    /// Its target as Proxmox has it now and the values it changes (gated steps only).
    facts: Vec<String>,
    /// Whether a person must approve it (gated, no `allow` rule lets it run, no lease covers it).
    asks: bool,
    /// The person's lease that lets it run unasked (`lease:<id>`), when one does.
    leased: Option<String>,
}

/// A refusal for a step that would send more than its approval covers.
pub fn beyond_approved(step: AsStep, spec: &ToolSpec, gate: Option<&Gate>) -> Option<ToolFailure> {
    let approved = step.approved?;
    let planned = gate.map_or(EffectSet::READ, Gate::clearance);
    let beyond = planned.beyond(approved);
    if beyond.is_read() {
        return None;
    }
    Some(ToolFailure::new(
        codes::EFFECT_NOT_APPROVED,
        format!(
            "{} would now do more than the plan's question showed for it ({}); nothing was sent for this step.",
            spec.name,
            beyond.names().join(", ")
        ),
    ))
}

/// Runs a plan call: judge every step, ask once, apply in order, roll back on failure. A
/// call that declares the tasks extension gets an MCP task once the plan is approved; the plan
/// then runs in the background. Every audit line of the plan names its id (`plan`), as its
/// answer does.
pub async fn apply(
    clusters: &Arc<Clusters>,
    approver: &Arc<Approver>,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let id = new_plan_id();
    let work = async {
        let ready = match prepare(clusters, approver, entry, request, context).await {
            Ok(ready) => ready,
            Err(answered) => return answered,
        };
        let steps = ready.judged.len();
        if crate::tasks::client_follows_tasks(context)
            && let Some(task) = register_task(clusters, entry, request, context, &id, steps)
        {
            return in_background(
                clusters, approver, entry, request, context, ready, &id, task,
            );
        }
        execute(
            clusters, approver, entry, request, context, ready, &id, None,
        )
        .await
    };
    crate::audit::call::in_plan(id.clone(), Box::pin(work)).await
}

/// A plan's id: 12 random hex digits, enough to tell the plans of one audit log apart.
fn new_plan_id() -> String {
    use rand::RngCore as _;
    let mut bytes = [0u8; 6];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A plan judged (and approved, where it asks), ready to run.
struct Ready {
    judged: Vec<Judged>,
    args: ValidArgs,
    built_in: bool,
    started: std::time::Instant,
}

/// Everything before the first step: route, validate, judge every step, preview (a dry run
/// answers here), ask. `Err` is the call's answer (a refusal, the preview, an MRTR round).
async fn prepare(
    clusters: &Clusters,
    approver: &Approver,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<Ready, CallToolResponse> {
    let started = std::time::Instant::now();
    let caller = Caller::of(context);
    let caller_name = caller.label();
    let routed = super::route(clusters, entry, request, &caller_name, started)
        .await
        .map_err(CallToolResponse::from)?;
    let (state, entry) = (routed.state, &routed.entry);
    let arguments = routed.arguments.as_deref();
    let tier = caller.tier_within(state.settings.tier);
    let record = outcome::Record {
        tier,
        audit: Some(&state.audit),
        arguments,
        caller: Some(&caller_name),
    };
    let args = match dispatch::preflight(entry, arguments) {
        Ok(args) => args,
        Err(failure) => return Err(done(&record, entry, started, Err(failure)).await),
    };
    let acting = match state.acting_for(&caller) {
        Ok(acting) => acting,
        Err(failure) => return Err(done(&record, entry, started, Err(*failure)).await),
    };
    let cancel = &context.ct;
    let built_in = entry.spec.backend == Backend::Composite(CompositeOp::ProvisionQemu);
    // Every step's arguments are checked against its row before anything is read.
    let provisional = if built_in {
        Ok(provision::steps(&args, provision::provisional_id(&args)))
    } else {
        generic::steps(&args)
    };
    let provisional = match provisional.and_then(|steps| validate(state, &steps).map(|()| steps)) {
        Ok(steps) => steps,
        Err(failure) => return Err(done(&record, entry, started, Err(failure)).await),
    };
    // The reads a refusal owns up to (`details.read`), as any refusal does.
    let read: Vec<String> = if built_in && !args.has("newid") {
        vec!["GET /cluster/nextid".to_owned()]
    } else {
        Vec::new()
    };
    let steps = if built_in {
        match provision::new_id(acting.client.as_ref(), &args, cancel).await {
            Ok(newid) => provision::steps(&args, newid),
            Err(failure) => {
                return Err(done(&record, entry, started, Err(with_read(failure, &read))).await);
            }
        }
    } else {
        provisional
    };
    let holder = super::leases::holder_of(context, &caller);
    let judging = Judging {
        clusters,
        approver,
        state,
        acting: &acting,
        tier,
        plan: entry,
        holder,
        caller_name: &caller_name,
        // Current values cost reads: only for a person who will read them, or a preview.
        with_facts: args.dry_run || approver.asks_person(crate::approval::Channel::of(context)),
    };
    let judged = match judge(&judging, steps, cancel).await {
        Ok(judged) => judged,
        Err(failure) => {
            return Err(done(&record, entry, started, Err(with_read(failure, &read))).await);
        }
    };
    let listing: Vec<Value> = judged
        .iter()
        .enumerate()
        .map(|(i, j)| step_view(i, j))
        .collect();
    let asks = judged.iter().any(|j| j.asks);
    if args.dry_run {
        let approval = if asks {
            approver.describe(context)
        } else {
            "none: every step is a read, a person's lease covers it, or the operator's policy lets it run"
        };
        // The shape of any dry run (`dryRun`, `sent`, `decision`), with the steps for the
        // one request a single call would show.
        let view = json!({
            "dryRun": true,
            "sent": false,
            "decision": {
                "tier": entry.spec.tier.as_str(),
                "needsApproval": asks,
                "approval": approval,
            },
            "steps": listing,
            "onFailure": "the steps that ran are undone, last first",
        });
        let preview_only = outcome::Record {
            audit: None,
            ..record
        };
        return Err(
            outcome::conclude(&preview_only, entry, started, Ok(view), 0, None)
                .await
                .into(),
        );
    }
    // A plan that could not be recorded is refused before anyone is asked (fail closed).
    if let Err(failure) =
        crate::audit::call::ensure_change_recordable(&state.audit, entry.spec, true).await
    {
        return Err(done(&record, entry, started, Err(failure)).await);
    }
    let mut judged = judged;
    if asks {
        // The person approves the whole plan: no step runs on a lease.
        for j in &mut judged {
            j.leased = None;
        }
        let question = Question {
            message: question_text(&judged, entry.cluster, &caller),
            tool: entry.spec.name,
            destructive: true,
            lease: None,
        };
        match approver
            .decide(context, request, &question, args.confirmed)
            .await
        {
            Verdict::Approved(_) | Verdict::Leased(_, _) => {}
            Verdict::AskClient(input) => return Err(CallToolResponse::InputRequired(*input)),
            Verdict::Refused(failure) => {
                return Err(done(&record, entry, started, Err(with_read(failure, &read))).await);
            }
        }
    } else if let Some(lease) = judged.iter().find_map(|j| j.leased.clone()) {
        // Unasked because a person's lease covers every step that would ask: the lines name it.
        crate::approval::note_approver(lease);
    }
    Ok(Ready {
        judged,
        args,
        built_in,
        started,
    })
}

/// The plan's task in this process's store and the call's answer that hands it out, when
/// there is room (else the plan runs in its call).
fn register_task(
    clusters: &Clusters,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    id: &str,
    steps: usize,
) -> Option<(Arc<PlanTask>, CallToolResponse)> {
    let routed = clusters.route(entry, request.arguments.as_ref()).ok()?;
    let state = routed.state;
    let task = crate::tasks::plan_task::global().register(id, state.settings.task_ttl)?;
    let owner = Caller::of(context).owner;
    let cluster = routed.entry.cluster;
    let created = crate::tasks::plan_task::created(state, cluster, &owner, &task, steps);
    Some((task, created))
}

/// Starts the approved plan in the background and answers `created`, its MCP task;
/// `tasks/get` reads it, `tasks/cancel` stops it (and so rolls it back).
#[allow(clippy::too_many_arguments)]
fn in_background(
    clusters: &Arc<Clusters>,
    approver: &Arc<Approver>,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    ready: Ready,
    id: &str,
    (task, created): (Arc<PlanTask>, CallToolResponse),
) -> CallToolResponse {
    let (clusters, approver, entry) = (Arc::clone(clusters), Arc::clone(approver), *entry);
    let (request, id) = (request.clone(), id.to_owned());
    let mut background = context.clone();
    background.ct = task.cancel.clone();
    let approver_name = crate::approval::approver_of_this_call();
    let plan = id.clone();
    let work = async move {
        if let Some(name) = approver_name {
            crate::approval::note_approver(name);
        }
        let ran = execute(
            &clusters,
            &approver,
            &entry,
            &request,
            &background,
            ready,
            &id,
            Some(&task),
        );
        match ran.await {
            CallToolResponse::Complete(result) => task.finish(&result),
            // A plan's steps never ask; should one, the task still ends.
            _ => task.finish(&rmcp::model::CallToolResult::structured_error(json!({
                "ok": false,
                "error": {"code": codes::PLAN_FAILED, "message": "The plan stopped without an answer."},
            }))),
        }
    };
    let scoped = crate::approval::with_approver_slot(crate::audit::call::in_plan(plan, work));
    tokio::spawn(scoped);
    created
}

/// The steps, then the plan's answer: runs the approved plan and rolls it back on failure.
#[allow(clippy::too_many_arguments)]
async fn execute(
    clusters: &Clusters,
    approver: &Approver,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    ready: Ready,
    id: &str,
    task: Option<&PlanTask>,
) -> CallToolResponse {
    let Ready {
        judged,
        args,
        built_in,
        started,
    } = ready;
    let caller = Caller::of(context);
    let caller_name = caller.label();
    let routed = match super::route(clusters, entry, request, &caller_name, started).await {
        Ok(routed) => routed,
        Err(refused) => return refused.into(),
    };
    let (state, entry) = (routed.state, &routed.entry);
    let record = outcome::Record {
        tier: caller.tier_within(state.settings.tier),
        audit: Some(&state.audit),
        arguments: routed.arguments.as_deref(),
        caller: Some(&caller_name),
    };
    let cluster = entry.cluster;
    let mut progress = Progress::of(context, task);
    let ran = match run_steps(clusters, approver, context, &judged, cluster, &mut progress).await {
        Ok(ran) => ran,
        Err(failure) => return done(&record, entry, started, Err(naming_plan(failure, id))).await,
    };
    if !built_in {
        let answer = generic::report(&ran, id);
        return done(&record, entry, started, Ok(answer)).await;
    }
    let newid = judged
        .first()
        .and_then(|j| j.step.arguments.get("newid"))
        .cloned();
    let reported = provision::report(clusters, approver, context, cluster, &args, newid, &ran);
    let result = match reported.await {
        Ok(mut answer) => {
            answer["plan"] = id.into();
            Ok(answer)
        }
        Err(why) => {
            let calm = undisturbed(context);
            let rolled = rollback(clusters, approver, &calm, &ran, cluster, &mut progress).await;
            let failure = ToolFailure::new(
                codes::PLAN_FAILED,
                format!(
                    "Every step ran, but the guest is not reachable: {why}. {}",
                    rolled.summary
                ),
            )
            .with_details(json!({"rollback": rolled.steps}));
            Err(naming_plan(failure, id))
        }
    };
    done(&record, entry, started, result).await
}

/// A plan's failure, naming the plan (`details.plan`), so its audit lines can be found.
fn naming_plan(failure: ToolFailure, id: &str) -> ToolFailure {
    with_detail(failure, "plan", id.into())
}

/// A failure with `key` set in its details (an object; other details are replaced).
fn with_detail(mut failure: ToolFailure, key: &str, value: Value) -> ToolFailure {
    if let Some(Value::Object(map)) = failure.details.as_mut() {
        map.insert(key.into(), value);
    } else {
        failure.details = Some(json!({ key: value }));
    }
    failure
}

/// The plan call's own answer and audit line.
async fn done(
    record: &outcome::Record<'_>,
    entry: &Entry,
    started: std::time::Instant,
    result: Result<Value, ToolFailure>,
) -> CallToolResponse {
    outcome::conclude(record, entry, started, result, 0, None)
        .await
        .into()
}

/// A refusal naming the reads the plan made before it (`details.read`).
fn with_read(failure: ToolFailure, read: &[String]) -> ToolFailure {
    if read.is_empty() {
        return failure;
    }
    with_detail(failure, "read", json!(read))
}
