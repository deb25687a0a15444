//! Rate limits on `/mcp` (the `governor` crate's GCRA), one for authenticated traffic and one for
//! traffic that failed authentication.
//!
//! Invariants: at most `MCP_RATE_LIMIT_MAX` requests per window pass for one key (a burst of that
//! size, refilled evenly over the window). Authenticated requests are keyed by the static token,
//! by the OAuth subject (each person or client its own allowance), or by the client address
//! when authentication is off; refused ones by the client address, in a separate
//! limiter — so a flood of wrong tokens can never use up the allowance of the legitimate client.
//! A refusal is 429 with `Retry-After` and draft-6 `RateLimit-Limit/-Remaining/-Reset` headers,
//! like the reference. The socket address is used, never a forwarded header.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use sha2::{Digest, Sha256};

use super::errors::{SERVER_ERROR, json_error_with_id};
use crate::identity::Caller;

/// What an allowance belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RateKey {
    /// Every request that presented the configured bearer token.
    Token,
    /// A client address (authentication off, or a request that failed it).
    Peer(IpAddr),
    /// One OAuth subject (`sub`, else the client), as a digest of its name.
    Subject([u8; 16]),
}

impl RateKey {
    /// The allowance of an OAuth caller: its subject, else its client.
    pub fn subject(caller: &Caller) -> RateKey {
        let name = caller
            .subject
            .as_deref()
            .or(caller.client_id.as_deref())
            .unwrap_or_default();
        let digest = Sha256::digest(name.as_bytes());
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        RateKey::Subject(key)
    }
}

type Limiter =
    RateLimiter<RateKey, DefaultKeyedStateStore<RateKey>, DefaultClock, StateInformationMiddleware>;

/// The shared limiters.
#[derive(Clone)]
pub struct RateLimit {
    authenticated: Arc<Limiter>,
    unauthenticated: Arc<Limiter>,
    max: u32,
    window: Duration,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RateLimit({} per {:?})", self.max, self.window)
    }
}

/// The outcome of one check: remaining allowance, or how long to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed; this many requests remain in the burst.
    Allowed {
        /// Requests left before the limit.
        remaining: u32,
    },
    /// Refused; retry after this long.
    Limited {
        /// Time until one request is allowed again.
        wait: Duration,
    },
}

impl RateLimit {
    /// `max` requests per `window` per key (both already validated as > 0).
    pub fn new(max: u32, window: Duration) -> RateLimit {
        let burst = NonZeroU32::new(max).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(window / burst.get())
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(burst);
        let limiter =
            || Arc::new(RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>());
        RateLimit {
            authenticated: limiter(),
            unauthenticated: limiter(),
            max,
            window,
        }
    }

    /// Drops state of keys that are back to a full allowance, so memory stays bounded.
    pub fn forget_idle_clients(&self) {
        self.authenticated.retain_recent();
        self.unauthenticated.retain_recent();
    }

    /// Counts one authenticated request against `key`.
    pub fn check_authenticated(&self, key: RateKey) -> Verdict {
        Self::check(&self.authenticated, key)
    }

    /// Counts one request that failed authentication against its client address.
    pub fn check_unauthenticated(&self, peer: IpAddr) -> Verdict {
        Self::check(&self.unauthenticated, RateKey::Peer(peer))
    }

    fn check(limiter: &Limiter, key: RateKey) -> Verdict {
        match limiter.check_key(&key) {
            Ok(snapshot) => Verdict::Allowed {
                remaining: snapshot.remaining_burst_capacity(),
            },
            Err(not_until) => Verdict::Limited {
                wait: not_until.wait_time_from(limiter.clock().now()),
            },
        }
    }

    /// Adds the `RateLimit-*` headers of an allowed request.
    pub fn allowed_headers(&self, remaining: u32, headers: &mut HeaderMap) {
        // Time until the allowance is full again.
        let used = self.max.saturating_sub(remaining);
        let reset = self.window / self.max.max(1) * used;
        self.headers(remaining, reset, headers);
    }

    /// The 429 answer for a refused request: `id` is the request's when its body was read, else
    /// the reply has no `id` member (no request was seen).
    pub fn too_many(&self, wait: Duration, id: Option<&serde_json::Value>) -> Response {
        let mut response = json_error_with_id(
            StatusCode::TOO_MANY_REQUESTS,
            SERVER_ERROR,
            "Too Many Requests",
            id,
        );
        self.headers(0, wait, response.headers_mut());
        let retry = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(retry.max(1)));
        response
    }

    fn headers(&self, remaining: u32, reset: Duration, headers: &mut HeaderMap) {
        let secs = |d: Duration| d.as_secs() + u64::from(d.subsec_nanos() > 0);
        let mut put = |name: &'static str, value: u64| {
            headers.insert(name, HeaderValue::from(value));
        };
        put("ratelimit-limit", u64::from(self.max));
        put("ratelimit-remaining", u64::from(remaining));
        put("ratelimit-reset", secs(reset));
        headers.insert(
            "ratelimit-policy",
            HeaderValue::from_str(&format!("{};w={}", self.max, secs(self.window)))
                .unwrap_or(HeaderValue::from_static("")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_authentication_does_not_spend_the_token_allowance() {
        let rate = RateLimit::new(2, Duration::from_secs(60));
        let peer = IpAddr::from([127, 0, 0, 1]);
        for _ in 0..2 {
            assert!(matches!(
                rate.check_unauthenticated(peer),
                Verdict::Allowed { .. }
            ));
        }
        assert!(matches!(
            rate.check_unauthenticated(peer),
            Verdict::Limited { .. }
        ));
        assert_eq!(
            rate.check_authenticated(RateKey::Token),
            Verdict::Allowed { remaining: 1 }
        );
    }

    #[test]
    fn each_oauth_subject_has_its_own_allowance() {
        let rate = RateLimit::new(1, Duration::from_secs(60));
        let who = |sub: &str| Caller {
            subject: Some(sub.to_owned()),
            ..Caller::anonymous(crate::identity::Via::OAuth)
        };
        let alice = RateKey::subject(&who("alice"));
        assert_eq!(alice, RateKey::subject(&who("alice")));
        assert!(matches!(
            rate.check_authenticated(alice),
            Verdict::Allowed { .. }
        ));
        assert!(matches!(
            rate.check_authenticated(alice),
            Verdict::Limited { .. }
        ));
        assert!(matches!(
            rate.check_authenticated(RateKey::subject(&who("bob"))),
            Verdict::Allowed { .. }
        ));
    }
}
