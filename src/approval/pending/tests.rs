//! Unit tests of the approval page's store: single use, tokens, deadlines, sessions.

use super::*;

fn store() -> Arc<PendingApprovals> {
    Arc::new(PendingApprovals::new(Some(
        Url::parse("http://127.0.0.1:9/").expect("url"),
    )))
}

fn id_of(waiting: &Waiting) -> String {
    waiting
        .link
        .path()
        .rsplit('/')
        .next()
        .expect("id")
        .to_owned()
}

#[tokio::test]
async fn a_link_decides_its_own_call_once_with_its_token() {
    let store = store();
    let mut a = store
        .register(
            "Stop VM 101?",
            "t",
            vec![1; 32],
            Duration::from_secs(60),
            Approvers::LinkHolder,
        )
        .expect("registered");
    let b = store
        .register(
            "Stop VM 102?",
            "t",
            vec![2; 32],
            Duration::from_secs(60),
            Approvers::LinkHolder,
        )
        .expect("registered");
    let (id_a, id_b) = (id_of(&a), id_of(&b));
    assert_eq!(id_a.len(), 64);
    let view = store.view(&id_a, None).expect("view");
    assert_eq!(view.question, "Stop VM 101?");
    let view_b = store.view(&id_b, None).expect("view");
    // Wrong or missing token, or B's call on A's link: nothing decided.
    assert_eq!(
        store.decide(&id_a, "", &view.call, PageDecision::Approve, None),
        Err(LinkProblem::Forged)
    );
    assert_eq!(
        store.decide(
            &id_a,
            &view_b.token,
            &view.call,
            PageDecision::Approve,
            None
        ),
        Err(LinkProblem::Forged)
    );
    assert_eq!(
        store.decide(
            &id_a,
            &view.token,
            &view_b.call,
            PageDecision::Approve,
            None
        ),
        Err(LinkProblem::OtherCall)
    );
    assert_eq!(
        store.decide(&id_a, &view.token, &view.call, PageDecision::Approve, None),
        Ok("t")
    );
    assert_eq!(
        a.decision().await.map(|d| d.decision),
        Some(PageDecision::Approve)
    );
    assert_eq!(
        store.decide(&id_a, &view.token, &view.call, PageDecision::Approve, None),
        Err(LinkProblem::Used)
    );
    drop(b);
    assert_eq!(store.view(&id_b, None).unwrap_err(), LinkProblem::Abandoned);
    assert_eq!(
        store.view(&"0".repeat(64), None).unwrap_err(),
        LinkProblem::Unknown
    );
    assert_eq!(store.view("../x", None).unwrap_err(), LinkProblem::Unknown);
}

#[test]
fn expired_links_and_a_store_without_address_decide_nothing() {
    let store = store();
    let short = store
        .register(
            "q",
            "t",
            vec![3],
            Duration::from_millis(1),
            Approvers::LinkHolder,
        )
        .expect("registered");
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(
        store.view(&id_of(&short), None).unwrap_err(),
        LinkProblem::Expired
    );
    let nowhere = Arc::new(PendingApprovals::new(None));
    assert_eq!(
        nowhere
            .register(
                "q",
                "t",
                vec![],
                Duration::from_secs(1),
                Approvers::LinkHolder
            )
            .unwrap_err(),
        RegisterError::NoAddress
    );
    nowhere.offer_base_url(Url::parse("http://127.0.0.1:1/").expect("url"));
    store.offer_base_url(Url::parse("http://other/").expect("url"));
    assert_eq!(
        store.base_url().map(|u| u.to_string()).as_deref(),
        Some("http://127.0.0.1:9/")
    );
    assert!(nowhere.base_url().is_some());
}

#[test]
fn debug_output_names_the_type_and_never_a_secret() {
    let store = store();
    let waiting = store
        .register(
            "q",
            "t",
            vec![4],
            Duration::from_secs(60),
            Approvers::LinkHolder,
        )
        .expect("registered");
    let token = store.view(&id_of(&waiting), None).expect("view").token;
    for shown in [format!("{store:?}"), format!("{waiting:?}")] {
        assert!(shown.ends_with(" { .. }"), "{shown}");
        assert!(!shown.contains(&id_of(&waiting)) && !shown.contains(&token));
    }
    assert!(format!("{store:?}").starts_with("PendingApprovals"));
    assert!(format!("{waiting:?}").starts_with("Waiting"));
}

#[test]
fn a_waiting_link_carries_its_deadline() {
    let store = store();
    let before = (Instant::now(), SystemTime::now());
    let waiting = store
        .register(
            "q",
            "t",
            vec![5],
            Duration::from_secs(60),
            Approvers::LinkHolder,
        )
        .expect("registered");
    let after = Instant::now();
    assert!(waiting.deadline >= before.0 + Duration::from_secs(60));
    assert!(waiting.deadline <= after + Duration::from_secs(60));
    let wall = waiting
        .expires_at
        .duration_since(before.1)
        .expect("in the future");
    assert!((Duration::from_secs(59)..=Duration::from_secs(61)).contains(&wall));
    let left = store
        .view(&id_of(&waiting), None)
        .expect("view")
        .seconds_left;
    assert!((59..=60).contains(&left), "{left}");
}

#[test]
fn sessions_live_side_by_side_until_the_oldest_is_pushed_out() {
    let store = store();
    let waiting = store
        .register(
            "q",
            "t",
            vec![6],
            Duration::from_secs(60),
            Approvers::Subject {
                name: "alice".into(),
                key: crate::identity::subject_key("alice"),
            },
        )
        .expect("registered");
    let id = id_of(&waiting);
    let alice = Person::signed_in("alice", vec![]).expect("printable");
    let signed_in = |secret: &str| store.view(&id, Some(secret)).expect("view").signed_in;
    let sessions: Vec<Admitted> = (0..MAX_SESSIONS)
        .map(|_| store.admit(&id, &alice).expect("admitted"))
        .collect();
    // Every session of the link works at once (a phone and a laptop, say).
    for session in &sessions {
        assert_eq!(signed_in(&session.secret).as_deref(), Some("oauth:alice"));
        assert!((59..=60).contains(&session.seconds), "{}", session.seconds);
    }
    // A made-up secret of the right shape finds nobody, live sessions or not.
    assert_eq!(signed_in(&"0".repeat(SECRET_BYTES * 2)), None);
    assert_eq!(signed_in(&sessions[0].secret[1..]), None);
    // One more: the oldest is dropped, the rest stay.
    let newest = store.admit(&id, &alice).expect("admitted");
    assert_eq!(signed_in(&sessions[0].secret), None);
    assert_eq!(
        signed_in(&sessions[1].secret).as_deref(),
        Some("oauth:alice")
    );
    assert_eq!(signed_in(&newest.secret).as_deref(), Some("oauth:alice"));
    // A secret with blanks around it is the same secret.
    assert_eq!(
        signed_in(&format!(" {} ", newest.secret)).as_deref(),
        Some("oauth:alice")
    );
}
