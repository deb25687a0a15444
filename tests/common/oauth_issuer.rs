//! A token issuer for the OAuth tests, on loopback: fresh ES256 and Ed25519 keys, RFC 8414
//! metadata and a JWKS whose downloads are counted, and JWTs signed by hand (so tests can also
//! forge the bad ones).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
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
}

#[derive(Clone)]
struct Served {
    issuer: String,
    jwks: Arc<RwLock<Value>>,
    fetches: Arc<AtomicUsize>,
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
        let served = Served {
            issuer: url.clone(),
            jwks: jwks.clone(),
            fetches: fetches.clone(),
        };
        let app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(|State(s): State<Served>| async move {
                    axum::Json(json!({
                        "issuer": s.issuer,
                        "jwks_uri": format!("{}/jwks", s.issuer),
                        "token_endpoint": format!("{}/token", s.issuer),
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
            .with_state(served);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Issuer {
            url,
            es,
            ed,
            jwks,
            fetches,
        }
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
