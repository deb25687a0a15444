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
    /// Only the signed-in person with this subject (`sub`).
    Subject(String),
    /// Any signed-in person whose token carries this scope.
    Scope(String),
}

/// A person signed in at the authorization server, from a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The token's subject (`sub`), cleaned.
    pub subject: String,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
}

impl Person {
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
            ApproverRule::Caller => caller
                .subject
                .clone()
                .map(Approvers::Subject)
                .ok_or(NoApprover),
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
            Approvers::Subject(subject) => person.subject == *subject,
            Approvers::Scope(scope) => person.scopes.iter().any(|s| s == scope),
        }
    }

    /// Who may decide, in words for the page (a noun phrase: the page adds "only" where it
    /// means it, so the refusal never says "only … only").
    pub fn describe(&self) -> String {
        match self {
            Approvers::LinkHolder => "whoever holds this link".to_owned(),
            Approvers::Subject(subject) => {
                format!("the person who made the call (oauth:{subject})")
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
            Approvers::Subject("alice".into()).describe(),
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
        Person {
            subject: subject.into(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        }
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
                Approvers::Subject("alice".into()),
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
        let bob = Person {
            subject: "bob".into(),
            scopes: vec!["proxmox:admin".into()],
        };
        assert_eq!(store.admit(&id, &bob).unwrap_err(), LinkProblem::NotAllowed);
        let alice = Person {
            subject: "alice".into(),
            scopes: vec![],
        };
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
