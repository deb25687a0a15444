//! Unit tests of the approver: what counts as a person's accept, when elicitation is counted
//! on, and the form's shape.

use serde_json::json;

use rmcp::model::ElicitationAction;

use super::*;

/// The verdict on an answer to a question that offered no lease.
fn judge_plain(result: &ElicitResult) -> Verdict {
    judge(result, None)
}

fn offer() -> lease::LeaseOffer {
    lease::Leases::new(60)
        .offer(lease::Scope {
            holder: "stdio".into(),
            cluster: String::new(),
            target: lease::Target::Guest("150".into()),
            tool: "pve_qemu_update_config",
            routine: false,
            effects: crate::effects::EffectSet::of(crate::effects::Effect::Change),
            rules: Vec::new(),
        })
        .expect("a change is leasable")
}

#[test]
fn a_lease_is_granted_only_for_an_offered_length_on_a_ticked_accept() {
    let answer = |content: serde_json::Value| {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    };
    let offered = offer();
    assert!(matches!(
        judge(
            &answer(json!({"approve": true, "lease": "30"})),
            Some(&offered)
        ),
        Verdict::Leased(ApprovedBy::Person, 30)
    ));
    // No offer, a length not offered, `once`, a number instead of a string: approve once.
    for (content, offer) in [
        (json!({"approve": true, "lease": "30"}), None),
        (json!({"approve": true, "lease": "45"}), Some(&offered)),
        (json!({"approve": true, "lease": "once"}), Some(&offered)),
        (json!({"approve": true, "lease": 30}), Some(&offered)),
        (json!({"approve": true}), Some(&offered)),
    ] {
        assert!(
            matches!(
                judge(&answer(content.clone()), offer),
                Verdict::Approved(ApprovedBy::Person)
            ),
            "{content}"
        );
    }
    // A lease choice never approves an unticked or declined answer.
    assert!(matches!(
        judge(
            &answer(json!({"approve": false, "lease": "30"})),
            Some(&offered)
        ),
        Verdict::Refused(_)
    ));
    assert!(matches!(
        judge(
            &ElicitResult::new(ElicitationAction::Decline).with_content(json!({"lease": "30"})),
            Some(&offered)
        ),
        Verdict::Refused(_)
    ));
}

#[test]
fn the_form_offers_a_lease_only_when_the_question_has_one() {
    let question = |lease| Question {
        message: "Update VM 150?".into(),
        tool: "pve_qemu_update_config",
        destructive: false,
        lease,
    };
    let wire = serde_json::to_value(form(&question(Some(offer())))).expect("serializes");
    let choice = &wire["requestedSchema"]["properties"]["lease"];
    assert_eq!(choice["default"], "once");
    let values: Vec<String> = choice["oneOf"]
        .as_array()
        .or(choice["enum"].as_array())
        .expect("choices")
        .iter()
        .map(|v| {
            v.get("const")
                .unwrap_or(v)
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(values, ["once", "15", "30", "60"]);
    assert_eq!(wire["requestedSchema"]["required"], json!(["approve"]));
    let plain = serde_json::to_value(form(&question(None))).expect("serializes");
    assert!(
        plain["requestedSchema"]["properties"]
            .get("lease")
            .is_none()
    );
}

#[test]
fn only_a_ticked_accept_approves() {
    let result = |action, content: Option<serde_json::Value>| match content {
        Some(content) => ElicitResult::new(action).with_content(content),
        None => ElicitResult::new(action),
    };
    assert!(matches!(
        judge_plain(&result(
            ElicitationAction::Accept,
            Some(json!({"approve": true}))
        )),
        Verdict::Approved(ApprovedBy::Person)
    ));
    for (action, content, code) in [
        (
            ElicitationAction::Accept,
            Some(json!({"approve": false})),
            codes::CONFIRMATION_DECLINED,
        ),
        (
            ElicitationAction::Accept,
            None,
            codes::CONFIRMATION_DECLINED,
        ),
        (
            ElicitationAction::Decline,
            None,
            codes::CONFIRMATION_DECLINED,
        ),
        (
            ElicitationAction::Cancel,
            None,
            codes::CONFIRMATION_CANCELLED,
        ),
    ] {
        match judge_plain(&result(action, content)) {
            Verdict::Refused(f) => assert_eq!(f.code, code),
            other => panic!("expected refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_dismissed_question_is_told_apart_from_an_unknown_answer() {
    let message = |action| match judge_plain(&ElicitResult::new(action)) {
        Verdict::Refused(f) => (f.code, f.message),
        other => panic!("expected refusal, got {other:?}"),
    };
    let (code, text) = message(ElicitationAction::Cancel);
    assert_eq!(code, codes::CONFIRMATION_CANCELLED);
    assert_eq!(text, "The person dismissed the approval question.");
}

#[test]
fn without_sessions_elicitation_is_never_counted_on() {
    let approver = |stateless| {
        Approver::new(
            ApprovalMode::Auto,
            Duration::from_secs(1),
            SealedStates::random(),
        )
        .stateless(stateless)
    };
    assert!(approver(false).asks_person(Channel::Elicitation));
    assert!(!approver(true).asks_person(Channel::Elicitation));
    assert!(approver(true).asks_person(Channel::MultiRoundTrip));
    assert!(!approver(true).asks_person(Channel::Unreachable));
    for mode in [ApprovalMode::Auto, ApprovalMode::Elicit] {
        assert!(Channel::Unreachable.describe(mode).starts_with("refused"));
    }
    let failure = unreachable();
    assert_eq!(failure.code, codes::APPROVAL_UNAVAILABLE);
}

#[test]
fn the_form_has_one_required_box() {
    let params = form(&Question {
        message: "Stop VM 101?".into(),
        tool: "pve_stop_qemu_vm",
        destructive: true,
        lease: None,
    });
    let wire = serde_json::to_value(&params).expect("serializes");
    assert_eq!(wire["mode"], "form");
    assert_eq!(
        wire["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    assert_eq!(wire["requestedSchema"]["required"], json!(["approve"]));
}
