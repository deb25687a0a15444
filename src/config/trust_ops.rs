//! The operations behind `nandi-proxmox-mcp trust`: trust a project-directory instance file's
//! current content, revoke it, list the store, and tell which project files discovery ignores.
//!
//! Invariant: trust is only ever recorded for content that loads (a broken file is refused), by
//! canonical path and the SHA-256 of the very bytes that were validated, together with the
//! SHA-256 of the CA file those bytes name.

use std::path::{Path, PathBuf};

use super::{ConfigError, EnvSource, Paths, file, trust};

/// What the trust store says about a file now: its canonical path, its SHA-256 and its state.
pub fn trust_status(
    env: &dyn EnvSource,
    paths: &Paths,
    path: &Path,
) -> Result<(PathBuf, String, trust::TrustState), ConfigError> {
    let store_path =
        trust::store_path(env, paths.home.as_deref()).ok_or(ConfigError::NoTrustStore)?;
    let store = trust::TrustStore::load(&store_path)?;
    let read = file::read_project(&paths.cwd.join(path), &store, paths.home.as_deref())?;
    let sha = trust::sha256_hex(read.text().as_bytes());
    Ok((read.canonical, sha, read.state))
}

/// Trusts an instance file's current content: validates it (a broken file is refused, so trust
/// is only ever given to something that loads) and records its canonical path and SHA-256 in
/// the trust store, with the canonical path and SHA-256 of the CA file it names (one that
/// cannot be read is refused). Returns the entry and the SSH keys the file names (which stay
/// ignored).
pub fn trust_file(
    env: &dyn EnvSource,
    paths: &Paths,
    path: &Path,
) -> Result<(trust::TrustEntry, Vec<&'static str>), ConfigError> {
    let home = paths.home.as_deref();
    let store_path = trust::store_path(env, home).ok_or(ConfigError::NoTrustStore)?;
    let mut store = trust::TrustStore::load(&store_path)?;
    let read = file::read_project(&paths.cwd.join(path), &store, home)?;
    let (sha, named_files, ignored) = file::validate_for_trust(&read, home)?;
    let entry = trust::TrustEntry {
        path: read.canonical.clone(),
        sha256: sha,
        trusted_at: trust::now_secs(),
        named_files,
    };
    store.add(entry.clone());
    store.save()?;
    Ok((entry, ignored))
}

/// The JSON object of a project-directory file whose exact bytes are trusted, parsed from the
/// very bytes that were hashed; an untrusted (or changed) file is an
/// [`ConfigError::UntrustedProjectFile`]. `setup` merges into a project file only through this,
/// so keys nobody reviewed can never be carried into a file it then trusts.
pub fn trusted_project_object(
    env: &dyn EnvSource,
    paths: &Paths,
    path: &Path,
) -> Result<serde_json::Map<String, serde_json::Value>, ConfigError> {
    let store_path =
        trust::store_path(env, paths.home.as_deref()).ok_or(ConfigError::NoTrustStore)?;
    let store = trust::TrustStore::load(&store_path)?;
    let read = file::read_project(&paths.cwd.join(path), &store, paths.home.as_deref())?;
    if let Some(err) = read.untrusted() {
        return Err(err);
    }
    file::parse_map(&read.path, read.text())
}

/// Removes a file from the trust store (by its canonical path when it still exists, else as
/// written). Returns the path removed, or `None` when it was not trusted.
pub fn revoke_file(
    env: &dyn EnvSource,
    paths: &Paths,
    path: &Path,
) -> Result<Option<PathBuf>, ConfigError> {
    let store_path =
        trust::store_path(env, paths.home.as_deref()).ok_or(ConfigError::NoTrustStore)?;
    let mut store = trust::TrustStore::load(&store_path)?;
    let given = paths.cwd.join(path);
    let key = std::fs::canonicalize(&given).unwrap_or(given);
    if !store.remove(&key) {
        return Ok(None);
    }
    store.save()?;
    Ok(Some(key))
}

/// The trust store in use (for `trust --list`).
pub fn trust_store(env: &dyn EnvSource, paths: &Paths) -> Result<trust::TrustStore, ConfigError> {
    let store_path =
        trust::store_path(env, paths.home.as_deref()).ok_or(ConfigError::NoTrustStore)?;
    trust::TrustStore::load(&store_path)
}

/// Project-directory instance files that discovery ignores because they are not trusted (or
/// changed since), for `doctor`. Unreadable files and store problems are left to the loader.
pub fn untrusted_project_files(env: &dyn EnvSource, paths: &Paths) -> Vec<(PathBuf, bool)> {
    let store = trust::TrustStore::load_or_empty(env, paths.home.as_deref());
    file::project_instances(paths)
        .iter()
        .filter_map(|i| file::read_project(&i.path, &store, paths.home.as_deref()).ok())
        .filter(|r| r.state != trust::TrustState::Trusted)
        .map(|r| (r.path, r.state != trust::TrustState::Unknown))
        .collect()
}
