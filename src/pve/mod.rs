//! Proxmox VE REST client: the only code that talks HTTPS to `/api2/json`.
//!
//! Callers describe one API call as an [`ApiRequest`] (method, an already rendered and
//! percent-encoded path, parameters, timeout, retry policy) and get back an [`Outcome`]: Proxmox's
//! `data` member or a classified [`PveError`] with a stable code, plus how many attempts were made.
//!
//! Invariants guarded here:
//! - the API token secret never appears in `Debug` output, logs or error text (the `Authorization`
//!   header value is built once, marked sensitive, and never formatted);
//! - Proxmox's own error detail (message, per-parameter `errors`) is kept, never replaced by a
//!   generic text;
//! - only reads are retried, and only after a 502/503/504 or a failure before the request was sent,
//!   within one per-call deadline; 4xx/500 answers and writes are tried exactly once;
//! - at most `PVE_MAX_INFLIGHT` requests of one client (one cluster) are in flight at once.

mod client;
mod error;
mod limits;
mod path;
mod response;
mod task;
mod tls;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub use client::{Client, TokenParts};
pub use error::PveError;
pub use limits::{
    ClientLimits, DEFAULT_CALL_DEADLINE, DEFAULT_MAX_INFLIGHT, ENV_CALL_DEADLINE, ENV_MAX_INFLIGHT,
    ENV_VARS, LimitsError,
};
pub use path::encode_path_segment;
pub use task::{Upid, UpidError};
pub use tls::{certificate_fingerprint, normalize_fingerprint};

/// Per-attempt timeout callers use when a tool declares none (the reference client's 15 s).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// Upper bound on attempts for a call with [`RetryPolicy::Reads`].
pub const MAX_ATTEMPTS: u32 = 3;

/// Everything the client needs to reach one Proxmox VE API endpoint.
///
/// `Debug` prints the token secret as `<redacted>` so a logged config never leaks it.
#[derive(Clone, PartialEq, Eq)]
pub struct Connection {
    /// Hostname, IPv4 address, or IPv6 literal (with or without `[brackets]`).
    pub host: String,
    /// TCP port of `pveproxy`, usually 8006.
    pub port: u16,
    /// User the token belongs to, without realm (e.g. `svc_mcp`).
    pub user: String,
    /// Authentication realm of the user (e.g. `pve` or `pam`).
    pub realm: String,
    /// Token id, the part after `!` (e.g. `mcp`).
    pub token_name: String,
    /// Token secret (a UUID). Never printed.
    pub token_secret: String,
    /// How the server certificate is checked.
    pub tls: TlsMode,
}

impl Connection {
    /// Full token id as Proxmox spells it: `user@realm!token_name` (contains no secret).
    pub fn token_id(&self) -> String {
        format!("{}@{}!{}", self.user, self.realm, self.token_name)
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("realm", &self.realm)
            .field("token_name", &self.token_name)
            .field("token_secret", &"<redacted>")
            .field("tls", &self.tls)
            .finish()
    }
}

/// Which Proxmox product a client talks to. Both serve `/api2/json` with the same envelope;
/// they differ in the token's header and in the API schema requests are classified by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Product {
    /// Proxmox VE (`pveproxy`, port 8006).
    #[default]
    Pve,
    /// Proxmox Backup Server (`proxmox-backup-proxy`, port 8007).
    Pbs,
}

/// How the server's TLS certificate is checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TlsMode {
    /// Verify the chain against the system's CA store and the hostname (the default).
    #[default]
    Verify,
    /// Verify the chain against the CA certificate(s) in this PEM file only, and the hostname.
    CaFile(PathBuf),
    /// Accept exactly the leaf certificate whose DER has this SHA-256 digest
    /// (`AB:CD:…` or `abcd…`, any case); chain, hostname and expiry are not checked.
    Fingerprint(String),
    /// Accept any certificate. Opt-in only; a warning is logged when the client is built.
    Insecure,
}

/// HTTP method of an API call (Proxmox uses only these four).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Read; parameters go into the query string.
    Get,
    /// Create or act; parameters go into a form-encoded body.
    Post,
    /// Update; parameters go into a form-encoded body.
    Put,
    /// Remove; parameters go into the query string.
    Delete,
}

impl Method {
    /// Upper-case wire name (`GET`, `POST`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }

