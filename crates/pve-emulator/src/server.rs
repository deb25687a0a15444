//! The request pipeline: decode, record, apply faults, authenticate, apply the token's
//! ACL denials, then dispatch through the route table.
//!
//! Invariant: every request under `/api2/json` is recorded (with the token that
//! authenticated it) before anything else can refuse it, faults are applied before
//! authentication, a denied request never reaches a handler, and no lock is held across
//! an `.await` (the state is only locked inside the synchronous dispatcher).

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, header};
use axum::response::Response;
use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::api::ApiError;
use super::faults::{self, FaultAction};
use super::{RecordedRequest, Shared, acl, dispatch, lock};

/// API root every route lives under.
const API_ROOT: &str = "/api2/json";

/// Largest request body read; Proxmox's own limit is in the same range and
/// nothing the client sends comes close.
const BODY_LIMIT: usize = 1024 * 1024;

/// Where pveproxy serves the API viewer's schema (static docs: no token needed).
const API_DOCS_PATH: &str = "/pve-docs/api-viewer/apidata.js";

/// The API viewer's schema file, or 404 when a test hid it.
fn api_docs(shared: &Shared) -> Response {
    shared
        .api_docs_fetches
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let script = lock(&shared.api_docs).script();
    let (status, body, content_type) = match script {
        Some(script) => (StatusCode::OK, script, "application/javascript"),
        None => (StatusCode::NOT_FOUND, "Not Found".to_owned(), "text/plain"),
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    response
}

/// Splits the raw path after the API root into segments the way pveproxy does:
/// the whole path is percent-decoded first, so an encoded `/` (`%2F`) inside a
/// value starts a new segment and the request reaches another route — which is
/// why a correct client never sends one.
fn decode_segments(raw: &str) -> Vec<String> {
    percent_decode_str(raw)
        .decode_utf8_lossy()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Parses `a=1&b=2` pairs; malformed input yields what could be parsed.
fn parse_pairs(text: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(text).unwrap_or_default()
}

/// The body parameters of a POST/PUT: form-urlencoded as Proxmox clients
/// send them, or a JSON object (which pveproxy also accepts) flattened to
/// strings with booleans as 0/1.
fn body_params(headers: &HeaderMap, body: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/x-www-form-urlencoded")
        .to_ascii_lowercase();
    if content_type.starts_with("application/x-www-form-urlencoded") {
        return Ok(parse_pairs(&String::from_utf8_lossy(body)));
    }
    if content_type.starts_with("application/json") {
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            return Err(ApiError::new(400, "unable to parse JSON body"));
        };
        return Ok(map
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s,
                    Value::Bool(b) => u8::from(b).to_string(),
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect());
    }
    Err(ApiError::new(
        415,
        format!("unsupported content type '{content_type}'"),
    ))
}

/// The single handler behind every URL of the emulator.
pub(super) async fn entry(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let raw_path = parts.uri.path();
    if raw_path == API_DOCS_PATH && parts.method == HttpMethod::GET {
        return api_docs(&shared);
    }
    let Some(api_path) = raw_path
        .strip_prefix(API_ROOT)
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    else {
        // Outside the API pveproxy serves the web UI; nothing a REST client
        // should ever ask for.
        let mut response = Response::new(Body::from("Not Found"));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    };
    let segments = decode_segments(api_path);
    let path = format!("/{}", segments.join("/"));
    let method = parts.method.as_str().to_string();
    let query = parts.uri.query().map(parse_pairs).unwrap_or_default();
    let body = match to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::debug!(error = %e, "emulator could not read a request body");
            return ApiError::new(400, "unable to read request body").into_response();
        }
    };
    let takes_body = matches!(parts.method, HttpMethod::POST | HttpMethod::PUT);
    let form = if takes_body {
        body_params(&parts.headers, &body)
    } else {
        Ok(Vec::new())
    };
    let token_id = lock(&shared.tokens).authenticate(
        parts
            .headers
            .get(header::AUTHORIZATION)
            .map(axum::http::HeaderValue::as_bytes),
    );
    let authorized = token_id.is_some();
    tracing::debug!(%method, %path, authorized, token_id, "emulator request");
    {
        let mut requests = lock(&shared.requests);
        // A long-running `run --demo` must not grow without bound: keep the newest ones.
        if requests.len() >= super::MAX_RECORDED_REQUESTS {
            requests.drain(..super::MAX_RECORDED_REQUESTS / 2);
        }
        requests.push(RecordedRequest {
            method: method.clone(),
            path: path.clone(),
            raw_path: api_path.to_owned(),
            query: query.clone(),
            form: form.as_ref().map_or_else(|_| Vec::new(), Clone::clone),
            authorized,
            token_id: token_id.clone(),
        });
    }

    let fault = lock(&shared.faults).take(&path);
    if let Some(kind) = fault {
        tracing::debug!(?kind, %path, "emulator fault fired");
        match faults::action(&kind, &path) {
            FaultAction::Respond(response) => return response,
            FaultAction::Hang => {
                tokio::time::sleep(faults::HANG_LIMIT).await;
                return ApiError::new(504, "emulated hang ended").into_response();
            }
            FaultAction::Delay(delay) => tokio::time::sleep(delay).await,
        }
    }

    let Some(token_id) = token_id else {
        return ApiError::auth_failure().into_response();
    };
    if let Some(response) = denied(&shared, &token_id, &method, &path, &segments) {
        return response;
    }
    let form = match form {
        Ok(form) => form,
        Err(e) => return e.into_response(),
    };
    // pveproxy merges query parameters into the body parameters for every
    // method.
    let mut params = form;
    params.extend(query);
    dispatch::dispatch(&shared.state, &token_id, &method, &path, &segments, params)
}

/// PVE's 403 when a denial of `token_id` covers the request's ACL path (and a route
/// serves it: an unknown route stays 501), naming the privilege the check wanted.
fn denied(
    shared: &Shared,
    token_id: &str,
    method: &str,
    path: &str,
    segments: &[String],
) -> Option<Response> {
    let acl_path = lock(&shared.tokens).denial(token_id, path)?;
    if !dispatch::routed(method, segments) {
        return None;
    }
    // Cloned out so the (first-use) schema indexing runs without the lock held.
    let docs = lock(&shared.api_docs).clone();
    let privilege = docs
        .privilege(method, path)
        .unwrap_or_else(|| acl::fallback_privilege(method, path).to_owned());
    tracing::debug!(token_id, %acl_path, %privilege, "emulator ACL denial");
    Some(
        ApiError::new(
            403,
            format!("Permission check failed ({acl_path}, {privilege})"),
        )
        .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_decoded() {
        let segs = decode_segments("/nodes/pve01/tasks/UPID%3Apve01%3A0000ABCD%3A/status");
        assert_eq!(segs[3], "UPID:pve01:0000ABCD:");
        assert_eq!(segs.len(), 5);
        let split = decode_segments("/cluster/backup/x%2Fincluded_volumes");
        assert_eq!(split, ["cluster", "backup", "x", "included_volumes"]);
    }

    #[test]
    fn json_bodies_flatten_to_perl_values() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        let params = body_params(&headers, br#"{"a":true,"b":3,"c":"x"}"#).unwrap();
        assert_eq!(
            params,
            vec![
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "3".to_string()),
                ("c".to_string(), "x".to_string())
            ]
        );
        headers.insert(header::CONTENT_TYPE, "text/plain".parse().unwrap());
        assert_eq!(body_params(&headers, b"x").unwrap_err().status, 415);
    }
}
