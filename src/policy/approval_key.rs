//! The shared secret that seals MRTR approval states (and, derived, guest-program task ids):
//! read once from `PVE_APPROVAL_KEY_FILE`. Invariant: at least [`MIN_APPROVAL_KEY_BYTES`] bytes
//! of key, never shown by `Debug`, handed out only to the code that seals and opens.

use std::path::Path;

use super::{MIN_APPROVAL_KEY_BYTES, PolicyError};

/// The secret that seals MRTR approval states, read from `PVE_APPROVAL_KEY_FILE`.
/// Invariant: at least [`MIN_APPROVAL_KEY_BYTES`] bytes; never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApprovalKey(Vec<u8>);

impl std::fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApprovalKey(<hidden>)")
    }
}

impl ApprovalKey {
    /// Reads the key from `path`: the file's bytes without surrounding whitespace (so a
    /// trailing newline of `openssl rand -hex 32 > key` does not count), at least 32 of them.
    pub fn from_file(path: &Path) -> Result<ApprovalKey, PolicyError> {
        let bad = |problem: String| PolicyError::BadApprovalKey {
            path: path.display().to_string(),
            problem,
        };
        let bytes =
            std::fs::read(path).map_err(|e| bad(format!("cannot be read: {}", e.kind())))?;
        let key = bytes.trim_ascii();
        if key.len() < MIN_APPROVAL_KEY_BYTES {
            return Err(bad(format!(
                "holds {} bytes of key, at least {MIN_APPROVAL_KEY_BYTES} needed (e.g. `openssl rand -hex 32`)",
                key.len()
            )));
        }
        Ok(ApprovalKey(key.to_vec()))
    }

    /// The key bytes; only for sealing and opening approval states.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{ENV_APPROVAL_KEY_FILE, Settings};

    fn with_key_file(path: &Path) -> Result<Settings, PolicyError> {
        let value = path.display().to_string();
        Settings::from_lookup(|k| (k == ENV_APPROVAL_KEY_FILE).then(|| value.clone()))
    }

    #[test]
    fn a_key_file_of_32_bytes_or_more_is_read_and_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        let secret = "3f9a0c7d51e2b846a9d03c5e7f1b2a8d6c4e0f9b3a5d7c1e8f2a4b6c9d0e1f3a";
        std::fs::write(&path, format!("{secret}\n")).unwrap();
        let settings = with_key_file(&path).unwrap();
        let key = settings.approval_key.clone().unwrap();
        assert_eq!(key.expose(), secret.as_bytes());
        assert!(!format!("{settings:?}").contains(secret));
        assert_eq!(Settings::default().approval_key, None);
    }

    #[test]
    fn a_short_or_missing_key_file_is_a_start_up_error_without_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "too-short-secret\n").unwrap();
        let err = with_key_file(&path).unwrap_err().to_string();
        assert!(
            err.contains(ENV_APPROVAL_KEY_FILE) && err.contains("32"),
            "{err}"
        );
        assert!(!err.contains("too-short-secret"), "{err}");
        let missing = with_key_file(&dir.path().join("absent")).unwrap_err();
        assert!(missing.to_string().contains("cannot be read"), "{missing}");
    }
}
