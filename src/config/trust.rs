//! The trust store: which project-directory instance files the user has approved, by canonical
//! path and SHA-256 of their content.
//!
//! A `.nandi-proxmox-mcp/` folder in the working directory may come from a cloned repository, so
//! discovery uses such a file only after `nandi-proxmox-mcp trust <file>` recorded it here.
//!
//! Invariants:
//! * the store lives in the user's own state folder (`$XDG_STATE_HOME/nandi-proxmox-mcp/`, else
//!   `~/.local/state/nandi-proxmox-mcp/`), never under a working directory, and is written 0600
//!   (folder 0700) through a temporary file and a rename, so a reader never sees half a store;
//! * trust is for exact bytes: the file is read once, hashed, and those same bytes are parsed, so
//!   a file changed after `trust` (or between the check and the read) is not trusted;
//! * a store that cannot be read, is not valid, or that other users can write trusts nothing
//!   (fail closed), with a warning that names it.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ConfigError, EnvSource};

/// File name of the trust store inside the state folder.
pub const STORE_FILE_NAME: &str = "trusted-files.json";
/// Folder (under the state home) that holds the store, shared with the default audit log.
const APP_DIR: &str = "nandi-proxmox-mcp";
/// Format version written into the store.
const VERSION: u32 = 1;

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustEntry {
    /// Canonical (absolute, symlink-free) path of the file.
    pub path: PathBuf,
    /// Lower-case hex SHA-256 of the file's bytes when it was trusted.
    pub sha256: String,
    /// Seconds since the Unix epoch when it was trusted.
    #[serde(rename = "trustedAt")]
    pub trusted_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    files: Vec<TrustEntry>,
}

/// What the store says about one file's current bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// Recorded with this exact content.
    Trusted,
    /// Recorded, but the content changed since (hash mismatch).
    Changed,
    /// Never recorded.
    Unknown,
}

/// The set of trusted project files, loaded from (and saved to) one store file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustStore {
    path: PathBuf,
    entries: Vec<TrustEntry>,
}

