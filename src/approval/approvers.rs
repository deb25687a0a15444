//! Who may decide one approval link, and who did: the requirement bound to a pending entry when
//! it is registered, and the name of the person who approved, carried to the audit line.
//!
//! A caller authenticated with OAuth gets a link that only a person signed in at the
//! authorization server can decide: the caller themself (`PVE_APPROVERS=caller`, the default)
//! or anyone whose token carries the approvers' scope (`PVE_APPROVERS=scope:<name>`). Other
//! callers (static token, stdio, no auth) keep the capability link: whoever holds it decides.
//! The approver's name travels in a task-local slot set around one tool call
//! ([`with_approver_slot`]), so the audit lines of that call can name who approved it without
//! a new parameter through every stage.
//!
//! Invariants: the requirement is fixed when the link is issued, from the caller's verified
//! token and the settings; an OAuth caller's link never degrades to a capability link (a caller
//! without a subject under `caller` gets no link at all); a person is admitted only by a
//! subject equal to the caller's or a scope equal to the configured one, compared exactly.

use std::cell::RefCell;
use std::future::Future;

use crate::identity::{Caller, Via};
use crate::policy::ApproverRule;

/// Who may decide a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approvers {
    /// Whoever holds the link (callers without OAuth).
    LinkHolder,
    /// Only the signed-in person with this subject (`sub`): matched by the digest of the raw
    /// claim (`key`), named by the cleaned one (`name`).
    Subject {
        /// The subject, cleaned, for the page.
        name: String,
        /// [`crate::identity::subject_key`] of the raw claim.
        key: [u8; 32],
    },
    /// Any signed-in person whose token carries this scope.
    Scope(String),
}

/// A person signed in at the authorization server, from a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The token's subject (`sub`), cleaned.
    pub subject: String,
    /// [`crate::identity::subject_key`] of the raw `sub`: what admission compares.
    pub subject_key: [u8; 32],
    /// The scopes the token grants.
    pub scopes: Vec<String>,
}

impl Person {
    /// The person a verified token with this raw `sub` names (`None`: nothing printable).
    pub fn signed_in(raw_subject: &str, scopes: Vec<String>) -> Option<Person> {
        Some(Person {
            subject: crate::identity::clean_name(raw_subject)?,
            subject_key: crate::identity::subject_key(raw_subject),
            scopes,
        })
    }

    /// The name an audit line and a log give the person: `oauth:<sub>`, like a caller's.
    pub fn label(&self) -> String {
        Caller {
            subject: Some(self.subject.clone()),
            ..Caller::anonymous(Via::OAuth)
        }
        .label()
        .into_owned()
    }
}

/// An OAuth caller under `PVE_APPROVERS=caller` whose token names no subject: nobody could
/// ever be admitted, so no link is issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoApprover;

impl Approvers {
    /// The requirement for a link issued to `caller` under `rule`.
    pub fn for_caller(rule: &ApproverRule, caller: &Caller) -> Result<Approvers, NoApprover> {
        if caller.via != Via::OAuth {
            return Ok(Approvers::LinkHolder);
        }
        match rule {
            ApproverRule::Caller => match (&caller.subject, caller.subject_key) {
                (Some(name), Some(key)) => Ok(Approvers::Subject {
                    name: name.clone(),
                    key,
                }),
                _ => Err(NoApprover),
            },
            ApproverRule::Scope(scope) => Ok(Approvers::Scope(scope.clone())),
        }
    }

    /// Whether a person must sign in before the link shows or decides anything.
    pub fn needs_sign_in(&self) -> bool {
        !matches!(self, Approvers::LinkHolder)
    }

    /// Whether `person` may decide.
    pub fn admits(&self, person: &Person) -> bool {
        match self {
            Approvers::LinkHolder => true,
            Approvers::Subject { key, .. } => person.subject_key == *key,
            Approvers::Scope(scope) => person.scopes.iter().any(|s| s == scope),
        }
    }

    /// Who may decide, in words for the page (a noun phrase: the page adds "only" where it
    /// means it, so the refusal never says "only … only").
    pub fn describe(&self) -> String {
        match self {
            Approvers::LinkHolder => "whoever holds this link".to_owned(),
            Approvers::Subject { name, .. } => {
                format!("the person who made the call (oauth:{name})")
            }
            Approvers::Scope(scope) => format!("a person whose sign-in grants the scope {scope}"),
        }
    }
}

tokio::task_local! {
    static APPROVER: RefCell<Option<String>>;
}

/// Runs one tool call with an empty approver slot; the audit lines it writes read the slot.
pub async fn with_approver_slot<F: Future>(call: F) -> F::Output {
    APPROVER.scope(RefCell::new(None), call).await
}

/// Records who approved the call running now (no-op outside [`with_approver_slot`]).
pub fn note_approver(name: String) {
    let _ = APPROVER.try_with(|slot| *slot.borrow_mut() = Some(name));
}

