//! File transfer on a node over the SFTP subsystem of an SSH connection (no shell, no
//! remote command line), plus the path rules every file tool applies before connecting.
//!
//! Invariants: a path reaches SFTP only after [`node_path`] accepted it (absolute, already
//! normalised, no `.`/`..` segments, no NUL or control characters); before a read, write or
//! remove the server is asked for the file's own type (`lstat`: a symbolic link or a
//! non-regular file is refused) and for the real path of its directory (`realpath` must
//! equal the path given, so no symlinked directory redirects the operation). What is left
//! is the window between those checks and the open, which SFTP cannot close (it has no
//! `O_NOFOLLOW`); docs/THREAT_MODEL.md names it.

use russh_sftp::client::SftpSession;
use russh_sftp::protocol::{OpenFlags, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Default and largest read, and largest write: 1 MiB.
pub const FILE_CAP: usize = 1024 * 1024;

/// Longest path accepted.
const MAX_PATH: usize = 4096;

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// Read at most `cap` bytes of a regular file.
    Read {
        /// Absolute, normalised path.
        path: String,
        /// Bytes to return at most.
        cap: usize,
    },
    /// Create or replace a regular file with `data`.
    Write {
        /// Absolute, normalised path.
        path: String,
        /// New content.
        data: Vec<u8>,
    },
    /// Remove a regular file.
    Remove {
        /// Absolute, normalised path.
        path: String,
    },
}

impl FileOp {
    /// The path operated on.
    pub fn path(&self) -> &str {
        match self {
            FileOp::Read { path, .. } | FileOp::Write { path, .. } | FileOp::Remove { path } => {
                path
            }
        }
    }
}

/// What a file operation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// The bytes read; `size` is the file's size, `truncated` when it exceeded the cap.
    Read {
        /// Content (at most the cap).
        bytes: Vec<u8>,
        /// File size on the node.
        size: u64,
        /// More bytes exist than were returned.
        truncated: bool,
    },
    /// The file now holds `bytes` bytes; `created` when it did not exist before.
    Written {
        /// Bytes written.
        bytes: usize,
        /// Whether the file was new.
        created: bool,
    },
    /// The file was removed.
    Removed,
}

/// Why a path is refused before any connection (the message names the rule).
pub fn node_path(raw: &str) -> Result<String, String> {
    if raw.is_empty() {
        return Err("must not be empty".into());
    }
    if raw.len() > MAX_PATH {
        return Err(format!("is longer than {MAX_PATH} bytes"));
    }
    if raw.contains('\0') {
        return Err("must not contain NUL".into());
    }
    if raw.chars().any(char::is_control) {
        return Err("must not contain control characters (newline, tab, escape…)".into());
    }
    if !raw.starts_with('/') {
        return Err("must be absolute (start with '/')".into());
    }
    if raw == "/" {
        return Err("must name a file, not '/'".into());
    }
    if raw.ends_with('/') {
        return Err("must name a file (no trailing '/')".into());
    }
    for segment in raw.split('/').skip(1) {
        match segment {
            "" => return Err("must be normalised (no '//')".into()),
            "." | ".." => return Err("must be normalised (no '.' or '..' segments)".into()),
            _ => {}
        }
    }
    Ok(raw.to_owned())
}

/// The directory part of a checked path (`/` for a file in the root).
pub fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// A refusal or failure on the node, in words (the caller adds the target).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FileError(pub String);

fn sftp_error(what: &str, path: &str, e: russh_sftp::client::error::Error) -> FileError {
    let why = match &e {
        russh_sftp::client::error::Error::Status(status) => match status.status_code {
            StatusCode::NoSuchFile => "no such file or directory".to_owned(),
            StatusCode::PermissionDenied => "permission denied".to_owned(),
            _ => status.error_message.clone(),
        },
        other => other.to_string(),
    };
    FileError(format!("{what} {path}: {why}"))
}

