//! Host key verification: a pinned SHA-256 fingerprint, else the known_hosts file.
//!
//! Invariant: the only outcomes are "trusted" and a refusal that names the offered
//! fingerprint. Nothing is ever written to known_hosts (no trust on first use); an unknown
//! key and a changed key are distinct errors, because the second may be an attack.

use std::path::Path;

use russh::keys::{HashAlg, PublicKey};

use super::{SshError, Target};

/// OpenSSH's `SHA256:<base64, no padding>` form of a key's fingerprint.
pub(super) fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// Decides whether `key`, offered by `target`, is trusted.
pub(super) fn verify(target: &Target, key: &PublicKey, known_hosts: &Path) -> Result<(), SshError> {
    let offered = fingerprint(key);
    if let Some(pin) = &target.host_key_pin {
        return if pin.trim() == offered {
            Ok(())
        } else {
            Err(SshError::HostKeyChanged {
                target: target.to_string(),
                fingerprint: offered,
                expected: format!("the pinned fingerprint is {}", pin.trim()),
            })
        };
    }
    let recorded = if known_hosts.exists() {
        russh::keys::known_hosts::known_host_keys_path(&target.host, target.port, known_hosts)
            .map_err(|e| SshError::KnownHosts {
                path: known_hosts.display().to_string(),
                reason: e.to_string(),
            })?
    } else {
        Vec::new()
    };
    if recorded.iter().any(|(_, k)| k.key_data() == key.key_data()) {
        return Ok(());
    }
    // russh's line numbers skip comment lines, so they are not shown.
    if let Some((_, old)) = recorded
        .iter()
        .find(|(_, k)| k.algorithm() == key.algorithm())
    {
        return Err(SshError::HostKeyChanged {
            target: target.to_string(),
            fingerprint: offered,
            expected: format!(
                "{} records {} for this host",
                known_hosts.display(),
                fingerprint(old)
            ),
        });
    }
    let algorithm = key.algorithm().as_str().to_owned();
    let key_file = if algorithm.contains("ed25519") {
        "ed25519"
    } else if algorithm.contains("rsa") {
        "rsa"
    } else {
        "ecdsa"
    };
    Err(SshError::HostKeyUnknown {
        target: target.to_string(),
        fingerprint: offered,
        algorithm,
        key_file: key_file.to_owned(),
        known_hosts: known_hosts.display().to_string(),
    })
}
