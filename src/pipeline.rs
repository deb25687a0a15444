//! The call pipeline, one straight line: validate → the server's own guards → gate (and the
//! kill switch) → (dry-run: preview, stop) → approve → dispatch → (long tasks: MCP task or
//! wait) → envelope.
//!
//! Each stage has one home: validation in `dispatch::preflight` (from the row), the gate in
//! `gate` (from the row and the arguments), the preview in `preview`, approval in `approval`
//! (the only stage that talks to the client), the request in `dispatch`. Invariant: a gated
//! call reaches `dispatch::execute` only with an approval verdict, and a dry-run never does.
//! A dry-run is answered before approval on purpose: it sends nothing, and asking a person
//! to approve a preview would teach people to click through.

use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod leases;
pub mod plan;

use crate::approval::lease::Ending;
use crate::approval::{Approver, Channel, Question, Verdict, with_lease_line};
use crate::backends::Backends;
use crate::clusters::Clusters;
use crate::dispatch;
use crate::envelope::ToolFailure;
use crate::gate::{self, Gate};
use crate::identity::{Caller, Via};
use crate::outcome;
use crate::preview::{
    self,
    risk::{self, RoutineVerdict},
};
use crate::registry::Entry;
use crate::schema::ValidArgs;
use crate::state::AppState;

pub mod policy;

/// Runs one `tools/call` of a listed tool (a plan: every step, under one approval).
pub async fn run(
    clusters: &std::sync::Arc<Clusters>,
    approver: &std::sync::Arc<Approver>,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> CallToolResponse {
    if plan::is_plan(entry.spec) {
        return Box::pin(plan::apply(clusters, approver, entry, request, context)).await;
    }
    Box::pin(run_call(clusters, approver, entry, request, context, None))
        .await
        .response
}

/// How a call runs as a step of an approved plan.
#[derive(Debug, Clone, Copy)]
pub struct AsStep {
    /// Recorded as the call's approval (`plan`, `plan-rollback`).
    pub approved_by: &'static str,
    /// The effects the plan was approved for this step; a step whose gate now plans more is
    /// refused before anything is sent. `None`: a rollback, whose revert is planned and
    /// checked by the undo module itself.
    pub approved: Option<crate::effects::EffectSet>,
}

/// What one call came to: its answer, and the undo record it wrote (if any).
pub struct Ran {
    /// The answer to the client.
    pub response: CallToolResponse,
    /// The undo record of the change, when one was written.
    pub undo: Option<u64>,
}

impl From<rmcp::model::CallToolResult> for Ran {
    fn from(result: rmcp::model::CallToolResult) -> Ran {
        Ran::from(CallToolResponse::from(result))
    }
}

impl From<CallToolResponse> for Ran {
    fn from(response: CallToolResponse) -> Ran {
        Ran {
            response,
            undo: None,
        }
    }
}

/// The call bound to the cluster it names, or the answer refusing it (audited in that
/// cluster's log when it exists).
pub(crate) async fn route<'a>(
    clusters: &'a Clusters,
    entry: &'a Entry,
    request: &'a CallToolRequestParams,
    caller_name: &str,
    started: Instant,
) -> Result<crate::clusters::Routed<'a>, rmcp::model::CallToolResult> {
    match clusters.route(entry, request.arguments.as_ref()) {
        Ok(routed) => Ok(routed),
        Err(refusal) => Err(refusal
            .conclude(request.arguments.as_ref(), caller_name, started)
            .await),
    }
}

