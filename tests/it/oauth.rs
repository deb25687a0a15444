//! OAuth 2.1 mode of the Streamable HTTP transport, end to end over loopback: a real token
//! issuer in the test (fresh ES256 and Ed25519 keys per test, its metadata and JWKS served by
//! axum), the in-process transport in front of an emulator-backed server at tier `full`, and a
//! plain HTTP client. Valid tokens are served and their scopes narrow the tools; every kind of
//! bad token is a 401 with the RFC 9728 challenge; a token without the server's scopes is 403;
//! the metadata document is served at both well-known paths; the key set is fetched on an
//! unknown key id at most once per interval.

use crate::common;
use crate::harness;
use crate::oauth_issuer;

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine;
use harness::{client, initialize, isolate_schema_cache, pve_client, rpc_reply};
use nandi_proxmox_mcp::audit::{AuditLog, AuditTarget};
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::{self, Auth, HttpServer, HttpSettings};
use oauth_issuer::*;
use pve_emulator::Emulator;
use reqwest::StatusCode;
use ring::rand::SystemRandom;
use serde_json::{Value, json};

const METADATA_URL: &str = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";
/// The least scope that lists tools: what every challenge asks for first.
const LEAST_SCOPE: &str = "proxmox:read";

/// The transport in OAuth mode for `issuer`, in front of `emu`, at tier `full`.
async fn serve(issuer: &Issuer, emu: &Emulator, extra: &[(&str, &str)]) -> HttpServer {
    serve_with(issuer, emu, extra, |_| {}).await
}

/// [`serve`], recording to `audit`.
async fn serve_audited(issuer: &Issuer, emu: &Emulator, audit: AuditLog) -> HttpServer {
    serve_inner(issuer, emu, &[], |_| {}, audit).await
}

/// [`serve`], with the settings adjusted by `tweak` before the start.
async fn serve_with(
    issuer: &Issuer,
    emu: &Emulator,
    extra: &[(&str, &str)],
    tweak: impl FnOnce(&mut HttpSettings),
) -> HttpServer {
    serve_inner(issuer, emu, extra, tweak, AuditLog::off()).await
}

async fn serve_inner(
    issuer: &Issuer,
    emu: &Emulator,
    extra: &[(&str, &str)],
    tweak: impl FnOnce(&mut HttpSettings),
    audit: AuditLog,
) -> HttpServer {
    serve_policy(issuer, emu, &[], extra, tweak, audit).await
}

/// The transport in OAuth mode with policy variables `policy` on top of tier `full`.
async fn serve_policy(
    issuer: &Issuer,
    emu: &Emulator,
    policy: &[(&str, &str)],
    extra: &[(&str, &str)],
    tweak: impl FnOnce(&mut HttpSettings),
    audit: AuditLog,
) -> HttpServer {
    let policy = Settings::from_lookup(|k| {
        policy
            .iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| (*v).to_owned())
            .or_else(|| (k == "PVE_ACCESS_TIER").then(|| "full".to_owned()))
    })
    .expect("policy");
    isolate_schema_cache();
    let server = Server::new(AppState {
        registry: Registry::build(&policy),
        settings: policy,
        pve: Some(pve_client(emu)),
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit,
        pbs: Vec::new(),
    });
    let mut vars: HashMap<&str, String> = HashMap::from([
        ("MCP_PORT", "0".to_owned()),
        ("MCP_AUTH_MODE", "oauth".to_owned()),
        ("MCP_OAUTH_ISSUER", issuer.url.clone()),
        ("MCP_OAUTH_RESOURCE", RESOURCE.to_owned()),
    ]);
    for (k, v) in extra {
        vars.insert(k, (*v).to_owned());
    }
    let mut settings = HttpSettings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    tweak(&mut settings);
    http::start(server, settings).await.expect("starts")
}

fn mcp(http: &HttpServer) -> String {
    format!("http://{}/mcp", http.local_addr())
}

async fn post(
    http: &HttpServer,
    token: Option<&str>,
    body: &Value,
    session: Option<&str>,
) -> reqwest::Response {
    let mut request = client()
        .post(mcp(http))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request.send().await.expect("send")
}

