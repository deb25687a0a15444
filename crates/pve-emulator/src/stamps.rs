//! Time and digest stamps every part of the emulated state writes.
//!
//! Invariant: a leaf module — it imports nothing from the emulator, so the
//! state modules and the task model can all use it without importing each
//! other.

use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// Seconds since the Unix epoch, as Proxmox timestamps are.
pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A 40-hex-digit digest of a configuration text, the length Proxmox's
/// SHA-1 digests have.
pub(super) fn digest_of(text: &str) -> String {
    let full = hex::encode(Sha256::digest(text.as_bytes()));
    full[..40].to_string()
}
