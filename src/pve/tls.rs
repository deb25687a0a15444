//! TLS settings for the Proxmox client: one rustls `ClientConfig` per [`TlsMode`].
//!
//! Invariants: every config uses the explicit *ring* provider (never a process-wide default); the
//! fingerprint pin accepts exactly one leaf certificate yet still checks the handshake signatures,
//! so a server must hold that certificate's private key; a pin mismatch or an untrusted
//! certificate is reported with the SHA-256 fingerprint the server presented, which is public and
//! lets the operator pin it after checking it out of band.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, DistinguishedName, Error as TlsError,
    OtherError, RootCertStore, SignatureScheme,
};
use sha2::{Digest, Sha256};

use super::TlsMode;
use super::error::PveError;

/// SHA-256 fingerprint of a DER certificate, as `AB:CD:…` (upper-case, colon-separated), the form
/// Proxmox shows in its certificate panel.
pub fn certificate_fingerprint(der: &[u8]) -> String {
    format_fingerprint(&Sha256::digest(der).into())
}

/// Normalises a SHA-256 fingerprint written as `AB:CD:…` or `abcd…` (any case, optional colons)
/// to `AB:CD:…`; fails unless it is exactly 32 bytes of hex.
pub fn normalize_fingerprint(s: &str) -> Result<String, String> {
    parse_fingerprint(s).map(|bytes| format_fingerprint(&bytes))
}

fn parse_fingerprint(s: &str) -> Result<[u8; 32], String> {
    let hex_digits: String = s.trim().chars().filter(|c| *c != ':').collect();
    let bytes = hex::decode(&hex_digits).map_err(|_| {
        "the TLS fingerprint must be hexadecimal, e.g. AB:CD:… (SHA-256 of the certificate)"
            .to_owned()
    })?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "the TLS fingerprint must be a SHA-256 digest (32 bytes, 64 hex digits); got {} bytes",
            bytes.len()
        )
    })
}

fn format_fingerprint(bytes: &[u8; 32]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Builds the rustls client configuration for `mode`. Reads the CA file (CaFile) from disk at
/// once, so a bad file is a start-up error; the system store (Verify) is read at the first
/// handshake. Never touches the network.
pub(crate) fn client_config(mode: &TlsMode) -> Result<ClientConfig, PveError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        // The system store (a bundle and ~150 files on Debian) is read at the first
        // handshake, never before `initialize` and `tools/list` are answered.
        TlsMode::Verify => {
            system_store_present()?;
            Arc::new(ReportFingerprint {
                inner: Arc::new(SystemRoots {
                    provider: provider.clone(),
                    platform: OnceLock::new(),
                }),
            })
        }
        TlsMode::CaFile(path) => {
            let roots = load_ca_file(path)?;
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| {
                        PveError::Config(format!("cannot use the CA file {}: {e}", path.display()))
                    })?;
            Arc::new(ReportFingerprint { inner: webpki })
        }
        TlsMode::Fingerprint(fp) => Arc::new(PinnedLeaf {
            expected: parse_fingerprint(fp).map_err(PveError::Config)?,
            provider: provider.clone(),
        }),
        TlsMode::Insecure => Arc::new(AcceptAny {
            provider: provider.clone(),
        }),
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PveError::Config(format!("TLS setup failed: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // pveproxy speaks HTTP/1.1 only; saying so avoids a useless h2 negotiation.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A start-up check that costs a few `stat` calls: some place the system store lives
/// (`SSL_CERT_FILE`/`SSL_CERT_DIR`, or the distribution's bundle or folder) exists, so a
/// machine with none is a configuration error before `initialize`, as it was when the store
/// was read at start. What those places hold is read at the first handshake.
fn system_store_present() -> Result<(), PveError> {
    #[cfg(unix)]
    {
        let found = openssl_probe::probe();
        if found.cert_file.is_none() && found.cert_dir.is_empty() {
            return Err(PveError::Config(
                SystemRootsUnavailable {
                    cause: "no CA bundle or folder on this machine".to_owned(),
                }
                .to_string(),
            ));
        }
    }
    Ok(())
}

fn load_ca_file(path: &Path) -> Result<RootCertStore, PveError> {
    let pem = std::fs::read(path).map_err(|e| {
        PveError::Config(format!("cannot read the CA file {}: {e}", path.display()))
    })?;
    let certs = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            PveError::Config(format!(
                "the CA file {} is not valid PEM: {e}",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(PveError::Config(format!(
            "the CA file {} contains no PEM certificate",
            path.display()
        )));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert).map_err(|e| {
            PveError::Config(format!(
                "the CA file {} holds a certificate rustls cannot use: {e}",
                path.display()
            ))
        })?;
    }
    Ok(roots)
}

/// The server's leaf certificate differs from the pinned one.
#[derive(Debug)]
struct FingerprintMismatch {
    expected: String,
    presented: String,
}

impl fmt::Display for FingerprintMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "certificate fingerprint mismatch: expected fingerprint {}, server presented {}",
            self.expected, self.presented
        )
    }
}

