//! Judging a plan's steps before anything is sent: each validated against its row,
//! prechecked, gated by the effects classifier, held to the tier, the kill switch, the
//! operator's rules and a person's leases, and — for a person or a dry run — its target read
//! as Proxmox has it now.
//!
//! Invariant: the first step refused refuses the plan, naming the step; nothing but the reads
//! of the judgement is sent (a revert's checks against Proxmox wait for its turn).

// Refusals are `ToolFailure`s as everywhere in the pipeline.
#![allow(clippy::result_large_err)]

use super::{Judged, Step};
use crate::approval::Approver;
use crate::backends::Backends;
use crate::catalog::{Backend, CompositeOp};
use crate::clusters::Clusters;
use crate::dispatch;
use crate::effects::EffectSet;
use crate::envelope::{ToolFailure, codes};
use crate::gate::{self, Gate};
use crate::registry::Entry;

/// Checks every step's arguments against its row (no request); the first refused step
/// refuses the plan, naming it.
pub(super) fn validate(state: &crate::state::AppState, steps: &[Step]) -> Result<(), ToolFailure> {
    for (i, step) in steps.iter().enumerate() {
        let Some(entry) = state.registry.get(step.tool) else {
            return Err(not_exposed(i, step.tool));
        };
        dispatch::preflight(entry, Some(&step.arguments)).map_err(|f| in_step(f, i, step.tool))?;
    }
    Ok(())
}

/// A step whose tool the policy in force does not expose.
fn not_exposed(index: usize, tool: &str) -> ToolFailure {
    ToolFailure::new(
        codes::EFFECT_NOT_APPROVED,
        format!(
            "The plan was refused at step {} ({tool}): the policy in force does not expose {tool}; nothing was sent.",
            index + 1
        ),
    )
}

/// What judging a plan's steps needs besides the steps.
pub(super) struct Judging<'a> {
    pub(super) clusters: &'a Clusters,
    pub(super) approver: &'a Approver,
    pub(super) state: &'a crate::state::AppState,
    pub(super) acting: &'a crate::state::Acting,
    pub(super) tier: crate::catalog::Tier,
    pub(super) plan: &'a Entry,
    /// Who a person's lease would have been granted to ([`crate::pipeline::leases::holder_of`]).
    pub(super) holder: Option<String>,
    pub(super) caller_name: &'a str,
    /// Whether to read each gated step's target for the question (see [`Judged::facts`]).
    pub(super) with_facts: bool,
}

/// Judges every step; the first step refused refuses the plan, naming it. A step a person's
/// lease covers does not ask, as it would not on its own.
pub(super) async fn judge(
    judging: &Judging<'_>,
    steps: Vec<Step>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<Judged>, ToolFailure> {
    let Judging {
        clusters,
        approver,
        state,
        acting,
        tier,
        plan,
        ..
    } = *judging;
    let pve = acting.client.as_ref();
    let backends = Backends {
        pve,
        ssh: None,
        registry: &state.registry,
        settings: &state.settings,
        clusters: clusters.clients(),
        undo: state.audit.undo(),
        leases: approver.leases(),
        lease_holder: None,
        pbs: if acting.is_personal() {
            &[]
        } else {
            &state.pbs
        },
    };
    let mut judged = Vec::with_capacity(steps.len());
    for (i, step) in steps.into_iter().enumerate() {
        let at = |failure: ToolFailure| in_step(failure, i, step.tool);
        let Some(entry) = state.registry.get(step.tool) else {
            return Err(not_exposed(i, step.tool));
        };
        let spec = entry.spec;
        let args = dispatch::preflight(entry, Some(&step.arguments)).map_err(at)?;
        let learned = if spec.backend == Backend::Composite(CompositeOp::UndoChange) {
            // A revert's checks against Proxmox wait for its turn: a step ahead of it may be
            // what makes it possible (a clone is stopped before it is deleted).
            let planned = crate::composite::undo_change::judge_from_record(&backends, &args);
            planned.await.map_err(at)?.classified
        } else {
            let prechecked = Box::pin(dispatch::precheck(&backends, spec, &args, cancel));
            prechecked.await.map_err(at)?.learned
        };
        let gate = gate::evaluate_with(spec, &args, learned);
        if let Some(failure) = gate::tier_refusal(tier, spec, gate.as_ref()) {
            return Err(at(failure));
        }
        let freeze = state.settings.freeze.as_ref();
        if let Some(failure) = gate::frozen_refusal(spec, gate.as_ref(), freeze) {
            return Err(at(failure));
        }
        let ruled = Box::pin(crate::pipeline::policy::evaluate(
            spec.name,
            &state.settings.rules,
            pve,
            plan.cluster,
            gate.as_ref(),
            &args,
            cancel,
        ))
        .await;
        if let Some(failure) = ruled.refusal(spec.name) {
            return Err(at(failure));
        }
        let asks = gate.is_some() && (ruled.asks() || ruled.approval().is_none());
        let leased = match (&gate, &judging.holder) {
            (Some(gate), Some(holder)) if asks && !ruled.asks() => {
                let scope = crate::pipeline::leases::scope_of(
                    holder.clone(),
                    plan.cluster,
                    spec,
                    &args,
                    gate,
                );
                let found = crate::pipeline::leases::lookup(
                    approver.leases(),
                    &scope,
                    freeze,
                    &state.audit,
                    judging.caller_name,
                );
                found
                    .await
                    .as_ref()
                    .map(crate::pipeline::leases::approval_of)
            }
            _ => None,
        };
        let asks = asks && leased.is_none();
        // A guest an earlier step creates has no current values to show yet.
        let vmid = step.arguments.get("vmid");
        let made_here = vmid.is_some()
            && judged
                .iter()
                .any(|j: &Judged| j.step.arguments.get("newid") == vmid);
        let facts = match &gate {
            Some(_) if made_here => vec!["Target: the guest an earlier step creates".to_owned()],
            Some(_) if judging.with_facts => {
                let preview = crate::preview::build(pve, spec, &args, cancel).await;
                preview.step_facts(spec)
            }
            _ => Vec::new(),
        };
        judged.push(Judged {
            clearance: gate.as_ref().map_or(EffectSet::READ, Gate::clearance),
            reasons: gate.as_ref().map(Gate::reasons).unwrap_or_default(),
            facts,
            asks,
            leased,
            step,
        });
    }
    Ok(judged)
}

/// A step's refusal, naming the step.
fn in_step(mut failure: ToolFailure, index: usize, tool: &str) -> ToolFailure {
    failure.message = format!(
        "The plan was refused at step {} ({tool}), before anything was sent: {}",
        index + 1,
        failure.message
    );
    failure
}
