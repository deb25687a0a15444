//! What a person and a dry run see of a plan: each step with its arguments, effects and
//! reasons, and the plan's one question.
//!
//! Invariant: every value from the caller or from Proxmox in the question is escaped and
//! bounded as in any question (`preview::escape`, `preview::bounded`), and a secret-named
//! argument is masked (`redact::mask_arguments`) in the question and the dry run alike.

use serde_json::{Value, json};

use super::Judged;
use crate::identity::Caller;

/// One step as the dry run and the answer show it.
pub(super) fn step_view(index: usize, judged: &Judged) -> Value {
    json!({
        "step": index + 1,
        "tool": judged.step.tool,
        "arguments": crate::redact::mask_arguments(&judged.step.arguments),
        "effects": judged.clearance.names(),
        "reasons": judged.reasons,
        "now": judged.facts,
    })
}

/// The plan's one question: every step with its reasons, escaped as any question is.
pub(super) fn question_text(judged: &[Judged], cluster: Option<&str>, caller: &Caller) -> String {
    use std::fmt::Write as _;
    let mut text = format!(
        "Apply this plan of {} steps{}?",
        judged.len(),
        cluster.map_or_else(String::new, |c| format!(
            " in cluster '{}'",
            crate::preview::escape(c)
        ))
    );
    for (i, j) in judged.iter().enumerate() {
        // Secret-named arguments (a password, a key) are masked as in any question.
        let masked = crate::redact::mask_arguments(&j.step.arguments);
        let shown: Vec<String> = masked
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                let value = match v {
                    Value::String(s) => crate::preview::bounded(s),
                    other => crate::preview::bounded(&other.to_string()),
                };
                format!("{}={value}", crate::preview::escape(k))
            })
            .collect();
        let _ = write!(text, "\n{}. {} {}", i + 1, j.step.tool, shown.join(" "));
        for reason in &j.reasons {
            let _ = write!(text, "\n   - {}", crate::preview::escape(reason));
        }
        // Already escaped by the preview, as in any question.
        for fact in &j.facts {
            let _ = write!(text, "\n   {fact}");
        }
    }
    text.push_str(
        "\nThe steps run in this order; if one fails, the ones before it are undone, last first (a clone is deleted).",
    );
    if caller.via != crate::identity::Via::Stdio {
        let _ = write!(
            text,
            "\nRequested by {}.",
            crate::preview::escape(&caller.label())
        );
    }
    text
}
