//! The HTTP side of the Proxmox client: one pooled `reqwest::Client`, request building, a bound on
//! requests in flight, retries with jittered backoff inside one per-call deadline, per-attempt
//! timeouts and cancellation (answers are read in `response`, the `Authorization` header is built
//! in `auth`, the API viewer data is fetched in `api_viewer`).
//!
//! Invariants: the `Authorization` header is built once, marked sensitive and never formatted;
//! at most `max_inflight` requests of one client are on the wire at once (the rest wait, and a
//! slot is held only while an attempt runs, never during backoff); only `GET`s with
//! [`RetryPolicy::Reads`] are ever repeated, and only after a 502/503/504 or a failure before the
//! request was sent (see [`PveError::is_retryable`]); no attempt and no backoff outlasts the call's
//! deadline; cancellation stops the call at any point (queued, in flight or in backoff) by dropping
//! the in-flight future; `Client::new` performs no network I/O.

mod api_viewer;
mod auth;

pub use auth::TokenParts;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use rand::Rng;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::PveError;
use super::path::{check_api_path, url_host};
use super::response::{classify_transport, interpret, snippet};
use super::{
    ApiRequest, ClientLimits, Connection, MAX_ATTEMPTS, Method, Outcome, Product, RetryPolicy,
    TlsMode, tls,
};

/// Longest connect phase allowed, whatever the request timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Backoff before the second attempt; doubles per attempt.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
/// Backoff ceiling (before jitter).
const BACKOFF_CAP: Duration = Duration::from_millis(2500);
/// Largest answer body read into memory; Proxmox answers (even syslogs) are far smaller.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
const USER_AGENT: &str = concat!("nandi-proxmox-mcp/", env!("CARGO_PKG_VERSION"));

/// A Proxmox API client. Cloning is cheap and shares one connection pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base_url: String,
    /// `base_url` parsed once; each request's URL is this with its path and query set, so
    /// the scheme and host are never parsed again.
    base: Url,
    /// `PVEAPIToken=…` (or PBS's `PBSAPIToken=…`); sensitive, so it is never printed by
    /// `http`'s `Debug`.
    auth: HeaderValue,
    /// Which Proxmox product answers: it decides the token's header and the schema every
    /// request is classified by before it leaves.
    product: Product,
    /// One permit per request allowed in flight; shared by every identity's client of one
    /// cluster ([`Client::as_token`]), so the bound is the cluster's.
    slots: Arc<Semaphore>,
    limits: ClientLimits,
}

/// How one attempt failed, and whether the request had left this process.
struct Failed {
    error: PveError,
    /// `false` only when the failure is known to precede sending (connect phase, queueing).
    sent: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base_url", &self.inner.base_url)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// A request checked and encoded once, reused by every attempt.
struct Prepared {
    method: reqwest::Method,
    url: Url,
    body: Option<String>,
}

impl Client {
    /// Validates `conn` and builds the client (TLS config, headers, pool) with the default
    /// [`ClientLimits`]. No network I/O; the CA file or the system CA store is read from disk for
    /// [`TlsMode::CaFile`] / [`TlsMode::Verify`].
    pub fn new(conn: &Connection) -> Result<Client, PveError> {
        Client::with_limits(conn, ClientLimits::default())
    }

    /// As [`Client::new`], with explicit in-flight and deadline limits (`PVE_MAX_INFLIGHT`,
    /// `PVE_CALL_DEADLINE_SECS`). A `max_inflight` of 0 is treated as 1.
    pub fn with_limits(conn: &Connection, limits: ClientLimits) -> Result<Client, PveError> {
        Client::for_product(conn, limits, Product::Pve)
    }

    /// A client of a Proxmox Backup Server (`PBSAPIToken=…:secret`, requests classified by
    /// PBS's schema), with explicit limits. No network I/O.
    pub fn pbs(conn: &Connection, limits: ClientLimits) -> Result<Client, PveError> {
        Client::for_product(conn, limits, Product::Pbs)
    }