/// One call through every stage; `step`: as a step of an approved plan (no question of its
/// own, no MCP task of its own, at most the effects approved for it).
pub async fn run_call(
    clusters: &Clusters,
    approver: &Approver,
    entry: &Entry,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    step: Option<AsStep>,
) -> Ran {
    let started = Instant::now();
    let caller = Caller::of(context);
    let caller_name = caller.label();
    // Stage: the cluster the call names (several clusters only; the plain case passes through).
    // From here on, the call sees only that cluster, and arguments without `cluster`.
    let routed = match route(clusters, entry, request, &caller_name, started).await {
        Ok(routed) => routed,
        Err(refused) => return refused.into(),
    };
    let (state, entry) = (routed.state, &routed.entry);
    let arguments = routed.arguments.as_deref();
    let spec = entry.spec;
    let cancel = &context.ct;
    // The tier in force: the server's, narrowed by the caller's credentials (OAuth scopes).
    // It decides what may be called and what redaction may reveal.
    let tier = caller.tier_within(state.settings.tier);
    // Whose Proxmox rights the call uses (the person's own token with `PVE_PEOPLE_FILE`);
    // the audit names both the caller and that identity.
    let acting = state.acting_for(&caller);
    let caller_name = match &acting {
        Ok(acting) => acting.caller_name(caller_name),
        Err(_) => caller_name,
    };
    // Redaction and audit (`outcome::conclude`) see every outcome below.
    let record = outcome::Record {
        tier,
        audit: Some(&state.audit),
        arguments,
        caller: Some(&caller_name),
    };
    let acting = match acting.and_then(|acting| refuse_ssh_per_person(acting, spec)) {
        Ok(acting) => acting,
        Err(failure) => {
            return outcome::conclude(&record, entry, started, Err(*failure), 0, None)
                .await
                .into();
        }
    };
    let pve = acting.client.as_ref();
    let args = match dispatch::preflight(entry, arguments) {
        Ok(args) => args,
        Err(failure) => {
            return outcome::conclude(&record, entry, started, Err(failure), 0, None)
                .await
                .into();
        }
    };
    // Who a lease granted on this call would belong to (also whose leases a listing shows).
    let holder = leases::holder_of(context, &caller);
    let backends = Backends {
        pve,
        // SSH runs as the server's host account: never for a person acting as themself.
        ssh: state.ssh.as_deref().filter(|_| !acting.is_personal()),
        registry: &state.registry,
        settings: &state.settings,
        clusters: clusters.clients(),
        undo: state.audit.undo(),
        leases: approver.leases(),
        lease_holder: holder.as_deref(),
        // The PBS token is the server's: never for a person acting as themself.
        pbs: if acting.is_personal() {
            &[]
        } else {
            &state.pbs
        },
    };
    // Stage: the server's own guards (input rules, address guard, the cluster's schema) run
    // before the gate, so nobody is asked about a call that would be refused anyway, and the
    // gate sees what the cluster's schema says the call does.
    // Boxed: the schema lookup's future is large, and the pipeline's own future (which MCP
    // tasks run on a worker thread's stack) must stay small.
    let mut prechecked = match Box::pin(dispatch::precheck(&backends, spec, &args, cancel)).await {
        Ok(prechecked) => prechecked,
        Err(failure) => {
            return outcome::conclude(&record, entry, started, Err(failure), 0, None)
                .await
                .into();
        }
    };
    let gate = gate::evaluate_with(spec, &args, std::mem::take(&mut prechecked.learned));
    if let Some(failure) = gate::tier_refusal(tier, spec, gate.as_ref()) {
        return outcome::conclude(&record, entry, started, Err(failure), 0, None)
            .await
            .into();
    }
    // A plan's step may send exactly what the plan's question showed for it, no more.
    if let Some(failure) = step.and_then(|step| plan::beyond_approved(step, spec, gate.as_ref())) {
        return outcome::conclude(&record, entry, started, Err(failure), 0, None)
            .await
            .into();
    }
    // The kill switch: while changes are frozen, anything beyond a plain read stops here,
    // before a dry run or a person's question.
    let freeze = state.settings.freeze.as_ref();
    if let Some(failure) = gate::frozen_refusal(spec, gate.as_ref(), freeze) {
        // The kill switch ends every lease, so none outlives the freeze.
        for lease in approver.leases().end_all() {
            leases::record(&state.audit, &lease, Some(Ending::Frozen), &caller_name).await;
        }
        return outcome::conclude(&record, entry, started, Err(failure), 0, None)
            .await
            .into();
    }

    // Stage: the operator's rules (docs/POLICY.md). A `deny` stops here, before a dry run or a
    // question; `ask` and `allow` apply where a person would be asked.
    let rules = &state.settings.rules;
    let (client, cluster) = (pve, entry.cluster);
    let ruled = Box::pin(policy::evaluate(
        spec.name,
        rules,
        client,
        cluster,
        gate.as_ref(),
        &args,
        cancel,
    ))
    .await;
    if let Some(failure) = ruled.refusal(spec.name) {
        return outcome::conclude(&record, entry, started, Err(failure), 0, None)
            .await
            .into();
    }

    if args.dry_run {
        let routine = routine_verdict(state, pve, gate.as_ref(), &args, cancel).await;
        let unasked = matches!(routine, Some(RoutineVerdict::Unasked { .. })) && !ruled.asks();
        let reasons = gate
            .as_ref()
            .map(|g| with_facts(g.reasons(), routine.as_ref()));
        let preview = preview::build(pve, spec, &args, cancel)
            .await
            .in_cluster(entry.cluster);
        let allowed = ruled
            .approval()
            .map(|by| format!("none: the operator's policy lets it run without a person ({by})"));
        let leasing = !unasked && !ruled.asks() && allowed.is_none();
        let leased = match (&gate, holder.clone()) {
            (Some(gate), Some(holder)) if leasing => {
                let scope = leases::scope_of(holder, entry.cluster, spec, &args, gate);
                approver.leases().peek(&scope).map(|lease| {
                    format!(
                        "none: lease {} covers it ({}), granted by a person",
                        lease.id,
                        lease.scope.shown()
                    )
                })
            }
            _ => None,
        };
        let approval_path = if let Some(allowed) = &allowed {
            allowed.as_str()
        } else if unasked {
            "none: a routine change to an unprotected guest runs without a person (PVE_ROUTINE=ask asks)"
        } else if let Some(leased) = &leased {
            leased.as_str()
        } else {
            approver.describe(context)
        };
        let mut data = preview.dry_run(spec, reasons.as_deref(), approval_path);
        if let (Some(view), Some(map)) = (ruled.dry_run_view(), data.as_object_mut()) {
            map.insert("policy".into(), view);
        }
        let preview_only = outcome::Record {
            audit: None,
            ..record
        };
        return outcome::conclude(&preview_only, entry, started, Ok(data), 0, None)
            .await
            .into();
    }
    // Whether the call is recorded as a change (soon: from a request classifier).
    let is_change = !spec.effect.is_read() || gate.is_some();
    // A change that could not be recorded is refused before anyone is asked (fail closed).
    if let Err(failure) =
        crate::audit::call::ensure_change_recordable(&state.audit, spec, is_change).await
    {
        return outcome::conclude(&record, entry, started, Err(failure), 0, None)
            .await
            .into();
    }

    // Stage: a routine change (start, resume, a snapshot, a template's linked clone, one backup
    // that prunes nothing) runs without a person unless its target's facts protect it; read
    // once the change is known to be recordable, as the question's own reads are.
    // A plan's step was decided with the plan: no target reads of its own.
    let routine = match step {
        Some(_) => None,
        None => routine_verdict(state, pve, gate.as_ref(), &args, cancel).await,
    };
    let unasked = matches!(routine, Some(RoutineVerdict::Unasked { .. })) && !ruled.asks();
    let reasons = gate
        .as_ref()
        .map(|g| with_facts(g.reasons(), routine.as_ref()));
    // A person's lease covering this call lets it run without asking again — unless the
    // operator's policy asks for it every time (or already lets it run).
    let leasing = !unasked && !ruled.asks() && ruled.approval().is_none();
    let scope = match (&gate, holder.clone()) {
        (Some(gate), Some(holder)) if leasing => {
            Some(leases::scope_of(holder, entry.cluster, spec, &args, gate))
        }
        _ => None,
    };
    let leased = match &scope {
        Some(scope) => {
            leases::lookup(approver.leases(), scope, freeze, &state.audit, &caller_name).await
        }
        None => None,
    };
    // An `allow` rule of the operator's policy: no person, audited as `policy:<rule id>`.
    let policy_approval = ruled.approval();
    let mut approved_by = None;
    if let Some(step) = step {
        // Approved with its plan (one question for every step).
        approved_by = Some(step.approved_by);
    } else if let Some(by) = policy_approval {
        approved_by = Some(by);
    } else if unasked {
        approved_by = Some(ROUTINE);
    } else if let Some(lease) = &leased {
        // Audited as `lease`, the line's approver naming which one.
        approved_by = Some(leases::LEASED);
        crate::approval::note_approver(leases::approval_of(lease));
    } else if let Some(gate) = &gate {
        let reasons = reasons.clone().unwrap_or_default();
        // The summary costs Proxmox reads: build it only when a person will read it.
        // The client's abilities are read only for gated calls (a copy of its capabilities).
        // A lease is offered only where a person answers.
        let asks_person = approver.asks_person(Channel::of(context));
        let offer = scope
            .clone()
            .filter(|_| asks_person)
            .and_then(|scope| approver.leases().offer(scope));
        let message = if asks_person && request.request_state.is_none() {
            let question = preview::build(pve, spec, &args, cancel)
                .await
                .in_cluster(entry.cluster)
                .question(spec, &reasons);
            with_lease_line(requested_by(question, &caller), offer.as_ref())
        } else {
            String::new()
        };
        let question = Question {
            message,
            tool: spec.name,
            destructive: spec.effect.is_destructive(),
            lease: offer,
        };
        match approver
            .decide(context, request, &question, args.confirmed)
            .await
        {
            Verdict::Approved(by) => approved_by = Some(by.as_str()),
            Verdict::Leased(by, minutes) => {
                approved_by = Some(by.as_str());
                if let Some(offer) = &question.lease {
                    let store = approver.leases();
                    leases::grant(store, offer, minutes, by, &state.audit, &caller_name).await;
                }
            }
            Verdict::AskClient(input) => return CallToolResponse::InputRequired(*input).into(),
            Verdict::Refused(failure) => {
                let failure = with_reads(with_fired_rules(failure, gate), routine.as_ref());
                return outcome::conclude(&record, entry, started, Err(failure), 0, None)
                    .await
                    .into();
            }
        }
    }

    // Nothing is sent before its `sending` line is written and synced (fail closed).
    let intent = crate::audit::call::Call {
        spec,
        wire_name: entry.wire_name,
        alias_for: entry.alias_for,
        arguments,
        approval: approved_by,
        caller: Some(&caller_name),
    };
    if is_change {
        tracing::info!(tool = entry.wire_name, caller = %caller_name, approval = approved_by.unwrap_or("none"), "sending a change");
    }
    let audit_seq = match crate::audit::call::record_intent(&state.audit, &intent, is_change).await
    {
        Ok(seq) => seq,
        Err(failure) => {
            return outcome::conclude(&record, entry, started, Err(failure), 0, approved_by)
                .await
                .into();
        }
    };
    // Stage: undo — what reverting an approved change needs, read before it is sent (plain
    // reads); written after it succeeded, linked to the `sending` line (`undo`).
    let undo = match approved_by {
        Some(_) => {
            Box::pin(crate::composite::undo_change::capture(
                &backends,
                spec,
                &args,
                &prechecked,
                cancel,
            ))
            .await
        }
        None => None,
    };
    // A guest program answers as a task (started, then followed by `tasks/get`) for clients
    // that follow tasks; otherwise the handler follows it to its end itself.
    let exec_as_task = crate::tasks::answers_exec_as_task(spec, context) && step.is_none();
    // The call may have exactly the effects that were approved; the REST client and the
    // SSH entry refuse any request beyond them (a routine call: plain reads only).
    let clearance = gate
        .as_ref()
        .map_or(crate::effects::EffectSet::READ, Gate::clearance);
    let work = crate::effects::with_clearance(
        clearance,
        freeze,
        crate::composite::exec::detached_scope(
            exec_as_task,
            // Boxed like the precheck: the backends' futures are large, and a task runs this
            // one on a worker thread's stack.
            Box::pin(dispatch::execute(
                &backends, spec, &args, prechecked, cancel,
            )),
        ),
    );
    let (outcome, attempts) = crate::tasks::progress_scope(context, entry.cluster, work).await;
    // Shape first (projection, paging), then redact and audit what is returned: a
    // task-bound answer below does not come back through `conclude`.
    let mut outcome = outcome
        .map(|data| crate::lean::shape(data, &args.shape))
        .map_err(|failure| acting.explain(failure));
    outcome::seal(&record, entry, started, &mut outcome, approved_by).await;
    let mut undo_id = None;
    if let Some(undo) = undo {
        let succeeded = outcome.is_ok();
        undo_id = Box::pin(undo.commit(pve, audit_seq, succeeded, cancel)).await;
    }
    // Stage: long tasks — a UPID becomes an MCP task, or is followed to its end (`wait`).
    let dispatched = crate::tasks::Dispatched {
        entry,
        args: &args,
        outcome: &outcome,
        attempts,
        started,
        approved_by,
        pve,
        inline: step.is_some(),
    };
    let response = match crate::tasks::after_dispatch(state, dispatched, context).await {
        Some(response) => response,
        None => outcome::finish(entry, started, outcome, attempts, approved_by).into(),
    };
    Ran {
        response,
        undo: undo_id,
    }
}

