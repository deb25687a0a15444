//! TLS material for the emulator: a fresh self-signed certificate per start
//! and the rustls server configuration built on it.
//!
//! Invariant: the certificate served on the wire is exactly the one whose
//! fingerprint and PEM the [`super::Emulator`] reports, so a client pinning
//! that fingerprint (the way Proxmox users pin `pveproxy-ssl.pem`) connects,
//! and any other certificate is refused. The crypto provider is always
//! `ring`, installed explicitly on the config rather than read from a process
//! default, because the embedding process may never install one.

use std::sync::Arc;

use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sha2::{Digest, Sha256};

use super::EmulatorError;

/// Host names and addresses the certificate is valid for: everything the
/// emulator can be reached by on the loopback interface.
const SUBJECT_ALT_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// A generated certificate, its key, and the derived identifiers.
pub(super) struct TlsMaterial {
    /// Leaf certificate in DER, as sent in the handshake.
    pub cert_der: CertificateDer<'static>,
    /// PKCS#8 private key in DER.
    key_der: Vec<u8>,
    /// The same certificate in PEM, for tests that use it as a CA file.
    pub cert_pem: String,
    /// SHA-256 of `cert_der`, formatted the way Proxmox displays it.
    pub fingerprint: String,
}

impl TlsMaterial {
    /// Generates a new key pair and self-signed certificate.
    pub fn generate() -> Result<Self, EmulatorError> {
        let key = KeyPair::generate().map_err(|e| EmulatorError::Certificate(e.to_string()))?;
        let sans: Vec<String> = SUBJECT_ALT_NAMES.iter().map(|s| s.to_string()).collect();
        let mut params =
            CertificateParams::new(sans).map_err(|e| EmulatorError::Certificate(e.to_string()))?;
        // Mimic the subject of a Proxmox node certificate so that anything
        // displaying it looks familiar.
        params
            .distinguished_name
            .push(DnType::OrganizationName, "PVE Cluster Node");
        params.distinguished_name.push(DnType::CommonName, "pve01");
        // Explicit serverAuth so that strict verifiers using the PEM as a
        // trust anchor accept the leaf.
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .self_signed(&key)
            .map_err(|e| EmulatorError::Certificate(e.to_string()))?;
        let cert_der = cert.der().clone();
        Ok(Self {
            fingerprint: fingerprint_of(&cert_der),
            cert_pem: cert.pem(),
            cert_der,
            key_der: key.serialize_der(),
        })
    }

    /// Builds the rustls server configuration serving this certificate over
    /// HTTP/1.1 only (pveproxy does not speak HTTP/2).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, EmulatorError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| EmulatorError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![self.cert_der.clone()], key)
            .map_err(|e| EmulatorError::Tls(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// SHA-256 of a DER certificate as uppercase, colon-separated hex
/// (`AB:CD:...`), the format of Proxmox's `fingerprint` fields.
pub fn fingerprint_of(der: &[u8]) -> String {
    let digest = Sha256::digest(der);
    digest
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_uppercase_colon_hex() {
        let fp = fingerprint_of(b"abc");
        assert_eq!(fp.len(), 32 * 3 - 1);
        assert!(fp.starts_with("BA:78:16:BF"));
        assert!(fp.chars().all(|c| c == ':' || c.is_ascii_hexdigit()));
        assert_eq!(fp, fp.to_uppercase());
    }

    #[test]
    fn generated_material_is_consistent() {
        let m = TlsMaterial::generate().unwrap();
        assert_eq!(m.fingerprint, fingerprint_of(m.cert_der.as_ref()));
        assert!(m.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        m.server_config().unwrap();
    }
}