fn is_missing(e: &russh_sftp::client::error::Error) -> bool {
    matches!(e, russh_sftp::client::error::Error::Status(s) if s.status_code == StatusCode::NoSuchFile)
}

/// The directory must be its own real path (no symlinked directory on the way).
async fn check_directory(sftp: &SftpSession, path: &str) -> Result<(), FileError> {
    let dir = parent_of(path);
    let real = sftp
        .canonicalize(dir)
        .await
        .map_err(|e| sftp_error("cannot resolve the directory of", path, e))?;
    if real != dir {
        return Err(FileError(format!(
            "refused: the directory {dir} resolves to {real} (a symbolic link on the way); give the real path"
        )));
    }
    Ok(())
}

/// `Some(size)` of an existing regular file, `None` when it does not exist; refuses links
/// and other file types.
async fn regular_file(sftp: &SftpSession, path: &str) -> Result<Option<u64>, FileError> {
    match sftp.symlink_metadata(path).await {
        Err(e) if is_missing(&e) => Ok(None),
        Err(e) => Err(sftp_error("cannot inspect", path, e)),
        Ok(meta) if meta.is_symlink() => Err(FileError(format!(
            "refused: {path} is a symbolic link; give the path of the file itself"
        ))),
        Ok(meta) if !meta.is_regular() => {
            Err(FileError(format!("refused: {path} is not a regular file")))
        }
        Ok(meta) => Ok(Some(meta.len())),
    }
}

/// Runs one checked operation on an open SFTP session.
pub async fn run(sftp: &SftpSession, op: &FileOp) -> Result<FileOutcome, FileError> {
    let path = op.path();
    check_directory(sftp, path).await?;
    let existing = regular_file(sftp, path).await?;
    match op {
        FileOp::Read { cap, .. } => {
            let Some(size) = existing else {
                return Err(FileError(format!("{path}: no such file")));
            };
            let file = sftp
                .open_with_flags(path, OpenFlags::READ)
                .await
                .map_err(|e| sftp_error("cannot open", path, e))?;
            let mut bytes = Vec::new();
            let limit = u64::try_from(*cap).unwrap_or(u64::MAX).saturating_add(1);
            file.take(limit)
                .read_to_end(&mut bytes)
                .await
                .map_err(|e| FileError(format!("cannot read {path}: {e}")))?;
            let truncated = bytes.len() > *cap;
            bytes.truncate(*cap);
            Ok(FileOutcome::Read {
                bytes,
                size,
                truncated,
            })
        }
        FileOp::Write { data, .. } => {
            let mut file = sftp
                .open_with_flags(
                    path,
                    OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE,
                )
                .await
                .map_err(|e| sftp_error("cannot open for writing", path, e))?;
            file.write_all(data)
                .await
                .map_err(|e| FileError(format!("cannot write {path}: {e}")))?;
            file.shutdown()
                .await
                .map_err(|e| FileError(format!("cannot finish writing {path}: {e}")))?;
            Ok(FileOutcome::Written {
                bytes: data.len(),
                created: existing.is_none(),
            })
        }
        FileOp::Remove { .. } => {
            if existing.is_none() {
                return Err(FileError(format!("{path}: no such file")));
            }
            sftp.remove_file(path)
                .await
                .map_err(|e| sftp_error("cannot remove", path, e))?;
            Ok(FileOutcome::Removed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_be_absolute_normalised_and_plain() {
        assert_eq!(
            node_path("/etc/pve/storage.cfg").unwrap(),
            "/etc/pve/storage.cfg"
        );
        for bad in [
            "",
            "etc/hosts",
            "/",
            "/etc/",
            "/etc//hosts",
            "/etc/./hosts",
            "/etc/../root/.ssh/id_rsa",
            "/tmp/a\0b",
            "/tmp/a\nb",
        ] {
            assert!(node_path(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parent_of("/etc/hosts"), "/etc");
        assert_eq!(parent_of("/hosts"), "/");
    }
}