    fn for_product(
        conn: &Connection,
        limits: ClientLimits,
        product: Product,
    ) -> Result<Client, PveError> {
        let host = url_host(&conn.host).map_err(PveError::Config)?;
        if conn.port == 0 {
            return Err(PveError::Config(
                "the Proxmox port must not be 0".to_owned(),
            ));
        }
        let base_url = format!("https://{host}:{}/api2/json", conn.port);
        let base = Url::parse(&base_url).map_err(|e| {
            PveError::Config(format!("the Proxmox host {:?} is invalid: {e}", conn.host))
        })?;
        let auth = auth::auth_header(conn, product)?;
        let tls_config = tls::client_config(&conn.tls)?;
        if conn.tls == TlsMode::Insecure {
            tracing::warn!(
                base_url = %base_url,
                "TLS certificate verification is disabled for the Proxmox API; anyone on the \
                 network path can read the API token. Pin the certificate fingerprint instead."
            );
        }
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config)
            .http1_only()
            .no_proxy()
            // The API never redirects; following one could carry the token to another host.
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(60))
            .user_agent(USER_AGENT)
            .default_headers(headers)
            .build()
            .map_err(|e| PveError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base_url,
                base,
                auth,
                product,
                slots: Arc::new(Semaphore::new(limits.max_inflight.max(1))),
                limits,
            }),
        })
    }

    /// The same cluster under another API token (a person's own): one connection pool, one
    /// in-flight bound and the same limits; only the `Authorization` header differs. No
    /// network I/O. The token's parts are checked as the server's own are.
    pub fn as_token(&self, token: TokenParts<'_>) -> Result<Client, PveError> {
        let auth = auth::token_header(token, self.inner.product)?;
        Ok(Client {
            inner: Arc::new(Inner {
                http: self.inner.http.clone(),
                base_url: self.inner.base_url.clone(),
                base: self.inner.base.clone(),
                auth,
                product: self.inner.product,
                slots: Arc::clone(&self.inner.slots),
                limits: self.inner.limits,
            }),
        })
    }

    /// Which Proxmox product this client talks to.
    pub fn product(&self) -> Product {
        self.inner.product
    }

    /// `https://host:port/api2/json` (IPv6 hosts in brackets).
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// The limits this client applies to every call.
    pub fn limits(&self) -> ClientLimits {
        self.inner.limits
    }

    /// Performs one API call: up to [`MAX_ATTEMPTS`] attempts for a `GET` with
    /// [`RetryPolicy::Reads`], otherwise one, all within the call's deadline
    /// (`max(call_deadline, req.timeout)` from now). Each attempt first waits for a free
    /// in-flight slot. Returns promptly with [`PveError::Cancelled`] when `cancel` fires,
    /// dropping any request in flight. `attempts` counts requests actually put on the wire.
    pub async fn call(&self, req: ApiRequest, cancel: &CancellationToken) -> Outcome {
        // The choke point: a request whose effects the running call was not cleared for
        // never leaves (see `effects::clearance`).
        // While changes are frozen, it refuses anything beyond a plain read as well.
        let admitted = match self.inner.product {
            Product::Pve => crate::effects::admit(req.method.as_str(), &req.path, &req.params),
            Product::Pbs => crate::effects::admit_pbs(req.method.as_str(), &req.path, &req.params),
        };
        if let Err(stopped) = admitted {
            tracing::info!(method = %req.method, path = %req.path, reason = %stopped, "request refused before sending");
            return Outcome {
                result: Err(PveError::from(stopped)),
                attempts: 0,
            };
        }
        let prepared = match self.prepare(&req) {
            Ok(p) => p,
            Err(e) => {
                return Outcome {
                    result: Err(e),
                    attempts: 0,
                };
            }
        };
        let max_attempts = if req.retry == RetryPolicy::Reads && req.method == Method::Get {
            MAX_ATTEMPTS
        } else {
            1
        };
        let deadline = Instant::now() + self.inner.limits.call_deadline.max(req.timeout);
        let mut attempts = 0;
        loop {
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(Failed { error: PveError::Cancelled, sent: true }),
                r = self.queued_attempt(&prepared, req.timeout, deadline, &mut attempts) => r,
            };
            let failed = match result {
                Ok(value) => {
                    tracing::debug!(method = %req.method, path = %req.path, attempts, "Proxmox call succeeded");
                    return Outcome {
                        result: Ok(value),
                        attempts,
                    };
                }
                Err(failed) => failed,
            };
            let delay = backoff_delay(attempts.max(1));
            let in_time = Instant::now() + delay < deadline;
            let retry = attempts < max_attempts
                && in_time
                && !matches!(
                    failed.error,
                    PveError::Saturated { .. } | PveError::Cancelled
                )
                && failed.error.is_retryable(failed.sent);
            tracing::debug!(
                method = %req.method,
                path = %req.path,
                attempt = attempts,
                code = failed.error.code(),
                error = %failed.error,
                sent = failed.sent,
                will_retry = retry,
                "Proxmox call failed"
            );
            if !retry {
                return Outcome {
                    result: Err(failed.error),
                    attempts,
                };
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    return Outcome { result: Err(PveError::Cancelled), attempts };
                }
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Waits for a free slot (until `deadline`), then makes one attempt bounded by the smaller
    /// of `timeout` and the time left. `attempts` is incremented only when the request is sent.
    async fn queued_attempt(
        &self,
        p: &Prepared,
        timeout: Duration,
        deadline: Instant,
        attempts: &mut u32,
    ) -> Result<Value, Failed> {
        let saturated = || Failed {
            error: PveError::Saturated {
                max_inflight: self.inner.limits.max_inflight,
            },
            sent: false,
        };
        let permit = match tokio::time::timeout_at(deadline, self.inner.slots.acquire()).await {
            Ok(Ok(permit)) => permit,
            // The semaphore is never closed; a closed one would mean no request can be sent.
            Ok(Err(_)) | Err(_) => return Err(saturated()),
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(saturated());
        }
        *attempts += 1;
        let result = self.attempt(p, timeout.min(left)).await;
        drop(permit);
        result
    }

    /// Checks the path, builds the URL (query for GET/DELETE) and the form body (POST/PUT).
    fn prepare(&self, req: &ApiRequest) -> Result<Prepared, PveError> {
        check_api_path(&req.path).map_err(PveError::InvalidRequest)?;
        let encoded = if req.params.is_empty() {
            String::new()
        } else {
            serde_urlencoded::to_string(&req.params).map_err(|e| {
                PveError::InvalidRequest(format!("cannot encode the parameters: {e}"))
            })?
        };
        let mut url = self.inner.base.clone();
        url.set_path(&format!("{}{}", self.inner.base.path(), req.path));
        let body = if req.method.has_body() {
            Some(encoded)
        } else {
            if !encoded.is_empty() {
                url.set_query(Some(&encoded));
            }
            None
        };
        let method = match req.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Delete => reqwest::Method::DELETE,
        };
        Ok(Prepared { method, url, body })
    }

    /// One attempt: send, read the whole answer, interpret it; bounded by `timeout`. A failure
    /// reqwest reports as a connect error (refused, unreachable, connect timeout, TLS handshake)
    /// is marked not sent; anything later, including the overall timeout, counts as sent.
    async fn attempt(&self, p: &Prepared, timeout: Duration) -> Result<Value, Failed> {
        let exchange = async {
            let mut builder = self
                .inner
                .http
                .request(p.method.clone(), p.url.clone())
                .header(AUTHORIZATION, self.inner.auth.clone());
            if let Some(body) = &p.body {
                builder = builder
                    .header(
                        CONTENT_TYPE,
                        HeaderValue::from_static("application/x-www-form-urlencoded"),
                    )
                    .body(body.clone());
            }
            let mut response = builder.send().await.map_err(|e| Failed {
                error: classify_transport(&e),
                sent: !e.is_connect(),
            })?;
            let status = response.status();
            // pveproxy puts its error text in the status line ("500 Configuration file … does
            // not exist"); hyper keeps a non-standard reason phrase as a response extension.
            let reason = response
                .extensions()
                .get::<hyper::ext::ReasonPhrase>()
                .map(|r| String::from_utf8_lossy(r.as_bytes()).trim().to_owned())
                .filter(|r| !r.is_empty());
            let mut body = Vec::new();
            let sent = |error| Failed { error, sent: true };
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| sent(classify_transport(&e)))?
            {
                if body.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(sent(PveError::InvalidResponse {
                        status: status.as_u16(),
                        snippet: format!(
                            "answer larger than {} MiB: {}",
                            MAX_BODY_BYTES / (1024 * 1024),
                            snippet(&body)
                        ),
                    }));
                }
                body.extend_from_slice(&chunk);
            }
            interpret(status, reason, &body).map_err(sent)
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_elapsed) => Err(Failed {
                error: PveError::Timeout,
                sent: true,
            }),
        }
    }
}

