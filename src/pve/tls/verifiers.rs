//! The certificate verifiers behind each TLS mode, and the errors they report.
//!
//! Invariants: the fingerprint pin ([`PinnedLeaf`]) accepts exactly one leaf certificate yet still
//! checks the handshake signatures, so a server must hold that certificate's private key; the
//! system store ([`SystemRoots`]) is loaded at the first handshake and nothing is accepted
//! without it; a pin mismatch or an untrusted certificate is reported with the SHA-256
//! fingerprint the server presented ([`ReportFingerprint`]), which is public and lets the
//! operator pin it after checking it out of band.

use std::fmt;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, Error as TlsError, OtherError,
    SignatureScheme,
};
use sha2::{Digest, Sha256};

use super::fingerprint::{certificate_fingerprint, format_fingerprint};

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
pub(super) struct PinnedLeaf {
    pub(super) expected: [u8; 32],
    pub(super) provider: Arc<CryptoProvider>,
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
pub(super) struct AcceptAny {
    pub(super) provider: Arc<CryptoProvider>,
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
pub(super) struct SystemRootsUnavailable {
    pub(super) cause: String,
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
pub(super) struct SystemRoots {
    pub(super) provider: Arc<CryptoProvider>,
    pub(super) platform: OnceLock<Result<rustls_platform_verifier::Verifier, String>>,
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
pub(super) struct ReportFingerprint<V: ServerCertVerifier> {
    pub(super) inner: Arc<V>,
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
    use super::super::fingerprint::parse_fingerprint;
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
}
