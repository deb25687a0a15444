//! The last stage before rmcp on `/mcp`: looks at a POST body once, as bytes.
//!
//! * A `tools/call` that repeats a JSON key is answered with JSON-RPC `-32602` naming the key
//!   (rmcp's decoder would silently keep the last value; see [`crate::transport::dupkeys`]).
//! * An `initialize` without a session id is the only request that creates a session: when the
//!   session bound is reached, the least recently used idle session makes room, else 503.
//!   Requests that need no session (stateless `tools/list`, `server/discover`) are never refused
//!   for want of one.
//! * JSON that is no JSON-RPC 2.0 message (no `"jsonrpc":"2.0"`, no method) is answered 400
//!   `-32600` Invalid Request, `id: null` (rmcp would say 415, rewritten as a parse error).
//! * OAuth: a `tools/call` above the token's scopes is answered 403 `insufficient_scope` naming
//!   the scope it needs (see [`super::step_up`]).
//! * A successful `DELETE` is answered 200 (rmcp says 202, which official SDKs report as a
//!   failed session termination).
//! * A session belongs to the caller whose `initialize` opened it: its id sent by anyone else
//!   (another OAuth subject or client) is answered exactly as an unknown session is, on every
//!   method — 404 with rmcp's own body, and an empty 200 for `DELETE` (nothing is closed).
//!
//! Invariants: the body handed on to rmcp is byte for byte the body received; it is read at
//! most once and never beyond the configured body limit; no request reaches a session its
//! caller did not open.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::auth::peer_ip;
use super::errors::{SERVER_ERROR, invalid_request, json_error};
use super::refusals::RefusalLog;
use super::sessions::BoundedSessions;
use super::step_up::StepUp;
use crate::identity::{Caller, Owner, Via};
use crate::transport::dupkeys;

/// What the inspection stage needs.
#[derive(Clone, Debug)]
pub struct Inspect {
    /// The session manager rmcp also uses.
    pub sessions: Arc<BoundedSessions>,
    /// `MCP_STATELESS`: no request opens a session, so none is ever refused for want of room.
    pub stateless: bool,
    /// Bounded log of refusals.
    pub refusals: Arc<RefusalLog>,
    /// OAuth: the step-up check of `tools/call` (403 `insufficient_scope`).
    pub step_up: Option<Arc<StepUp>>,
}

/// Middleware: duplicate keys, session room, `DELETE` status (see the module docs).
pub async fn inspect(State(stage): State<Inspect>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    // The authentication stage records a caller on every request it lets through; none
    // recorded is the unauthenticated caller (as `Caller::of` reads it).
    let owner = request
        .extensions()
        .get::<Caller>()
        .map_or(Owner::Shared(Via::Unauthenticated), |caller| caller.owner);
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok());
    if let Some(id) = session
        && !stage.sessions.usable_by(id, &owner)
    {
        stage.refusals.note(
            "session id sent by a caller who did not open it",
            peer_ip(&request),
            method.as_str(),
            "/mcp",
        );
        return unknown_session(&method);
    }
    if method == Method::DELETE {
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    if method != Method::POST {
        return next.run(request).await;
    }
    let ip = peer_ip(&request);
    let (parts, body) = request.into_parts();
    // The body-limit layer outside bounds this read; its error is the 413 answer.
    let bytes = match to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return json_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                SERVER_ERROR,
                "Request entity too large",
            );
        }
    };
    if let Some(duplicate) = dupkeys::duplicate_in_tool_call(&bytes) {
        stage
            .refusals
            .note("duplicate JSON key in tools/call", ip, "POST", "/mcp");
        return (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            duplicate.response().to_string(),
        )
            .into_response();
    }
    if let Some(invalid) = invalid_request(&bytes) {
        return invalid;
    }
    if let Some(refused) = stage
        .step_up
        .as_ref()
        .and_then(|step| step.check(parts.extensions.get::<Caller>(), &bytes))
    {
        stage
            .refusals
            .note("tools/call needs a higher OAuth scope", ip, "POST", "/mcp");
        return refused;
    }
    let opens_session =
        !stage.stateless && !parts.headers.contains_key("mcp-session-id") && is_initialize(&bytes);
    if opens_session && !stage.sessions.make_room().await {
        return sessions_full(&stage, ip);
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if opens_session
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
    {
        stage.sessions.record_owner(id, owner);
    }
    response
}

/// The answer to a session id this caller may not use: the answer an unknown session gets,
/// status and body, so the two cannot be told apart — rmcp's 404 (made JSON by the error
/// layer), and for `DELETE` the empty 200 closing a session that does not exist gets (nothing
/// is closed).
fn unknown_session(method: &Method) -> Response {
    if method == Method::DELETE {
        return StatusCode::OK.into_response();
    }
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// Whether the body is an `initialize` request (the only one that opens a session).
fn is_initialize(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Envelope {
        method: Option<String>,
    }
    serde_json::from_slice::<Envelope>(bytes)
        .ok()
        .and_then(|e| e.method)
        .is_some_and(|m| m == "initialize")
}

fn sessions_full(stage: &Inspect, ip: IpAddr) -> Response {
    stage.refusals.note(
        "every session is busy (MCP_MAX_SESSIONS)",
        ip,
        "POST",
        "/mcp",
    );
    let mut response = json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        SERVER_ERROR,
        "Too many sessions: close one (DELETE) or retry later",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("30"));
    response
}
