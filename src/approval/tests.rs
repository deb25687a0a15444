//! Unit tests of the approver: what counts as a person's accept, when elicitation is counted
//! on, and the form's shape.

use serde_json::json;

use super::*;

#[test]
fn only_a_ticked_accept_approves() {
    let result = |action, content: Option<serde_json::Value>| match content {
        Some(content) => ElicitResult::new(action).with_content(content),
        None => ElicitResult::new(action),
    };
    assert!(matches!(
        judge(&result(
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
        match judge(&result(action, content)) {
            Verdict::Refused(f) => assert_eq!(f.code, code),
            other => panic!("expected refusal, got {other:?}"),
        }
    }
}

#[test]
fn a_dismissed_question_is_told_apart_from_an_unknown_answer() {
    let message = |action| match judge(&ElicitResult::new(action)) {
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
    });
    let wire = serde_json::to_value(&params).expect("serializes");
    assert_eq!(wire["mode"], "form");
    assert_eq!(
        wire["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );
    assert_eq!(wire["requestedSchema"]["required"], json!(["approve"]));
}
