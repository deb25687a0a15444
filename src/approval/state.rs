//! Sealed MRTR `requestState` for approvals: tamper-proof, bound to one exact call, expiring
//! and single-use.
//!
//! The state a stateless peer echoes back is attacker-controlled. It is sealed with
//! HMAC-SHA256 (rmcp's `RequestStateCodec`) over a random nonce, with the *binding* — a
//! digest of the caller's owner, the tool name and the canonical JSON of the arguments — as
//! associated data and a TTL. Invariant: a state opens only for the same caller, the same tool
//! and the same arguments, before its expiry, and only once per process (a replayed state is
//! refused even within its TTL).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::RngCore;
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::identity::Owner;

/// Most nonces remembered as spent; older ones have expired anyway (bounded memory).
const SPENT_CAPACITY: usize = 10_000;

/// Seals and opens approval states; remembers spent nonces until they expire.
pub struct SealedStates {
    codec: RequestStateCodec,
    spent: Mutex<HashMap<[u8; 16], Instant>>,
}

impl std::fmt::Debug for SealedStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.debug_struct("SealedStates").finish_non_exhaustive()
    }
}

impl SealedStates {
    /// States sealed with a fresh random key: valid for this process only.
    pub fn random() -> SealedStates {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        SealedStates::with_key(&key)
    }

    /// States sealed with `key` (32 bytes or more; replicas sharing a key accept each other's
    /// states). Shorter keys are stretched with SHA-256 so a configured key never fails start-up.
    pub fn with_key(key: &[u8]) -> SealedStates {
        let material = if key.len() >= RequestStateCodec::MIN_KEY_LENGTH {
            key.to_vec()
        } else {
            Sha256::digest(key).to_vec()
        };
        SealedStates {
            // Long enough by construction (a SHA-256 digest is 32 bytes).
            codec: RequestStateCodec::new_unchecked(material),
            spent: Mutex::new(HashMap::new()),
        }
    }

    /// Seals a fresh nonce bound to `binding`, valid for `ttl`.
    pub fn seal(&self, binding: &[u8], ttl: Duration) -> String {
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        self.codec.seal_with(
            &nonce,
            &SealOptions::new().associated_data(binding).ttl(ttl),
        )
    }

    /// Opens a state for `binding` and spends it. Errors say why, without secrets.
    pub fn open(&self, sealed: &str, binding: &[u8]) -> Result<(), &'static str> {
        let payload = self
            .codec
            .open_with(sealed, binding)
            .map_err(|err| match err {
                RequestStateError::Expired => "expired",
                _ => "tampered with, or for another tool or other arguments",
            })?;
        let nonce: [u8; 16] = payload.as_slice().try_into().map_err(|_| "malformed")?;
        let now = Instant::now();
        let mut spent = self
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        spent.retain(|_, expiry| *expiry > now);
        if spent.len() >= SPENT_CAPACITY {
            return Err("too many approvals in flight; ask again");
        }
        // Kept for the longest TTL a state can have, so a replay is refused while it could open.
        let keep_until = now + Duration::from_secs(86_400);
        if spent.insert(nonce, keep_until).is_some() {
            return Err("already used");
        }
        Ok(())
    }
}

/// The binding of a state: SHA-256 over the caller's [`Owner`], the tool name and the
/// canonical JSON of its arguments (object keys sorted at every depth), so any edited
/// argument changes it, and a state issued to one caller opens for no other.
pub fn binding(owner: &Owner, tool: &str, arguments: Option<&Map<String, Value>>) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(owner.binding());
    hasher.update(tool.as_bytes());
    hasher.update([0]);
    let canonical = arguments
        .map(|args| canonical(&Value::Object(args.clone())))
        .unwrap_or_default();
    hasher.update(canonical.as_bytes());
    hasher.finalize().to_vec()
}

fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::identity::Via;

    const STDIO: Owner = Owner::Shared(Via::Stdio);

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn a_long_key_is_used_as_given_and_a_short_one_stretched() {
        let bound = binding(&STDIO, "pve_stop_qemu_vm", None);
        let opens_with = |states: &SealedStates, material: &[u8]| {
            let sealed = states.seal(&bound, Duration::from_secs(60));
            RequestStateCodec::try_new(material.to_vec())
                .expect("a 32-byte key")
                .open_with(&sealed, &bound)
                .is_ok()
        };
        // A replica configured with the same long key (or any codec holding it) opens the state.
        let long = [7u8; 40];
        assert!(opens_with(&SealedStates::with_key(&long), &long));
        assert!(!opens_with(
            &SealedStates::with_key(&long),
            &Sha256::digest(long)
        ));
        let short = b"short shared key";
        assert!(opens_with(
            &SealedStates::with_key(short),
            &Sha256::digest(short)
        ));
    }

    #[test]
    fn the_key_is_never_printed() {
        let states = SealedStates::with_key(&[9u8; 32]);
        assert_eq!(format!("{states:?}"), "SealedStates { .. }");
    }

    #[test]
    fn a_state_opens_once_for_the_same_call_only() {
        let states = SealedStates::random();
        let call = args(json!({"node": "pve01", "vmid": 101}));
        let bound = binding(&STDIO, "pve_stop_qemu_vm", Some(&call));
        let sealed = states.seal(&bound, Duration::from_secs(60));
        // Key order does not matter; values do.
        let reordered = args(json!({"vmid": 101, "node": "pve01"}));
        assert_eq!(bound, binding(&STDIO, "pve_stop_qemu_vm", Some(&reordered)));
        let other = args(json!({"node": "pve01", "vmid": 102}));
        assert!(
            states
                .open(&sealed, &binding(&STDIO, "pve_stop_qemu_vm", Some(&other)))
                .is_err()
        );
        assert!(
            states
                .open(&sealed, &binding(&STDIO, "pve_qemu_delete", Some(&call)))
                .is_err()
        );
        assert_eq!(states.open(&sealed, &bound), Ok(()));
        assert_eq!(states.open(&sealed, &bound), Err("already used"));
    }

    #[test]
    fn tampered_foreign_and_expired_states_are_refused() {
        let states = SealedStates::random();
        let bound = binding(&STDIO, "t", None);
        let sealed = states.seal(&bound, Duration::from_secs(60));
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).expect("ascii");
        assert!(states.open(&tampered, &bound).is_err());
        let foreign = SealedStates::random().seal(&bound, Duration::from_secs(60));
        assert!(states.open(&foreign, &bound).is_err());
        let short = states.seal(&bound, Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(states.open(&short, &bound), Err("expired"));
    }

    #[test]
    fn replicas_sharing_a_key_accept_each_other() {
        let key = b"a shared approval key of 32+ bytes!!";
        let bound = binding(&STDIO, "t", None);
        let sealed = SealedStates::with_key(key).seal(&bound, Duration::from_secs(60));
        assert_eq!(SealedStates::with_key(key).open(&sealed, &bound), Ok(()));
    }
}
