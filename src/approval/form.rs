//! The approval form: the question as `elicitation/create` (and MRTR) sends it — the message,
//! the box to tick and, for a leasable call, the lease choice — and how a person's answer is
//! read.
//!
//! Invariant: only an accept with the box ticked approves, and a lease is granted only for a
//! length the question itself offered; anything else in the answer approves once or refuses.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::Value;

use super::{APPROVE_FIELD, ApprovedBy, LEASE_FIELD, ONCE, Question, Verdict, cancelled, lease};
use crate::envelope::{ToolFailure, codes};

/// Reads the person's answer: only an accept with the box ticked approves. A lease is granted
/// only when the question offered one and the answer chose one of its lengths; any other
/// `lease` value approves this call once.
pub(super) fn judge(result: &ElicitResult, offer: Option<&lease::LeaseOffer>) -> Verdict {
    match result.action {
        ElicitationAction::Accept => {
            let content = result.content.as_ref();
            let ticked = content
                .and_then(|c| c.get(APPROVE_FIELD))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !ticked {
                return Verdict::Refused(declined());
            }
            let chosen = content
                .and_then(|c| c.get(LEASE_FIELD))
                .and_then(Value::as_str)
                .and_then(|m| m.parse::<u32>().ok())
                .filter(|m| offer.is_some_and(|o| o.allows(*m)));
            match chosen {
                Some(minutes) => Verdict::Leased(ApprovedBy::Person, minutes),
                None => Verdict::Approved(ApprovedBy::Person),
            }
        }
        ElicitationAction::Decline => Verdict::Refused(declined()),
        ElicitationAction::Cancel => {
            Verdict::Refused(cancelled("The person dismissed the approval question."))
        }
        // An action this version does not know is not an accept.
        _ => Verdict::Refused(cancelled(
            "The client answered the approval question with an unknown action.",
        )),
    }
}

pub(super) fn declined() -> ToolFailure {
    ToolFailure::new(
        codes::CONFIRMATION_DECLINED,
        "The person declined this call; nothing was sent to Proxmox.",
    )
    .with_hint("Do not retry the same call unless the user asks for it.")
}

/// The form: the summary as the message, one required box to tick and, when the call may be
/// leased, an optional choice of approving its class for its target for a while.
pub(super) fn form(question: &Question) -> ElicitRequestParams {
    let mut builder = ElicitationSchema::builder()
        .title("Approve this Proxmox action?")
        .required_bool_with(APPROVE_FIELD, |b| {
            b.title("Approve")
                .description("Tick to run exactly this call; leave unticked or decline to stop it.")
        });
    if let Some(offer) = &question.lease {
        builder = builder.property(LEASE_FIELD, lease_choice(offer));
    }
    let schema = builder
        .build()
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.message.clone(),
        requested_schema: schema,
    }
}

/// The lease choice: `once` (the default) or one of the offered lengths in minutes.
fn lease_choice(offer: &lease::LeaseOffer) -> rmcp::model::PrimitiveSchemaDefinition {
    let mut values = vec![ONCE.to_owned()];
    let mut titles = vec!["Only this call".to_owned()];
    for minutes in &offer.minutes {
        values.push(minutes.to_string());
        titles.push(format!(
            "Also allow {} for {minutes} min",
            offer.scope.shown()
        ));
    }
    let untitled = || rmcp::model::EnumSchema::builder(values.clone());
    let builder = untitled()
        .enum_titles(titles)
        .unwrap_or_else(|_| untitled());
    let built = match builder.with_default(ONCE) {
        Ok(with_default) => with_default,
        Err(_) => untitled(),
    }
    .title("Approve for")
    .description("Once, or also later calls of this class to this target for a while (revocable).")
    .build();
    rmcp::model::PrimitiveSchemaDefinition::Enum(built)
}

/// The person's question with the lease offer written out, so a client that shows only the
/// message still says what a lease would cover.
pub fn with_lease_line(message: String, offer: Option<&lease::LeaseOffer>) -> String {
    match offer {
        Some(offer) => format!(
            "{message}\nLease: you may also allow {} for up to {} min without asking again (revocable: nandi-proxmox-mcp lease revoke).",
            offer.scope.shown(),
            offer.minutes.iter().max().copied().unwrap_or(0)
        ),
        None => message,
    }
}
