//! The authorization server's signing keys: discovered (`jwks_uri` from the issuer's metadata)
//! unless configured, downloaded over HTTPS and cached.
//!
//! Invariants: at most one download runs at a time, and a new one starts only when the keys
//! are unknown or old *and* the last attempt is at least `jwks_min_refresh` ago — a flood of
//! tokens with made-up key ids costs the issuer one request per interval, never a storm; a
//! failed download keeps the keys already known; only asymmetric signing keys are kept (an
//! `oct` key is dropped, so no HMAC secret can ever verify a token); the metadata's `issuer`
//! must equal the configured one (RFC 8414 §3.3) and its `jwks_uri` passes the same https rule
//! as the settings; responses are size-bounded and redirects are not followed. The same
//! metadata names the endpoints of the approval sign-in ([`Endpoints`]), which pass the same
//! https rule.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use url::Url;

use super::oauth::{OAuthSettings, secure_url};

/// Keys older than this (15 minutes) are downloaded again on the next token (still bounded by the
/// minimum interval), so a key the issuer withdrew stops being accepted.
const MAX_KEY_AGE: Duration = Duration::from_secs(900);
/// Time allowed for one metadata or JWKS request.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest metadata or JWKS document read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// What an algorithm needs of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl KeyKind {
    fn for_algorithm(alg: Algorithm) -> Option<KeyKind> {
        match alg {
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => Some(KeyKind::Rsa),
            Algorithm::ES256 => Some(KeyKind::P256),
            Algorithm::ES384 => Some(KeyKind::P384),
            Algorithm::EdDSA => Some(KeyKind::Ed25519),
            // HMAC, and anything newer this server does not know.
            _ => None,
        }
    }
}

/// One usable signing key.
#[derive(Clone)]
struct Key {
    kid: Option<String>,
    alg: Option<KeyAlgorithm>,
    kind: KeyKind,
    key: DecodingKey,
}

impl Key {
    fn from_jwk(jwk: &Jwk) -> Option<Key> {
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            return None;
        }
        let kind = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => KeyKind::Rsa,
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => KeyKind::P256,
                EllipticCurve::P384 => KeyKind::P384,
                _ => return None,
            },
            AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
                KeyKind::Ed25519
            }
            // Symmetric (`oct`) and unknown keys are never used.
            _ => return None,
        };
        Some(Key {
            kid: jwk.common.key_id.clone(),
            alg: jwk.common.key_algorithm,
            kind,
            key: DecodingKey::from_jwk(jwk).ok()?,
        })
    }

    fn fits(&self, alg: Algorithm) -> bool {
        KeyKind::for_algorithm(alg) == Some(self.kind)
            && self
                .alg
                .is_none_or(|declared| format!("{declared:?}") == format!("{alg:?}"))
    }
}

/// The authorization server's endpoints for the approval sign-in (RFC 8414).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// `authorization_endpoint`: where the person's browser signs in.
    pub authorization: Url,
    /// `token_endpoint`: where the code is exchanged.
    pub token: Url,
}

#[derive(Default)]
struct Known {
    keys: Vec<Key>,
    fetched: Option<Instant>,
    last_attempt: Option<Instant>,
    jwks_url: Option<String>,
    endpoints: Option<Endpoints>,
}

/// The cached key set of one issuer.
pub struct Jwks {
    http: reqwest::Client,
    issuer: String,
    min_refresh: Duration,
    known: RwLock<Known>,
    refreshing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jwks({})", self.issuer)
    }
}

impl Jwks {
    /// An empty cache for `settings`; nothing is fetched until the first token.
    pub fn new(settings: &OAuthSettings) -> Result<Jwks, String> {
        Ok(Jwks {
            http: http_client()?,
            issuer: settings.issuer.clone(),
            min_refresh: settings.jwks_min_refresh,
            known: RwLock::new(Known {
                jwks_url: settings.jwks_url.clone(),
                ..Known::default()
            }),
            refreshing: tokio::sync::Mutex::new(()),
        })
    }

