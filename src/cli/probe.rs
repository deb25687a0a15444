//! Connectivity probes for `setup` and `doctor`: one API call turned into a diagnosis, and a
//! certificate probe that reads the server's certificate (fingerprint, expiry) without trusting it.
//!
//! Invariants: the certificate probe sends no credentials and no HTTP request — it completes a
//! TLS handshake only to see the certificate; a diagnosis never contains the token secret.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::report::Item;
use crate::config::{ProxmoxConfig, TlsSetting};
use crate::pve::{self, ApiRequest, PveError};

/// How long one probe may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The REST connection for a validated config.
pub fn connection(p: &ProxmoxConfig) -> pve::Connection {
    pve::Connection {
        host: p.host.clone(),
        port: p.port,
        user: p.user.clone(),
        realm: p.realm.clone(),
        token_name: p.token_name.clone(),
        token_secret: p.token_secret.expose().to_owned(),
        tls: match &p.tls {
            TlsSetting::Verify => pve::TlsMode::Verify,
            TlsSetting::CaFile(path) => pve::TlsMode::CaFile(path.clone()),
            TlsSetting::Fingerprint(fp) => pve::TlsMode::Fingerprint(fp.clone()),
            TlsSetting::Insecure => pve::TlsMode::Insecure,
        },
    }
}

/// One `GET`, no retries, [`PROBE_TIMEOUT`].
pub async fn get(client: &pve::Client, path: &str) -> Result<Value, PveError> {
    let req = ApiRequest::get(path)
        .retry(pve::RetryPolicy::Never)
        .timeout(PROBE_TIMEOUT);
    client.call(req, &CancellationToken::new()).await.result
}

/// A RED item for a failed call, with the reference's diagnoses (401 → privilege separation,
/// 403 → ACL, TLS → the fingerprint to pin, DNS, timeout, refused, not Proxmox).
pub async fn diagnose(check: &str, p: &ProxmoxConfig, err: &PveError) -> Item {
    let account = format!("{}@{}", p.user, p.realm);
    let (detail, fix) = match err.status() {
        Some(401) => (
            format!(
                "authentication failed (HTTP 401) for token {account}!{}",
                p.token_name
            ),
            format!(
                "check the token id and secret; a token created with privilege separation has no \
                 permissions of its own: `pveum user token modify {account} {} --privsep 0` \
                 (or re-create it with `nandi-proxmox-mcp bootstrap`)",
                p.token_name
            ),
        ),
        Some(403) => (
            format!("permission denied (HTTP 403): {err}"),
            format!(
                "grant the token's user a role on /: run the `pveum` commands printed by \
                 `nandi-proxmox-mcp bootstrap --user {} --realm {}` (they create a role with \
                 exactly the privileges the tools need)",
                p.user, p.realm
            ),
        ),
        _ => match err {
            PveError::Tls(msg) => match certificate(&p.host, p.port).await {
                Ok(cert) => {
                    // The client's message ends with the presented fingerprint; the fix line
                    // carries it (once), inside the flag to copy.
                    let cause = msg
                        .split_once("; the server presented a certificate")
                        .map_or(msg.as_str(), |(cause, _)| cause);
                    let fix = match &p.tls {
                        TlsSetting::Fingerprint(pinned)
                            if !pinned.eq_ignore_ascii_case(&cert.fingerprint) =>
                        {
                            pin_changed_fix(&cert.fingerprint)
                        }
                        _ => pin_fix(&cert.fingerprint),
                    };
                    (format!("TLS failed: {cause}"), fix)
                }
                Err(e) => (
                    format!("TLS failed: {msg}"),
                    unreadable_certificate_fix(p, &e),
                ),
            },
            PveError::Dns => (
                format!("the host name `{}` could not be resolved", p.host),
                "check its spelling and your DNS or VPN, or use the node's IP address".into(),
            ),
            PveError::Timeout => (
                format!(
                    "no answer from {}:{} within {}s",
                    p.host,
                    p.port,
                    PROBE_TIMEOUT.as_secs()
                ),
                "check that the node is reachable from here (VPN, firewall, port 8006)".into(),
            ),
            PveError::ConnectionRefused => (
                format!("connection refused by {}:{}", p.host, p.port),
                "check the port (default 8006) and that pveproxy runs: `systemctl status pveproxy`"
                    .into(),
            ),
            PveError::HostUnreachable => (
                format!("{} is unreachable", p.host),
                "check the network route, VPN and firewall".into(),
            ),
            PveError::InvalidResponse { .. } => (
                format!("something other than the Proxmox API answered: {err}"),
                "check the host and port: pveproxy listens on 8006 with HTTPS".into(),
            ),
            other => (
                other.to_string(),
                other
                    .hint()
                    .unwrap_or_else(|| "check the connection settings".into()),
            ),
        },
    };
    Item::red(check, detail, Some(fix))
}

