//! The PBS request pipeline: decode, record, authenticate, then dispatch through the
//! route table.
//!
//! Invariant: every request under `/api2/json` is recorded (bounded, newest kept) before
//! anything can refuse it; only the exact header `PBSAPIToken=<token id>:<secret>` is
//! authenticated, compared byte for byte, and the secret is never logged; no lock is held
//! across an `.await`.

use std::sync::Arc;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::api::PbsError;
use super::{PbsShared, routes};
use crate::{MAX_RECORDED_REQUESTS, RecordedRequest, lock};

/// API root every route lives under.
const API_ROOT: &str = "/api2/json";

/// Largest request body read.
const BODY_LIMIT: usize = 1024 * 1024;

/// The whole path percent-decoded, then split into segments (so `%2F` starts a segment).
fn decode_segments(raw: &str) -> Vec<String> {
    percent_decode_str(raw)
        .decode_utf8_lossy()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `a=1&b=2` pairs; malformed input yields nothing.
fn parse_pairs(text: &str) -> Vec<(String, String)> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(text).unwrap_or_default()
}

/// The parameters of a POST/PUT body: form-urlencoded, or a JSON object's members as
/// strings (booleans as `true`/`false`, which the schema accepts).
fn body_params(headers: &HeaderMap, body: &[u8]) -> Result<Vec<(String, String)>, PbsError> {
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/x-www-form-urlencoded")
        .to_ascii_lowercase();
    if content_type.starts_with("application/json") {
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
            return Err(PbsError::bad("unable to parse json body"));
        };
        return Ok(map
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect());
    }
    if content_type.starts_with("application/x-www-form-urlencoded") {
        return Ok(parse_pairs(&String::from_utf8_lossy(body)));
    }
    Err(PbsError::bad(format!(
        "unsupported content type {content_type:?}"
    )))
}

/// The token id the `Authorization` header authenticates, if it is exactly the
/// configured one.
fn authenticate(shared: &PbsShared, headers: &HeaderMap) -> Result<String, PbsError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(PbsError::new(
            401,
            "authentication failed - no authentication credentials provided.",
        ));
    };
    if value.as_bytes() == shared.auth_header.as_bytes() {
        Ok(shared.token_id.clone())
    } else {
        Err(PbsError::new(401, "authentication failed - invalid token"))
    }
}

/// The single handler behind every URL of the PBS emulator.
pub(super) async fn entry(State(shared): State<Arc<PbsShared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let raw_path = parts.uri.path().to_owned();
    let Some(api_path) = raw_path
        .strip_prefix(API_ROOT)
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
    else {
        let mut response = Response::new(Body::from("Not Found"));
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    };
    let segments = decode_segments(api_path);
    let path = format!("/{}", segments.join("/"));
    let method = parts.method.as_str().to_owned();
    let query = parts.uri.query().map(parse_pairs).unwrap_or_default();
    let body = match to_bytes(body, BODY_LIMIT).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::debug!(error = %e, "PBS emulator could not read a request body");
            return PbsError::bad("unable to read request body").into_response();
        }
    };
    let form = if matches!(parts.method, Method::POST | Method::PUT) {
        body_params(&parts.headers, &body)
    } else {
        Ok(Vec::new())
    };
    let auth = authenticate(&shared, &parts.headers);
    let token_id = auth.as_ref().ok().cloned();
    tracing::debug!(%method, %path, authorized = token_id.is_some(), "PBS emulator request");
    {
        let mut requests = lock(&shared.requests);
        if requests.len() >= MAX_RECORDED_REQUESTS {
            requests.drain(..MAX_RECORDED_REQUESTS / 2);
        }
        requests.push(RecordedRequest {
            method: method.clone(),
            path: path.clone(),
            raw_path: api_path.to_owned(),
            query: query.clone(),
            form: form.as_ref().map_or_else(|_| Vec::new(), Clone::clone),
            authorized: token_id.is_some(),
            token_id: token_id.clone(),
        });
    }
    let caller = match auth {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    let mut params = match form {
        Ok(form) => form,
        Err(e) => return e.into_response(),
    };
    params.extend(query);
    routes::dispatch(&shared.state, &caller, &method, &path, &segments, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_decoded_before_splitting() {
        let segs = decode_segments(
            "/nodes/pbs01/tasks/UPID%3Apbs01%3A0000ABCD%3Amcp%40pbs%21mcp%3A/status",
        );
        assert_eq!(segs[3], "UPID:pbs01:0000ABCD:mcp@pbs!mcp:");
        assert_eq!(segs.len(), 5);
    }

    #[test]
    fn json_bodies_become_string_parameters() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        let params = body_params(&headers, br#"{"dry-run":true,"keep-last":3,"ns":"a"}"#).unwrap();
        assert_eq!(
            params,
            vec![
                ("dry-run".to_owned(), "true".to_owned()),
                ("keep-last".to_owned(), "3".to_owned()),
                ("ns".to_owned(), "a".to_owned())
            ]
        );
    }
}
