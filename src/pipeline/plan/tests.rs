//! The step clearance check ([`super::beyond_approved`]): a step is refused when its gate now
//! plans an effect its plan was not approved for, and runs when it plans no more.

use super::*;
use crate::effects::classify_rest;
use crate::gate;

fn update_config() -> &'static ToolSpec {
    crate::catalog::find("pve_qemu_update_config").expect("row")
}

fn step(approved: EffectSet) -> AsStep {
    AsStep {
        approved_by: PLAN_APPROVAL,
        approved: Some(approved),
    }
}

#[test]
fn a_step_that_now_plans_more_than_its_approval_is_refused() {
    let spec = update_config();
    let args = ValidArgs::default();
    let judged = gate::evaluate_with(spec, &args, classify_rest("GET", "/version", &[]))
        .expect("a config update is gated");
    // What the cluster now says it does: it also deletes the guest.
    let destroys = classify_rest("DELETE", "/nodes/pve01/qemu/101", &[]);
    assert!(!destroys.effects.is_read());
    let now = gate::evaluate_with(spec, &args, destroys).expect("gated");
    let refused = beyond_approved(step(judged.clearance()), spec, Some(&now)).expect("refused");
    assert_eq!(refused.code, codes::EFFECT_NOT_APPROVED);
    assert!(
        refused.message.contains("nothing was sent"),
        "{}",
        refused.message
    );
    // The same plan as approved runs; so does a rollback (no approved set) and a read.
    assert!(beyond_approved(step(judged.clearance()), spec, Some(&judged)).is_none());
    assert!(beyond_approved(step(now.clearance()), spec, Some(&now)).is_none());
    let revert = AsStep {
        approved_by: ROLLBACK_APPROVAL,
        approved: None,
    };
    assert!(beyond_approved(revert, spec, Some(&now)).is_none());
    assert!(beyond_approved(step(EffectSet::READ), spec, None).is_none());
}