/// How to trust a self-signed node: pin the fingerprint it presents, or install its CA.
pub fn pin_fix(fingerprint: &str) -> String {
    format!(
        "pin the node's certificate: add `--tls-fingerprint {fingerprint}` to the setup \
         command (tlsFingerprint in the instance file) once that fingerprint matches `pvenode \
         cert info` on the node (or its Certificates panel); or install the node's CA: \
         `--tls-ca-file pve-root-ca.pem` (tlsCaFile), a copy of /etc/pve/pve-root-ca.pem from \
         the node"
    )
}

/// A pinned certificate that changed: re-pin only after checking on the node.
pub fn pin_changed_fix(fingerprint: &str) -> String {
    format!(
        "if the node's certificate was renewed on purpose (check with `pvenode cert info` on the \
         node), pin the new one: `--tls-fingerprint {fingerprint}` (tlsFingerprint in the \
         instance file); if not, something between here and the node answers in its place — do \
         not pin it"
    )
}

/// The certificate could not even be read: the address is wrong or it is not the API.
pub fn unreadable_certificate_fix(p: &ProxmoxConfig, err: &str) -> String {
    format!(
        "could not read the certificate either ({err}): check that {}:{} is the node's API \
         (pveproxy, HTTPS); once it answers, pin its certificate with `--tls-fingerprint` \
         (tlsFingerprint) or install its CA with `--tls-ca-file` (tlsCaFile)",
        p.host, p.port
    )
}

/// What the server's certificate says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// SHA-256 of the leaf certificate's DER, `AB:CD:…`.
    pub fingerprint: String,
    /// End of validity, seconds since the Unix epoch (when the certificate could be parsed).
    pub not_after: Option<i64>,
    /// Subject, e.g. `CN=pve01.example`.
    pub subject: Option<String>,
}

/// Reads the leaf certificate `host:port` presents (handshake only; nothing is trusted or sent).
pub async fn certificate(host: &str, port: u16) -> Result<CertInfo, String> {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    tokio::task::spawn_blocking(move || certificate_blocking(&host, port))
        .await
        .map_err(|e| format!("probe task failed: {e}"))?
}

fn certificate_blocking(host: &str, port: u16) -> Result<CertInfo, String> {
    let captured = Arc::new(Capture::default());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(captured.clone())
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_owned()).map_err(|e| format!("bad host: {e}"))?;
    let mut conn =
        rustls::ClientConnection::new(Arc::new(config), name).map_err(|e| e.to_string())?;
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let mut sock =
        TcpStream::connect_timeout(&addr, PROBE_TIMEOUT).map_err(|e| format!("connect: {e}"))?;
    sock.set_read_timeout(Some(PROBE_TIMEOUT))
        .map_err(|e| e.to_string())?;
    sock.set_write_timeout(Some(PROBE_TIMEOUT))
        .map_err(|e| e.to_string())?;
    while conn.is_handshaking() {
        match conn.complete_io(&mut sock) {
            Ok(_) => {}
            Err(e) => {
                if captured.der().is_some() {
                    break;
                }
                return Err(format!("TLS handshake: {e}"));
            }
        }
    }
    // Close politely; errors here do not matter, the certificate is what we came for.
    conn.send_close_notify();
    let _ = conn.complete_io(&mut sock);
    let _ = sock.flush();
    let mut sink = [0u8; 1];
    let _ = sock.read(&mut sink);
    let der = captured.der().ok_or("the server sent no certificate")?;
    Ok(describe_certificate(&der))
}

/// Fingerprint, expiry and subject of a DER certificate.
pub fn describe_certificate(der: &[u8]) -> CertInfo {
    let parsed = x509_parser::parse_x509_certificate(der).ok();
    CertInfo {
        fingerprint: pve::certificate_fingerprint(der),
        not_after: parsed
            .as_ref()
            .map(|(_, c)| c.validity().not_after.timestamp()),
        subject: parsed.as_ref().map(|(_, c)| c.subject().to_string()),
    }
}

/// A verifier that accepts anything and remembers the leaf certificate.
#[derive(Debug, Default)]
struct Capture {
    leaf: Mutex<Option<Vec<u8>>>,
}

impl Capture {
    fn der(&self) -> Option<Vec<u8>> {
        self.leaf.lock().ok().and_then(|l| l.clone())
    }
}

impl ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut leaf) = self.leaf.lock() {
            *leaf = Some(end_entity.as_ref().to_vec());
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_expiry_and_fingerprint_are_read() {
        let mut params = rcgen::CertificateParams::new(vec!["pve01".to_owned()]).unwrap();
        params.not_after = rcgen::date_time_ymd(2001, 2, 3);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let info = describe_certificate(cert.der());
        assert_eq!(info.not_after, Some(981_158_400));
        assert_eq!(info.fingerprint, pve::certificate_fingerprint(cert.der()));
        assert!(
            describe_certificate(b"not a certificate")
                .not_after
                .is_none()
        );
    }
}
