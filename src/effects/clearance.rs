//! Clearance: which effects the running call may have, checked as each request leaves.
//!
//! The pipeline runs an approved call inside [`with_clearance`] with the effects the person
//! (or the confirm flag) approved; an unapproved call runs with none. The REST client and the
//! SSH entry point call [`admit`] / [`admit_ssh`] for every request: a request whose effects
//! are not covered is refused before it is sent. Outside any scope (a follower task, a
//! background poll, a CLI read) only plain reads pass.
//!
//! Invariant: the default is a plain read. Nothing widens a scope but the code that holds an
//! approval, and a scope never outlives the future it wraps.

use std::future::Future;

use super::request::{SshKind, classify_rest, classify_ssh};
use super::{Classified, EffectSet};

tokio::task_local! {
    static CLEARANCE: EffectSet;
}

/// A request refused because its effects were not cleared for the running call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} would {}, which this call was not approved for", describe(.beyond))]
pub struct Refusal {
    /// The request, e.g. `GET /nodes/pve01/qemu/101/agent/file-read`.
    pub what: String,
    /// The effects beyond the clearance.
    pub beyond: EffectSet,
    /// The full classification of the refused request.
    pub classified: Classified,
}

fn describe(effects: &EffectSet) -> String {
    effects
        .iter()
        .map(|e| format!("{} ({})", e.meaning(), e.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `work` with `allowed` effects cleared for every request it sends.
pub async fn with_clearance<F: Future>(allowed: EffectSet, work: F) -> F::Output {
    CLEARANCE.scope(allowed, work).await
}

/// The effects cleared for the running task (a plain read outside any scope).
pub fn current() -> EffectSet {
    CLEARANCE.try_with(|c| *c).unwrap_or(EffectSet::READ)
}

/// Classifies a REST request and admits it if its effects are cleared.
pub fn admit(method: &str, path: &str, params: &[(String, String)]) -> Result<Classified, Refusal> {
    let classified = classify_rest(method, path, params);
    check(format!("{method} {path}"), classified)
}

/// Classifies an SSH/SFTP operation and admits it if its effects are cleared.
pub fn admit_ssh(kind: SshKind, what: &str) -> Result<Classified, Refusal> {
    check(format!("SSH {what}"), classify_ssh(kind, what))
}

fn check(what: String, classified: Classified) -> Result<Classified, Refusal> {
    let beyond = classified.effects.beyond(current());
    if beyond.is_read() {
        Ok(classified)
    } else {
        Err(Refusal {
            what,
            beyond,
            classified,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::Effect;

    #[tokio::test]
    async fn outside_a_scope_only_reads_pass() {
        assert!(admit("GET", "/version", &[]).is_ok());
        let refused = admit("POST", "/nodes/pve01/qemu/101/status/start", &[]).expect_err("write");
        assert!(refused.beyond.contains(Effect::Change));
        assert!(refused.to_string().contains("not approved"), "{refused}");
    }

    #[tokio::test]
    async fn a_scope_admits_what_it_covers_and_nothing_more() {
        let start = EffectSet::of(Effect::Change);
        with_clearance(start, async {
            assert!(admit("POST", "/nodes/pve01/qemu/101/status/start", &[]).is_ok());
            assert!(admit("POST", "/nodes/pve01/qemu/101/status/stop", &[]).is_err());
            assert!(
                admit(
                    "GET",
                    "/nodes/pve01/qemu/101/agent/file-read",
                    &[("file".into(), "/etc/shadow".into())]
                )
                .is_err()
            );
        })
        .await;
        assert!(admit("POST", "/nodes/pve01/qemu/101/status/start", &[]).is_err());
    }
}
