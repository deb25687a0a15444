//! `/health` (the process answers) and `/ready` (it can do useful work).
//!
//! Invariant: `/ready` is true only when a Proxmox is configured and its API answered
//! `GET /version` in the most recent check (a server with no Proxmox can list tools but do no
//! useful work, so it is not ready). Checks are cached for a short time and run one at a time, so probes cannot flood
//! Proxmox; the answer never includes Proxmox's error text.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::pve::{self, ApiRequest, RetryPolicy};

/// Time allowed for one readiness check against Proxmox.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// The readiness probe, shared by all requests.
#[derive(Clone, Debug)]
pub struct Readiness {
    pve: Option<pve::Client>,
    ttl: Duration,
    last: Arc<tokio::sync::Mutex<Option<(Instant, bool)>>>,
}

impl Readiness {
    /// Probes `pve` (if any), reusing an answer for `ttl`.
    pub fn new(pve: Option<pve::Client>, ttl: Duration) -> Readiness {
        Readiness {
            pve,
            ttl,
            last: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// Whether Proxmox answered (`None` when none is configured).
    pub async fn proxmox_reachable(&self) -> Option<bool> {
        let client = self.pve.as_ref()?;
        // Held across the check: concurrent probes wait for one answer instead of each asking.
        let mut last = self.last.lock().await;
        if let Some((at, ok)) = *last
            && at.elapsed() < self.ttl
        {
            return Some(ok);
        }
        let request = ApiRequest::get("/version")
            .timeout(CHECK_TIMEOUT)
            .retry(RetryPolicy::Never);
        let outcome = client.call(request, &CancellationToken::new()).await;
        let ok = match &outcome.result {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(
                    code = e.code(),
                    "readiness check: Proxmox did not answer GET /version"
                );
                false
            }
        };
        *last = Some((Instant::now(), ok));
        Some(ok)
    }
}

/// `GET /health`.
pub async fn health() -> Response {
    Json(json!({"ok": true, "service": crate::server::SERVER_NAME, "mode": "http"})).into_response()
}

/// `GET /ready`: 200 when ready, 503 otherwise.
pub async fn ready(State(readiness): State<Readiness>) -> Response {
    let (ready, proxmox) = match readiness.proxmox_reachable().await {
        // Every call would answer PROXMOX_NOT_CONFIGURED: not ready for useful work.
        None => (false, "not configured"),
        Some(true) => (true, "reachable"),
        Some(false) => (false, "unreachable"),
    };
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({"ok": ready, "ready": ready, "proxmox": proxmox})),
    )
        .into_response()
}
