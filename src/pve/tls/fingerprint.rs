//! SHA-256 certificate fingerprints: computing, parsing and writing them in one form.
//!
//! Invariant: every fingerprint this server prints or compares is the SHA-256 digest of the DER
//! certificate, written `AB:CD:…` (upper-case, colon-separated, 32 bytes), the form Proxmox shows
//! in its certificate panel; anything that is not exactly 32 bytes of hex is refused.

use sha2::{Digest, Sha256};

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

/// The 32 bytes of a fingerprint written as `AB:CD:…` or `abcd…`; the error says what is wrong.
pub(super) fn parse_fingerprint(s: &str) -> Result<[u8; 32], String> {
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

/// `AB:CD:…`: upper-case hex bytes joined by colons.
pub(super) fn format_fingerprint(bytes: &[u8; 32]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