/// An initialized session for `token`.
async fn session(http: &HttpServer, token: &str) -> String {
    let response = post(http, Some(token), &initialize(), None).await;
    assert_eq!(response.status(), StatusCode::OK);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        rpc_reply(response, 1).await["result"]["serverInfo"]["name"],
        "nandi-proxmox-mcp"
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(http, Some(token), &note, Some(&id)).await.status(),
        StatusCode::ACCEPTED
    );
    id
}

async fn rpc(
    http: &HttpServer,
    token: &str,
    id: &str,
    rpc_id: u64,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params});
    let response = post(http, Some(token), &body, Some(id)).await;
    assert_eq!(response.status(), StatusCode::OK);
    rpc_reply(response, rpc_id).await
}

async fn tool_names(http: &HttpServer, token: &str) -> Vec<(String, String)> {
    let id = session(http, token).await;
    let listed = rpc(http, token, &id, 2, "tools/list", json!({})).await;
    listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["_meta"]["accessTier"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_tokens_are_served_and_their_scopes_narrow_the_tools() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let http = serve(&issuer, &emu, &[]).await;

    let admin = tool_names(&http, &issuer.token(&issuer.claims())).await;
    let read_token = issuer.with_scope("proxmox:read");
    let read = tool_names(&http, &read_token).await;
    let operate = tool_names(&http, &issuer.with_scope("proxmox:operate proxmox:read")).await;
    assert!(
        read.len() < operate.len() && operate.len() < admin.len(),
        "{} {} {}",
        read.len(),
        operate.len(),
        admin.len()
    );
    assert!(read.iter().all(|(_, tier)| tier == "read-only"), "{read:?}");
    assert!(operate.iter().all(|(_, tier)| tier != "full"));
    assert!(admin.iter().any(|(name, _)| name == "pve_qemu_delete"));
    // The EdDSA key signs just as well.
    assert_eq!(
        tool_names(&http, &issuer.eddsa(&issuer.claims()))
            .await
            .len(),
        admin.len()
    );

    // A change tool called with the read token is refused before anything reaches Proxmox:
    // HTTP 403 naming the scope it needs (step-up, RFC 6750 §3.1), the request's id echoed.
    let id = session(&http, &read_token).await;
    emu.clear_requests();
    let start = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params":
        {"name": "pve_start_qemu_vm", "arguments": {"node": "pve01", "vmid": 101, "confirm": true}}});
    let refused = post(&http, Some(&read_token), &start, Some(&id)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        challenge(&refused),
        format!(
            r#"Bearer error="insufficient_scope", scope="proxmox:operate", resource_metadata="{METADATA_URL}", error_description="this call needs the scope proxmox:operate""#
        )
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["id"], 3, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("pve_start_qemu_vm needs the scope proxmox:operate")),
        "{body}"
    );
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    // The same token still reads.
    let nodes = rpc(
        &http,
        &read_token,
        &id,
        4,
        "tools/call",
        json!({"name": "pve_list_nodes", "arguments": {}}),
    )
    .await;
    assert_eq!(nodes["result"]["structuredContent"]["ok"], true, "{nodes}");
    http.shutdown().await;
}

/// Every audit line names the token's subject and client: the change a token made; a change
/// above a token's scopes is refused at the transport (403 step-up) and never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_audit_line_names_the_tokens_subject() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let http = serve_audited(
        &issuer,
        &emu,
        AuditLog::new(AuditTarget::File(path.clone())),
    )
    .await;
    let admin = issuer.token(&issuer.claims());
    let id = session(&http, &admin).await;
    let stop = json!({"name": "pve_stop_qemu_vm", "arguments": {"node": "pve01", "vmid": 101, "confirm": true}});
    let done = rpc(&http, &admin, &id, 2, "tools/call", stop.clone()).await;
    assert_eq!(done["result"]["structuredContent"]["ok"], true, "{done}");
    let mut reader = issuer.claims();
    reader["sub"] = json!("bob");
    reader["client_id"] = json!("ci-agent");
    reader["scope"] = json!("proxmox:read");
    let reader = issuer.token(&reader);
    let rid = session(&http, &reader).await;
    emu.clear_requests();
    // Above its scopes: a 403 step-up challenge at the transport, before the call runs.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": stop});
    let refused = post(&http, Some(&reader), &body, Some(&rid)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert!(emu.requests().is_empty());
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let callers: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["decision"].as_str().unwrap(),
                l["caller"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        callers,
        [
            ("sending", "oauth:alice (client claude)"),
            ("executed", "oauth:alice (client claude)"),
        ],
        "bob's call never ran, so it has no line: {lines:?}"
    );
    http.shutdown().await;
}

