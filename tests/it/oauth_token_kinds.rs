//! Which kinds of JWT OAuth mode takes as an access token, end to end over loopback with the
//! test issuer: `typ` absent, `JWT` or `at+jwt` (RFC 9068) open a session; with
//! `MCP_OAUTH_REQUIRE_AT_JWT=true` only `at+jwt` does; a token whose header names another kind
//! (an ID token's `id_token+jwt`, a DPoP proof's `dpop+jwt`) is 401 either way; and a
//! sender-constrained token (`cnf`: DPoP's `jkt`, mTLS's `x5t#S256`) sent as a Bearer token is
//! 401 — this server verifies no proof of possession, so it never accepts one as Bearer.

use crate::harness;
use crate::oauth_issuer;

use base64::Engine;
use harness::{client, initialize, oauth_server, post_mcp};
use nandi_proxmox_mcp::transport::http::HttpServer;
use oauth_issuer::*;
use reqwest::StatusCode;
use ring::rand::SystemRandom;
use serde_json::{Value, json};

/// The OAuth transport for `issuer` (no Proxmox behind it), with `extra` variables.
async fn serve(issuer: &Issuer, extra: &[(&str, &str)]) -> HttpServer {
    oauth_server(&issuer.url, None, &[], extra).await
}

/// An ES256 token of the issuer's key with JOSE header `typ` (`None`: no `typ` at all).
fn typed(issuer: &Issuer, typ: Option<&str>, claims: &Value) -> String {
    let mut header = json!({"alg": "ES256", "kid": "es-1"});
    if let Some(typ) = typ {
        header["typ"] = json!(typ);
    }
    let signing = signing_input(&header, claims);
    let signature = issuer
        .es
        .sign(&SystemRandom::new(), signing.as_bytes())
        .expect("signs");
    format!("{signing}.{}", B64.encode(signature.as_ref()))
}

/// The status of `initialize` with `token`, and the `WWW-Authenticate` header if any.
async fn status(http: &HttpServer, token: &str) -> (StatusCode, String) {
    let response = post_mcp(http, token, &initialize(), None).await;
    let challenge = response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (response.status(), challenge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_token_types_are_accepted_and_other_kinds_refused() {
    let issuer = Issuer::start().await;
    let claims = issuer.claims();
    let lenient = serve(&issuer, &[]).await;
    let strict = serve(&issuer, &[("MCP_OAUTH_REQUIRE_AT_JWT", "true")]).await;
    // (typ, accepted by default, accepted with MCP_OAUTH_REQUIRE_AT_JWT=true)
    let cases = [
        (Some("at+jwt"), true, true),
        (Some("application/at+jwt"), true, true),
        (Some("AT+JWT"), true, true),
        (None, true, false),
        (Some("JWT"), true, false),
        (Some("id_token+jwt"), false, false),
        (Some("dpop+jwt"), false, false),
        (Some("logout+jwt"), false, false),
    ];
    for (typ, by_default, when_strict) in cases {
        let token = typed(&issuer, typ, &claims);
        for (http, expected) in [(&lenient, by_default), (&strict, when_strict)] {
            let (got, challenge) = status(http, &token).await;
            if expected {
                assert_eq!(got, StatusCode::OK, "typ {typ:?}");
            } else {
                assert_eq!(got, StatusCode::UNAUTHORIZED, "typ {typ:?}");
                assert!(challenge.contains("invalid_token"), "{typ:?}: {challenge}");
            }
        }
    }
    lenient.shutdown().await;
    strict.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_constrained_token_is_refused_as_a_bearer_token() {
    let issuer = Issuer::start().await;
    let http = serve(&issuer, &[]).await;
    let plain = issuer.token(&issuer.claims());
    assert_eq!(status(&http, &plain).await.0, StatusCode::OK);
    for cnf in [
        json!({"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}),
        json!({"x5t#S256": "bwcK0esc3ACC3DB2Y5_lESsXE8o9ltc05O89jdN-dg2"}),
    ] {
        let mut claims = issuer.claims();
        claims["cnf"] = cnf.clone();
        let (got, challenge) = status(&http, &issuer.token(&claims)).await;
        assert_eq!(got, StatusCode::UNAUTHORIZED, "{cnf}");
        assert!(challenge.contains("invalid_token"), "{cnf}: {challenge}");
    }
    // Sent with the DPoP scheme it is no Bearer token at all: 401 too.
    let response = client()
        .post(format!("http://{}/mcp", http.local_addr()))
        .header("authorization", format!("DPoP {plain}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string())
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    http.shutdown().await;
}
