//! Bearer-token authentication of `/mcp`.
//!
//! Invariants: the presented token is compared in constant time (both sides are hashed first,
//! so neither content nor length leaks through timing); a refusal is 401 with
//! `WWW-Authenticate: Bearer`; the token is never logged, and the `Authorization` header is
//! removed before the request reaches the MCP service, so no handler can see or echo it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::errors::{SERVER_ERROR, json_error};

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

/// Middleware: 401 unless the request carries the token.
pub async fn require_bearer(
    State(auth): State<BearerAuth>,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = request.headers().get(header::AUTHORIZATION);
    if !auth.accepts(presented) {
        let challenge = if presented.is_some() {
            r#"Bearer realm="nandi-proxmox-mcp", error="invalid_token""#
        } else {
            r#"Bearer realm="nandi-proxmox-mcp""#
        };
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0.ip().to_string())
            .unwrap_or_default();
        tracing::warn!(method = %request.method(), path = %request.uri().path(), remote = %peer,
            token_present = presented.is_some(), "HTTP request refused: missing or invalid bearer token");
        let mut response = json_error(StatusCode::UNAUTHORIZED, SERVER_ERROR, "Unauthorized");
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
        return response;
    }
    request.headers_mut().remove(header::AUTHORIZATION);
    next.run(request).await
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
