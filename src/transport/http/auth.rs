//! Bearer-token authentication of `/mcp`, and the gate that applies it before the rate limits.
//!
//! Invariants: the presented token is compared in constant time (both sides are hashed first,
//! so neither content nor length leaks through timing); a refusal is 401 with
//! `WWW-Authenticate: Bearer`; the token is never logged, and the `Authorization` header is
//! removed before the request reaches the MCP service, so no handler can see or echo it.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::errors::{SERVER_ERROR, json_error};
use super::ratelimit::{RateKey, RateLimit, Verdict};
use super::refusals::RefusalLog;

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

    /// Whether a token is required at all.
    pub fn is_enabled(&self) -> bool {
        self.digest.is_some()
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

/// What the `/mcp` gate needs: the token, the rate limits and the refusal log.
#[derive(Clone, Debug)]
pub struct Gate {
    /// The expected token.
    pub auth: BearerAuth,
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

/// Middleware: authentication, then the rate limit of the request's kind. A request without the
/// token is counted against its address in the unauthenticated limiter (401 while allowed, then
/// 429); a request with it against the token's own allowance (or the address when
/// authentication is off).
pub async fn gate(State(gate): State<Gate>, mut request: Request, next: Next) -> Response {
    let ip = peer_ip(&request);
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let presented = request.headers().get(header::AUTHORIZATION);
    if !gate.auth.accepts(presented) {
        if let Verdict::Limited { wait } = gate.rate.check_unauthenticated(ip) {
            gate.refusals
                .note("rate limit (unauthenticated)", ip, method.as_str(), &path);
            return gate.rate.too_many(wait);
        }
        let challenge = if presented.is_some() {
            r#"Bearer realm="nandi-proxmox-mcp", error="invalid_token""#
        } else {
            r#"Bearer realm="nandi-proxmox-mcp""#
        };
        gate.refusals.note(
            "missing or invalid bearer token",
            ip,
            method.as_str(),
            &path,
        );
        let mut response = json_error(StatusCode::UNAUTHORIZED, SERVER_ERROR, "Unauthorized");
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
        return response;
    }
    request.headers_mut().remove(header::AUTHORIZATION);
    let key = if gate.auth.is_enabled() {
        RateKey::Token
    } else {
        RateKey::Peer(ip)
    };
    match gate.rate.check_authenticated(key) {
        Verdict::Allowed { remaining } => {
            let mut response = next.run(request).await;
            gate.rate.allowed_headers(remaining, response.headers_mut());
            response
        }
        Verdict::Limited { wait } => {
            gate.refusals.note("rate limit", ip, method.as_str(), &path);
            gate.rate.too_many(wait)
        }
    }
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
        assert!(!format!("{auth:?}").contains("horse"));
    }
}
