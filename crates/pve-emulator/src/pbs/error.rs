//! The PBS emulator's error answer: an HTTP status with PBS's plain-text message as the
//! body (under PBS's JSON content type), below every file that fails a request.
//!
//! Invariant: this file imports nothing of the emulator, so the state, the parameter checks
//! and the routes all use it without a circle.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// The content type proxmox-rest-server sends with every API answer, errors included.
pub(super) const JSON_CONTENT_TYPE: &str = "application/json;charset=UTF-8";

/// An API failure: status and the plain-text message PBS puts in the body.
#[derive(Debug, Clone, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub(super) struct PbsError {
    /// HTTP status.
    pub status: u16,
    /// The body text.
    pub message: String,
}

impl PbsError {
    /// An error with a status and message.
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// What a handler's `bail!` becomes: proxmox-rest-server answers 400.
    pub fn bad(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }

    /// A parameter failure naming one parameter.
    pub fn param(name: &str, reason: &str) -> Self {
        Self::params(&[(name.to_owned(), reason.to_owned())])
    }

    /// `ParameterError`'s rendering: one error inline, several listed.
    pub fn params(errors: &[(String, String)]) -> Self {
        let list: Vec<String> = errors.iter().map(|(n, r)| format!("'{n}': {r}")).collect();
        let message = if list.len() == 1 {
            format!("parameter verification failed - {}", list.join(""))
        } else {
            format!("parameter verification errors\n\n{}", list.join("\n"))
        };
        Self::new(400, message)
    }

    /// The refusal of the permission checks.
    pub fn forbidden() -> Self {
        Self::new(403, "permission check failed")
    }

    /// The answer for a path (or method) no route serves.
    pub fn not_found(full_path: &str) -> Self {
        Self::new(404, format!("Path '{full_path}' not found."))
    }

    /// Renders the error: the message is the body.
    pub fn into_response(self) -> Response {
        text_response(self.status, self.message)
    }
}

/// A response with PBS's JSON content type around `body`.
pub(super) fn text_response(status: u16, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_CONTENT_TYPE),
    );
    response
}
