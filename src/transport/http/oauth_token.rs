//! Access-token validation of OAuth mode: a JWT checked locally against the issuer's keys, and
//! the [`Caller`] it stands for.
//!
//! Invariants: a token is accepted only when all of these hold — at most [`MAX_TOKEN_BYTES`];
//! its `alg` is on the allow-list and asymmetric (the key must be of that algorithm's type, so a
//! public key can never serve as an HMAC secret, and `none` does not parse); the signature
//! verifies (ring, through `jsonwebtoken`'s provider interface); `iss` equals the issuer exactly;
//! `aud` contains this server's resource URI (RFC 8707: a token for another resource is refused,
//! never passed on); `exp` is in the future and `nbf` not, with at most [`LEEWAY_SECS`] of clock
//! skew. Scopes only narrow: the caller's tier ceiling is the highest of the server's scopes the
//! token grants, and a token granting none of them is refused (403). Tokens are never logged.

use std::sync::Arc;

use axum::http::HeaderValue;
use jsonwebtoken::AlgorithmFamily::{Ec, Ed, Rsa};
use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result as JwtResult};
use jsonwebtoken::signature::{Error as SignatureError, Verifier};
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use jsonwebtoken::{Validation, decode, decode_header};
use ring::signature::{self as ring_sig, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::{Map, Value};

use super::oauth::{Challenges, OAuthSettings};
use super::oauth_jwks::{Endpoints, Jwks};
use crate::approval::Person;
use crate::catalog::Tier;
use crate::identity::{Caller, clean_name};

/// Largest access token accepted, in bytes (a JWT with the usual claims is well under 2 KiB).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY_SECS: u64 = 60;
/// Most granted scopes kept on a caller.
const MAX_SCOPES: usize = 32;

/// Why a request was not let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No `Authorization` header.
    Missing,
    /// A token that is not valid here; the reason is for the refusal log only.
    Invalid(&'static str),
    /// A valid token that grants none of the server's scopes.
    InsufficientScope,
}

/// Validates access tokens for one resource.
#[derive(Debug)]
pub struct TokenValidator {
    settings: OAuthSettings,
    jwks: Jwks,
    /// The refusal headers.
    pub challenges: Challenges,
}

impl TokenValidator {
    /// A validator for `settings` on a server whose tier is `tier`; fails only when the HTTPS
    /// client for the issuer cannot be built.
    pub fn new(settings: &OAuthSettings, tier: Tier) -> Result<Arc<TokenValidator>, String> {
        // Process-wide and set once; a second call finds it installed, which is fine.
        let _ = CryptoProvider::install_default(&RING_PROVIDER);
        Ok(Arc::new(TokenValidator {
            jwks: Jwks::new(settings)?,
            challenges: Challenges::new(settings, tier),
            settings: settings.clone(),
        }))
    }

    /// The settings it enforces.
    pub fn settings(&self) -> &OAuthSettings {
        &self.settings
    }

    /// The authorization server's endpoints (from its metadata, discovered once).
    pub async fn endpoints(&self) -> Result<Endpoints, String> {
        self.jwks.endpoints().await
    }

    /// The HTTPS client that talks to the authorization server (no redirects, bounded time).
    pub fn http(&self) -> &reqwest::Client {
        self.jwks.http()
    }

    /// The caller behind an `Authorization` header.
    pub async fn authenticate(&self, header: Option<&HeaderValue>) -> Result<Caller, Rejection> {
        let header = header.ok_or(Rejection::Missing)?;
        let token = header
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or(Rejection::Invalid("not a bearer token"))?;
        let claims = self.verify(token).await?;
        let granted = granted_scopes(&claims);
        let tier = self
            .settings
            .scopes
            .tier_of(granted.iter().map(String::as_str))
            .ok_or(Rejection::InsufficientScope)?;
        let raw = |name: &str| claims.get(name).and_then(Value::as_str);
        Ok(Caller::oauth(
            raw("sub"),
            raw("client_id").or_else(|| raw("azp")),
            granted,
            tier,
        ))
    }

    /// The person an access token from the approval sign-in names: the same checks as for a
    /// caller's token (signature, issuer, audience = this resource, time), without the tier
    /// scopes (an approver needs none); a token without `sub` names nobody.
    pub async fn identify(&self, token: &str) -> Result<Person, Rejection> {
        let claims = self.verify(token).await?;
        let raw_subject = claims.get("sub").and_then(Value::as_str).unwrap_or("");
        Person::signed_in(raw_subject, granted_scopes(&claims))
            .ok_or(Rejection::Invalid("no subject"))
    }

    /// The claims of a token that passes every check but the scopes.
    async fn verify(&self, token: &str) -> Result<Map<String, Value>, Rejection> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Rejection::Invalid("token too large"));
        }
        let head = decode_header(token).map_err(|_| Rejection::Invalid("malformed token"))?;
        if !self.settings.algorithms.contains(&head.alg) {
            return Err(Rejection::Invalid("signature algorithm not allowed"));
        }
        check_type(head.typ.as_deref(), self.settings.require_at_jwt)?;
        let key = self
            .jwks
            .key_for(head.kid.as_deref(), head.alg)
            .await
            .ok_or(Rejection::Invalid("unknown signing key"))?;
        let mut validation = Validation::new(head.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = decode::<Map<String, Value>>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| Rejection::Invalid(reason(e.kind())))?;
        // A sender-constrained token (DPoP `cnf.jkt`, RFC 9449; mTLS `cnf.x5t#S256`, RFC 8705)
        // is valid only with a proof of its key, which a Bearer request cannot carry: as a
        // Bearer token it is refused (RFC 9449 §7.2), so a stolen one is worth nothing here.
        if claims.contains_key("cnf") {
            return Err(Rejection::Invalid(
                "sender-constrained (cnf) token sent as a Bearer token",
            ));
        }
        Ok(claims)
    }
}

