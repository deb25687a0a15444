//! The keys that seal task ids this server issues (guest-program ids, cluster-bound ids).
//!
//! Each use has its own domain, so a seal is never valid for another use (nor as an approval
//! state). The parent secret is the shared approval key when configured — replicas sharing it
//! accept each other's ids — else one random secret of this process. Invariant: the process
//! secret comes from the operating system's generator, and the process stops rather than seal
//! with a predictable key when that generator fails.

use std::sync::LazyLock;

use rand::RngCore;
use ring::hmac;

/// This process's secret, used when no shared key is configured.
static PROCESS_KEY: LazyLock<[u8; 32]> = LazyLock::new(|| {
    let mut key = [0u8; 32];
    // `rand`'s generator is seeded by the OS; it panics instead of handing out a weak key.
    rand::rng().fill_bytes(&mut key);
    key
});

/// The key of `domain`: derived from `shared` when set, else from this process's secret.
pub fn domain_key(shared: Option<&[u8]>, domain: &[u8]) -> hmac::Key {
    let parent = hmac::Key::new(hmac::HMAC_SHA256, shared.unwrap_or(PROCESS_KEY.as_slice()));
    let derived = hmac::sign(&parent, domain);
    hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_and_parents_give_different_keys() {
        let tag = |key: &hmac::Key| hmac::sign(key, b"id").as_ref().to_vec();
        let a = tag(&domain_key(Some(b"shared-secret"), b"a"));
        assert_eq!(a, tag(&domain_key(Some(b"shared-secret"), b"a")));
        assert_ne!(a, tag(&domain_key(Some(b"shared-secret"), b"b")));
        assert_ne!(a, tag(&domain_key(Some(b"other-secret"), b"a")));
        assert_ne!(a, tag(&domain_key(None, b"a")));
        assert_ne!(*PROCESS_KEY, [0u8; 32]);
    }
}
