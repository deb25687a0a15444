//! Every signature algorithm OAuth mode accepts, end to end over loopback: the test issuer's key
//! set holds an RSA key (a throwaway 2048-bit test key in `tests/fixtures`, never used anywhere
//! else), a P-256, a P-384 and an Ed25519 key; a token signed with each algorithm of
//! `MCP_OAUTH_ALGORITHMS` opens a session, and the same token is refused when the algorithm is
//! not listed, when its header names another algorithm than the one it was signed with, when
//! its key is of another kind or declared for another algorithm, or when the key is for
//! encryption. A token without a key id needs exactly one fitting key; key sets over 256 KiB
//! and tokens over 8 KiB are refused; the key set and the approval sign-in's token endpoint
//! are never followed through a redirect.

use crate::harness;
use crate::oauth_issuer;

use std::collections::HashMap;

use base64::Engine;
use harness::{client, initialize};
use nandi_proxmox_mcp::audit::AuditLog;
use nandi_proxmox_mcp::catalog::Tier;
use nandi_proxmox_mcp::policy::ApproverRule;
use nandi_proxmox_mcp::policy::Settings;
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use nandi_proxmox_mcp::transport::http::approve_login::{ApprovalLogin, LoginProblem};
use nandi_proxmox_mcp::transport::http::oauth::{ApprovalClient, OAuthSettings};
use nandi_proxmox_mcp::transport::http::oauth_token::TokenValidator;
use nandi_proxmox_mcp::transport::http::{self, HttpServer, HttpSettings};
use oauth_issuer::*;
use ring::rand::SystemRandom;
use ring::rsa::PublicKeyComponents;
use ring::signature::{self as sig, ECDSA_P384_SHA384_FIXED_SIGNING, RsaKeyPair};
use serde_json::{Value, json};

/// Every algorithm the server can verify, spelled as `MCP_OAUTH_ALGORITHMS` takes them.
const ALL: &str = "RS256, RS384,RS512 ,PS256,PS384,PS512,ES256,ES384,EdDSA";

/// The issuer's signing keys beyond its own ES256 and Ed25519 ones.
struct Keys {
    rsa: RsaKeyPair,
    p384: EcdsaKeyPair,
}

impl Keys {
    fn new() -> Keys {
        let der = include_bytes!("../fixtures/oauth-test-rsa-2048.der");
        let rng = SystemRandom::new();
        let p384 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, &rng).unwrap();
        Keys {
            rsa: RsaKeyPair::from_der(der).expect("test RSA key"),
            p384: EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_FIXED_SIGNING, p384.as_ref(), &rng)
                .unwrap(),
        }
    }

    fn rsa_jwk(&self, kid: &str) -> Value {
        let public: PublicKeyComponents<Vec<u8>> = self.rsa.public().into();
        json!({"kty": "RSA", "kid": kid, "use": "sig", "n": B64.encode(&public.n),
               "e": B64.encode(&public.e)})
    }

    fn p384_jwk(&self, kid: &str) -> Value {
        let point = self.p384.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-384", "kid": kid,
               "x": B64.encode(&point[1..49]), "y": B64.encode(&point[49..97])})
    }
}

/// A token for `claims` whose header says `alg` and `kid`, signed by `sign`.
fn token(alg: &str, kid: &str, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    token_with(
        json!({"alg": alg, "typ": "at+jwt", "kid": kid}),
        claims,
        sign,
    )
}

/// A token with header `header` for `claims`, signed by `sign`.
fn token_with(header: Value, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    let signing = signing_input(&header, claims);
    let signature = sign(signing.as_bytes());
    format!("{signing}.{}", B64.encode(signature))
}

fn rsa_signature(key: &RsaKeyPair, padding: &'static dyn sig::RsaEncoding, msg: &[u8]) -> Vec<u8> {
    let mut out = vec![0; key.public().modulus_len()];
    key.sign(padding, &SystemRandom::new(), msg, &mut out)
        .unwrap();
    out
}

/// The transport in OAuth mode for `issuer` with `MCP_OAUTH_ALGORITHMS=algorithms` (no Proxmox
/// behind it: a session only needs the token).
async fn serve(issuer: &Issuer, algorithms: &str) -> HttpServer {
    serve_with(issuer, algorithms, &[]).await
}