/// What a routine candidate comes to once its target is read (`None`: not a candidate, or
/// the operator asks for every change, or there is no Proxmox to read).
async fn routine_verdict(
    state: &AppState,
    client: Option<&crate::pve::Client>,
    gate: Option<&Gate>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Option<RoutineVerdict> {
    let kind = gate?.routine?;
    let client = client?;
    if !state.settings.routine.unasked {
        return None;
    }
    let vmid = args
        .values
        .get("vmid")
        .map(|v| v.to_wire())
        .unwrap_or_default();
    let settings = &state.settings.routine;
    // A start of a guest this server copied from a live one stays consequential.
    let copy_of = match kind {
        crate::effects::routine::Routine::PowerOn => state.audit.undo().copy_of(&vmid).await,
        _ => None,
    };
    let decided = risk::decide(client, kind, &vmid, copy_of.as_deref(), settings, cancel);
    Some(Box::pin(decided).await)
}

/// An SSH tool for a caller acting under their own Proxmox identity is refused: SSH runs as the
/// server's host account, past the person's Proxmox ACLs.
fn refuse_ssh_per_person(
    acting: crate::state::Acting,
    spec: &crate::catalog::ToolSpec,
) -> Result<crate::state::Acting, Box<crate::envelope::ToolFailure>> {
    if !acting.is_personal() || !matches!(spec.backend, crate::catalog::Backend::Ssh(_)) {
        return Ok(acting);
    }
    Err(Box::new(crate::envelope::ToolFailure::new(
        crate::envelope::codes::SSH_NOT_PER_PERSON,
        format!(
            "{} runs over SSH as the server's host account, which your own Proxmox identity's rights do not limit; with per-person identity it is not offered to OAuth callers. Nothing was run.",
            spec.name
        ),
    )
    .with_hint("Use the REST tools (they run with your Proxmox rights), or ask the operator to run the SSH tool over stdio or the static token.")))
}

/// How a routine change that ran without a person is recorded (the audit's `approval`).
pub const ROUTINE: &str = "routine";

/// The gate's reasons, and for a routine change that asks after all, why and the target's
/// facts in one line.
fn with_facts(mut reasons: Vec<String>, routine: Option<&RoutineVerdict>) -> Vec<String> {
    match routine {
        Some(RoutineVerdict::Ask { why, facts, .. }) => {
            reasons.extend(why.iter().cloned());
            reasons.push(format!("target facts: {facts}"));
        }
        Some(RoutineVerdict::Unasked { kind, facts }) => {
            reasons.push(format!("routine ({}): {}", kind.as_str(), kind.meaning()));
            reasons.push(format!("target facts: {facts}"));
        }
        None => {}
    }
    reasons
}

/// The person's question, naming who asked when it is not the local user: a person asked
/// about a call from a remote agent should know whose request it is.
fn requested_by(question: String, caller: &Caller) -> String {
    if caller.via == Via::Stdio {
        return question;
    }
    format!("{question}\n\nRequested by: {}", caller.label())
}

/// Names the target's fact reads in a refusal (`details.read`), so it never claims nothing
/// was sent when those plain reads were.
fn with_reads(mut failure: ToolFailure, routine: Option<&RoutineVerdict>) -> ToolFailure {
    let Some(RoutineVerdict::Ask { reads, .. }) = routine else {
        return failure;
    };
    // A routine candidate fired no row rule, so nothing else stands in its details.
    failure.details = Some(json!({ "read": reads }));
    failure
}

/// Adds the argument rules that fired to a refusal, so the caller sees which arguments made
/// the call need approval.
fn with_fired_rules(mut failure: ToolFailure, gate: &Gate) -> ToolFailure {
    if !gate.fired.is_empty() {
        let conditions: Vec<String> = gate.fired.iter().map(|r| r.condition()).collect();
        failure.details = Some(json!({
            "approvalNeededFor": conditions,
            "reasons": gate.reasons(),
        }));
    }
    failure
}
