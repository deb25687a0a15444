//! Who may approve under OAuth, end to end over loopback HTTP: the in-process transport in
//! OAuth mode in front of the emulator, the test issuer (its JWKS, `/authorize` consenting for the
//! test user of the moment, `/token` with PKCE), rmcp's client side calling with the caller's
//! access token, and a webhook receiver getting the link. A person opens the link, signs in at
//! the issuer (authorization code + PKCE), comes back with a session cookie and decides; the
//! emulator's request log shows one request after an admitted person's Approve and none
//! otherwise, and the audit line names the approver.

use crate::approval_common;
use crate::common;
use crate::link_common;
use crate::login_common;
use crate::oauth_issuer;

use approval_common::{changes, code, envelope};
use login_common::*;
use oauth_issuer::Issuer;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_own_sign_in_approves_and_the_audit_names_the_approver() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "60").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;

    // Before sign-in: no question, no form.
    let first = link_common::open(&link).await;
    assert_eq!(first.status, 200);
    assert!(first.html.contains("Sign in"), "{}", first.html);
    assert!(!first.html.contains("VM 101"), "{}", first.html);
    assert!(first.hidden("token").is_empty());

    issuer.sign_in_as("alice", "openid");
    let (page, session) = sign_in(&link).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("VM 101"), "{}", page.html);
    assert!(page.html.contains("oauth:alice"), "{}", page.html);
    let (session, whole) = session.expect("a session cookie");
    let id = link.rsplit('/').next().unwrap();
    for attribute in [
        "HttpOnly",
        "SameSite=Strict",
        &format!("Path=/approve/{id}"),
    ] {
        assert!(whole.contains(attribute), "{whole}");
    }
    assert_eq!(issuer.grants(), 1);

    // The form without the session cookie decides nothing.
    assert_eq!(post(&link, &page, "approve", None).await, 403);
    let forged = format!("pve_approval={}", "0".repeat(64));
    assert_eq!(post(&link, &page, "approve", Some(&forged)).await, 403);
    assert!(changes(&emu).is_empty());

    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person-link");
    assert_eq!(changes(&emu).len(), 1);
    // Used: the session decides nothing more.
    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 410);
    assert_eq!(changes(&emu).len(), 1);

    let lines = approved_lines(&setup);
    assert!(lines.len() >= 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line["approver"], "oauth:alice", "{line}");
        assert_eq!(line["caller"], "oauth:alice (client claude)", "{line}");
    }

    // A decline by the signed-in person is recorded with their name too.
    let calling = stop(&client);
    let second = self::link(&setup, 2).await;
    let (page, session) = sign_in(&second).await;
    let (session, _) = session.expect("a session cookie");
    assert_eq!(post(&second, &page, "decline", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_eq!(
        envelope(&result)["error"]["code"],
        "CONFIRMATION_DECLINED",
        "{result:?}"
    );
    assert_eq!(changes(&emu).len(), 1, "the declined call sent nothing");
    let declined: Vec<Value> = std::fs::read_to_string(&setup.audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["outcome"] == "CONFIRMATION_DECLINED")
        .collect();
    assert_eq!(declined.len(), 1, "{declined:?}");
    assert_eq!(declined[0]["decision"], "refused");
    assert_eq!(declined[0]["approver"], "oauth:alice", "{declined:?}");
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_caller_another_person_is_refused_and_nothing_is_sent() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[("PVE_APPROVERS", "caller")], "4").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;

    // Bob signs in, even with every scope: not the caller.
    issuer.sign_in_as("bob", "openid proxmox:admin proxmox:approve");
    let (page, session) = sign_in(&link).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(page.html.contains("oauth:bob"), "{}", page.html);
    assert!(
        page.html
            .contains("may be decided only by the person who made the call (oauth:alice)."),
        "{}",
        page.html
    );
    assert_eq!(page.html.matches("only").count(), 1, "{}", page.html);
    assert!(!page.html.contains("VM 101"), "{}", page.html);
    assert!(session.is_none());
    // Without a session, a post decides nothing (the fields are not even known).
    assert_eq!(post(&link, &page, "approve", None).await, 403);

    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty());
    assert!(approved_lines(&setup).is_empty());
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_an_approvers_scope_a_person_holding_it_approves() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let approvers = [("PVE_APPROVERS", "scope:proxmox:approve")];
    let setup = serve(&issuer, &emu, &approvers, "60").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;

    // The caller themself, without the approvers' scope: refused.
    issuer.sign_in_as("alice", "openid proxmox:admin");
    let (page, session) = sign_in(&link).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());
    // Carol holds the scope (and no tier scope at all).
    issuer.sign_in_as("carol", "openid proxmox:approve");
    let started = start_sign_in(&link).await;
    assert!(started.callback.contains("state="));
    let (page, session) = come_back(&started.callback, Some(&started.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (session, _) = session.expect("a session cookie");
    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(changes(&emu).len(), 1);
    let lines = approved_lines(&setup);
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l["approver"] == "oauth:carol"),
        "{lines:?}"
    );
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_or_replayed_states_and_codes_admit_nobody() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "5").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;
    let base = format!("http://{}/approve/callback", setup.http.local_addr());
    issuer.sign_in_as("alice", "openid");

    // A state this server never issued.
    let forged = format!("{base}?state={}&code=abc", "1".repeat(64));
    let (page, session) = come_back(&forged, None).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());

    // A real state from another browser (no binding cookie): refused, and the state is spent.
    let stolen = start_sign_in(&link).await;
    let (page, session) = come_back(&stolen.callback, None).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());
    let (page, _) = come_back(&stolen.callback, Some(&stolen.binding)).await;
    assert_eq!(page.status, 403, "a spent state: {}", page.html);

    // A good sign-in, then its callback replayed: the state works once.
    let good = start_sign_in(&link).await;
    let (page, session) = come_back(&good.callback, Some(&good.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(session.is_some());
    let (page, session) = come_back(&good.callback, Some(&good.binding)).await;
    assert_eq!(page.status, 403, "{}", page.html);
    assert!(session.is_none());

    // A fresh state carrying an old (spent) code, or a made-up one: the issuer refuses it.
    let old_code = url::Url::parse(&good.callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    for code in [old_code.as_str(), "made-up-code"] {
        let fresh = start_sign_in(&link).await;
        let mut swapped = url::Url::parse(&fresh.callback).unwrap();
        let state = swapped
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .unwrap();
        swapped
            .query_pairs_mut()
            .clear()
            .append_pair("code", code)
            .append_pair("state", &state);
        let (page, session) = come_back(swapped.as_str(), Some(&fresh.binding)).await;
        assert_eq!(page.status, 403, "{code}: {}", page.html);
        assert!(session.is_none());
    }
    // An error answer instead of a code.
    let denied = start_sign_in(&link).await;
    let state = url::Url::parse(&denied.callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let error = format!("{base}?state={state}&error=access_denied");
    assert_eq!(come_back(&error, Some(&denied.binding)).await.0.status, 403);
    assert_eq!(issuer.grants(), 1);

    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty());
    close(client).await;
    setup.http.shutdown().await;
}
