//! The trust store: which project-directory instance files the user has approved, by canonical
//! path and SHA-256 of their content, and of the content of every file they name that decides
//! what is trusted (today `tlsCaFile`: swapping the CA file would change the accepted CA).
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
//! * the same holds for the files it names ([`NamedFile`]): a CA file that changed, moved, can
//!   no longer be read, or was not recorded (a trust written before named files were hashed)
//!   makes the instance file untrusted until `trust` is run again. The SSH key and known_hosts
//!   paths are not hashed: a project file's are never used (`file::load_project`);
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
    /// The files it names that decide what is trusted, as they were when it was trusted. A
    /// record without the field (written before these were hashed) reads as "names none", so a
    /// file that names one needs `trust` again, and one that names none stays trusted.
    #[serde(rename = "namedFiles", default)]
    pub named_files: Vec<NamedFile>,
}

/// A file an instance file names whose content decides what is trusted (its `tlsCaFile`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedFile {
    /// The instance-file key that names it (`tlsCaFile`).
    pub key: String,
    /// Canonical path of the file when it was trusted.
    pub path: PathBuf,
    /// Lower-case hex SHA-256 of its bytes then.
    pub sha256: String,
}

/// A file an instance file names, as it is now: what [`TrustStore::named_state`] compares with
/// the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedNow {
    /// The instance-file key that names it.
    pub key: &'static str,
    /// The path as the instance file gives it (`~` expanded).
    pub written: PathBuf,
    /// Its canonical path and SHA-256 now, or why it cannot be read.
    pub hashed: Result<(PathBuf, String), String>,
}

impl NamedNow {
    /// Reads and hashes the file `key` names at `written`.
    pub fn read(key: &'static str, written: PathBuf) -> NamedNow {
        let hashed = hash_named_file(&written);
        NamedNow {
            key,
            written,
            hashed,
        }
    }

    /// The record of it for the trust store; `Err` names the file and why it cannot be hashed.
    pub fn record(&self) -> Result<NamedFile, String> {
        match &self.hashed {
            Ok((path, sha256)) => Ok(NamedFile {
                key: self.key.to_owned(),
                path: path.clone(),
                sha256: sha256.clone(),
            }),
            Err(e) => Err(format!(
                "`{}` names {}, which cannot be read ({e}); trust hashes it with the instance file",
                self.key,
                self.written.display()
            )),
        }
    }
}

/// Largest named file that is hashed (a CA bundle is far smaller).
const MAX_NAMED_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Canonical path and SHA-256 of a regular file of at most [`MAX_NAMED_FILE_BYTES`].
fn hash_named_file(path: &Path) -> Result<(PathBuf, String), String> {
    let canonical = fs::canonicalize(path).map_err(|e| e.to_string())?;
    let meta = fs::metadata(&canonical).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_NAMED_FILE_BYTES {
        return Err(format!(
            "it is larger than {MAX_NAMED_FILE_BYTES} bytes ({} bytes)",
            meta.len()
        ));
    }
    let bytes = fs::read(&canonical).map_err(|e| e.to_string())?;
    Ok((canonical, sha256_hex(&bytes)))
}

/// Why a file named by a trusted instance file is not the one trusted with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFileChange {
    /// The instance-file key naming it (`tlsCaFile`).
    pub key: String,
    /// The file as the instance file names it.
    pub path: PathBuf,
    /// What differs, as a phrase (`changed since you trusted it (its SHA-256 differs)`, …).
    pub reason: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    files: Vec<TrustEntry>,
}