impl std::error::Error for FingerprintMismatch {}

/// Chain or hostname verification failed; carries the presented certificate's fingerprint.
#[derive(Debug)]
struct UntrustedCertificate {
    cause: TlsError,
    presented: String,
}

impl fmt::Display for UntrustedCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cause = match &self.cause {
            TlsError::InvalidCertificate(inner) => inner.to_string(),
            other => other.to_string(),
        };
        write!(
            f,
            "server certificate not trusted ({cause}); the server presented a certificate with \
             SHA-256 fingerprint {}",
            self.presented
        )
    }
}

impl std::error::Error for UntrustedCertificate {}

/// A user-facing description of a handshake failure; our own pin/trust errors are shown with
/// their fingerprints instead of rustls' `Debug` rendering of them.
pub(crate) fn describe_tls_error(err: &TlsError) -> String {
    if let TlsError::InvalidCertificate(CertificateError::Other(other)) = err {
        if let Some(mismatch) = other.0.downcast_ref::<FingerprintMismatch>() {
            return mismatch.to_string();
        }
        if let Some(untrusted) = other.0.downcast_ref::<UntrustedCertificate>() {
            return untrusted.to_string();
        }
        if let Some(store) = other.0.downcast_ref::<SystemRootsUnavailable>() {
            return store.to_string();
        }
    }
    match err {
        TlsError::AlertReceived(alert) => {
            format!("the server aborted the TLS handshake (alert {alert:?})")
        }
        TlsError::InvalidMessage(_) => format!(
            "the server did not speak TLS ({err}); is this port plain HTTP or another service?"
        ),
        other => format!("TLS handshake failed: {other}"),
    }
}

fn certificate_error(err: impl std::error::Error + Send + Sync + 'static) -> TlsError {
    TlsError::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(err))))
}