    /// The key that verifies a token signed with `alg` under key id `kid` (without a key id:
    /// the only key that fits `alg`). Downloads the keys when needed and allowed.
    pub async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        if let Some((key, fresh)) = self.lookup(kid, alg)
            && fresh
        {
            return Some(key);
        }
        {
            let _one_at_a_time = self.refreshing.lock().await;
            if self.may_refresh() {
                self.refresh().await;
            }
        }
        self.lookup(kid, alg).map(|(key, _)| key)
    }

    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Option<(DecodingKey, bool)> {
        let known = self.known.read().ok()?;
        let fresh = known.fetched.is_some_and(|t| t.elapsed() < MAX_KEY_AGE);
        let mut fitting = known.keys.iter().filter(|k| k.fits(alg));
        let key = match kid {
            Some(kid) => fitting.find(|k| k.kid.as_deref() == Some(kid)),
            None => match (fitting.next(), fitting.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            },
        };
        key.map(|k| (k.key.clone(), fresh))
    }

    fn may_refresh(&self) -> bool {
        self.known.read().is_ok_and(|known| {
            known
                .last_attempt
                .is_none_or(|t| t.elapsed() >= self.min_refresh)
        })
    }

    async fn refresh(&self) {
        let url = match self.known.write() {
            Ok(mut known) => {
                known.last_attempt = Some(Instant::now());
                known.jwks_url.clone()
            }
            Err(_) => return,
        };
        let url = match url {
            Some(url) => url,
            None => match self.discover().await {
                Ok(url) => {
                    if let Ok(mut known) = self.known.write() {
                        known.jwks_url = Some(url.clone());
                    }
                    url
                }
                Err(problem) => {
                    tracing::warn!(issuer = %self.issuer, "OAuth: cannot discover the JWKS URL: {problem}");
                    return;
                }
            },
        };
        match self.fetch(&url).await.and_then(|doc| parse_keys(&doc)) {
            Ok(keys) => {
                tracing::info!(jwks = %url, keys = keys.len(), "OAuth: signing keys loaded");
                if let Ok(mut known) = self.known.write() {
                    known.keys = keys;
                    known.fetched = Some(Instant::now());
                }
            }
            Err(problem) => {
                tracing::warn!(jwks = %url, "OAuth: cannot load the signing keys: {problem}");
            }
        }
    }

    /// The HTTPS client for the issuer.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The sign-in endpoints from the issuer's metadata (fetched once, then kept).
    pub async fn endpoints(&self) -> Result<Endpoints, String> {
        if let Some(known) = self.known.read().ok().and_then(|k| k.endpoints.clone()) {
            return Ok(known);
        }
        let doc = self.metadata().await?;
        let endpoint = |name: &str| -> Result<Url, String> {
            let value = doc
                .get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("the issuer's metadata has no {name}"))?;
            secure_url(name, value).map_err(|e| e.to_string())
        };
        let endpoints = Endpoints {
            authorization: endpoint("authorization_endpoint")?,
            token: endpoint("token_endpoint")?,
        };
        if let Ok(mut known) = self.known.write() {
            known.endpoints = Some(endpoints.clone());
        }
        Ok(endpoints)
    }

    /// `jwks_uri` from the issuer's metadata.
    async fn discover(&self) -> Result<String, String> {
        let doc = self.metadata().await?;
        let jwks = doc
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or("the issuer's metadata has no jwks_uri")?;
        secure_url("jwks_uri", jwks).map_err(|e| e.to_string())?;
        Ok(jwks.to_owned())
    }

    /// The issuer's metadata: RFC 8414 first, then OpenID Connect discovery, in the order the
    /// MCP authorization spec gives; its `issuer` must be ours.
    async fn metadata(&self) -> Result<Value, String> {
        let mut problems = Vec::new();
        for candidate in metadata_urls(&self.issuer)? {
            let doc = match self.fetch(&candidate).await {
                Ok(doc) => doc,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            if doc.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                problems.push(format!(
                    "{candidate}: its issuer is not {:?} (RFC 8414 §3.3)",
                    self.issuer
                ));
                continue;
            }
            return Ok(doc);
        }
        Err(problems.join("; "))
    }

    async fn fetch(&self, url: &str) -> Result<Value, String> {
        let mut response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON ({e})"))
    }
}

/// The well-known metadata URLs of `issuer`, in the order to try them.
fn metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let url = Url::parse(issuer).map_err(|e| format!("issuer {issuer:?}: {e}"))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// The usable keys of a JWKS document; keys this server cannot use are skipped, not fatal.
fn parse_keys(doc: &Value) -> Result<Vec<Key>, String> {
    let entries = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("no \"keys\" array")?;
    Ok(entries
        .iter()
        .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
        .filter_map(|jwk| Key::from_jwk(&jwk))
        .collect())
}

/// HTTPS client for the issuer: the system's trust store, ring, no redirects, no proxy.
fn http_client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|e| format!("OAuth: cannot load the system's CA certificates: {e}"))?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("OAuth: TLS setup failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .http1_only()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT)
        .user_agent(concat!("nandi-proxmox-mcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("OAuth: cannot build the HTTP client: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_urls_follow_the_mcp_discovery_order() {
        assert_eq!(
            metadata_urls("https://id.example.com/realms/lab").unwrap(),
            [
                "https://id.example.com/.well-known/oauth-authorization-server/realms/lab",
                "https://id.example.com/.well-known/openid-configuration/realms/lab",
                "https://id.example.com/realms/lab/.well-known/openid-configuration",
            ]
        );
        assert_eq!(metadata_urls("https://id.example.com/").unwrap().len(), 2);
    }

    #[test]
    fn symmetric_encryption_and_off_curve_keys_are_dropped() {
        let doc = json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "e", "use": "enc"},
            {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "s", "alg": "EdDSA"},
            // An octet key pair on a curve that is not Ed25519 parses, and is dropped.
            {"kty": "OKP", "crv": "P-256", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "p"},
            {"kty": "weird"}
        ]});
        let keys = parse_keys(&doc).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("s"));
        assert!(keys[0].fits(Algorithm::EdDSA));
        assert!(!keys[0].fits(Algorithm::ES256));
        assert!(!keys[0].fits(Algorithm::HS256));
    }
}
