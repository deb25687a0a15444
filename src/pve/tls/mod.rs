//! TLS settings for the Proxmox client: one rustls `ClientConfig` per [`TlsMode`].
//!
//! Invariants: every config uses the explicit *ring* provider (never a process-wide default) and
//! offers only HTTP/1.1; a CA file is read when the config is built, so a bad file is a start-up
//! error; a machine with no system store at all is a start-up error too. The verifiers each mode
//! uses, and what they guarantee, are in `verifiers`; fingerprints are written by `fingerprint`.

mod fingerprint;
mod verifiers;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::{ClientConfig, RootCertStore};

use super::TlsMode;
use super::error::PveError;

pub use fingerprint::{certificate_fingerprint, normalize_fingerprint};
pub(crate) use verifiers::describe_tls_error;

use fingerprint::parse_fingerprint;
use verifiers::{AcceptAny, PinnedLeaf, ReportFingerprint, SystemRoots, SystemRootsUnavailable};

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

#[cfg(test)]
mod tests {
    use rustls::Error as TlsError;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

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