/// The JOSE `typ` of an access token: `at+jwt` (RFC 9068 §2.1, with or without the
/// `application/` prefix, any case); unless `require_at_jwt`, also none or plain `JWT`. Any
/// other type names another kind of token (an ID token, a DPoP proof, a logout token).
fn check_type(typ: Option<&str>, require_at_jwt: bool) -> Result<(), Rejection> {
    let typ = typ.map(str::to_ascii_lowercase);
    let at_jwt = matches!(typ.as_deref(), Some("at+jwt" | "application/at+jwt"));
    let plain = matches!(typ.as_deref(), None | Some("jwt"));
    if at_jwt || (plain && !require_at_jwt) {
        return Ok(());
    }
    if plain {
        return Err(Rejection::Invalid("token type is not at+jwt"));
    }
    Err(Rejection::Invalid("not an access token (typ)"))
}

/// The scopes a token grants: `scope` (RFC 9068, space-separated) or `scp` (a list or string).
fn granted_scopes(claims: &Map<String, Value>) -> Vec<String> {
    let words: Vec<&str> = match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(s)) => s.split(' ').collect(),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    words
        .into_iter()
        .filter_map(clean_name)
        .take(MAX_SCOPES)
        .collect()
}

fn reason(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidSignature => "bad signature",
        ErrorKind::ExpiredSignature => "expired",
        ErrorKind::ImmatureSignature => "not yet valid",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::MissingRequiredClaim(_) => "missing claim",
        // An algorithm outside the list never gets this far (`verify` refuses it first).
        _ => "invalid token",
    }
}

/// `jsonwebtoken`'s crypto, done by *ring* (already the TLS provider): verification only, and
/// only of asymmetric signatures.
static RING_PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: no_signer,
    verifier_factory: ring_verifier,
    key_utils: KeyUtils {
        rsa_pub_components_from_private_key: |_| Err(ErrorKind::InvalidKeyFormat.into()),
        rsa_pub_components_from_public_key: |_| Err(ErrorKind::InvalidKeyFormat.into()),
        ec_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidKeyFormat.into()),
        ed_pub_components_from_private_key: |_, _| Err(ErrorKind::InvalidKeyFormat.into()),
        compute_digest: |_, _| Err(ErrorKind::InvalidKeyFormat.into()),
    },
};

fn no_signer(_: &Algorithm, _: &EncodingKey) -> JwtResult<Box<dyn JwtSigner>> {
    Err(ErrorKind::InvalidAlgorithm.into())
}