/// What the store says about one file's current bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// Recorded with this exact content, and so is every file it names.
    Trusted,
    /// Recorded, but the content changed since (hash mismatch).
    Changed,
    /// Its content is the recorded one, but a file it names (its CA file) is not the one
    /// trusted with it.
    NamedFileChanged(NamedFileChange),
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

    /// The trust state of a file whose own content is trusted (`state` said
    /// [`TrustState::Trusted`]), given the files it names as they are now: `Trusted` only when
    /// each was recorded with this canonical path and SHA-256.
    pub fn named_state(&self, canonical: &Path, now: &[NamedNow]) -> TrustState {
        let Some(entry) = self.entries.iter().find(|e| e.path == canonical) else {
            return TrustState::Unknown;
        };
        for named in now {
            let record = entry.named_files.iter().find(|r| r.key == named.key);
            let reason = match (record, &named.hashed) {
                (None, _) => "was not recorded when the instance file was trusted (a trust \
                              recorded before named files were hashed)"
                    .to_owned(),
                (Some(_), Err(e)) => format!("cannot be read now ({e})"),
                (Some(r), Ok((path, _))) if r.path != *path => format!(
                    "now resolves to {}, not to the trusted {}",
                    path.display(),
                    r.path.display()
                ),
                (Some(r), Ok((_, sha))) if !r.sha256.eq_ignore_ascii_case(sha) => {
                    "changed since you trusted it (its SHA-256 differs)".to_owned()
                }
                (Some(_), Ok(_)) => continue,
            };
            return TrustState::NamedFileChanged(NamedFileChange {
                key: named.key.to_owned(),
                path: named.written.clone(),
                reason,
            });
        }
        TrustState::Trusted
    }

    /// Records (or refreshes) a file's trust.
    pub fn add(&mut self, entry: TrustEntry) {
        self.entries.retain(|e| e.path != entry.path);
        self.entries.push(entry);
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

    fn entry(path: &Path, bytes: &[u8], trusted_at: u64) -> TrustEntry {
        TrustEntry {
            path: path.to_path_buf(),
            sha256: sha256_hex(bytes),
            trusted_at,
            named_files: Vec::new(),
        }
    }

    #[test]
    fn a_named_file_is_trusted_only_as_recorded_and_an_old_record_names_none() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        fs::write(&ca, "one").unwrap();
        let file = PathBuf::from("/p/.nandi-proxmox-mcp/x.json");
        let now = || vec![NamedNow::read("tlsCaFile", ca.clone())];
        let mut store = TrustStore::empty(dir.path().join(STORE_FILE_NAME));
        // A record without named files: a file naming none stays trusted, one naming a CA not.
        store.add(entry(&file, b"x", 0));
        assert_eq!(store.named_state(&file, &[]), TrustState::Trusted);
        let TrustState::NamedFileChanged(change) = store.named_state(&file, &now()) else {
            panic!("an old record does not cover the CA file");
        };
        assert_eq!(
            (change.key.as_str(), change.path.as_path()),
            ("tlsCaFile", ca.as_path())
        );
        assert!(change.reason.contains("was not recorded"), "{change:?}");
        let mut recorded = entry(&file, b"x", 0);
        recorded.named_files = vec![now()[0].record().unwrap()];
        store.add(recorded);
        store.save().unwrap();
        let store = TrustStore::load(store.path()).unwrap();
        assert_eq!(store.named_state(&file, &now()), TrustState::Trusted);
        fs::write(&ca, "two").unwrap();
        let TrustState::NamedFileChanged(change) = store.named_state(&file, &now()) else {
            panic!("a changed CA file is not trusted");
        };
        assert!(change.reason.contains("SHA-256 differs"), "{change:?}");
        fs::remove_file(&ca).unwrap();
        let TrustState::NamedFileChanged(change) = store.named_state(&file, &now()) else {
            panic!("a missing CA file is not trusted");
        };
        assert!(change.reason.contains("cannot be read"), "{change:?}");
        assert!(now()[0].record().unwrap_err().contains("cannot be read"));
        assert_eq!(
            store.named_state(Path::new("/other"), &now()),
            TrustState::Unknown
        );
    }

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
        store.add(entry(&file, b"one", 1));
        store.add(entry(&file, b"two", 2));
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
        store.add(entry(Path::new("/x"), b"x", 0));
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
