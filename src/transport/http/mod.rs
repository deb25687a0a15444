//! Streamable HTTP transport (`MCP_TRANSPORT=http`): rmcp's service at `/mcp` behind tower layers.
//!
//! Request path, outermost first: security headers (`nosniff`, `no-store`) → JSON-RPC-shaped
//! error bodies → request/body timeouts → Host/Origin guard → 413 on an oversized body (before
//! it is read) → routes. `/mcp` adds: authentication — a static bearer token, an OAuth access
//! token (401, or 403 `insufficient_scope`; see `oauth`), or none on loopback — with failures
//! rate-limited per address (429) → rate limit of authenticated traffic (429, per token or
//! OAuth subject) → inspection (duplicate JSON keys in
//! `tools/call`: -32602; OAuth step-up: 403 `insufficient_scope` for a call above the token's
//! scopes; room for a new session: 503; `DELETE` answered 200) → rmcp
//! `StreamableHttpService` (sessions, SSE, DELETE, 404 for unknown sessions). Refusals are
//! logged at a bounded rate. `/health`, `/ready`, in OAuth mode the Protected Resource Metadata
//! (`/.well-known/oauth-protected-resource[/mcp]`), and a JSON 404 fallback complete the surface.
//!
//! With `MCP_STATELESS=true` no request of any protocol version opens a session (rmcp's
//! legacy session mode is off; `GET`/`DELETE` on `/mcp` answer 405), so replicas behind a load
//! balancer need no affinity: approval states travel sealed in the request (replicas share
//! `PVE_APPROVAL_KEY_FILE`) and task ids name their Proxmox task. The server's approver is told
//! ([`Server::without_sessions`]): older clients that could ask a person are refused rather than
//! run on the model's `confirm`.
//!
//! Invariant: every session is served by a clone of the one [`Server`] given to [`start`] (one
//! registry, one pooled Proxmox client); nothing is rebuilt per request.

pub mod approve_login;
pub mod approve_page;
pub mod auth;
pub mod errors;
pub mod guard;
pub mod inspect;
pub mod listener;
pub mod oauth;
pub mod oauth_jwks;
pub mod oauth_token;
pub mod ratelimit;
pub mod ready;
pub mod refusals;
pub mod sessions;
pub mod settings;
pub mod step_up;
pub mod token_strength;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use thiserror::Error;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::map_request_body::MapRequestBodyLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use crate::server::Server;
use auth::{Authenticator, BearerAuth, Gate};
use errors::{SERVER_ERROR, json_error};
use guard::HostGuard;
use inspect::Inspect;
use ratelimit::RateLimit;
use ready::Readiness;
use refusals::RefusalLog;
use sessions::BoundedSessions;
pub use settings::{Auth, HttpSettings, SettingsError, VARS};
use step_up::StepUp;

