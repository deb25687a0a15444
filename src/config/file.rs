//! Instance files on disk: discovery and bounded reading (validation lives in `keys.rs`).
//!
//! Invariants: a file is parsed only if it is a regular file of at most [`MAX_FILE_BYTES`] bytes
//! of UTF-8; discovery never picks one of several candidates on its own, and a candidate that
//! exists but is broken is reported, never skipped; a discovered file is used only when this user
//! owns it and nobody else can write it or its folder ([`check_trusted`]).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::instances::{self, CONFIG_DIR_NAME, LEGACY_FILE_NAME, Scope};
use super::keys;
use super::{Config, ConfigError, ConfigSource, FileOrigin, MAX_FILE_BYTES, Paths};

/// Finds the file discovery selects (spec §6.2): the legacy `<cwd>/.nandi-proxmox-mcp/config.json`
/// first, else the only project-scope instance, else the only user-scope instance. `Ok(None)`
/// when there is none; several candidates are an error.
pub(crate) fn discover(paths: &Paths) -> Result<Option<PathBuf>, ConfigError> {
    let legacy = paths.cwd.join(CONFIG_DIR_NAME).join(LEGACY_FILE_NAME);
    // `symlink_metadata` so that a dangling link or a directory of that name is reported by the
    // loader instead of being skipped in favour of something else.
    if fs::symlink_metadata(&legacy).is_ok() {
        return Ok(Some(legacy));
    }
    let all = instances::list_instances(paths);
    let project: Vec<_> = all
        .iter()
        .filter(|i| i.scope == Scope::Project)
        .cloned()
        .collect();
    let mut candidates = if project.is_empty() { all } else { project };
    match candidates.len() {
        0 => Ok(None),
        1 => Ok(candidates.pop().map(|i| i.path)),
        _ => Err(ConfigError::AmbiguousInstances { found: candidates }),
    }
}

/// Refuses a discovered file that someone other than this user could have written: owned by
/// another user (root excepted), or group/world-writable, or in such a folder. Discovery reads
/// the working directory, which may be a freshly cloned repository; such a file would choose the
/// Proxmox host, the token and the SSH key this server uses.
#[cfg(unix)]
pub(crate) fn check_trusted(path: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let untrusted = |reason: String| ConfigError::UntrustedFile {
        path: path.to_path_buf(),
        reason,
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    for (what, target) in [("the file", path), ("its folder", folder)] {
        let meta = fs::metadata(target).map_err(|e| io_error(target, e))?;
        let owner = meta.uid();
        if owner != me && owner != 0 {
            return Err(untrusted(format!(
                "{what} is owned by uid {owner}, not by you (uid {me})"
            )));
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o022 != 0 {
            return Err(untrusted(format!(
                "{what} is writable by other users (mode {mode:o})"
            )));
        }
    }
    Ok(())
}

/// Ownership and permission bits do not map onto Windows ACLs; nothing is checked there.
#[cfg(not(unix))]
pub(crate) fn check_trusted(_path: &Path) -> Result<(), ConfigError> {
    Ok(())
}

/// Reads, parses and validates one instance file. `home` expands `~` in configured paths.
pub(crate) fn load_path(
    path: &Path,
    home: Option<&Path>,
    origin: FileOrigin,
) -> Result<Config, ConfigError> {
    let (text, meta) = read_bounded(path)?;
    warn_if_shared(path, &meta);
    // Windows editors like to prepend a byte-order mark; it is not part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::InvalidJson {
        path: path.to_path_buf(),
        // Syntax errors of an untyped parse name a position, never the file's content.
        detail: e.to_string(),
    })?;
    let Value::Object(map) = value else {
        return Err(ConfigError::NotAnObject {
            path: path.to_path_buf(),
            found: keys::kind(&value),
        });
    };
    let (proxmox, ssh) = keys::parse_object(path, &map, home)?;
    Ok(Config {
        proxmox: Some(proxmox),
        ssh,
        source: ConfigSource::File {
            path: path.to_path_buf(),
            instance: instances::instance_name_for(path),
            origin,
        },
    })
}

fn io_error(path: &Path, source: std::io::Error) -> ConfigError {
    if source.kind() == std::io::ErrorKind::NotFound {
        ConfigError::FileNotFound {
            path: path.to_path_buf(),
        }
    } else {
        ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Reads at most `MAX_FILE_BYTES` (+1 to notice growth between the size check and the read).
fn read_bounded(path: &Path) -> Result<(String, fs::Metadata), ConfigError> {
    let meta = fs::metadata(path).map_err(|e| io_error(path, e))?;
    if !meta.is_file() {
        return Err(ConfigError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
        });
    }
    let file = fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| ConfigError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    Ok((text, meta))
}

/// The file holds a token secret; other local users should not be able to read it. Only a
/// warning: refusing would break existing installs written without 0600 by the reference.
#[cfg(unix)]
fn warn_if_shared(path: &Path, meta: &fs::Metadata) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            mode = %format_args!("{mode:o}"),
            "config file holds an API token secret but other users can access it; run `chmod 600 {}`",
            path.display()
        );
    }
}

#[cfg(not(unix))]
fn warn_if_shared(_path: &Path, _meta: &fs::Metadata) {}
