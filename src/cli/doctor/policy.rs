//! The `policy` items of `doctor`: whether the operator's rules (docs/POLICY.md) load, whether
//! a policy file is ignored for want of trust, and — flagged, never hidden — every `allow` rule
//! that lets exec, egress, access or an unplaced request run without a person.
//!
//! Invariant: the rules are loaded exactly as `run` loads them (the variables, then each
//! cluster's instance-file `policy`, from the one load `doctor` made), so what doctor reports is what the server would use. A
//! risky rule is a SKIP (yellow), not RED: it is the operator's choice, made knowingly.

use super::super::report::Item;
use crate::config;
use crate::policy::Settings;

/// The policy items (one per cluster with rules, or one for the built-in default).
pub(super) fn items(set: Option<&config::clusters::ClusterSet>) -> Vec<Item> {
    let settings = match Settings::from_lookup(|k| std::env::var(k).ok()) {
        Ok(settings) => settings,
        Err(e) => {
            return vec![Item::red(
                "policy",
                e.to_string(),
                Some("fix the rule named above (docs/POLICY.md lists keys and values)".into()),
            )];
        }
    };
    let mut out = Vec::new();
    if let Some(ignored) = &settings.rules.ignored {
        out.push(Item::skip("policy", ignored.clone()));
    }
    let mut all = vec![(None, Ok(settings.clone()))];
    if let Some(set) = set {
        for cluster in set
            .clusters
            .iter()
            .filter(|c| c.config.policy.policy.is_some())
        {
            let own = settings.for_cluster(&cluster.config.policy, &cluster.name);
            all.push((Some(cluster.name.clone()), own));
        }
    }
    for (cluster, loaded) in all {
        let rules = match loaded {
            Ok(s) => s.rules,
            Err(e) => {
                out.push(Item::red("policy", e.to_string(), None));
                continue;
            }
        };
        let Some(source) = &rules.source else {
            continue;
        };
        let risks = rules.unattended_risks();
        let whose = cluster
            .map(|c| format!(" (cluster {c})"))
            .unwrap_or_default();
        if risks.is_empty() {
            out.push(Item::green(
                "policy",
                format!(
                    "{} rule(s) from {source}{whose}; none lets exec, egress, access or an unplaced request run without a person",
                    rules.rules.len()
                ),
            ));
        } else {
            out.push(Item::new(
                crate::cli::report::Status::Skip,
                "policy",
                format!("{}{whose}", risks.join("; ")),
                Some("list only the effects you mean in the rule's `effect` (an `allow` needs every effect of a call listed), or make it `ask`".into()),
            ));
        }
    }
    if out.is_empty() {
        out.push(Item::green(
            "policy",
            "built-in default: routine changes run without a person unless the target is protected; consequential ones ask",
        ));
    }
    out
}
