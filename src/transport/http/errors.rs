//! JSON-RPC-shaped error responses, and the layer that gives every error response that shape.
//!
//! Invariant: an error body is `{"jsonrpc":"2.0","error":{"code":C,"message":M},"id":…}` and
//! never carries internals. The `id` is the request's when it was read (a refusal of a request
//! whose body was read, e.g. an authenticated 429), `null` for a parse error or Invalid Request
//! (JSON-RPC 2.0 §5) and other transport refusals, and absent only where the body was never read
//! (the unauthenticated 429: no request was seen, MCP 2026-07-28 §Error Responses). Plain-text errors from rmcp, tower-http or axum are rewritten here:
//! client-side (4xx) texts are kept (short, about the request), server-side (5xx) texts are logged
//! and replaced by "Internal server error".

use axum::body::to_bytes;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// JSON-RPC server-error code used for transport-level refusals (as the reference).
pub const SERVER_ERROR: i64 = -32000;
/// JSON-RPC code for a missing or unknown session.
pub const SESSION_ERROR: i64 = -32001;
/// Longest client-side message kept from an inner plain-text error.
const MAX_MESSAGE: usize = 200;

/// A JSON-RPC-shaped error response.
pub fn json_error(status: StatusCode, code: i64, message: &str) -> Response {
    json_error_with_id(status, code, message, Some(&Value::Null))
}

/// A JSON-RPC-shaped error response answering the request whose `id` was read (echoed as it
/// came); `None`: the message was no request (a notification, or the body was not read), so
/// the reply has no `id` member.
pub fn json_error_with_id(
    status: StatusCode,
    code: i64,
    message: &str,
    id: Option<&Value>,
) -> Response {
    let mut body = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    if let (Some(id), Some(object)) = (id, body.as_object_mut()) {
        object.insert("id".to_owned(), id.clone());
    }
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// The `id` of the JSON-RPC request in `body` (a string or a number), if one can be read; a
/// notification, a batch or a body that is not JSON has none.
pub fn request_id(body: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        id: Option<Value>,
    }
    serde_json::from_slice::<Envelope>(body)
        .ok()?
        .id
        .filter(|id| id.is_string() || id.is_number())
}

/// The `-32600` answer to a body that is JSON but no JSON-RPC 2.0 message (no
/// `"jsonrpc":"2.0"`, or neither a `method` nor a `result`/`error` with an `id`) or a batch
/// (MCP has no batches since 2025-06-18, and rmcp takes none); `None` for a JSON-RPC message or
/// a body that is not JSON (rmcp's 415 becomes `-32700` below). Its `id` is `null`: JSON-RPC
/// 2.0 §5 for an Invalid Request.
pub fn invalid_request(body: &[u8]) -> Option<Response> {
    let value: Value = serde_json::from_slice(body).ok()?;
    if value.is_array() {
        return Some(json_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: JSON-RPC batches are not supported; send one message per request",
        ));
    }
    let valid = value.as_object().is_some_and(|object| {
        object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
            && (object.get("method").is_some_and(Value::is_string)
                || (object.contains_key("id")
                    && (object.contains_key("result") || object.contains_key("error"))))
    });
    (!valid).then(|| {
        json_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: not a JSON-RPC 2.0 message (it needs \"jsonrpc\": \"2.0\" and a method)",
        )
    })
}

/// Middleware: rewrites non-JSON error responses into JSON-RPC-shaped ones.
pub async fn normalize_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    // The approval page's own error pages are HTML meant for a person: kept as they are.
    if !(status.is_client_error() || status.is_server_error())
        || is_json(&response)
        || is_html(&response)
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = to_bytes(body, 4096).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let first_line = text.lines().next().unwrap_or("").trim();
    let (status, code, message) = classify(status, first_line);
    let mut rewritten = json_error(status, code, &message);
    // Keep headers such as `Allow` (405) and `Retry-After`; the body's own headers are replaced.
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_TYPE);
    for (name, value) in parts.headers.iter() {
        rewritten.headers_mut().insert(name.clone(), value.clone());
    }
    rewritten
}

fn is_html(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"))
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

fn classify(status: StatusCode, text: &str) -> (StatusCode, i64, String) {
    let fixed = |code: i64, message: &str| (status, code, message.to_owned());
    match status {
        StatusCode::NOT_FOUND if text.contains("Session") => {
            fixed(SESSION_ERROR, "Session not found")
        }
        StatusCode::NOT_FOUND => fixed(SERVER_ERROR, "Not found"),
        StatusCode::METHOD_NOT_ALLOWED => fixed(SERVER_ERROR, "Method not allowed"),
        StatusCode::PAYLOAD_TOO_LARGE => fixed(SERVER_ERROR, "Request entity too large"),
        // A chunked body cut off by the body-limit layer surfaces from rmcp as a read failure.
        StatusCode::INTERNAL_SERVER_ERROR if text.contains("length limit exceeded") => (
            StatusCode::PAYLOAD_TOO_LARGE,
            SERVER_ERROR,
            "Request entity too large".to_owned(),
        ),
        StatusCode::REQUEST_TIMEOUT => fixed(SERVER_ERROR, "Request timeout"),
        // rmcp answers 415 both for a wrong content type and for a body that is not JSON.
        StatusCode::UNSUPPORTED_MEDIA_TYPE if text.starts_with("fail to deserialize") => (
            StatusCode::BAD_REQUEST,
            -32700,
            "Parse error: Invalid JSON".to_owned(),
        ),
        s if s.is_server_error() => {
            tracing::warn!(status = s.as_u16(), detail = %truncate(text), "internal error answered as a generic 500");
            (s, -32603, "Internal server error".to_owned())
        }
        _ => {
            let message = if text.is_empty() {
                status
                    .canonical_reason()
                    .unwrap_or("Bad request")
                    .to_owned()
            } else {
                truncate(text)
            };
            (status, SERVER_ERROR, message)
        }
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(MAX_MESSAGE).collect()
}

/// Fallback for unknown paths: JSON 404 instead of an HTML or empty page.
pub async fn not_found() -> Response {
    json_error(StatusCode::NOT_FOUND, SERVER_ERROR, "Not found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_lose_their_detail() {
        let (status, code, message) = classify(
            StatusCode::INTERNAL_SERVER_ERROR,
            "fail to create session: /secret/path",
        );
        assert_eq!((status, code), (StatusCode::INTERNAL_SERVER_ERROR, -32603));
        assert_eq!(message, "Internal server error");
    }

    #[test]
    fn a_body_cut_off_by_the_limit_is_413() {
        let (status, _, message) = classify(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Failed to read request body: length limit exceeded",
        );
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(message, "Request entity too large");
    }

    #[test]
    fn invalid_json_becomes_a_parse_error() {
        let (status, code, _) = classify(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "fail to deserialize request body expected value",
        );
        assert_eq!((status, code), (StatusCode::BAD_REQUEST, -32700));
        let (status, _, message) = classify(StatusCode::NOT_ACCEPTABLE, "Not Acceptable: x");
        assert_eq!(
            (status, message.as_str()),
            (StatusCode::NOT_ACCEPTABLE, "Not Acceptable: x")
        );
    }

    #[test]
    fn unknown_sessions_get_the_session_code() {
        let (_, code, message) = classify(StatusCode::NOT_FOUND, "Not Found: Session not found");
        assert_eq!(
            (code, message.as_str()),
            (SESSION_ERROR, "Session not found")
        );
    }
}