    /// Whether parameters travel in a form body (POST/PUT) rather than the query string.
    pub fn has_body(self) -> bool {
        matches!(self, Method::Post | Method::Put)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a call may be repeated after a transient failure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RetryPolicy {
    /// Exactly one attempt (writes, and anything not known to be idempotent).
    #[default]
    Never,
    /// Up to [`MAX_ATTEMPTS`] attempts with jittered backoff, inside the call's deadline, after a
    /// 502/503/504 or a failure before the request was sent ([`PveError::is_retryable`]).
    /// Honoured for `GET` only: a write is never repeated even if a caller asks for it.
    Reads,
}

/// One Proxmox API call.
///
/// `Debug` lists parameter names only: values may be passwords or keys (e.g. `cipassword`).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiRequest {
    /// HTTP method.
    pub method: Method,
    /// Path relative to `/api2/json`, starting with `/`, each segment already percent-encoded
    /// (see [`encode_path_segment`]), e.g. `/nodes/pve01/tasks/UPID%3Apve01%3A…/status`.
    pub path: String,
    /// Query parameters (GET/DELETE) or form body fields (POST/PUT), in order.
    pub params: Vec<(String, String)>,
    /// Time allowed for one attempt (connect, send, and reading the whole answer). The call's
    /// deadline is the larger of this and the client's `call_deadline`.
    pub timeout: Duration,
    /// Whether transient failures may be retried.
    pub retry: RetryPolicy,
}

impl ApiRequest {
    /// A request with no parameters, [`DEFAULT_TIMEOUT`] and [`RetryPolicy::Never`].
    pub fn new(method: Method, path: impl Into<String>) -> ApiRequest {
        ApiRequest {
            method,
            path: path.into(),
            params: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::Never,
        }
    }

    /// A `GET` that may be retried ([`RetryPolicy::Reads`]).
    pub fn get(path: impl Into<String>) -> ApiRequest {
        ApiRequest {
            retry: RetryPolicy::Reads,
            ..ApiRequest::new(Method::Get, path)
        }
    }

    /// A `POST`, tried once.
    pub fn post(path: impl Into<String>) -> ApiRequest {
        ApiRequest::new(Method::Post, path)
    }

    /// Appends one parameter.
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> ApiRequest {
        self.params.push((name.into(), value.into()));
        self
    }

    /// Sets the per-attempt timeout.
    pub fn timeout(mut self, timeout: Duration) -> ApiRequest {
        self.timeout = timeout;
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> ApiRequest {
        self.retry = retry;
        self
    }
}

impl fmt::Debug for ApiRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.params.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ApiRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("param_names", &names)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Result of [`Client::call`]: Proxmox's `data` member or the final error, and the number of
/// attempts actually sent (0 when the request was rejected, queued past its deadline, or
/// cancelled before sending).
#[derive(Debug)]
pub struct Outcome {
    /// `data` of the answer (`Value::Null` when absent or the body was empty), or the error.
    pub result: Result<serde_json::Value, PveError>,
    /// Attempts made, including the one that produced `result`.
    pub attempts: u32,
}

impl Outcome {
    /// Retries performed (attempts beyond the first).
    pub fn retries(&self) -> u32 {
        self.attempts.saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_debug_hides_the_secret() {
        let conn = Connection {
            host: "pve".into(),
            port: 8006,
            user: "svc".into(),
            realm: "pve".into(),
            token_name: "mcp".into(),
            token_secret: "0f3c9e1a-top-secret".into(),
            tls: TlsMode::Verify,
        };
        let shown = format!("{conn:?} {conn:#?}");
        assert!(!shown.contains("top-secret"));
        assert!(shown.contains("<redacted>"));
        assert_eq!(conn.token_id(), "svc@pve!mcp");
    }

    #[test]
    fn request_debug_hides_parameter_values() {
        let req = ApiRequest::post("/access/users")
            .param("userid", "bob@pve")
            .param("password", "hunter2");
        let shown = format!("{req:?}");
        assert!(shown.contains("password"));
        assert!(!shown.contains("hunter2"));
        assert!(!shown.contains("bob@pve"));
    }

    #[test]
    fn builders_set_defaults() {
        let get = ApiRequest::get("/nodes");
        assert_eq!(get.method, Method::Get);
        assert_eq!(get.retry, RetryPolicy::Reads);
        assert_eq!(get.timeout, DEFAULT_TIMEOUT);
        let post = ApiRequest::post("/x").retry(RetryPolicy::Reads);
        assert_eq!(post.retry, RetryPolicy::Reads);
        assert!(Method::Put.has_body() && !Method::Delete.has_body());
        assert_eq!(Method::Delete.to_string(), "DELETE");
    }
}