/// Step-up: a client that took the least scope the challenge names steps up on the 403
/// `insufficient_scope` challenge of each call above it, with the scope that call needs, and
/// the same call then runs with the new token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_above_the_tokens_scope_is_403_naming_the_scope_it_needs() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let http = serve(&issuer, &emu, &[]).await;
    let call = |id: u64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params":
            {"name": name, "arguments": {"node": "pve01", "vmid": 101, "confirm": true}}})
    };
    let needs = |scope: &str| {
        format!(
            r#"Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{METADATA_URL}", error_description="this call needs the scope {scope}""#
        )
    };
    let read = issuer.with_scope("proxmox:read");
    let sid = session(&http, &read).await;
    emu.clear_requests();
    let refused = post(&http, Some(&read), &call(7, "pve_stop_qemu_vm"), Some(&sid)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(challenge(&refused), needs("proxmox:operate"));
    assert_eq!(refused.json::<Value>().await.unwrap()["id"], 7);
    let refused = post(&http, Some(&read), &call(8, "pve_qemu_delete"), Some(&sid)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(challenge(&refused), needs("proxmox:admin"));
    // An unknown tool is not a scope matter: the JSON-RPC error it always was.
    let unknown = post(&http, Some(&read), &call(9, "pve_no_such_tool"), Some(&sid)).await;
    assert_eq!(unknown.status(), StatusCode::OK);
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());

    // Stepped up to operate: the stop runs; the delete still needs admin.
    let operate = issuer.with_scope("proxmox:operate");
    let sid = session(&http, &operate).await;
    let refused = post(
        &http,
        Some(&operate),
        &call(10, "pve_qemu_delete"),
        Some(&sid),
    )
    .await;
    assert_eq!(challenge(&refused), needs("proxmox:admin"));
    let stop = call(11, "pve_stop_qemu_vm");
    let done = post(&http, Some(&operate), &stop, Some(&sid)).await;
    assert_eq!(done.status(), StatusCode::OK);
    let done = rpc_reply(done, 11).await;
    assert_eq!(done["result"]["structuredContent"]["ok"], true, "{done}");
    let sent: Vec<String> = emu
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|r| r.path)
        .collect();
    assert_eq!(sent, ["/nodes/pve01/qemu/101/status/stop"]);
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_401_with_the_resource_metadata_challenge() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let http = serve(&issuer, &emu, &[]).await;
    let good = issuer.claims();
    let with = |key: &str, value: Value| {
        let mut claims = good.clone();
        claims[key] = value;
        issuer.token(&claims)
    };
    let without = |key: &str| {
        let mut claims = good.clone();
        claims.as_object_mut().unwrap().remove(key);
        issuer.token(&claims)
    };
    let point = issuer.es.public_key().as_ref().to_vec();
    let hs256 = |secret: &[u8]| {
        let signing = signing_input(&json!({"alg": "HS256", "kid": "es-1"}), &good);
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
        format!(
            "{signing}.{}",
            B64.encode(ring::hmac::sign(&key, signing.as_bytes()).as_ref())
        )
    };
    let tampered = {
        let real = issuer.with_scope("proxmox:read");
        let parts: Vec<&str> = real.split('.').collect();
        format!("{}.{}.{}", parts[0], B64.encode(good.to_string()), parts[2])
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "wrong aud",
            with("aud", json!("https://other.example.test/mcp")),
        ),
        (
            "aud list without us",
            with("aud", json!(["https://other.example.test", "account"])),
        ),
        ("no aud", without("aud")),
        ("wrong iss", with("iss", json!(format!("{}/", issuer.url)))),
        ("expired beyond the leeway", with("exp", json!(now() - 120))),
        ("not yet valid", with("nbf", json!(now() + 300))),
        (
            "nbf as a string",
            with("nbf", json!((now() + 300).to_string())),
        ),
        ("no exp", without("exp")),
        (
            "alg none",
            format!("{}.", signing_input(&json!({"alg": "none"}), &good)),
        ),
        ("HS256 with the public key bytes", hs256(&point)),
        (
            "HS256 with the JWKS text",
            hs256(issuer.jwks.read().unwrap().to_string().as_bytes()),
        ),
        ("unknown kid", issuer.es256("nobody", &good)),
        ("tampered payload", tampered),
        ("garbage", "not-a-jwt".to_owned()),
        (
            "oversized",
            format!("{}.{}.x", "a".repeat(5000), "b".repeat(5000)),
        ),
    ];
    for (what, token) in &cases {
        let response = post(&http, Some(token), &initialize(), None).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{what}");
        let challenge = challenge(&response);
        assert_eq!(
            challenge,
            format!(
                r#"Bearer error="invalid_token", resource_metadata="{METADATA_URL}", scope="{LEAST_SCOPE}""#
            ),
            "{what}"
        );
    }
    let missing = post(&http, None, &initialize(), None).await;
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        challenge(&missing),
        format!(r#"Bearer resource_metadata="{METADATA_URL}", scope="{LEAST_SCOPE}""#)
    );
    // The good token passes, so each refusal above was for its own reason.
    assert_eq!(
        post(&http, Some(&issuer.token(&good)), &initialize(), None)
            .await
            .status(),
        StatusCode::OK
    );
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_the_servers_scopes_is_403_insufficient_scope() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let http = serve(&issuer, &emu, &[]).await;
    for scope in ["openid profile", "proxmox:reader", ""] {
        let response = post(&http, Some(&issuer.with_scope(scope)), &initialize(), None).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{scope:?}");
        assert_eq!(
            challenge(&response),
            format!(
                r#"Bearer error="insufficient_scope", scope="{LEAST_SCOPE}", resource_metadata="{METADATA_URL}""#
            )
        );
    }
    // `scp` as a list works as `scope` does.
    let mut claims = issuer.claims();
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["proxmox:read"]);
    assert_eq!(
        post(&http, Some(&issuer.token(&claims)), &initialize(), None)
            .await
            .status(),
        StatusCode::OK
    );
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_resource_metadata_is_served_at_both_paths_each_naming_its_own_resource() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let http = serve(&issuer, &emu, &[]).await;
    // Each copy's `resource` is the identifier its own URL was built from (RFC 9728 §3.3):
    // the root copy stands for the origin, the `/mcp` copy for MCP_OAUTH_RESOURCE.
    for (path, resource) in [
        (
            "/.well-known/oauth-protected-resource",
            "https://mcp.example.test",
        ),
        ("/.well-known/oauth-protected-resource/mcp", RESOURCE),
    ] {
        let url = format!("http://{}{path}", http.local_addr());
        let response = client().get(&url).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let doc: Value = response.json().await.unwrap();
        assert_eq!(doc["resource"], resource, "{path}");
        // Not signed metadata: no signing algorithms are claimed (RFC 9728 §2).
        assert!(
            doc.get("resource_signing_alg_values_supported").is_none(),
            "{doc}"
        );
        assert_eq!(doc["authorization_servers"], json!([issuer.url]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["proxmox:read", "proxmox:operate", "proxmox:admin"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        // The Host guard applies as on every route.
        let foreign = client()
            .get(&url)
            .header("host", "evil.example")
            .send()
            .await
            .unwrap();
        assert!(
            foreign.status().is_client_error() && foreign.status() != StatusCode::NOT_FOUND,
            "{}",
            foreign.status()
        );
    }
    http.shutdown().await;

    // In token mode there is no such document.
    let srv = harness::start(&[], None).await;
    let response = client()
        .get(srv.url("/.well-known/oauth-protected-resource"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    srv.http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_key_ids_refresh_the_key_set_at_most_once_per_interval() {
    const INTERVAL: Duration = Duration::from_secs(1);
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let jwks_url = format!("{}/jwks", issuer.url);
    // An explicit JWKS URL: no discovery; a short interval so the test can wait it out.
    let vars = [("MCP_OAUTH_JWKS_URL", jwks_url.as_str())];
    let http = serve_with(&issuer, &emu, &vars, |settings| {
        let Auth::OAuth(oauth) = &mut settings.auth else {
            panic!("oauth mode")
        };
        oauth.jwks_min_refresh = INTERVAL;
    })
    .await;

    let good = issuer.claims();
    assert_eq!(
        post(&http, Some(&issuer.token(&good)), &initialize(), None)
            .await
            .status(),
        StatusCode::OK
    );
    assert_eq!(issuer.fetches(), 1);
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    // Keys downloaded moments ago are fresh: a token signed with one of them does not fetch
    // the set again, although the interval would allow it.
    let again = post(&http, Some(&issuer.token(&good)), &initialize(), None).await;
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(issuer.fetches(), 1);
    // A flood of made-up key ids: one refresh, then at most one more per interval however
    // many arrive (the machine may be slow, so the bound follows the time the flood took).
    let flood = std::time::Instant::now();
    for i in 0..20 {
        let forged = issuer.es256(&format!("forged-{i}"), &good);
        let response = post(&http, Some(&forged), &initialize(), None).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let refreshes = issuer.fetches() - 1;
    let allowed = 1 + (flood.elapsed().as_millis() / INTERVAL.as_millis()) as usize;
    assert!(
        (1..=allowed).contains(&refreshes),
        "{refreshes} refreshes, {allowed} allowed"
    );
    let before_rotation = issuer.fetches();
    // A rotated-in key is picked up by the next refresh.
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let new_key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    issuer.jwks.write().unwrap()["keys"]
        .as_array_mut()
        .unwrap()
        .push(es_jwk(&new_key, "es-2"));
    tokio::time::sleep(INTERVAL + Duration::from_millis(100)).await;
    let signing = signing_input(&json!({"alg": "ES256", "kid": "es-2"}), &good);
    let sig = new_key.sign(&rng, signing.as_bytes()).unwrap();
    let rotated = format!("{signing}.{}", B64.encode(sig.as_ref()));
    assert_eq!(
        post(&http, Some(&rotated), &initialize(), None)
            .await
            .status(),
        StatusCode::OK
    );
    assert_eq!(issuer.fetches(), before_rotation + 1);
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_subject_has_its_own_rate_limit() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let http = serve(&issuer, &emu, &[("MCP_RATE_LIMIT_MAX", "2")]).await;
    let mut bob = issuer.claims();
    bob["sub"] = json!("bob");
    let alice = issuer.token(&issuer.claims());
    let bob = issuer.token(&bob);
    for _ in 0..2 {
        assert_eq!(
            post(&http, Some(&alice), &initialize(), None)
                .await
                .status(),
            StatusCode::OK
        );
    }
    assert_eq!(
        post(&http, Some(&alice), &initialize(), None)
            .await
            .status(),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        post(&http, Some(&bob), &initialize(), None).await.status(),
        StatusCode::OK
    );
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compact_surface_shows_no_tool_above_the_tokens_scopes() {
    let issuer = Issuer::start().await;
    let emu = common::emulator().await;
    let compact = [("PVE_TOOL_SURFACE", "compact")];
    let http = serve_policy(&issuer, &emu, &compact, &[], |_| {}, AuditLog::off()).await;
    let reader = issuer.with_scope("proxmox:read");
    let admin = issuer.token(&issuer.claims());
    for (token, sees) in [(&reader, false), (&admin, true)] {
        let id = session(&http, token).await;
        let find = json!({"name": "pve_find_tools", "arguments": {"query": "clone vm"}});
        let found = rpc(&http, token, &id, 2, "tools/call", find).await;
        let listed = found["result"]["structuredContent"]["data"].to_string();
        assert_eq!(listed.contains("pve_qemu_clone"), sees, "{listed}");
        let describe =
            json!({"name": "pve_describe_tool", "arguments": {"name": "pve_qemu_clone"}});
        let described = rpc(&http, token, &id, 3, "tools/call", describe).await;
        assert_eq!(
            described["result"]["structuredContent"]["ok"], sees,
            "{described}"
        );
        // Below the caller's tier everything stays describable.
        let describe =
            json!({"name": "pve_describe_tool", "arguments": {"name": "pve_list_nodes"}});
        let described = rpc(&http, token, &id, 4, "tools/call", describe).await;
        assert_eq!(described["result"]["structuredContent"]["ok"], true);
        // A call through the meta-tool above the caller's tier is refused by the tier gate.
        let call = json!({"name": "pve_call_tool", "arguments": {"name": "pve_qemu_clone",
            "arguments": {"node": "pve01", "vmid": 9000, "newid": 190, "dry_run": true}}});
        let called = rpc(&http, token, &id, 5, "tools/call", call).await;
        let envelope = &called["result"]["structuredContent"];
        if !sees {
            assert_eq!(envelope["ok"], false, "{called}");
        }
    }
    http.shutdown().await;
}