/// Full-jitter exponential backoff after failed attempt `attempt` (1-based):
/// `min(250 ms · 2^(attempt-1), 2.5 s) · U[0.5, 1.5)`.
fn backoff_delay(attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(16);
    let base = BACKOFF_BASE.saturating_mul(1 << exp).min(BACKOFF_CAP);
    base.mul_f64(rand::rng().random_range(0.5..1.5))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid connection to `host` (insecure TLS, so no store or file is read).
    pub(super) fn conn(host: &str) -> Connection {
        Connection {
            host: host.to_owned(),
            port: 8006,
            user: "svc_mcp".into(),
            realm: "pve".into(),
            token_name: "mcp".into(),
            token_secret: "s3cr3t-value".into(),
            tls: TlsMode::Insecure,
        }
    }

    /// A request URL is the base with the path and query set: the same URL parsing the whole
    /// text would give, for encoded segments, odd bytes and queries alike.
    #[test]
    fn request_urls_equal_parsing_the_whole_text() {
        for host in ["pve01", "::1", "10.0.0.5"] {
            let client = Client::new(&conn(host)).unwrap();
            for (path, params) in [
                ("/nodes", vec![]),
                (
                    "/nodes/pve01/tasks/UPID%3Apve01%3A00001234%3Aqmstop%3A101%3Aroot%40pam%3A/status",
                    vec![],
                ),
                (
                    "/nodes/pve01/storage/local/content",
                    vec![("content", "iso"), ("vmid", "101")],
                ),
                ("/access/users/a%20b%40pve", vec![("x", "a b&c=d/é")]),
                ("/cluster/resources", vec![("type", "vm")]),
            ] {
                let params: Vec<(String, String)> = params
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                let req = ApiRequest {
                    params: params.clone(),
                    ..ApiRequest::get(path)
                };
                let prepared = client.prepare(&req).unwrap();
                let mut text = format!("{}{path}", client.base_url());
                if !params.is_empty() {
                    text.push('?');
                    text.push_str(&serde_urlencoded::to_string(&params).unwrap());
                }
                assert_eq!(prepared.url, Url::parse(&text).unwrap(), "{host} {path}");
            }
        }
    }

    #[test]
    fn base_urls_bracket_ipv6() {
        assert_eq!(
            Client::new(&conn("pve01")).unwrap().base_url(),
            "https://pve01:8006/api2/json"
        );
        assert_eq!(
            Client::new(&conn("::1")).unwrap().base_url(),
            "https://[::1]:8006/api2/json"
        );
        assert_eq!(
            Client::new(&conn("[2001:db8::7]")).unwrap().base_url(),
            "https://[2001:db8::7]:8006/api2/json"
        );
    }

    #[test]
    fn bad_connections_are_config_errors_without_the_secret() {
        let mut bad = vec![conn(""), conn("pve01/x")];
        let mut c = conn("pve01");
        c.port = 0;
        bad.push(c);
        let mut c = conn("pve01");
        c.token_secret = "s3cr3t-value\n".into();
        bad.push(c);
        let mut c = conn("pve01");
        c.user = "svc@pam".into();
        bad.push(c);
        let mut c = conn("pve01");
        c.token_name = String::new();
        bad.push(c);
        let mut c = conn("pve01");
        c.tls = TlsMode::Fingerprint("nope".into());
        bad.push(c);
        for c in bad {
            let err = Client::new(&c).unwrap_err();
            assert_eq!(err.code(), "INVALID_CONFIGURATION", "{c:?}");
            assert!(!err.to_string().contains("s3cr3t"), "{err}");
        }
    }

    #[test]
    fn requests_are_prepared_per_method() {
        let client = Client::new(&conn("pve01")).unwrap();
        let get = client
            .prepare(
                &ApiRequest::get("/nodes/pve01/tasks")
                    .param("limit", "5")
                    .param("x", "a b&c"),
            )
            .unwrap();
        assert_eq!(
            get.url.as_str(),
            "https://pve01:8006/api2/json/nodes/pve01/tasks?limit=5&x=a+b%26c"
        );
        assert!(get.body.is_none());
        let post = client
            .prepare(&ApiRequest::post("/nodes/pve01/qemu/100/status/start").param("timeout", "30"))
            .unwrap();
        assert_eq!(post.body.as_deref(), Some("timeout=30"));
        assert_eq!(post.url.query(), None);
        let upid = client
            .prepare(&ApiRequest::get(
                "/nodes/pve01/tasks/UPID%3Apve01%3A1%3A/status",
            ))
            .unwrap();
        assert!(upid.url.path().ends_with("/UPID%3Apve01%3A1%3A/status"));
        let err = client
            .prepare(&ApiRequest::get("/nodes/../access"))
            .err()
            .unwrap();
        assert_eq!(err.code(), "TOOL_INPUT_REJECTED");
    }

    #[test]
    fn backoff_is_jittered_doubling_and_capped() {
        for _ in 0..200 {
            let first = backoff_delay(1);
            assert!(first >= Duration::from_millis(125) && first < Duration::from_millis(375));
            let second = backoff_delay(2);
            assert!(second >= Duration::from_millis(250) && second < Duration::from_millis(750));
            let late = backoff_delay(30);
            assert!(late >= Duration::from_millis(1250) && late < Duration::from_millis(3750));
        }
    }
}