/// [`serve`] with more `MCP_*` variables.
async fn serve_with(issuer: &Issuer, algorithms: &str, extra: &[(&str, &str)]) -> HttpServer {
    let policy = Settings::from_lookup(|_| None).expect("policy");
    let server = Server::new(AppState {
        registry: Registry::build(&policy),
        settings: policy,
        pve: None,
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit: AuditLog::off(),
        pbs: Vec::new(),
    });
    let mut vars: HashMap<&str, String> = HashMap::from([
        ("MCP_PORT", "0".to_owned()),
        ("MCP_AUTH_MODE", "oauth".to_owned()),
        ("MCP_OAUTH_ISSUER", issuer.url.clone()),
        ("MCP_OAUTH_RESOURCE", RESOURCE.to_owned()),
        ("MCP_OAUTH_ALGORITHMS", algorithms.to_owned()),
    ]);
    for (name, value) in extra {
        vars.insert(name, (*value).to_owned());
    }
    let settings = HttpSettings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    http::start(server, settings).await.expect("starts")
}

/// The status of an `initialize` carrying `token`.
async fn status(http: &HttpServer, token: &str) -> u16 {
    client()
        .post(format!("http://{}/mcp", http.local_addr()))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .body(initialize().to_string())
        .send()
        .await
        .expect("send")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_signed_with_each_listed_algorithm_opens_a_session() {
    let issuer = Issuer::start().await;
    let keys = Keys::new();
    // The same RSA key once more, declared for RS256 only.
    let mut rs256_only = keys.rsa_jwk("rsa-rs256");
    rs256_only["alg"] = json!("RS256");
    *issuer.jwks.write().unwrap() = json!({"keys": [
        keys.rsa_jwk("rsa-1"), keys.p384_jwk("p384-1"),
        es_jwk(&issuer.es, "es-1"), ed_jwk(&issuer.ed, "ed-1"), rs256_only,
    ]});
    let claims = issuer.claims();
    let rsa = |alg: &str, kid: &str, padding: &'static dyn sig::RsaEncoding| {
        token(alg, kid, &claims, |m| rsa_signature(&keys.rsa, padding, m))
    };
    let p384 = |alg: &str, kid: &str| {
        token(alg, kid, &claims, |m| {
            keys.p384
                .sign(&SystemRandom::new(), m)
                .unwrap()
                .as_ref()
                .to_vec()
        })
    };
    let signed = [
        ("RS256", rsa("RS256", "rsa-1", &sig::RSA_PKCS1_SHA256)),
        ("RS384", rsa("RS384", "rsa-1", &sig::RSA_PKCS1_SHA384)),
        ("RS512", rsa("RS512", "rsa-1", &sig::RSA_PKCS1_SHA512)),
        ("PS256", rsa("PS256", "rsa-1", &sig::RSA_PSS_SHA256)),
        ("PS384", rsa("PS384", "rsa-1", &sig::RSA_PSS_SHA384)),
        ("PS512", rsa("PS512", "rsa-1", &sig::RSA_PSS_SHA512)),
        ("ES256", issuer.es256("es-1", &claims)),
        ("ES384", p384("ES384", "p384-1")),
        ("EdDSA", issuer.eddsa(&claims)),
    ];
    let all = serve(&issuer, ALL).await;
    for (alg, token) in &signed {
        assert_eq!(status(&all, token).await, 200, "{alg}");
    }
    // Listed alone, each algorithm admits its own token and no other.
    for (alg, _) in &signed {
        let one = serve(&issuer, alg).await;
        for (other, token) in &signed {
            let want = if other == alg { 200 } else { 401 };
            assert_eq!(status(&one, token).await, want, "{other} under {alg}");
        }
        one.shutdown().await;
    }

    let refused = [
        // The header names another algorithm than the signature's.
        (
            "PS256 header, PKCS#1 signature",
            rsa("PS256", "rsa-1", &sig::RSA_PKCS1_SHA256),
        ),
        (
            "RS512 header, RS256 signature",
            rsa("RS512", "rsa-1", &sig::RSA_PKCS1_SHA256),
        ),
        // A key of another kind under the token's key id.
        ("ES384 with the P-256 key's id", p384("ES384", "es-1")),
        (
            "RS256 with the P-384 key's id",
            rsa("RS256", "p384-1", &sig::RSA_PKCS1_SHA256),
        ),
        (
            "ES256 with the Ed25519 key's id",
            issuer.es256("ed-1", &claims),
        ),
        // The key declares RS256 only.
        (
            "RS384 with an RS256 key",
            rsa("RS384", "rsa-rs256", &sig::RSA_PKCS1_SHA384),
        ),
    ];
    for (why, token) in &refused {
        assert_eq!(status(&all, token).await, 401, "{why}");
    }
    assert_eq!(
        status(&all, &rsa("RS256", "rsa-rs256", &sig::RSA_PKCS1_SHA256)).await,
        200,
        "the RS256 key for RS256"
    );
    all.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_for_encryption_or_unknown_curves_never_verify() {
    let issuer = Issuer::start().await;
    let keys = Keys::new();
    let mut for_encryption = keys.rsa_jwk("rsa-enc");
    for_encryption["use"] = json!("enc");
    let mut x25519 = ed_jwk(&issuer.ed, "x-1");
    x25519["crv"] = json!("X25519");
    // The Ed25519 key's bytes under another curve name: not a signing key either.
    let mut off_curve = ed_jwk(&issuer.ed, "okp-p256");
    off_curve["crv"] = json!("P-256");
    *issuer.jwks.write().unwrap() = json!({"keys": [for_encryption, x25519, off_curve]});
    let claims = issuer.claims();
    let http = serve(&issuer, ALL).await;
    let rsa = token("RS256", "rsa-enc", &claims, |m| {
        rsa_signature(&keys.rsa, &sig::RSA_PKCS1_SHA256, m)
    });
    assert_eq!(status(&http, &rsa).await, 401);
    let ed = token("EdDSA", "x-1", &claims, |m| {
        issuer.ed.sign(m).as_ref().to_vec()
    });
    assert_eq!(status(&http, &ed).await, 401);
    let off_curve = token("EdDSA", "okp-p256", &claims, |m| {
        issuer.ed.sign(m).as_ref().to_vec()
    });
    assert_eq!(status(&http, &off_curve).await, 401);
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_a_key_id_needs_exactly_one_fitting_key() {
    let issuer = Issuer::start().await;
    let keys = Keys::new();
    let mut rs256_only = keys.rsa_jwk("rsa-rs256");
    rs256_only["alg"] = json!("RS256");
    *issuer.jwks.write().unwrap() = json!({"keys": [
        keys.rsa_jwk("rsa-1"), rs256_only, keys.p384_jwk("p384-1"), es_jwk(&issuer.es, "es-1"),
    ]});
    let claims = issuer.claims();
    let http = serve(&issuer, ALL).await;
    let rsa = |alg: &str, padding: &'static dyn sig::RsaEncoding| {
        token_with(json!({"alg": alg}), &claims, |m| {
            rsa_signature(&keys.rsa, padding, m)
        })
    };
    let p384 = token_with(json!({"alg": "ES384"}), &claims, |m| {
        keys.p384
            .sign(&SystemRandom::new(), m)
            .unwrap()
            .as_ref()
            .to_vec()
    });
    // One P-384 key: it is the one.
    assert_eq!(status(&http, &p384).await, 200);
    // Two RSA keys fit RS256: which one is not guessed.
    assert_eq!(
        status(&http, &rsa("RS256", &sig::RSA_PKCS1_SHA256)).await,
        401
    );
    // Only one of them fits RS384 (the other is declared for RS256).
    assert_eq!(
        status(&http, &rsa("RS384", &sig::RSA_PKCS1_SHA384)).await,
        200
    );
    http.shutdown().await;
}

/// A key set of exactly `bytes` bytes holding `keys` (a `padding` member fills it up).
fn key_set_of(keys: &Value, bytes: usize) -> Value {
    let mut doc = json!({"keys": keys, "padding": ""});
    let unpadded = doc.to_string().len();
    doc["padding"] = json!("x".repeat(bytes - unpadded));
    assert_eq!(doc.to_string().len(), bytes);
    doc
}

/// A good token of exactly `bytes` bytes: an `extra` claim fills it up, and a `pad` header
/// member of 0 to 3 characters moves the base64 lengths onto every residue.
fn token_of(issuer: &Issuer, bytes: usize) -> String {
    let sign = |m: &[u8]| {
        issuer
            .es
            .sign(&SystemRandom::new(), m)
            .unwrap()
            .as_ref()
            .to_vec()
    };
    for pad in 0..4 {
        let header =
            json!({"alg": "ES256", "typ": "at+jwt", "kid": "es-1", "pad": "x".repeat(pad)});
        for extra in (bytes * 3 / 4).saturating_sub(400)..bytes * 3 / 4 {
            let mut claims = issuer.claims();
            claims["extra"] = json!("x".repeat(extra));
            let token = token_with(header.clone(), &claims, sign);
            if token.len() == bytes {
                return token;
            }
        }
    }
    panic!("no token of {bytes} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_sets_and_tokens_are_bounded_in_size() {
    let issuer = Issuer::start().await;
    let keys = json!([es_jwk(&issuer.es, "es-1")]);
    let good = issuer.token(&issuer.claims());
    // A key set of 256 KiB is read; one byte more is not, and no key is known.
    for (bytes, want) in [(256 * 1024, 200), (256 * 1024 + 1, 401)] {
        *issuer.jwks.write().unwrap() = key_set_of(&keys, bytes);
        let http = serve(&issuer, ALL).await;
        assert_eq!(status(&http, &good).await, want, "{bytes}");
        http.shutdown().await;
    }
    *issuer.jwks.write().unwrap() = json!({"keys": keys});
    let http = serve(&issuer, ALL).await;
    // A token of 8 KiB is read; one byte more is refused unread.
    for (bytes, want) in [(8 * 1024, 200), (8 * 1024 + 1, 401)] {
        let token = token_of(&issuer, bytes);
        assert_eq!(status(&http, &token).await, want, "{bytes} bytes");
    }
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorization_server_is_never_followed_through_a_redirect() {
    let issuer = Issuer::start().await;
    let good = issuer.token(&issuer.claims());
    let moved = format!("{}/moved/jwks", issuer.url);
    let http = serve_with(&issuer, ALL, &[("MCP_OAUTH_JWKS_URL", &moved)]).await;
    assert_eq!(status(&http, &good).await, 401);
    http.shutdown().await;
    let direct = format!("{}/jwks", issuer.url);
    let http = serve_with(&issuer, ALL, &[("MCP_OAUTH_JWKS_URL", &direct)]).await;
    assert_eq!(status(&http, &good).await, 200);
    http.shutdown().await;

    // The approval sign-in's code exchange: a token endpoint that redirects gets no code.
    issuer.move_token_endpoint();
    let vars = [
        ("MCP_OAUTH_ISSUER", issuer.url.clone()),
        ("MCP_OAUTH_RESOURCE", RESOURCE.to_owned()),
    ];
    let settings = OAuthSettings::from_lookup(
        &|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()),
        "127.0.0.1",
        false,
    )
    .expect("settings");
    let validator = TokenValidator::new(&settings, Tier::Full).expect("validator");
    let client = ApprovalClient {
        id: "pve-approval".into(),
        secret: None,
    };
    let login = ApprovalLogin::new(client, validator, &ApproverRule::Caller);
    let base = url::Url::parse("http://127.0.0.1:9/").unwrap();
    let started = login.start("link", &base).await.expect("started");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap();
    let consent = browser
        .get(started.authorize.as_str())
        .send()
        .await
        .expect("issuer answers");
    let callback = url::Url::parse(consent.headers()["location"].to_str().unwrap()).unwrap();
    let field = |name: &str| {
        callback
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap()
    };
    let refused = login
        .finish(
            &field("state"),
            Some(&field("code")),
            Some(&started.binding),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, LoginProblem::Server(why) if why.contains("HTTP 307")),
        "{refused:?}"
    );
    assert_eq!(issuer.grants(), 0);
}
