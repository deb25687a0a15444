//! HTTPS: the served certificate is the reported one, pinning it works,
//! pinning anything else fails, and its PEM works as a CA file.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::{Harness, PinnedVerifier, client_config, client_with, data};
use crate::{EmulatorOptions, fingerprint_of};

#[tokio::test]
async fn https_with_pinned_fingerprint() {
    let h = Harness::start(EmulatorOptions::default()).await;
    assert!(h.emu.base_url().starts_with("https://127.0.0.1:"));
    let fp = h.emu.cert_fingerprint().unwrap();
    assert_eq!(fp.len(), 95);
    assert_eq!(fp, fp.to_uppercase());

    // The harness client pins exactly this fingerprint.
    let (status, body) = h.get("/nodes").await;
    let nodes = data(status, &body).as_array().unwrap();
    assert_eq!(nodes[0]["ssl_fingerprint"], fp.as_str());

    // The PEM is the certificate the fingerprint was taken from.
    let pem = h.emu.cert_pem().unwrap();
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
    assert_eq!(fingerprint_of(der.as_ref()), fp);

    // Another pin is refused during the handshake.
    let other = client_with(client_config(Arc::new(PinnedVerifier::new("00:11"))), None);
    let err = other
        .get(h.url("/version"))
        .header("Authorization", h.emu.token_header())
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
}

#[tokio::test]
async fn pem_works_as_a_ca_file_for_every_name() {
    let h = Harness::start(EmulatorOptions::default()).await;
    let pem = h.emu.cert_pem().unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let client = client_with(config, None);
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("https://{host}:{}/api2/json/version", h.emu.port());
        let resp = client
            .get(url)
            .header("Authorization", h.emu.token_header())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{host}");
    }
}
