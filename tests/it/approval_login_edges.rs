//! The approval sign-in at its edges, end to end over loopback HTTP (the setup of
//! `approval_login`): sign-ins side by side up to their bound, token answers bounded to the
//! byte, a sign-in token that is not valid here refused with its reason on the page, and the
//! cookies' `Secure` and path behind an https public address with a path.

use crate::approval_common;
use crate::common;
use crate::link_common;
use crate::login_common;
use crate::oauth_issuer;

use approval_common::{changes, code};
use link_common::browser;
use login_common::*;
use nandi_proxmox_mcp::transport::http::approve_login::MAX_LOGINS;
use oauth_issuer::Issuer;
use serde_json::json;

/// The `state` a callback URL carries.
fn state_of(callback: &str) -> String {
    url::Url::parse(callback)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_run_side_by_side_up_to_a_bound_and_token_answers_are_bounded() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "60").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;
    issuer.sign_in_as("alice", "openid");

    // Two browsers start; they come back in the other order and each is admitted.
    let first = start_sign_in(&link).await;
    let second = start_sign_in(&link).await;
    assert_ne!(first.binding, second.binding);
    assert_ne!(state_of(&first.callback), state_of(&second.callback));
    let (page, session) = come_back(&second.callback, Some(&second.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(session.is_some());
    let (page, session) = come_back(&first.callback, Some(&first.binding)).await;
    assert_eq!(page.status, 200, "{}", page.html);
    let (session, _) = session.expect("a session cookie");

    // A token answer of 64 KiB is read; one byte more is not.
    issuer.token_answer_size(64 * 1024);
    let (padded, admitted) = sign_in(&link).await;
    assert_eq!(padded.status, 200, "{}", padded.html);
    assert!(admitted.is_some());
    issuer.token_answer_size(64 * 1024 + 1);
    let (huge, admitted) = sign_in(&link).await;
    assert_eq!(huge.status, 502, "{}", huge.html);
    assert!(admitted.is_none());
    issuer.token_answer_size(0);
    assert_eq!(issuer.grants(), 4);

    // Sign-ins that never come back are bounded: past the limit the page answers busy.
    let browser = link_common::browser();
    for n in 0..=MAX_LOGINS {
        let status = browser
            .get(format!("{link}/login"))
            .send()
            .await
            .expect("login answers")
            .status()
            .as_u16();
        let want = if n < MAX_LOGINS { 303 } else { 503 };
        assert_eq!(status, want, "sign-in {n}");
    }
    // The sessions already given still decide.
    assert_eq!(post(&link, &page, "approve", Some(&session)).await, 200);
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(changes(&emu).len(), 1);
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_token_that_is_not_valid_here_admits_nobody_and_says_why() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let setup = serve(&issuer, &emu, &[], "4").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let link = link(&setup, 1).await;
    issuer.sign_in_as("alice", "openid");
    let now = oauth_issuer::now();
    for (patch, why) in [
        (json!({"exp": now - 3600}), "expired"),
        (json!({"nbf": now + 3600}), "not yet valid"),
        (json!({"iss": "https://other.example"}), "wrong issuer"),
        (
            json!({"aud": "https://other.example/mcp"}),
            "wrong audience",
        ),
        (json!({"exp": null}), "missing claim"),
        (json!({"sub": null}), "no subject"),
    ] {
        issuer.patch_token_claims(patch.clone());
        let (page, session) = sign_in(&link).await;
        assert_eq!(page.status, 403, "{patch}: {}", page.html);
        assert!(
            page.html.contains(&format!(
                "the sign-in&#39;s token is not valid here ({why})"
            )),
            "{patch}: {}",
            page.html
        );
        assert!(session.is_none());
    }
    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty());
    close(client).await;
    setup.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_an_https_address_with_a_path_the_cookies_are_secure_and_scoped() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let base = [("PVE_APPROVAL_BASE_URL", "https://mcp.example.test/pve/")];
    let setup = serve(&issuer, &emu, &base, "4").await;
    let client = connect(&setup).await;
    let calling = stop(&client);
    let public = link(&setup, 1).await;
    let id = public.rsplit('/').next().unwrap().to_owned();
    assert_eq!(public, format!("https://mcp.example.test/pve/approve/{id}"));
    // The proxy strips `/pve`; the browser's request reaches the server at `/approve/{id}`.
    let local = format!("http://{}/approve/{id}", setup.http.local_addr());
    let login = browser()
        .get(format!("{local}/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let (_, binding) = set_cookie(login.headers(), "pve_approval_login").expect("binding");
    assert!(
        binding.contains("; Path=/pve/approve/callback;"),
        "{binding}"
    );
    assert!(binding.ends_with("; SameSite=Lax; Secure"), "{binding}");
    let authorize = login.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        authorize
            .contains("redirect_uri=https%3A%2F%2Fmcp.example.test%2Fpve%2Fapprove%2Fcallback"),
        "{authorize}"
    );
    // Over plain http on loopback the same cookie carries no `Secure`.
    let plain = serve(&issuer, &emu, &[], "4").await;
    let client_b = connect(&plain).await;
    let calling_b = stop(&client_b);
    let link_b = link(&plain, 1).await;
    let login = browser()
        .get(format!("{link_b}/login"))
        .send()
        .await
        .unwrap();
    let (_, binding) = set_cookie(login.headers(), "pve_approval_login").expect("binding");
    assert!(binding.contains("; Path=/approve/callback;"), "{binding}");
    assert!(!binding.contains("Secure"), "{binding}");
    for (calling, client, http) in [
        (calling, client, setup.http),
        (calling_b, client_b, plain.http),
    ] {
        assert_eq!(
            code(&calling.await.expect("call task")),
            "CONFIRMATION_TIMEOUT"
        );
        close(client).await;
        http.shutdown().await;
    }
    assert!(changes(&emu).is_empty());
}