/// Who approved the call running now on the approval page, when a signed-in person did.
pub fn approver_of_this_call() -> Option<String> {
    APPROVER
        .try_with(|slot| slot.borrow().clone())
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::pending::{LinkProblem, PageDecision, PendingApprovals};
    use crate::catalog::Tier;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn the_page_says_who_may_decide() {
        assert_eq!(Approvers::LinkHolder.describe(), "whoever holds this link");
        assert_eq!(
            subject("alice").describe(),
            "the person who made the call (oauth:alice)"
        );
        assert_eq!(
            Approvers::Scope("proxmox:approve".into()).describe(),
            "a person whose sign-in grants the scope proxmox:approve"
        );
    }

    fn oauth(subject: Option<&str>) -> Caller {
        Caller::oauth(subject, Some("claude"), vec![], Tier::Full)
    }

    fn person(subject: &str, scopes: &[&str]) -> Person {
        Person::signed_in(subject, scopes.iter().map(|s| (*s).to_owned()).collect())
            .expect("printable")
    }

    fn subject(raw: &str) -> Approvers {
        Approvers::Subject {
            name: raw.into(),
            key: crate::identity::subject_key(raw),
        }
    }

    #[test]
    fn subjects_that_print_alike_are_two_people() {
        let long = |tail: &str| format!("https://idp.example/{}{tail}", "u".repeat(120));
        let (alice, mallory) = (person(&long("alice"), &[]), person(&long("mallory"), &[]));
        assert_eq!(alice.subject, mallory.subject);
        let caller = Caller::oauth(Some(&long("alice")), None, vec![], Tier::Full);
        let approvers = Approvers::for_caller(&ApproverRule::Caller, &caller).unwrap();
        assert!(approvers.admits(&alice));
        assert!(!approvers.admits(&mallory));
    }

    #[test]
    fn oauth_callers_get_a_sign_in_requirement_others_the_link() {
        let caller = ApproverRule::Caller;
        let scoped = ApproverRule::Scope("proxmox:approve".into());
        let static_token = Caller::anonymous(Via::StaticToken);
        assert_eq!(
            Approvers::for_caller(&caller, &static_token),
            Ok(Approvers::LinkHolder)
        );
        let alice = Approvers::for_caller(&caller, &oauth(Some("alice"))).unwrap();
        assert!(alice.needs_sign_in());
        assert!(alice.admits(&person("alice", &[])));
        assert!(!alice.admits(&person("bob", &["proxmox:approve"])));
        assert_eq!(
            Approvers::for_caller(&caller, &oauth(None)),
            Err(NoApprover)
        );
        let approvers = Approvers::for_caller(&scoped, &oauth(None)).unwrap();
        assert!(approvers.admits(&person("carol", &["openid", "proxmox:approve"])));
        assert!(!approvers.admits(&person("alice", &["proxmox:admin"])));
        assert_eq!(person("carol", &[]).label(), "oauth:carol");
    }

    #[tokio::test]
    async fn the_slot_lives_for_one_call() {
        note_approver("outside".into());
        assert_eq!(approver_of_this_call(), None);
        let seen = with_approver_slot(async {
            assert_eq!(approver_of_this_call(), None);
            note_approver("oauth:alice".into());
            approver_of_this_call()
        })
        .await;
        assert_eq!(seen.as_deref(), Some("oauth:alice"));
        assert_eq!(approver_of_this_call(), None);
    }

    #[tokio::test]
    async fn a_sign_in_link_decides_only_in_an_admitted_persons_session() {
        let store = Arc::new(PendingApprovals::new(Some(
            url::Url::parse("http://127.0.0.1:9/").expect("url"),
        )));
        let mut waiting = store
            .register(
                "Stop VM 101?",
                "t",
                vec![1; 32],
                Duration::from_secs(60),
                subject("alice"),
            )
            .expect("registered");
        let id = waiting
            .link
            .path()
            .rsplit('/')
            .next()
            .expect("id")
            .to_owned();
        let view = store.view(&id, None).expect("view");
        assert!(view.approvers.needs_sign_in());
        assert_eq!(view.signed_in, None);
        let approve = |session: Option<&str>| {
            store.decide(&id, &view.token, &view.call, PageDecision::Approve, session)
        };
        assert_eq!(approve(None), Err(LinkProblem::NotSignedIn));
        assert_eq!(
            approve(Some(&"0".repeat(64))),
            Err(LinkProblem::NotSignedIn)
        );
        let bob = person("bob", &["proxmox:admin"]);
        assert_eq!(store.admit(&id, &bob).unwrap_err(), LinkProblem::NotAllowed);
        let alice = person("alice", &[]);
        let admitted = store.admit(&id, &alice).expect("admitted");
        assert!(admitted.seconds <= 60);
        assert_eq!(
            store
                .view(&id, Some(&admitted.secret))
                .unwrap()
                .signed_in
                .as_deref(),
            Some("oauth:alice")
        );
        assert_eq!(approve(Some(&admitted.secret)), Ok("t"));
        let decided = waiting.decision().await.expect("decided");
        assert_eq!(decided.approver.as_deref(), Some("oauth:alice"));
        assert_eq!(store.admit(&id, &alice).unwrap_err(), LinkProblem::Used);
    }
}
