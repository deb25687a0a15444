//! The approval page's own listener under the stdio transport: a headless agent's person still
//! needs somewhere to open the link the webhook sent.
//!
//! Started when `PVE_APPROVAL_NOTIFY` or `PVE_APPROVAL_LISTEN` is set, on `PVE_APPROVAL_LISTEN`
//! (default `127.0.0.1:8788`: a known address the link can name; port 0 picks one, and the links
//! carry it; the default taken by another server falls back to an ephemeral port). It serves only `/approve/{id}` (the same handler as the HTTP transport) behind the
//! same hardening: Host/Origin guard (loopback names, the bind address, and the host of
//! `PVE_APPROVAL_BASE_URL`), small body limit, request and header timeouts, the HTTP
//! transport's accept loop.
//!
//! Invariant: a non-loopback listener is only started with `PVE_APPROVAL_BASE_URL` (the links must
//! name an address the person's browser reaches and the guard must know it); nothing but the
//! page is served.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::map_request_body::MapRequestBodyLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use super::http::approve_page;
use super::http::guard::HostGuard;
use super::http::listener::{self, ConnLimits};
use crate::server::Server;

/// Largest form a person's browser posts (two short fields and a button).
const BODY_LIMIT: usize = 16 * 1024;
/// Time for one request, body included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A running page listener.
pub type PageListener = super::running::Running;

/// Starts the listener when the settings ask for it; `Ok(None)` when they do not.
pub async fn start(server: &Server) -> Result<Option<PageListener>, String> {
    let links = &server.state().settings.links;
    if links.notify.is_none() && links.listen.is_none() {
        return Ok(None);
    }
    let wanted = links.listen_or_default();
    if !wanted.ip().is_loopback() && links.base_url.is_none() {
        return Err(format!(
            "PVE_APPROVAL_LISTEN={wanted} is not a loopback address: set PVE_APPROVAL_BASE_URL to the address a person's browser uses to reach it"
        ));
    }
    let bound = bind(wanted, links.listen.is_none() && links.base_url.is_none()).await?;
    let addr = bound
        .local_addr()
        .map_err(|e| format!("the approval page listener has no address: {e}"))?;
    let pending = server.pending_approvals();
    approve_page::offer_loopback_address(&pending, addr);
    let extra_hosts: Vec<String> = links
        .base_url
        .as_ref()
        .and_then(|url| {
            let host = url.host_str()?;
            Some(match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            })
        })
        .into_iter()
        .collect();
    let guard = HostGuard::new(&addr.ip().to_string(), addr.port(), &extra_hosts, &[])?;
    let bodies = ServiceBuilder::new()
        .layer(RequestBodyTimeoutLayer::new(REQUEST_TIMEOUT))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(MapRequestBodyLayer::new(Body::new));
    let app = Router::new()
        .merge(approve_page::routes(pending.clone()))
        .fallback(|| async { (StatusCode::NOT_FOUND, "Not found").into_response() })
        .layer(bodies)
        .layer(middleware::from_fn_with_state(Arc::new(guard), check_host))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ));
    let limits = ConnLimits {
        headers_timeout: Duration::from_secs(10),
        keepalive_timeout: Duration::from_secs(30),
        max_headers: 64,
    };
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(listener::serve(bound, app, limits, shutdown.clone()));
    match pending.base_url() {
        Some(base) => tracing::info!(%base, "approval page listening"),
        None => tracing::warn!("approval page listening without a known public address"),
    }
    Ok(Some(PageListener::new(addr, shutdown, task)))
}

/// Binds `wanted`. With `fall_back` (the default address, no public address to keep), a taken
/// port gives way to an ephemeral loopback one — a second stdio server (another project's
/// client) still serves its page, and its links name the port it got. An explicit
/// `PVE_APPROVAL_LISTEN`, or links fixed by `PVE_APPROVAL_BASE_URL`, that cannot be bound stays
/// a start-up error.
async fn bind(wanted: std::net::SocketAddr, fall_back: bool) -> Result<TcpListener, String> {
    match TcpListener::bind(wanted).await {
        Ok(bound) => Ok(bound),
        Err(e) if fall_back && e.kind() == std::io::ErrorKind::AddrInUse => {
            let ephemeral = std::net::SocketAddr::new(wanted.ip(), 0);
            let bound = TcpListener::bind(ephemeral).await.map_err(|e| {
                format!("the approval page cannot listen on {ephemeral} ({wanted} is taken): {e}")
            })?;
            if let Ok(got) = bound.local_addr() {
                tracing::info!(
                    %wanted,
                    %got,
                    "approval page: the default address is taken (another server?); listening on an ephemeral port, the links name it"
                );
            }
            Ok(bound)
        }
        Err(e) => Err(format!(
            "the approval page cannot listen on {wanted} (PVE_APPROVAL_LISTEN): {e}"
        )),
    }
}

/// The Host/Origin guard in front of the page (400/403 on a foreign name).
async fn check_host(State(guard): State<Arc<HostGuard>>, request: Request, next: Next) -> Response {
    if let Err(refusal) = guard.check_request(&request) {
        let (status, message) = refusal.status_and_message();
        tracing::debug!(
            message,
            "approval page: request refused by the Host/Origin guard"
        );
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
        return (status, message).into_response();
    }
    next.run(request).await
}
