//! Fault injection: what tests can arm, and the responses each fault produces.
//!
//! Invariant: a fault affects at most `count` requests, only those whose
//! decoded API path starts with its prefix, and faults are consumed in the
//! order they were armed (the first armed fault that matches wins). Faults
//! are looked at before authentication, so they also hit refused requests.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;

use super::acl;
use super::api::{self, ApiError};

/// One armed fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What happens to an affected request.
    pub kind: FaultKind,
    /// How many matching requests the fault affects before it is used up.
    pub count: u32,
    /// Only requests whose decoded path (after `/api2/json`) starts with this
    /// are affected; `None` matches every API request.
    pub path_prefix: Option<String>,
}

impl Fault {
    /// A fault that affects the next `count` API requests, whatever their path.
    pub fn new(kind: FaultKind, count: u32) -> Self {
        Self {
            kind,
            count,
            path_prefix: None,
        }
    }

    /// Restricts the fault to paths starting with `prefix` (for example
    /// `"/nodes/pve01"`).
    pub fn on_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.path_prefix = Some(prefix.into());
        self
    }

    /// Whether this fault applies to the decoded API path `path`.
    fn matches(&self, path: &str) -> bool {
        match &self.path_prefix {
            None => true,
            // Be forgiving about a prefix written with the API root: both
            // "/api2/json/nodes" and "/nodes" mean the same thing here.
            Some(prefix) => {
                let prefix = prefix.strip_prefix("/api2/json").unwrap_or(prefix);
                path.starts_with(prefix)
            }
        }
    }
}

/// The misbehaviours the emulator can be told to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// A Proxmox-style JSON error with this HTTP status (a 400 names a parameter in
    /// `errors`, as Proxmox's parameter verification does).
    Status(u16),
    /// This HTTP status with an empty body (a proxy or a crashed worker answering).
    EmptyBody(u16),
    /// A 502 HTML page as an nginx reverse proxy would send it.
    HtmlProxy,
    /// A 200 answer whose body is an HTML login page instead of JSON.
    BadJson,
    /// The request is never answered; the client has to give up.
    Hang,
    /// The connection is aborted while the response is being sent.
    Reset,
    /// The request is answered normally after this delay.
    Slow(Duration),
}

/// The armed faults, in arming order, each with its remaining count.
#[derive(Debug, Default)]
pub(super) struct FaultSet {
    armed: Vec<Fault>,
}

impl FaultSet {
    /// Adds a fault after those already armed. A fault with a count of zero
    /// could never fire, so it is not kept.
    pub fn arm(&mut self, fault: Fault) {
        if fault.count > 0 {
            self.armed.push(fault);
        }
    }

    /// Removes every armed fault.
    pub fn clear(&mut self) {
        self.armed.clear();
    }

    /// Consumes one use of the first armed fault matching `path`.
    pub fn take(&mut self, path: &str) -> Option<FaultKind> {
        let index = self.armed.iter().position(|f| f.matches(path))?;
        let fault = &mut self.armed[index];
        let kind = fault.kind.clone();
        fault.count -= 1;
        if fault.count == 0 {
            self.armed.remove(index);
        }
        Some(kind)
    }
}

/// What the request pipeline must do for a consumed fault.
pub(super) enum FaultAction {
    /// Answer with this response right away.
    Respond(Response),
    /// Never answer.
    Hang,
    /// Wait, then handle the request normally.
    Delay(Duration),
}

/// Longest time a hung request is held. Long enough that any client timeout
/// fires first, short enough that a leaked connection does not live forever.
pub(super) const HANG_LIMIT: Duration = Duration::from_secs(3600);

/// Turns a fault into the action the pipeline takes for `path`.
pub(super) fn action(kind: &FaultKind, path: &str) -> FaultAction {
    match kind {
        FaultKind::Status(code) => FaultAction::Respond(status_response(*code, path)),
        FaultKind::EmptyBody(code) => FaultAction::Respond(empty(*code)),
        FaultKind::HtmlProxy => FaultAction::Respond(html(StatusCode::BAD_GATEWAY, NGINX_502)),
        FaultKind::BadJson => FaultAction::Respond(html(StatusCode::OK, LOGIN_PAGE)),
        FaultKind::Hang => FaultAction::Hang,
        FaultKind::Reset => FaultAction::Respond(reset_response()),
        FaultKind::Slow(delay) => FaultAction::Delay(*delay),
    }
}

/// A JSON error shaped like the ones Proxmox sends for that status.
fn status_response(code: u16, path: &str) -> Response {
    let message = match code {
        400 => {
            return ApiError::param("vmid", "value does not look like a valid VM ID")
                .into_response();
        }
        401 => return ApiError::auth_failure().into_response(),
        403 => format!("Permission check failed ({})", acl::target("GET", path)),
        500 => "internal error".to_string(),
        595 => {
            "Errors during connection establishment, proxy handshake: No route to host".to_string()
        }
        596 => "Connection timed out (no route to host)".to_string(),
        other => format!("emulated failure (HTTP {other})"),
    };
    // Codes outside the valid range cannot be sent; a plain 500 is the
    // closest honest answer.
    let code = StatusCode::from_u16(code).map_or(500, |_| code);
    ApiError::new(code, message).into_response()
}

/// A response with status `code` (500 when it is not a valid status) and no body at all.
fn empty(code: u16) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
}

fn html(status: StatusCode, page: &'static str) -> Response {
    let mut response = Response::new(Body::from(page));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/html"),
    );
    response
}

/// A response whose body fails on its first read. hyper then aborts the
/// connection instead of finishing the message, so the client sees a
/// transport error (connection closed / incomplete message), not a status.
fn reset_response() -> Response {
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "emulated connection reset",
    ))];
    let mut response = Response::new(Body::from_stream(futures::stream::iter(chunks)));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(api::JSON_CONTENT_TYPE),
    );
    response
}

const NGINX_502: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n\
<title>pve01 - Proxmox Virtual Environment</title>\n</head>\n<body>\n\
<form action=\"/login\" method=\"post\"><input name=\"username\"><input name=\"password\" \
type=\"password\"><button>Login</button></form>\n</body>\n</html>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_matching_fault_is_consumed_in_order() {
        let mut set = FaultSet::default();
        set.arm(Fault::new(FaultKind::Status(500), 1).on_prefix("/nodes/pve01"));
        set.arm(Fault::new(FaultKind::HtmlProxy, 2));
        set.arm(Fault::new(FaultKind::Hang, 0));
        assert_eq!(set.take("/version"), Some(FaultKind::HtmlProxy));
        assert_eq!(
            set.take("/nodes/pve01/status"),
            Some(FaultKind::Status(500))
        );
        assert_eq!(set.take("/nodes/pve01/status"), Some(FaultKind::HtmlProxy));
        assert_eq!(set.take("/nodes/pve01/status"), None);
    }

    #[test]
    fn prefix_may_include_api_root() {
        let f = Fault::new(FaultKind::BadJson, 1).on_prefix("/api2/json/cluster");
        assert!(f.matches("/cluster/resources"));
        assert!(!f.matches("/nodes"));
    }

    #[test]
    fn a_400_names_the_parameter_and_an_empty_body_is_empty() {
        let FaultAction::Respond(bad) = action(&FaultKind::Status(400), "/nodes") else {
            panic!("a status fault responds");
        };
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
        let FaultAction::Respond(empty) = action(&FaultKind::EmptyBody(502), "/nodes") else {
            panic!("an empty-body fault responds");
        };
        assert_eq!(empty.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(
            axum::body::HttpBody::size_hint(empty.body()).exact(),
            Some(0)
        );
    }
}
