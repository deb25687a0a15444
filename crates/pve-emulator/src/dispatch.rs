//! The dispatcher that matches a request against the route table
//! (`routes.rs`; the route types live in `route.rs`).
//!
//! Invariant: a request reaches a handler only if a route with that method
//! and path pattern exists (else 501, as pveproxy answers), the `{node}` in
//! its path names an existing node, `{vmid}` is a valid id, and every
//! parameter is declared by the route with a value of the declared type —
//! so a client sending a parameter Proxmox does not know fails loudly.

use std::sync::Mutex;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::{Map, Value};

use super::api::{self, ApiError, Call};
use super::lock;
use super::route::Route;
use super::routes;
use super::state::EmuState;

/// Matches a pattern against decoded path segments, returning the captures.
fn match_pattern(
    pattern: &'static str,
    segments: &[String],
) -> Option<Vec<(&'static str, String)>> {
    // Walked lazily, without allocating: every request is tried against every route.
    let mut parts = pattern.split('/').filter(|p| !p.is_empty());
    let mut captures = Vec::new();
    for segment in segments {
        let part = parts.next()?;
        match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => captures.push((name, segment.clone())),
            None if part == segment => {}
            None => return None,
        }
    }
    if parts.next().is_some() {
        return None;
    }
    Some(captures)
}

/// Finds the route for a request. When several patterns match, the one with
/// the most literal segments wins (`.../status/current` over
/// `.../status/{op}`), then table order.
fn find(
    method: &str,
    segments: &[String],
) -> Option<(&'static Route, Vec<(&'static str, String)>)> {
    routes::all()
        .enumerate()
        .filter(|(_, r)| r.method.name() == method)
        .filter_map(|(index, r)| match_pattern(r.pattern, segments).map(|c| (index, r, c)))
        .max_by_key(|(index, _, captures)| {
            // max_by_key returns the last maximum; the reversed index makes
            // the earliest route in the table win ties.
            (segments.len() - captures.len(), std::cmp::Reverse(*index))
        })
        .map(|(_, r, captures)| (r, captures))
}

/// Whether some route serves `method` on `segments` (PVE finds the handler, and answers
/// 501 without one, before it checks any permission).
pub(super) fn routed(method: &str, segments: &[String]) -> bool {
    find(method, segments).is_some()
}

/// Validates the path captures that have a fixed format (`{vmid}`: an
/// integer in Proxmox's vmid range).
fn check_captures(captures: &[(&'static str, String)]) -> Result<(), ApiError> {
    for (name, value) in captures.iter().filter(|(n, _)| *n == "vmid") {
        api::check_value(api::Kind::Int, value).map_err(|r| ApiError::param(name, r))?;
        // Digits too many for an i64 are certainly above the maximum.
        let id: i64 = value.parse().unwrap_or(i64::MAX);
        if id < 100 {
            return Err(ApiError::param(
                name,
                "value must have a minimum value of 100",
            ));
        }
        if id > 999_999_999 {
            return Err(ApiError::param(
                name,
                "value must have a maximum value of 999999999",
            ));
        }
    }
    Ok(())
}

/// Answers one API request authenticated as the token `caller`. `path` is the decoded
/// path after `/api2/json`, `segments` its decoded segments.
pub(super) fn dispatch(
    state: &Mutex<EmuState>,
    caller: &str,
    method: &str,
    path: &str,
    segments: &[String],
    params: Vec<(String, String)>,
) -> Response {
    let Some((route, captures)) = find(method, segments) else {
        return ApiError::not_implemented(method, path).into_response();
    };
    let mut st = lock(state);
    caller.clone_into(&mut st.caller);
    // pveproxy resolves the target node before the handler sees the
    // parameters, so an unknown node wins over a bad parameter.
    if let Some((_, node)) = captures.iter().find(|(n, _)| *n == "node")
        && st.node(node).is_none()
    {
        return ApiError::server(format!(
            "hostname lookup '{node}' failed - failed to get address info for: \
             {node}: Name or service not known"
        ))
        .into_response();
    }
    let implicit: Vec<&str> = captures.iter().map(|(n, _)| *n).collect();
    if let Err(e) =
        check_captures(&captures).and_then(|()| api::validate(route.params, &implicit, &params))
    {
        return e.into_response();
    }
    let mut call = Call::new(&mut st, captures, params);
    match (route.handler)(&mut call) {
        Err(e) => {
            tracing::debug!(%method, %path, status = e.status, "emulator API error");
            e.into_response()
        }
        Ok(data) => match call.raw.take() {
            Some(raw) => {
                let mut response = Response::new(Body::from(raw.body));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(raw.content_type),
                );
                response
            }
            None => {
                let mut envelope = Map::new();
                envelope.insert("data".into(), data);
                envelope.append(&mut call.attribs);
                api::json_response(200, &Value::Object(envelope))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(path: &str) -> Vec<String> {
        path.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn patterns_capture_whole_segments() {
        let c = match_pattern(
            "/nodes/{node}/qemu/{vmid}/config",
            &segs("/nodes/pve01/qemu/101/config"),
        )
        .unwrap();
        assert_eq!(
            c,
            vec![("node", "pve01".to_string()), ("vmid", "101".to_string())]
        );
        assert!(match_pattern("/nodes/{node}/qemu", &segs("/nodes/pve01/lxc")).is_none());
        assert!(match_pattern("/nodes/{node}", &segs("/nodes/pve01/qemu")).is_none());
    }

    #[test]
    fn literal_routes_win_over_captures() {
        let (route, _) = find("GET", &segs("/nodes/pve01/qemu/101/status/current")).unwrap();
        assert_eq!(route.pattern, "/nodes/{node}/qemu/{vmid}/status/current");
        assert!(find("PUT", &segs("/version")).is_none());
    }
}