/// Pin mode: exactly one leaf certificate, identified by its SHA-256 digest.
///
/// Chain, hostname and validity dates are deliberately ignored (Proxmox nodes use self-signed
/// certificates, often reached by IP); the handshake signatures are still verified so the peer
/// must own the pinned certificate's key.
#[derive(Debug)]
struct PinnedLeaf {
    expected: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedLeaf {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        let presented: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if presented == self.expected {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(certificate_error(FingerprintMismatch {
                expected: format_fingerprint(&self.expected),
                presented: format_fingerprint(&presented),
            }))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls12_signature(
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
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Insecure mode: any certificate and any handshake signature is accepted (the user opted in).
#[derive(Debug)]
struct AcceptAny {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The system's CA certificates could not be loaded (at the first handshake).
#[derive(Debug)]
struct SystemRootsUnavailable {
    cause: String,
}

impl fmt::Display for SystemRootsUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not load the system's CA certificates ({}); give a CA file \
             (PROXMOX_TLS_CA_FILE) or pin the certificate fingerprint (PROXMOX_TLS_FINGERPRINT)",
            self.cause
        )
    }
}

impl std::error::Error for SystemRootsUnavailable {}

fn is_store_failure(err: &TlsError) -> bool {
    matches!(err, TlsError::InvalidCertificate(CertificateError::Other(other))
        if other.0.downcast_ref::<SystemRootsUnavailable>().is_some())
}

/// Verify mode: the platform verifier over the system store, built at its first use and then
/// kept for the life of the client. A store that cannot be loaded fails that handshake (and
/// every later one) with [`SystemRootsUnavailable`]; nothing is ever accepted without it.
#[derive(Debug)]
struct SystemRoots {
    provider: Arc<CryptoProvider>,
    platform: OnceLock<Result<rustls_platform_verifier::Verifier, String>>,
}

impl SystemRoots {
    fn platform(&self) -> Result<&rustls_platform_verifier::Verifier, TlsError> {
        self.platform
            .get_or_init(|| {
                rustls_platform_verifier::Verifier::new(self.provider.clone())
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|cause| {
                certificate_error(SystemRootsUnavailable {
                    cause: cause.clone(),
                })
            })
    }
}

impl ServerCertVerifier for SystemRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        self.platform()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.platform()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.platform()?.verify_tls13_signature(message, cert, dss)
    }

    /// The provider's schemes, which are the platform verifier's (it is built from the same
    /// provider), so the hello is written without loading the store.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Wraps a chain-verifying verifier so a rejection names the presented certificate's fingerprint.
#[derive(Debug)]
struct ReportFingerprint<V: ServerCertVerifier> {
    inner: Arc<V>,
}

impl<V: ServerCertVerifier> ServerCertVerifier for ReportFingerprint<V> {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .map_err(|cause| {
                if is_store_failure(&cause) {
                    // Not the certificate's fault: say what to fix, not that it is untrusted.
                    return cause;
                }
                certificate_error(UntrustedCertificate {
                    cause,
                    presented: certificate_fingerprint(end_entity.as_ref()),
                })
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed() -> (CertificateDer<'static>, String) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        (cert.cert.der().clone(), cert.cert.pem())
    }

    fn verify(v: &dyn ServerCertVerifier, der: &CertificateDer<'_>) -> Result<(), TlsError> {
        let name = ServerName::try_from("localhost").unwrap();
        v.verify_server_cert(der, &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    #[test]
    fn fingerprints_normalise() {
        let lower = "ab".repeat(32);
        let want = vec!["AB"; 32].join(":");
        assert_eq!(normalize_fingerprint(&lower).unwrap(), want);
        assert_eq!(normalize_fingerprint(&want.to_lowercase()).unwrap(), want);
        assert_eq!(normalize_fingerprint(&format!(" {want} ")).unwrap(), want);
        assert!(
            normalize_fingerprint("AB:CD")
                .unwrap_err()
                .contains("32 bytes")
        );
        assert!(normalize_fingerprint(&"zz".repeat(32)).is_err());
        assert!(normalize_fingerprint("").is_err());
        assert!(normalize_fingerprint(&"ab".repeat(33)).is_err());
    }

    #[test]
    fn a_system_store_that_cannot_be_loaded_fails_the_handshake_naming_the_fix() {
        let (der, _) = self_signed();
        let platform = OnceLock::new();
        let _ = platform.set(Err(
            "No CA certificates were loaded from the system".to_owned()
        ));
        let roots = ReportFingerprint {
            inner: Arc::new(SystemRoots {
                provider: Arc::new(rustls::crypto::ring::default_provider()),
                platform,
            }),
        };
        let err = verify(&roots, &der).unwrap_err();
        let text = describe_tls_error(&err);
        assert!(
            text.starts_with("could not load the system's CA certificates")
                && text.contains("PROXMOX_TLS_CA_FILE")
                && !text.contains("not trusted"),
            "{text}"
        );
        assert!(!roots.supported_verify_schemes().is_empty());
    }

    #[test]
    fn pin_accepts_only_the_pinned_leaf() {
        let (der, _) = self_signed();
        let (other, _) = self_signed();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pin = PinnedLeaf {
            expected: parse_fingerprint(&certificate_fingerprint(&der)).unwrap(),
            provider,
        };
        assert!(verify(&pin, &der).is_ok());
        let err = verify(&pin, &other).unwrap_err();
        let text = describe_tls_error(&err);
        assert!(text.contains("expected fingerprint"), "{text}");
        assert!(text.contains(&certificate_fingerprint(&other)), "{text}");
        assert!(!pin.supported_verify_schemes().is_empty());
    }

    #[test]
    fn ca_file_mode_trusts_the_file_and_reports_strangers() {
        let (der, pem) = self_signed();
        let (other, _) = self_signed();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, pem).unwrap();
        let roots = load_ca_file(&path).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = ReportFingerprint {
            inner: WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap(),
        };
        assert!(verify(&verifier, &der).is_ok());
        let text = describe_tls_error(&verify(&verifier, &other).unwrap_err());
        assert!(text.contains("not trusted"), "{text}");
        assert!(text.contains(&certificate_fingerprint(&other)), "{text}");
        assert!(client_config(&TlsMode::CaFile(path)).is_ok());
    }

    #[test]
    fn bad_settings_are_config_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        for mode in [
            TlsMode::CaFile(missing),
            TlsMode::CaFile(empty),
            TlsMode::Fingerprint("12:34".into()),
        ] {
            let err = client_config(&mode).unwrap_err();
            assert!(matches!(err, PveError::Config(_)), "{mode:?}: {err:?}");
        }
        assert!(client_config(&TlsMode::Insecure).is_ok());
        assert!(client_config(&TlsMode::Fingerprint("ab".repeat(32))).is_ok());
    }
}
