//! The policy file named by `PVE_POLICY_FILE`, and which such files need the user's trust.
//!
//! The rule (written out in `docs/POLICY.md`): a policy file is used as it is only when it
//! lies in the user's own folder `~/.nandi-proxmox-mcp/` or below it (the suggested place is
//! `~/.nandi-proxmox-mcp/policy/rules.json`), owned by the user (or root) with nobody else
//! able to write it or a folder between — the rule a discovered home-folder instance file
//! meets. Any other file — the working directory, a cloned repository, a path a
//! project's `.mcp.json` names — is used only once `nandi-proxmox-mcp trust FILE` recorded the
//! SHA-256 of its exact bytes in the trust store, as a project instance file is; until then it
//! is ignored with a warning naming that command, and the built-in default decides.
//!
//! Invariants: the bytes hashed are the bytes parsed (read once); a trusted file that changed
//! is untrusted again; a file that is used but does not parse stops start-up (fail closed),
//! and a file that is named but cannot be read stops it too — never a silent fallback.

use std::path::{Path, PathBuf};

use super::rules::{PolicyRules, RulesError};
use crate::config::trust::{self, TrustEntry, TrustState, TrustStore};
use crate::config::{EnvSource, home_from_env};

/// `PVE_POLICY_FILE`: a JSON file `{"rules": [...]}` of operator rules.
pub const ENV_POLICY_FILE: &str = "PVE_POLICY_FILE";
/// Largest policy file read (bytes).
const MAX_BYTES: u64 = 1024 * 1024;
/// The user's own folder, under the home directory.
const USER_DIR: &str = ".nandi-proxmox-mcp";

fn file_error(path: &Path, reason: impl Into<String>) -> RulesError {
    RulesError {
        source_name: format!("{ENV_POLICY_FILE}={}", path.display()),
        at: "file".to_owned(),
        reason: reason.into(),
    }
}

/// The file's canonical path and exact bytes (bounded).
fn read(path: &Path) -> Result<(PathBuf, Vec<u8>), RulesError> {
    let canonical = std::fs::canonicalize(path)
        .map_err(|e| file_error(path, format!("cannot be read: {e}")))?;
    let meta = std::fs::metadata(&canonical)
        .map_err(|e| file_error(path, format!("cannot be read: {e}")))?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Err(file_error(path, "must be a regular file of at most 1 MiB"));
    }
    let bytes =
        std::fs::read(&canonical).map_err(|e| file_error(path, format!("cannot be read: {e}")))?;
    Ok((canonical, bytes))
}

/// Parses a policy file's bytes.
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<PolicyRules, RulesError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| file_error(path, format!("is not valid JSON: {e}")))?;
    PolicyRules::parse(&value, &format!("{ENV_POLICY_FILE}={}", path.display()))
}

/// Whether the file lies in the user's own folder (or a folder below it, such as
/// `~/.nandi-proxmox-mcp/policy/`, where it is never taken for an instance file) and only the
/// user can write it and the folders between.
fn in_user_folder(canonical: &Path, home: Option<&Path>) -> bool {
    let Some(home) = home else { return false };
    let Ok(folder) = std::fs::canonicalize(home.join(USER_DIR)) else {
        return false;
    };
    let mut at = canonical;
    while at != folder {
        if crate::config::check_user_file(at).is_err() {
            return false;
        }
        match at.parent() {
            Some(parent) if parent.starts_with(&folder) => at = parent,
            _ => return false,
        }
    }
    true
}

/// Reads `PVE_POLICY_FILE` (when set): its rules, or the empty policy with
/// [`PolicyRules::ignored`] set when the file needs trust it does not have.
pub(crate) fn load(env: &dyn EnvSource, value: &str) -> Result<PolicyRules, RulesError> {
    let home = home_from_env(env);
    let given = PathBuf::from(value);
    let path = if given.is_absolute() {
        given
    } else {
        std::env::current_dir()
            .map_err(|e| file_error(&given, format!("the working directory is unknown: {e}")))?
            .join(given)
    };
    let (canonical, bytes) = read(&path)?;
    if !in_user_folder(&canonical, home.as_deref()) {
        let store = TrustStore::load_or_empty(env, home.as_deref());
        let state = store.state(&canonical, &trust::sha256_hex(&bytes));
        if state != TrustState::Trusted {
            let changed = if state == TrustState::Unknown {
                "is not trusted"
            } else {
                "changed since it was trusted"
            };
            let warning = format!(
                "ignoring the policy file {} ({ENV_POLICY_FILE}): it lies outside ~/{USER_DIR}/ and {changed}; the built-in default policy decides. Review it, then run `nandi-proxmox-mcp trust {}`",
                canonical.display(),
                canonical.display()
            );
            tracing::warn!("{warning}");
            return Ok(PolicyRules {
                ignored: Some(warning),
                ..PolicyRules::default()
            });
        }
    }
    parse_bytes(&canonical, &bytes)
}

/// Whether the bytes look like a policy file (a JSON object with `rules`), for `trust`.
pub fn looks_like_policy(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v.as_object().map(|m| m.contains_key("rules")))
        .unwrap_or(false)
}

/// Trusts a policy file's current content (for `nandi-proxmox-mcp trust`): it must parse;
/// its canonical path and SHA-256 are recorded in the trust store.
pub fn trust_policy_file(env: &dyn EnvSource, path: &Path) -> Result<TrustEntry, String> {
    let home = home_from_env(env);
    let (canonical, bytes) = read(path).map_err(|e| e.to_string())?;
    parse_bytes(&canonical, &bytes).map_err(|e| e.to_string())?;
    let store_path = trust::store_path(env, home.as_deref())
        .ok_or("no state folder is known for the trust store (set HOME or XDG_STATE_HOME)")?;
    let mut store = TrustStore::load(&store_path).map_err(|e| e.to_string())?;
    let entry = TrustEntry {
        path: canonical,
        sha256: trust::sha256_hex(&bytes),
        trusted_at: trust::now_secs(),
        named_files: Vec::new(),
    };
    store.add(entry.clone());
    store.save().map_err(|e| e.to_string())?;
    Ok(entry)
}
