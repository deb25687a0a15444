//! Per-client rate limit on `/mcp` (the `governor` crate's GCRA, keyed by socket IP).
//!
//! Invariant: at most `MCP_RATE_LIMIT_MAX` requests per window pass for one client address
//! (a burst of that size, refilled evenly over the window); a refusal is 429 with
//! `Retry-After` and draft-6 `RateLimit-Limit/-Remaining/-Reset` headers, like the reference.
//! The socket address is used, never a forwarded header, so a client cannot pick its own key.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use super::errors::{SERVER_ERROR, json_error};

type Limiter =
    RateLimiter<IpAddr, DefaultKeyedStateStore<IpAddr>, DefaultClock, StateInformationMiddleware>;

/// The shared limiter.
#[derive(Clone)]
pub struct RateLimit {
    limiter: Arc<Limiter>,
    max: u32,
    window: Duration,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RateLimit({} per {:?})", self.max, self.window)
    }
}

impl RateLimit {
    /// `max` requests per `window` per client address (both already validated as > 0).
    pub fn new(max: u32, window: Duration) -> RateLimit {
        let burst = NonZeroU32::new(max).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(window / burst.get())
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(burst);
        RateLimit {
            limiter: Arc::new(
                RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            ),
            max,
            window,
        }
    }

    /// Drops state of clients that are back to a full allowance, so memory stays bounded.
    pub fn forget_idle_clients(&self) {
        self.limiter.retain_recent();
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

/// Middleware: 429 once a client address has used up its allowance.
pub async fn limit(State(rate): State<RateLimit>, request: Request, next: Next) -> Response {
    let ip = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
    match rate.limiter.check_key(&ip) {
        Ok(snapshot) => {
            let remaining = snapshot.remaining_burst_capacity();
            // Time until the allowance is full again.
            let used = rate.max.saturating_sub(remaining);
            let reset = rate.window / rate.max.max(1) * used;
            let mut response = next.run(request).await;
            rate.headers(remaining, reset, response.headers_mut());
            response
        }
        Err(not_until) => {
            let wait = not_until.wait_time_from(rate.limiter.clock().now());
            tracing::warn!(method = %request.method(), path = %request.uri().path(), remote = %ip,
                "HTTP request refused: rate limit exceeded");
            let mut response = json_error(
                StatusCode::TOO_MANY_REQUESTS,
                SERVER_ERROR,
                "Too Many Requests",
            );
            rate.headers(0, wait, response.headers_mut());
            let retry = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert("retry-after", HeaderValue::from(retry.max(1)));
            response
        }
    }
}
