//! The operator's rules applied to one call (docs/POLICY.md): the [`Subject`] the rules see,
//! gathered from the gate, the arguments and — only when a rule matches on `pool` or `tag`, or
//! a template clone's class depends on it — the target guest's facts (`preview::risk::read`,
//! plain reads), and what the decision does to the call.
//!
//! Invariants: only calls the gate holds are decided (a plain read is the tier's and the
//! lists' business); a `deny` refuses before a dry run or a question, with nothing sent but
//! the facts' plain reads, which the refusal names; facts that could not be read are
//! [`Guest::Unknown`], which never satisfies an `allow` that depends on them; a template
//! clone whose source is not known to be a template is consequential, so an `allow` for
//! routine changes never lets a copy of a live guest through.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::effects::routine::Routine;
use crate::envelope::{ToolFailure, codes};
use crate::gate::Gate;
use crate::policy::{Action, Class, Decision, Guest, PolicyRules, Subject};
use crate::preview::risk::{self, RiskFacts};
use crate::pve;
use crate::schema::ValidArgs;

/// What the operator's rules said about a call (`decision: None`: no rules, or not gated).
#[derive(Debug, Default)]
pub struct Ruled {
    /// The decision, when the call was decided.
    pub decision: Option<Decision>,
    /// The facts' reads made for it (for a refusal's `details.read`).
    pub reads: Vec<String>,
    /// The class the rules saw (a template clone of a guest not known to be a template is
    /// consequential).
    pub class: Option<Class>,
    /// What the rules knew of the target guest.
    pub guest: Option<Guest>,
}

impl Ruled {
    /// The action of the deciding rule.
    pub fn action(&self) -> Option<Action> {
        self.decision.as_ref().and_then(|d| d.action)
    }

    /// The refusal of a call a `deny` rule matched (`POLICY_DENIED`).
    pub fn refusal(&self, tool: &str) -> Option<ToolFailure> {
        let decision = self.decision.as_ref()?;
        let rule = decision
            .rule
            .as_ref()
            .filter(|_| self.action() == Some(Action::Deny))?;
        let mut details = json!({ "rule": rule.id, "ruleText": rule.text });
        if !self.reads.is_empty() {
            details["read"] = json!(self.reads);
        }
        Some(
            ToolFailure::new(
                codes::POLICY_DENIED,
                format!(
                    "Refused by the operator's policy: {tool} matches {} ({}). Nothing was sent to Proxmox{}.",
                    rule.id,
                    rule.text,
                    if self.reads.is_empty() { "" } else { " but the target's plain reads" }
                ),
            )
            .with_hint("The operator's policy (PVE_POLICY_FILE or the instance file's `policy`) forbids this call; `nandi-proxmox-mcp policy explain TOOL key=value…` shows why. Ask the operator, or do something else.")
            .with_details(details),
        )
    }

    /// The audit's approval of a call an `allow` rule lets run without a person.
    pub fn approval(&self) -> Option<&'static str> {
        self.decision.as_ref().and_then(Decision::approval)
    }

    /// Whether a routine change that would run unasked is asked after all (`ask`).
    pub fn asks(&self) -> bool {
        self.action() == Some(Action::Ask)
    }

    /// The dry run's `policy` field: the deciding rule (or the built-in default) and why.
    pub fn dry_run_view(&self) -> Option<Value> {
        let d = self.decision.as_ref()?;
        Some(json!({
            "decidedBy": d.rule.as_ref().map_or("built-in default", |r| r.id.as_str()),
            "action": d.action.map_or("default", Action::as_str),
            "why": d.why,
            "matched": d.matched.iter().map(|r| format!("{}: {}", r.id, r.text)).collect::<Vec<_>>(),
        }))
    }
}

/// Decides a call the gate holds against the operator's rules.
pub async fn evaluate(
    tool: &str,
    rules: &PolicyRules,
    client: Option<&pve::Client>,
    cluster: Option<&str>,
    gate: Option<&Gate>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Ruled {
    let Some(gate) = gate.filter(|_| !rules.is_empty()) else {
        return Ruled::default();
    };
    let (subject, reads) = subject_of(tool, rules, client, cluster, gate, args, cancel).await;
    Ruled {
        decision: Some(rules.decide(&subject)),
        reads,
        class: Some(subject.class),
        guest: Some(subject.guest),
    }
}

/// The call as the rules see it, and the reads made to learn its guest's facts.
pub async fn subject_of(
    tool: &str,
    rules: &PolicyRules,
    client: Option<&pve::Client>,
    cluster: Option<&str>,
    gate: &Gate,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Subject, Vec<String>) {
    let text = |name: &str| args.values.get(name).map(|v| v.to_wire());
    let vmid = text("vmid");
    let clone = gate.routine == Some(Routine::TemplateClone);
    let facts = match &vmid {
        Some(vmid) if rules.needs_guest_facts() || clone => Some(match client {
            Some(client) => risk::read(client, vmid, cancel).await,
            None => RiskFacts {
                vmid: vmid.clone(),
                unread: Some("no Proxmox connection to read them from".into()),
                ..RiskFacts::default()
            },
        }),
        _ => None,
    };
    let guest = facts.as_ref().map_or(Guest::None, guest_of);
    let template = facts
        .as_ref()
        .is_some_and(|f| f.unread.is_none() && f.template);
    let class = match gate.routine {
        Some(Routine::TemplateClone) if !template => Class::Consequential,
        Some(_) => Class::Routine,
        None => Class::Consequential,
    };
    let subject = Subject {
        tool: tool.to_owned(),
        effects: gate.planned.effects,
        class,
        cluster: cluster.map(str::to_owned),
        node: text("node"),
        vmid: vmid.and_then(|v| v.parse().ok()),
        pool_argument: text("pool"),
        guest,
    };
    (subject, facts.map(|f| f.reads).unwrap_or_default())
}

/// What the rules may use of the facts: a guest that is not listed does not exist (no pool,
/// no tag); any other failure leaves them unknown.
fn guest_of(facts: &RiskFacts) -> Guest {
    match &facts.unread {
        Some(why) if why == "not listed in /cluster/resources" => Guest::None,
        Some(why) => Guest::Unknown(why.clone()),
        None => Guest::Known {
            pool: facts.pool.clone(),
            tags: facts.tags.clone(),
        },
    }
}