/// Path of the MCP endpoint.
pub const MCP_PATH: &str = "/mcp";
/// Interval of SSE keep-alive comments on open streams.
const SSE_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Why the HTTP transport could not start.
#[derive(Debug, Error)]
pub enum HttpError {
    /// Settings that cannot be honoured.
    #[error("{0}")]
    Config(String),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// `host:port` as configured.
        addr: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

/// A running HTTP transport ([`HttpServer::local_addr`] gives the bound address, useful with
/// `MCP_PORT=0`).
pub type HttpServer = super::running::Running;

/// Binds `settings.host:settings.port` and serves `server` until [`HttpServer::shutdown`].
pub async fn start(server: Server, settings: HttpSettings) -> Result<HttpServer, HttpError> {
    // Without sessions no client older than 2026-07-28 can be sent an approval question.
    let server = if settings.stateless {
        server.without_sessions()
    } else {
        server
    };
    let bind_host = settings
        .host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let listener = TcpListener::bind((bind_host.as_str(), settings.port))
        .await
        .map_err(|source| HttpError::Bind {
            addr: format!("{}:{}", settings.host, settings.port),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| HttpError::Bind {
        addr: format!("{}:{}", settings.host, settings.port),
        source,
    })?;
    // A person's browser must reach the approval page a webhook links: off loopback the
    // bound address is no such place, so the public address must be named.
    let links = &server.state().settings.links;
    if links.notify.is_some() && links.base_url.is_none() && !addr.ip().is_loopback() {
        return Err(HttpError::Config(format!(
            "PVE_APPROVAL_NOTIFY is set and the server listens on {addr}, which a person's browser may not reach: set PVE_APPROVAL_BASE_URL to the public address of this server (the approval page is served at <base>/approve/…)"
        )));
    }
    approve_page::offer_loopback_address(&server.pending_approvals(), addr);
    let guard = HostGuard::new(
        &settings.host,
        addr.port(),
        &settings.allowed_hosts,
        &settings.allowed_origins,
    )
    .map_err(HttpError::Config)?;
    let authenticator = authenticator(&settings.auth, server.clusters().max_tier())?;
    let shutdown = CancellationToken::new();
    let rate = RateLimit::new(settings.rate_limit_max, settings.rate_limit_window);
    let refusals = Arc::new(RefusalLog::default());
    let app = router(
        server,
        &settings,
        authenticator,
        guard,
        rate.clone(),
        refusals.clone(),
        shutdown.clone(),
    );
    spawn_sweeper(rate, refusals, settings.rate_limit_window, shutdown.clone());

    if settings.auth == Auth::Disabled {
        tracing::warn!(
            "HTTP transport running WITHOUT authentication (MCP_ALLOW_NO_AUTH=true, loopback only)"
        );
    }
    tracing::info!(
        url = %format!("http://{addr}{MCP_PATH}"),
        body_limit = settings.max_body_bytes,
        rate_limit_max = settings.rate_limit_max,
        rate_limit_window_ms = settings.rate_limit_window.as_millis() as u64,
        max_sessions = settings.max_sessions,
        stateless = settings.stateless,
        auth = match &settings.auth {
            Auth::Disabled => "none",
            Auth::Bearer(_) => "bearer",
            Auth::OAuth(_) => "oauth",
        },
        "HTTP MCP transport listening on http://{addr}{MCP_PATH}"
    );
    let limits = listener::ConnLimits {
        headers_timeout: settings.headers_timeout,
        keepalive_timeout: settings.keepalive_timeout,
        max_headers: settings.max_headers,
    };
    let task = tokio::spawn(listener::serve(listener, app, limits, shutdown.clone()));
    Ok(HttpServer::new(addr, shutdown, task))
}

/// The authenticator of the configured mode (OAuth: scopes capped by the server's `tier`).
fn authenticator(auth: &Auth, tier: crate::catalog::Tier) -> Result<Authenticator, HttpError> {
    Ok(match auth {
        Auth::Disabled => Authenticator::Off,
        Auth::Bearer(secret) => Authenticator::Static(BearerAuth::new(Some(secret.expose()))),
        Auth::OAuth(oauth) => {
            tracing::info!(
                issuer = %oauth.issuer,
                resource = %oauth.resource,
                metadata = %oauth.metadata_url(),
                "OAuth resource server: access tokens from the issuer, for this resource only"
            );
            Authenticator::OAuth(
                oauth_token::TokenValidator::new(oauth, tier).map_err(HttpError::Config)?,
            )
        }
    })
}

/// Under OAuth, the approval page's sign-in (`MCP_OAUTH_APPROVAL_CLIENT_ID`); without it, links
/// of OAuth callers cannot be decided, which is said once at start-up.
fn approval_login(
    server: &Server,
    settings: &HttpSettings,
    authenticator: &Authenticator,
) -> Option<Arc<approve_login::ApprovalLogin>> {
    let (Auth::OAuth(oauth), Authenticator::OAuth(validator)) = (&settings.auth, authenticator)
    else {
        return None;
    };
    let rule = &server.state().settings.links.approvers;
    match &oauth.approval_client {
        Some(client) => {
            tracing::info!(
                client_id = %client.id,
                approvers = %rule.as_setting(),
                "approval page: people sign in at the issuer before they decide"
            );
            Some(Arc::new(approve_login::ApprovalLogin::new(
                client.clone(),
                validator.clone(),
                rule,
            )))
        }
        None => {
            tracing::warn!(
                "approval page: MCP_OAUTH_APPROVAL_CLIENT_ID is not set, so approval links of OAuth callers cannot be decided (nobody can sign in)"
            );
            None
        }
    }
}

/// Builds the whole router: layers, routes and the rmcp service.
fn router(
    server: Server,
    settings: &HttpSettings,
    authenticator: Authenticator,
    guard: HostGuard,
    rate: RateLimit,
    refusals: Arc<RefusalLog>,
    shutdown: CancellationToken,
) -> Router {
    let sessions = Arc::new(BoundedSessions::new(
        settings.max_sessions,
        settings.session_idle_timeout,
    ));
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(guard.hosts().map(|h| {
            if h.contains(':') {
                format!("[{h}]")
            } else {
                h.to_owned()
            }
        }))
        .with_allowed_origins(guard.origins())
        .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
        .with_cancellation_token(shutdown.child_token())
        .with_max_request_body_bytes(settings.max_body_bytes)
        .with_legacy_session_mode(!settings.stateless)
        // Where no session exists (2026-07-28 requests, `MCP_STATELESS`), a plain call is
        // answered as one `application/json` body; rmcp falls back to SSE as soon as the
        // call sends anything before its answer (progress, a person's question).
        .with_json_response(true);
    let readiness = Readiness::new(server.state().pve.clone(), settings.ready_cache);
    let page = approve_page::routes_with(
        server.pending_approvals(),
        approval_login(&server, settings, &authenticator),
    );
    let (metadata, step_up) = match &settings.auth {
        Auth::OAuth(oauth) => {
            let tier = server.clusters().max_tier();
            let step_up = StepUp::new(oauth, server.clusters().listing(), tier);
            (oauth::metadata_routes(oauth, tier), Some(Arc::new(step_up)))
        }
        _ => (Router::new(), None),
    };
    let mcp_service =
        StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let inspect = Inspect {
        sessions,
        stateless: settings.stateless,
        refusals: refusals.clone(),
        step_up,
    };
    let gate = Gate {
        auth: authenticator,
        rate,
        refusals: refusals.clone(),
    };
    let mcp = Router::new()
        .route_service(MCP_PATH, mcp_service)
        .layer(middleware::from_fn_with_state(inspect, inspect::inspect))
        .layer(middleware::from_fn_with_state(gate, auth::gate));
    let bodies = ServiceBuilder::new()
        .layer(RequestBodyTimeoutLayer::new(settings.request_timeout))
        .layer(RequestBodyLimitLayer::new(settings.max_body_bytes))
        .layer(MapRequestBodyLayer::new(Body::new));
    Router::new()
        .route("/health", get(ready::health))
        .route("/ready", get(ready::ready).with_state(readiness))
        .merge(mcp)
        .merge(page)
        .merge(metadata)
        .fallback(errors::not_found)
        .layer(bodies)
        .layer(middleware::from_fn_with_state(
            (Arc::new(guard), refusals),
            check_host,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            settings.request_timeout,
        ))
        .layer(middleware::from_fn(errors::normalize_errors))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
}

/// Middleware: the Host/Origin guard (400/403).
async fn check_host(
    State((guard, refusals)): State<(Arc<HostGuard>, Arc<RefusalLog>)>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(refusal) = guard.check_request(&request) {
        let (status, message) = refusal.status_and_message();
        let peer = auth::peer_ip(&request);
        refusals.note(
            message,
            peer,
            request.method().as_str(),
            request.uri().path(),
        );
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
        return json_error(status, SERVER_ERROR, message);
    }
    next.run(request).await
}

/// Periodic upkeep: forget rate-limit state of idle clients, write pending refusal summaries.
fn spawn_sweeper(
    rate: RateLimit,
    refusals: Arc<RefusalLog>,
    window: Duration,
    shutdown: CancellationToken,
) {
    tokio::spawn(async move {
        let mut forget = tokio::time::interval(window.max(Duration::from_secs(1)));
        let mut summary = tokio::time::interval(refusals::SUMMARY_INTERVAL);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => {
                    refusals.flush(true);
                    return;
                }
                _ = forget.tick() => rate.forget_idle_clients(),
                _ = summary.tick() => refusals.flush(false),
            }
        }
    });
}