fn ring_verifier(alg: &Algorithm, key: &DecodingKey) -> JwtResult<Box<dyn JwtVerifier>> {
    let (family, scheme) = match alg {
        Algorithm::RS256 => (Rsa, Scheme::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA256)),
        Algorithm::RS384 => (Rsa, Scheme::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA384)),
        Algorithm::RS512 => (Rsa, Scheme::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA512)),
        Algorithm::PS256 => (Rsa, Scheme::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA256)),
        Algorithm::PS384 => (Rsa, Scheme::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA384)),
        Algorithm::PS512 => (Rsa, Scheme::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA512)),
        Algorithm::ES256 => (Ec, Scheme::Other(&ring_sig::ECDSA_P256_SHA256_FIXED)),
        Algorithm::ES384 => (Ec, Scheme::Other(&ring_sig::ECDSA_P384_SHA384_FIXED)),
        Algorithm::EdDSA => (Ed, Scheme::Other(&ring_sig::ED25519)),
        // HMAC would make the public key a shared secret: never (nor anything unknown).
        _ => {
            return Err(ErrorKind::InvalidAlgorithm.into());
        }
    };
    if key.family() != family {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    let public = match key.kind() {
        DecodingKeyKind::RsaModulusExponent { n, e } => Public::Rsa {
            n: n.clone(),
            e: e.clone(),
        },
        DecodingKeyKind::SecretOrDer(bytes) => Public::Raw(bytes.clone()),
    };
    Ok(Box::new(RingVerifier {
        alg: *alg,
        scheme,
        public,
    }))
}

/// A public key as `jsonwebtoken` hands it over.
enum Public {
    /// RSA modulus and exponent (from a JWK).
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// An EC point, an Ed25519 key, or a PKCS#1 RSA key.
    Raw(Vec<u8>),
}

/// The ring parameters of one algorithm (RSA components need the RSA parameter type).
enum Scheme {
    Rsa(&'static ring_sig::RsaParameters),
    Other(&'static dyn ring_sig::VerificationAlgorithm),
}

struct RingVerifier {
    alg: Algorithm,
    scheme: Scheme,
    public: Public,
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> Result<(), SignatureError> {
        let verified = match (&self.scheme, &self.public) {
            (Scheme::Rsa(params), Public::Rsa { n, e }) => RsaPublicKeyComponents {
                n: n.as_slice(),
                e: e.as_slice(),
            }
            .verify(params, msg, signature),
            (Scheme::Rsa(params), Public::Raw(der)) => {
                UnparsedPublicKey::new(*params, der).verify(msg, signature)
            }
            (Scheme::Other(scheme), Public::Raw(bytes)) => {
                UnparsedPublicKey::new(*scheme, bytes).verify(msg, signature)
            }
            (Scheme::Other(_), Public::Rsa { .. }) => return Err(SignatureError::new()),
        };
        verified.map_err(|_| SignatureError::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let claims = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            granted_scopes(&claims(json!({"scope": "openid proxmox:read"}))),
            ["openid", "proxmox:read"]
        );
        assert_eq!(
            granted_scopes(&claims(json!({"scp": ["proxmox:admin"]}))),
            ["proxmox:admin"]
        );
        assert!(granted_scopes(&claims(json!({"scope": 5}))).is_empty());
    }

    #[test]
    fn the_provider_never_verifies_hmac() {
        let key = DecodingKey::from_secret(b"public key bytes").unwrap();
        assert!(ring_verifier(&Algorithm::HS256, &key).is_err());
        let ed =
            DecodingKey::from_ed_components("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo").unwrap();
        assert!(ring_verifier(&Algorithm::RS256, &ed).is_err());
        assert!(ring_verifier(&Algorithm::EdDSA, &ed).is_ok());
    }

    #[test]
    fn each_refusal_is_named_and_anything_else_is_an_invalid_token() {
        // The words the refusal log and the approval page give (`tests/approval_login.rs`
        // shows them for real tokens).
        for (kind, words) in [
            (ErrorKind::InvalidSignature, "bad signature"),
            (ErrorKind::ExpiredSignature, "expired"),
            (ErrorKind::ImmatureSignature, "not yet valid"),
            (ErrorKind::InvalidIssuer, "wrong issuer"),
            (ErrorKind::InvalidAudience, "wrong audience"),
            (
                ErrorKind::MissingRequiredClaim("exp".into()),
                "missing claim",
            ),
        ] {
            assert_eq!(reason(&kind), words);
        }
        assert_eq!(reason(&ErrorKind::InvalidToken), "invalid token");
        assert_eq!(reason(&ErrorKind::InvalidAlgorithm), "invalid token");
    }

    #[test]
    fn debug_output_names_the_issuer_of_the_key_cache() {
        let settings = super::super::oauth::example_settings();
        let validator = TokenValidator::new(&settings, Tier::Full).unwrap();
        let shown = format!("{validator:?}");
        assert!(
            shown.contains("jwks: Jwks(https://id.example.com/realms/lab)"),
            "{shown}"
        );
    }
}
