//! Clearance: which effects the running call may have, checked as each request leaves.
//!
//! The pipeline runs an approved call inside [`with_clearance`] with the effects the person
//! (or the confirm flag) approved; an unapproved call runs with none. The REST client and the
//! SSH entry point call [`admit`] / [`admit_ssh`] for every request: a request whose effects
//! are not covered is refused before it is sent. Outside any scope (a follower task, a
//! background poll, a CLI read) only plain reads pass.
//!
//! A scope also names the freeze switch ([`super::freeze`]): while its file exists, every
//! request beyond a plain read is refused as [`Stopped::Frozen`], whatever was approved. The
//! file is looked at for each such request as it leaves, never cached.
//!
//! Invariant: the default is a plain read. Nothing widens a scope but the code that holds an
//! approval, a scope that widens names its freeze switch (the signature of
//! [`with_clearance`] asks for it), and a scope never outlives the future it wraps.

use std::future::Future;

use super::freeze::{FreezeSwitch, Frozen};
use super::request::{SshKind, classify_rest, classify_ssh};
use super::{Classified, EffectSet};

/// What the running call may do, and the switch that can stop it.
#[derive(Clone)]
struct Scope {
    allowed: EffectSet,
    freeze: Option<FreezeSwitch>,
}

tokio::task_local! {
    static CLEARANCE: Scope;
}

/// Why a request was not let out; nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    /// Its effects were not cleared for the running call.
    #[error(transparent)]
    NotApproved(#[from] Refusal),
    /// It does more than read, and changes are frozen.
    #[error(transparent)]
    Frozen(#[from] Frozen),
}

/// A request refused because its effects were not cleared for the running call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {}, which this call was not approved for", describe(.beyond))]
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
        .join(" and ")
}

/// Runs `work` with `allowed` effects cleared for every request it sends, unless `freeze`
/// (the server's freeze switch; `None` only where there is none) says changes are frozen.
pub async fn with_clearance<F: Future>(
    allowed: EffectSet,
    freeze: Option<&FreezeSwitch>,
    work: F,
) -> F::Output {
    let scope = Scope {
        allowed,
        freeze: freeze.cloned(),
    };
    CLEARANCE.scope(scope, work).await
}

/// Classifies a REST request and admits it if its effects are cleared and, when it does
/// more than read, changes are not frozen.
pub fn admit(method: &str, path: &str, params: &[(String, String)]) -> Result<Classified, Stopped> {
    let classified = classify_rest(method, path, params);
    check(format!("{method} {path}"), classified)
}

/// [`admit`] for a request to a Proxmox Backup Server, classified by PBS's own schema.
pub fn admit_pbs(
    method: &str,
    path: &str,
    params: &[(String, String)],
) -> Result<Classified, Stopped> {
    let classified = super::pbs::classify_pbs(method, path, params);
    check(format!("PBS {method} {path}"), classified)
}

/// Admits a request already classified elsewhere (the generic call's classification by the
/// cluster's own schema) like [`admit`]: `what` names it in a refusal.
pub fn admit_classified(what: String, classified: Classified) -> Result<Classified, Stopped> {
    check(what, classified)
}

/// Classifies an SSH/SFTP operation and admits it like [`admit`].
pub fn admit_ssh(kind: SshKind, what: &str) -> Result<Classified, Stopped> {
    check(format!("SSH {what}"), classify_ssh(kind, what))
}

fn check(what: String, classified: Classified) -> Result<Classified, Stopped> {
    if classified.effects.is_read() {
        // Plain reads go on, frozen or not, and cost no look at the file.
        return Ok(classified);
    }
    let scope = CLEARANCE.try_with(Scope::clone).ok();
    if let Some(switch) = scope.as_ref().and_then(|s| s.freeze.as_ref()) {
        switch.check()?;
    }
    let allowed = scope.map_or(EffectSet::READ, |s| s.allowed);
    let beyond = classified.effects.beyond(allowed);
    if beyond.is_read() {
        Ok(classified)
    } else {
        Err(Stopped::NotApproved(Refusal {
            what,
            beyond,
            classified,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::Effect;

    #[tokio::test]
    async fn outside_a_scope_only_reads_pass() {
        assert!(admit("GET", "/version", &[]).is_ok());
        let Err(Stopped::NotApproved(refused)) =
            admit("POST", "/nodes/pve01/qemu/101/status/start", &[])
        else {
            panic!("a write outside a scope is refused");
        };
        assert!(refused.beyond.contains(Effect::Change));
        assert!(refused.to_string().contains("not approved"), "{refused}");
        // The refusal says what the request does, in words and by name.
        assert_eq!(
            refused.to_string(),
            "POST /nodes/pve01/qemu/101/status/start changes the cluster (change), which this \
             call was not approved for"
        );
        let Err(Stopped::NotApproved(refused)) =
            admit("POST", "/nodes/pve01/qemu/101/status/stop", &[])
        else {
            panic!("a stop outside a scope is refused");
        };
        assert_eq!(
            refused.to_string(),
            "POST /nodes/pve01/qemu/101/status/stop removes, stops, rolls back or overwrites \
             something (destroy) and changes the cluster (change), which this call was not \
             approved for"
        );
    }

    /// A classification made elsewhere (the cluster's own schema) is held to the scope too.
    #[tokio::test]
    async fn a_classification_from_elsewhere_is_admitted_only_within_the_scope() {
        let mut egress = Classified::read();
        egress.add(Effect::Egress, "remote-url: the node fetches this URL");
        let what = "GET /nodes/pve01/qemu/101/config".to_owned();
        let Err(Stopped::NotApproved(refused)) = admit_classified(what.clone(), egress.clone())
        else {
            panic!("egress outside a scope is refused");
        };
        assert_eq!(refused.beyond, EffectSet::of(Effect::Egress));
        assert!(admit_classified(what.clone(), Classified::read()).is_ok());
        with_clearance(EffectSet::of(Effect::Egress), None, async {
            assert_eq!(admit_classified(what, egress.clone()), Ok(egress));
        })
        .await;
    }

    #[tokio::test]
    async fn a_scope_admits_what_it_covers_and_nothing_more() {
        let start = EffectSet::of(Effect::Change);
        with_clearance(start, None, async {
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

    #[tokio::test]
    async fn a_freeze_stops_everything_beyond_a_read_at_the_next_request() {
        let dir = tempfile::tempdir().unwrap();
        let switch = FreezeSwitch::new(dir.path().join("frozen"));
        let stop = "/nodes/pve01/qemu/101/status/stop";
        with_clearance(EffectSet::ANY, Some(&switch), async {
            assert!(admit("POST", stop, &[]).is_ok());
            std::fs::write(switch.path(), "incident").unwrap();
            let refused = admit("POST", stop, &[]).expect_err("frozen");
            assert!(matches!(refused, Stopped::Frozen(_)), "{refused:?}");
            assert!(refused.to_string().contains("incident"), "{refused}");
            assert!(matches!(
                admit_ssh(SshKind::Command, "pct exec 101 -- true"),
                Err(Stopped::Frozen(_))
            ));
            // Plain reads go on.
            assert!(admit("GET", "/nodes", &[]).is_ok());
            std::fs::remove_file(switch.path()).unwrap();
            assert!(admit("POST", stop, &[]).is_ok());
        })
        .await;
    }
}
