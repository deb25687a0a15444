//! A token issuer for the OAuth tests, on loopback: fresh ES256 and Ed25519 keys, RFC 8414
//! metadata and a JWKS whose downloads are counted, and JWTs signed by hand (so tests can also
//! forge the bad ones). It also signs people in for the approval page: `/authorize` consents at
//! once for the test user of the moment ([`Issuer::sign_in_as`]) and redirects with a code;
//! `/token` exchanges a code once, for the client and redirect URI it was issued to, only with
//! the PKCE verifier whose S256 challenge it was issued for, and answers a signed access token
//! for the requested `resource`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
pub use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use ring::rand::SystemRandom;
pub use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
};
use serde_json::{Value, json};

/// The resource URI the tests' server is configured with.
pub const RESOURCE: &str = "https://mcp.example.test/mcp";

/// A token issuer on loopback: RFC 8414 metadata and a JWKS whose downloads are counted.
pub struct Issuer {
    pub url: String,
    pub es: EcdsaKeyPair,
    pub ed: Ed25519KeyPair,
    pub jwks: Arc<RwLock<Value>>,
    fetches: Arc<AtomicUsize>,
    user: Arc<RwLock<(String, String)>>,
    grants: Arc<AtomicUsize>,
    padding: Arc<AtomicUsize>,
    patch: Arc<RwLock<Value>>,
    moved: Arc<AtomicBool>,
}

/// A code issued by `/authorize`, waiting for `/token`.
struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    resource: String,
    subject: String,
    scope: String,
}

#[derive(Clone)]
struct Served {
    issuer: String,
    jwks: Arc<RwLock<Value>>,
    fetches: Arc<AtomicUsize>,
    signer: Arc<EcdsaKeyPair>,
    user: Arc<RwLock<(String, String)>>,
    codes: Arc<Mutex<HashMap<String, Grant>>>,
    grants: Arc<AtomicUsize>,
    padding: Arc<AtomicUsize>,
    patch: Arc<RwLock<Value>>,
    moved: Arc<AtomicBool>,
}

impl Issuer {
    pub async fn start() -> Issuer {
        let rng = SystemRandom::new();
        let es_pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let es =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, es_pkcs8.as_ref(), &rng)
                .unwrap();
        let ed_pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let ed = Ed25519KeyPair::from_pkcs8(ed_pkcs8.as_ref()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let url = format!("http://{addr}");
        let jwks = Arc::new(RwLock::new(
            json!({"keys": [es_jwk(&es, "es-1"), ed_jwk(&ed, "ed-1")]}),
        ));
        let fetches = Arc::new(AtomicUsize::new(0));
        let user = Arc::new(RwLock::new(("alice".to_owned(), "openid".to_owned())));
        let grants = Arc::new(AtomicUsize::new(0));
        let padding = Arc::new(AtomicUsize::new(0));
        let patch = Arc::new(RwLock::new(json!({})));
        let moved = Arc::new(AtomicBool::new(false));
        let signer =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, es_pkcs8.as_ref(), &rng)
                .unwrap();
        let served = Served {
            issuer: url.clone(),
            jwks: jwks.clone(),
            fetches: fetches.clone(),
            signer: Arc::new(signer),
            user: user.clone(),
            codes: Arc::default(),
            grants: grants.clone(),
            padding: padding.clone(),
            patch: patch.clone(),
            moved: moved.clone(),
        };
        let app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(|State(s): State<Served>| async move {
                    axum::Json(json!({
                        "issuer": s.issuer,
                        "jwks_uri": format!("{}/jwks", s.issuer),
                        "token_endpoint": if s.moved.load(Ordering::SeqCst) {
                            format!("{}/moved/token", s.issuer)
                        } else {
                            format!("{}/token", s.issuer)
                        },
                        "authorization_endpoint": format!("{}/authorize", s.issuer),
                        "code_challenge_methods_supported": ["S256"],
                    }))
                }),
            )
            .route(
                "/jwks",
                get(|State(s): State<Served>| async move {
                    s.fetches.fetch_add(1, Ordering::SeqCst);
                    axum::Json(s.jwks.read().unwrap().clone())
                }),
            )
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            // The same documents one redirect away, for clients that must not follow it.
            .route(
                "/moved/jwks",
                get(|| async { Redirect::temporary("/jwks") }),
            )
            .route(
                "/moved/token",
                post(|| async { Redirect::temporary("/token") }),
            )
            .with_state(served);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Issuer {
            url,
            es,
            ed,
            jwks,
            fetches,
            user,
            grants,
            padding,
            patch,
            moved,
        }
    }

    /// From now on the metadata names `/moved/token`, which redirects to the token endpoint.
    pub fn move_token_endpoint(&self) {
        self.moved.store(true, Ordering::SeqCst);
    }

    /// Changes the claims of `/token`'s access tokens from now on: each member of `patch`
    /// replaces the claim (`null` removes it); `{}` issues good tokens again.
    pub fn patch_token_claims(&self, patch: Value) {
        *self.patch.write().unwrap() = patch;
    }

    /// Makes `/token`'s answers exactly `bytes` long from now on (a `padding` member fills
    /// them up); 0 answers unpadded again.
    pub fn token_answer_size(&self, bytes: usize) {
        self.padding.store(bytes, Ordering::SeqCst);
    }

    /// The person `/authorize` signs in from now on, and the scopes their tokens carry.
    pub fn sign_in_as(&self, subject: &str, scope: &str) {
        *self.user.write().unwrap() = (subject.to_owned(), scope.to_owned());
    }

    /// How many codes `/token` exchanged for a token.
    pub fn grants(&self) -> usize {
        self.grants.load(Ordering::SeqCst)
    }

    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Claims of a good admin token; tests change what they need.
    pub fn claims(&self) -> Value {
        let now = now();
        json!({"iss": self.url, "aud": RESOURCE, "sub": "alice", "client_id": "claude",
               "scope": "openid proxmox:admin", "iat": now, "nbf": now - 5, "exp": now + 300})
    }

    pub fn es256(&self, kid: &str, claims: &Value) -> String {
        let signing = signing_input(
            &json!({"alg": "ES256", "typ": "at+jwt", "kid": kid}),
            claims,
        );
        let sig = self
            .es
            .sign(&SystemRandom::new(), signing.as_bytes())
            .unwrap();
        format!("{signing}.{}", B64.encode(sig.as_ref()))
    }

    pub fn eddsa(&self, claims: &Value) -> String {
        let signing = signing_input(&json!({"alg": "EdDSA", "kid": "ed-1"}), claims);
        let sig = self.ed.sign(signing.as_bytes());
        format!("{signing}.{}", B64.encode(sig.as_ref()))
    }

    pub fn token(&self, claims: &Value) -> String {
        self.es256("es-1", claims)
    }

    pub fn with_scope(&self, scope: &str) -> String {
        let mut claims = self.claims();
        claims["scope"] = json!(scope);
        self.token(&claims)
    }
}