/// Where the store lives: `$XDG_STATE_HOME/nandi-proxmox-mcp/trusted-files.json` (absolute
/// `XDG_STATE_HOME` only), else `<home>/.local/state/nandi-proxmox-mcp/trusted-files.json`.
/// `None` when neither is known: then nothing is trusted.
pub fn store_path(env: &dyn EnvSource, home: Option<&Path>) -> Option<PathBuf> {
    let state = env
        .var("XDG_STATE_HOME")
        .map(|v| PathBuf::from(v.trim()))
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| h.join(".local").join("state")))?;
    Some(state.join(APP_DIR).join(STORE_FILE_NAME))
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn store_error(path: &Path, reason: impl Into<String>) -> ConfigError {
    ConfigError::TrustStore {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

impl TrustStore {
    /// An empty store that would be saved at `path`.
    pub fn empty(path: PathBuf) -> Self {
        Self {
            path,
            entries: Vec::new(),
        }
    }

    /// Reads the store at `path`; a missing file is an empty store. Errors for a store that
    /// cannot be read, is not valid, or that other users could have written.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = match fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::empty(path.to_path_buf()));
            }
            Err(e) => return Err(store_error(path, format!("cannot read it: {e}"))),
        };
        check_private(path)?;
        let file: StoreFile = serde_json::from_str(&text)
            .map_err(|e| store_error(path, format!("it is not a valid trust store ({e})")))?;
        if file.version != VERSION {
            return Err(store_error(
                path,
                format!("it has version {}, expected {VERSION}", file.version),
            ));
        }
        Ok(Self {
            path: path.to_path_buf(),
            entries: file.files,
        })
    }

    /// Reads the store for discovery: any problem trusts nothing and is logged as a warning.
    pub(crate) fn load_or_empty(env: &dyn EnvSource, home: Option<&Path>) -> Self {
        let Some(path) = store_path(env, home) else {
            return Self::empty(PathBuf::new());
        };
        match Self::load(&path) {
            Ok(store) => store,
            Err(e) => {
                tracing::warn!("{e}; no project-directory instance file is trusted");
                Self::empty(path)
            }
        }
    }

    /// Where this store is saved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every trusted file, in the order they were added.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }

    /// The trust state of a file with canonical path `canonical` and content hash `sha256`.
    pub fn state(&self, canonical: &Path, sha256: &str) -> TrustState {
        match self.entries.iter().find(|e| e.path == canonical) {
            Some(e) if e.sha256.eq_ignore_ascii_case(sha256) => TrustState::Trusted,
            Some(_) => TrustState::Changed,
            None => TrustState::Unknown,
        }
    }

    /// Records (or refreshes) a file's trust.
    pub fn add(&mut self, canonical: PathBuf, sha256: String, trusted_at: u64) {
        self.entries.retain(|e| e.path != canonical);
        self.entries.push(TrustEntry {
            path: canonical,
            sha256,
            trusted_at,
        });
    }

    /// Forgets a file; `false` when it was not recorded.
    pub fn remove(&mut self, canonical: &Path) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.path != canonical);
        before != self.entries.len()
    }

    /// Writes the store: folder created 0700, file written 0600 through a temporary file in the
    /// same folder and renamed over the old one.
    pub fn save(&self) -> Result<(), ConfigError> {
        let dir = self
            .path
            .parent()
            .ok_or_else(|| store_error(&self.path, "it has no parent folder"))?;
        create_private_dir(dir).map_err(|e| store_error(dir, format!("cannot create it: {e}")))?;
        let body = serde_json::to_string_pretty(&StoreFile {
            version: VERSION,
            files: self.entries.clone(),
        })
        .map_err(|e| store_error(&self.path, e.to_string()))?;
        let tmp = dir.join(format!(".{STORE_FILE_NAME}.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut f = open_private(&tmp)?;
            f.write_all(body.as_bytes())?;
            f.write_all(b"\n")?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            store_error(&self.path, format!("cannot write it: {e}"))
        })
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Creates a new file readable and writable by its owner only (replacing a stale temporary).
#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<fs::File> {
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Refuses a store that another user could have written (it decides what this user trusts).
#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let meta = fs::metadata(path).map_err(|e| store_error(path, e.to_string()))?;
    if meta.uid() != me {
        return Err(store_error(
            path,
            format!("it is owned by uid {}, not by you (uid {me})", meta.uid()),
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(store_error(
            path,
            format!("other users can write it (mode {mode:o}); run `chmod 600` on it"),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_path: &Path) -> Result<(), ConfigError> {
    Ok(())
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MapEnv;

    #[test]
    fn store_path_prefers_an_absolute_xdg_state_home() {
        let home = Path::new("/home/u");
        let env = MapEnv::from_pairs([("XDG_STATE_HOME", "/st")]);
        assert_eq!(
            store_path(&env, Some(home)),
            Some(PathBuf::from("/st/nandi-proxmox-mcp/trusted-files.json"))
        );
        let relative = MapEnv::from_pairs([("XDG_STATE_HOME", "st")]);
        assert_eq!(
            store_path(&relative, Some(home)),
            Some(PathBuf::from(
                "/home/u/.local/state/nandi-proxmox-mcp/trusted-files.json"
            ))
        );
        assert_eq!(store_path(&MapEnv::default(), None), None);
    }

    #[test]
    fn add_save_load_state_remove() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join(STORE_FILE_NAME);
        let mut store = TrustStore::load(&path).unwrap();
        assert!(store.entries().is_empty());
        let file = PathBuf::from("/p/.nandi-proxmox-mcp/x.json");
        store.add(file.clone(), sha256_hex(b"one"), 1);
        store.add(file.clone(), sha256_hex(b"two"), 2);
        store.save().unwrap();
        let store = TrustStore::load(&path).unwrap();
        assert_eq!(store.entries().len(), 1);
        assert_eq!(store.state(&file, &sha256_hex(b"two")), TrustState::Trusted);
        assert_eq!(store.state(&file, &sha256_hex(b"one")), TrustState::Changed);
        assert_eq!(
            store.state(Path::new("/other"), &sha256_hex(b"two")),
            TrustState::Unknown
        );
        let mut store = store;
        assert!(store.remove(&file));
        assert!(!store.remove(&file));
    }

    #[cfg(unix)]
    #[test]
    fn the_store_is_private_and_a_shared_one_trusts_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s").join(STORE_FILE_NAME);
        let mut store = TrustStore::empty(path.clone());
        store.add(PathBuf::from("/x"), sha256_hex(b"x"), 0);
        store.save().unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        let err = TrustStore::load(&path).unwrap_err().to_string();
        assert!(err.contains("other users can write it"), "{err}");
        fs::write(&path, "{ nope").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(TrustStore::load(&path).is_err());
    }
}
