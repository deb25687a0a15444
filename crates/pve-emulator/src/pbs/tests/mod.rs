//! End-to-end tests of the PBS emulator over real HTTPS with reqwest, and the harness they
//! share.
//!
//! Invariant: the tests talk to the emulator only through the network (plus its test
//! accessors), as a PBS client will, so they pin wire behaviour; the client trusts exactly
//! the emulator's certificate.

mod ops;
mod schema;
mod store;

use std::sync::Arc;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde_json::Value;

use super::{PbsEmulator, PbsOptions, PbsSnapshotSeed};
use crate::tests::{PinnedVerifier, client_config, client_with};

/// A PBS emulator plus a client pinned to its certificate.
pub(super) struct Harness {
    /// The emulator under test.
    pub emu: PbsEmulator,
    client: reqwest::Client,
}

impl Harness {
    /// An empty emulator with default options (HTTPS, 300 ms tasks).
    pub async fn new() -> Self {
        Self::start(PbsOptions::default()).await
    }

    /// An emulator started with `opts`.
    pub async fn start(opts: PbsOptions) -> Self {
        let emu = PbsEmulator::start(opts).await.unwrap();
        let pin = emu.cert_fingerprint().unwrap_or_default();
        let client = client_with(client_config(Arc::new(PinnedVerifier::new(&pin))), None);
        Self { emu, client }
    }

    /// The `Authorization` value the emulator accepts.
    pub fn auth(&self) -> String {
        format!(
            "PBSAPIToken={}:{}",
            self.emu.token_id(),
            self.emu.token_secret()
        )
    }

    /// Sends a request with `auth` (none when `None`); status and body text.
    pub async fn send_as(
        &self,
        auth: Option<&str>,
        method: Method,
        path: &str,
        params: &[(&str, &str)],
    ) -> (u16, String, String) {
        let url = format!("{}/api2/json{path}", self.emu.base_url());
        let encoded = serde_urlencoded::to_string(params).unwrap();
        let mut req = if method == Method::POST || method == Method::PUT {
            self.client
                .request(method, url)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(encoded)
        } else if params.is_empty() {
            self.client.request(method, url)
        } else {
            self.client.request(method, format!("{url}?{encoded}"))
        };
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, resp.text().await.unwrap(), content_type)
    }

    /// An authenticated request: status and body text.
    pub async fn send(&self, method: Method, path: &str, params: &[(&str, &str)]) -> (u16, String) {
        let (status, body, _) = self.send_as(Some(&self.auth()), method, path, params).await;
        (status, body)
    }

    /// An authenticated request that must succeed: the whole envelope.
    pub async fn ok_envelope(&self, method: Method, path: &str, params: &[(&str, &str)]) -> Value {
        let (status, body) = self.send(method.clone(), path, params).await;
        assert_eq!(status, 200, "{method} {path} {params:?}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// An authenticated request that must succeed: its `data`.
    pub async fn ok(&self, method: Method, path: &str, params: &[(&str, &str)]) -> Value {
        self.ok_envelope(method, path, params).await["data"].take()
    }

    /// Polls a task's status until it is stopped (at most 5 s); the final status.
    pub async fn wait(&self, upid: &str) -> Value {
        let path = format!("/nodes/pbs01/tasks/{}/status", enc(upid));
        for _ in 0..100 {
            let status = self.ok(Method::GET, &path, &[]).await;
            if status["status"] == "stopped" {
                return status;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("task {upid} did not stop");
    }
}

/// Percent-encodes a path segment the way a careful client does.
pub(super) fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

/// A plain snapshot seed in `store`: never verified, unprotected, intact.
pub(super) fn seed(store: &str, ns: &str, kind: &str, id: &str, time: i64) -> PbsSnapshotSeed {
    PbsSnapshotSeed {
        store: store.into(),
        ns: ns.into(),
        backup_type: kind.into(),
        backup_id: id.into(),
        backup_time: time,
        size: 1 << 30,
        verified: None,
        protected: false,
        corrupt: false,
        comment: None,
    }
}