pub fn es_jwk(key: &EcdsaKeyPair, kid: &str) -> Value {
    let point = key.public_key().as_ref();
    json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
           "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])})
}

pub fn ed_jwk(key: &Ed25519KeyPair, kid: &str) -> Value {
    json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": B64.encode(key.public_key().as_ref())})
}

pub fn signing_input(header: &Value, claims: &Value) -> String {
    format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    )
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `GET /authorize`: consents at once for the current test user, redirects with a fresh code.
async fn authorize(State(s): State<Served>, Query(q): Query<HashMap<String, String>>) -> Response {
    let field = |name: &str| q.get(name).cloned().unwrap_or_default();
    if field("response_type") != "code"
        || field("code_challenge_method") != "S256"
        || field("code_challenge").is_empty()
        || field("state").is_empty()
    {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let (subject, scope) = s.user.read().unwrap().clone();
    let code = B64.encode(ring::digest::digest(
        &ring::digest::SHA256,
        format!("{}{}{}", field("state"), subject, now()).as_bytes(),
    ));
    s.codes.lock().unwrap().insert(
        code.clone(),
        Grant {
            client_id: field("client_id"),
            redirect_uri: field("redirect_uri"),
            challenge: field("code_challenge"),
            resource: field("resource"),
            subject,
            scope,
        },
    );
    let mut target = url::Url::parse(&field("redirect_uri")).unwrap();
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &field("state"));
    Redirect::to(target.as_str()).into_response()
}

/// `POST /token`: one code, once, with its client, redirect URI and PKCE verifier.
async fn token(State(s): State<Served>, body: String) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    let refused = || {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response()
    };
    if field("grant_type") != "authorization_code" {
        return refused();
    }
    let Some(grant) = s.codes.lock().unwrap().remove(&field("code")) else {
        return refused();
    };
    let challenge = B64.encode(ring::digest::digest(
        &ring::digest::SHA256,
        field("code_verifier").as_bytes(),
    ));
    if challenge != grant.challenge
        || field("redirect_uri") != grant.redirect_uri
        || field("client_id") != grant.client_id
    {
        return refused();
    }
    let now = now();
    let mut claims = json!({"iss": s.issuer, "aud": grant.resource, "sub": grant.subject,
        "client_id": grant.client_id, "scope": grant.scope, "iat": now, "nbf": now - 5,
        "exp": now + 300});
    if let (Some(claims), Some(patch)) =
        (claims.as_object_mut(), s.patch.read().unwrap().as_object())
    {
        for (name, value) in patch {
            match value {
                Value::Null => claims.remove(name),
                other => claims.insert(name.clone(), other.clone()),
            };
        }
    }
    let signing = signing_input(
        &json!({"alg": "ES256", "typ": "at+jwt", "kid": "es-1"}),
        &claims,
    );
    let sig = s
        .signer
        .sign(&SystemRandom::new(), signing.as_bytes())
        .unwrap();
    s.grants.fetch_add(1, Ordering::SeqCst);
    let mut answer = json!({"access_token": format!("{signing}.{}", B64.encode(sig.as_ref())),
        "token_type": "Bearer", "expires_in": 300, "padding": ""});
    let size = s.padding.load(Ordering::SeqCst);
    let unpadded = answer.to_string().len();
    if size > unpadded {
        answer["padding"] = json!("p".repeat(size - unpadded));
    }
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}
