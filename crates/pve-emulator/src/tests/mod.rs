//! End-to-end tests of the emulator over real HTTP(S) with reqwest, and the
//! small harness they share.
//!
//! Invariant: every test talks to the emulator only through the network,
//! as the REST client under test will, so the tests pin wire behaviour.

mod api;
mod faults;
mod guests;
mod schema;
mod security;
mod tasks;
mod tls;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use rustls::DigitallySignedStruct;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::Value;

use super::{Emulator, EmulatorOptions, fingerprint_of};

/// Accepts exactly the certificate with the given fingerprint.
#[derive(Debug)]
pub(super) struct PinnedVerifier {
    /// Expected `AB:CD:...` fingerprint.
    pub fingerprint: String,
    provider: Arc<CryptoProvider>,
}

impl PinnedVerifier {
    /// A verifier pinned to `fingerprint`.
    pub fn new(fingerprint: &str) -> Self {
        Self {
            fingerprint: fingerprint.to_string(),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        }
    }
}

impl ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if fingerprint_of(end_entity.as_ref()) == self.fingerprint {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("fingerprint mismatch".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A rustls client config with the ring provider and the given verifier.
pub(super) fn client_config(verifier: Arc<dyn ServerCertVerifier>) -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth()
}

/// A reqwest client using `config` for HTTPS.
pub(super) fn client_with(
    config: rustls::ClientConfig,
    timeout: Option<Duration>,
) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .no_proxy();
    if let Some(t) = timeout {
        builder = builder.timeout(t);
    }
    builder.build().unwrap()
}

/// An emulator plus a client pinned to its certificate.
pub(super) struct Harness {
    /// The emulator under test.
    pub emu: Emulator,
    /// A client that trusts exactly its certificate.
    pub client: reqwest::Client,
}

impl Harness {
    /// Plain-HTTP emulator with default options except the task duration.
    pub async fn plain() -> Self {
        Self::start(EmulatorOptions {
            tls: false,
            task_duration: Duration::from_millis(400),
            ..EmulatorOptions::default()
        })
        .await
    }

    /// Starts an emulator with `opts` and a client pinned to its certificate.
    pub async fn start(opts: EmulatorOptions) -> Self {
        let emu = Emulator::start(opts).await.unwrap();
        let pin = emu.cert_fingerprint().unwrap_or_default();
        let client = client_with(client_config(Arc::new(PinnedVerifier::new(&pin))), None);
        Self { emu, client }
    }

    /// Full URL of an API path.
    pub fn url(&self, path: &str) -> String {
        format!("{}/api2/json{path}", self.emu.base_url())
    }

    /// Sends a request with the right token and returns status and JSON.
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        params: &[(&str, &str)],
    ) -> (u16, Value) {
        self.call_as(&self.emu.token_header(), method, path, params)
            .await
    }

    /// Sends a request with the `Authorization` value `auth` and returns status and JSON.
    pub async fn call_as(
        &self,
        auth: &str,
        method: reqwest::Method,
        path: &str,
        params: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut req;
        let encoded = serde_urlencoded::to_string(params).unwrap();
        if method == reqwest::Method::POST || method == reqwest::Method::PUT {
            req = self.client.request(method, self.url(path));
            req = req
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(encoded);
        } else {
            let url = if params.is_empty() {
                self.url(path)
            } else {
                format!("{}?{encoded}", self.url(path))
            };
            req = self.client.request(method, url);
        }
        let resp = req.header("Authorization", auth).send().await.unwrap();
        let status = resp.status().as_u16();
        let reason = resp
            .extensions()
            .get::<hyper::ext::ReasonPhrase>()
            .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned());
        let body = resp.bytes().await.unwrap();
        let mut json: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body)));
        // pveproxy puts the error text in the reason phrase; surface it as `message`
        // so assertions read one place.
        if let (Some(reason), Some(obj)) = (reason, json.as_object_mut()) {
            assert!(
                !obj.contains_key("message"),
                "pveproxy bodies carry no message"
            );
            obj.insert("message".into(), Value::String(format!("{reason}\n")));
        }
        (status, json)
    }

    /// Authenticated GET without parameters.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, &[]).await
    }

    /// Authenticated GET with query parameters.
    pub async fn get_q(&self, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, query).await
    }

    /// Authenticated POST with form parameters.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, form).await
    }

    /// GET with a specific Authorization header (or none).
    pub async fn get_with_auth(&self, path: &str, auth: Option<&str>) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        req.send().await.unwrap()
    }
}

/// Percent-encodes a path segment the way a careful client does.
pub(super) fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

/// The `data` member of a success envelope, asserting its shape.
pub(super) fn data(status: u16, body: &Value) -> &Value {
    assert_eq!(status, 200, "unexpected status, body {body}");
    body.get("data").unwrap()
}

/// The `message` of an error envelope, asserting `data` is null.
pub(super) fn message(body: &Value) -> &str {
    assert!(body["data"].is_null(), "error with data: {body}");
    body["message"].as_str().unwrap()
}
