//! Authentication of `/mcp` (a static bearer token, an OAuth access token, or none on
//! loopback), and the gate that applies it before the rate limits.
//!
//! Invariants: a static token is compared in constant time (both sides are hashed first, so
//! neither content nor length leaks through timing); an OAuth token is validated by
//! [`TokenValidator`]; a refusal is 401 with `WWW-Authenticate: Bearer …` (OAuth: naming the
//! resource metadata and scopes) or, for a valid OAuth token without any of the server's
//! scopes, 403 `insufficient_scope`; the token is never logged, and the `Authorization` header
//! is removed before the request reaches the MCP service, so no handler can see or echo it.
//! Every request let through carries its [`Caller`] in the request extensions.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::errors::{SERVER_ERROR, json_error, request_id};
use super::oauth_token::{Rejection, TokenValidator};
use super::ratelimit::{RateKey, RateLimit, Verdict};
use super::refusals::RefusalLog;
use crate::identity::{Caller, Via};

/// The expected token, kept only as its SHA-256 digest.
#[derive(Clone)]
pub struct BearerAuth {
    digest: Option<Arc<[u8; 32]>>,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.digest.is_some() {
            "BearerAuth(on)"
        } else {
            "BearerAuth(off)"
        })
    }
}

impl BearerAuth {
    /// Requires `token`; `None` turns authentication off.
    pub fn new(token: Option<&str>) -> BearerAuth {
        BearerAuth {
            digest: token.map(|t| Arc::new(Sha256::digest(t.as_bytes()).into())),
        }
    }

    /// Whether the `Authorization` header value carries the expected token.
    pub fn accepts(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(expected) = &self.digest else {
            return true;
        };
        let Some(token) = authorization
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
        else {
            return false;
        };
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        presented.ct_eq(expected.as_ref()).into()
    }
}

/// How `/mcp` authenticates, one mode at a time.
#[derive(Clone, Debug)]
pub enum Authenticator {
    /// No authentication (loopback only, explicitly requested).
    Off,
    /// The server's single static bearer token.
    Static(BearerAuth),
    /// OAuth 2.1 access tokens, validated locally.
    OAuth(Arc<TokenValidator>),
}

/// What the `/mcp` gate needs: the authenticator, the rate limits and the refusal log.
#[derive(Clone, Debug)]
pub struct Gate {
    /// How requests are authenticated.
    pub auth: Authenticator,
    /// Authenticated and unauthenticated allowances.
    pub rate: RateLimit,
    /// Bounded log of refusals.
    pub refusals: Arc<RefusalLog>,
}

/// The client's socket address (never a forwarded header).
pub fn peer_ip(request: &Request) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip())
}

/// Middleware: authentication, then the rate limit of the request's kind. A request that
/// fails authentication is counted against its address in the unauthenticated limiter (401 or
/// 403 while allowed, then 429); an authenticated one against its credential's allowance: the
/// static token, the OAuth subject, or the address when authentication is off.
pub async fn gate(State(gate): State<Gate>, mut request: Request, next: Next) -> Response {
    let ip = peer_ip(&request);
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let presented = request.headers().get(header::AUTHORIZATION);
    let checked = match &gate.auth {
        Authenticator::Off => Ok((Caller::anonymous(Via::Unauthenticated), RateKey::Peer(ip))),
        Authenticator::Static(auth) if auth.accepts(presented) => {
            Ok((Caller::anonymous(Via::StaticToken), RateKey::Token))
        }
        Authenticator::Static(_) => Err(if presented.is_some() {
            Rejection::Invalid("wrong static token")
        } else {
            Rejection::Missing
        }),
        Authenticator::OAuth(validator) => validator.authenticate(presented).await.map(|caller| {
            let key = RateKey::subject(&caller);
            (caller, key)
        }),
    };
    let (caller, key) = match checked {
        Ok(found) => found,
        Err(rejection) => {
            if let Verdict::Limited { wait } = gate.rate.check_unauthenticated(ip) {
                gate.refusals
                    .note("rate limit (unauthenticated)", ip, method.as_str(), &path);
                // The body of an unauthenticated request is never read: no id to answer.
                return gate.rate.too_many(wait, None);
            }
            return refuse(&gate, rejection, ip, method.as_str(), &path);
        }
    };
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(caller);
    match gate.rate.check_authenticated(key) {
        Verdict::Allowed { remaining } => {
            let mut response = next.run(request).await;
            gate.rate.allowed_headers(remaining, response.headers_mut());
            response
        }
        Verdict::Limited { wait } => {
            gate.refusals.note("rate limit", ip, method.as_str(), &path);
            // An authenticated caller's request is read (the body limit outside bounds it) so
            // the 429 answers its id; a notification or unreadable body gets none.
            let body = axum::body::to_bytes(request.into_body(), usize::MAX)
                .await
                .unwrap_or_default();
            gate.rate.too_many(wait, request_id(&body).as_ref())
        }
    }
}

/// The 401 or 403 answer to a rejected request, with the challenge of the mode in force.
fn refuse(gate: &Gate, rejection: Rejection, ip: IpAddr, method: &str, path: &str) -> Response {
    let (status, message, challenge) = match (&gate.auth, rejection) {
        (Authenticator::OAuth(v), Rejection::InsufficientScope) => (
            StatusCode::FORBIDDEN,
            "Forbidden: the token grants none of this server's scopes",
            v.challenges.insufficient_scope.clone(),
        ),
        (Authenticator::OAuth(v), Rejection::Missing) => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            v.challenges.missing.clone(),
        ),
        (Authenticator::OAuth(v), Rejection::Invalid(_)) => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            v.challenges.invalid.clone(),
        ),
        (_, Rejection::Missing) => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            HeaderValue::from_static(r#"Bearer realm="nandi-proxmox-mcp""#),
        ),
        (_, _) => (
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            HeaderValue::from_static(r#"Bearer realm="nandi-proxmox-mcp", error="invalid_token""#),
        ),
    };
    let reason = match rejection {
        Rejection::Missing => "missing bearer token",
        Rejection::Invalid(why) => {
            tracing::debug!(reason = why, %ip, "bearer token refused");
            "missing or invalid bearer token"
        }
        Rejection::InsufficientScope => "token without any of the server's scopes",
    };
    gate.refusals.note(reason, ip, method, path);
    let mut response = json_error(status, SERVER_ERROR, message);
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, challenge);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_accepted() {
        let auth = BearerAuth::new(Some("correct-horse-battery"));
        let v = |s: &str| HeaderValue::from_str(s).unwrap();
        assert!(auth.accepts(Some(&v("Bearer correct-horse-battery"))));
        assert!(auth.accepts(Some(&v("bearer correct-horse-battery"))));
        assert!(!auth.accepts(Some(&v("Bearer correct-horse-batter"))));
        assert!(!auth.accepts(Some(&v("Bearer correct-horse-battery2"))));
        assert!(!auth.accepts(Some(&v("Basic correct-horse-battery"))));
        assert!(!auth.accepts(Some(&v("correct-horse-battery"))));
        assert!(!auth.accepts(None));
        assert!(BearerAuth::new(None).accepts(None));
        // Debug says whether a token is required, never the token.
        assert_eq!(format!("{auth:?}"), "BearerAuth(on)");
        assert_eq!(format!("{:?}", BearerAuth::new(None)), "BearerAuth(off)");
    }
}
