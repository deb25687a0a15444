//! File helpers shared by the commands that write user files (setup, harden).
//!
//! Invariants: an existing file that cannot be parsed is refused and left byte-for-byte
//! untouched; every write goes to a temporary file in the same folder that is then renamed over
//! the target, so a crash never leaves half a file; files holding secrets are *created* with
//! mode 0600 (never chmod-ed afterwards, which would leave a window where they are readable).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// A failure reading or writing one user file; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file exists but is not what we can merge into.
    #[error("{} is not valid: {reason}; fix or move it, nothing was written", path.display())]
    Malformed {
        /// The refused file.
        path: PathBuf,
        /// What is wrong (never the file's content).
        reason: String,
    },
    /// The file is valid but its comments cannot be kept through the change.
    #[error(
        "{} was left as it is: {reason}, and its comments cannot be kept; add the entry by hand \
         (`nandi-proxmox-mcp setup --print-config` prints it)",
        path.display()
    )]
    CommentsWouldBeLost {
        /// The file left untouched.
        path: PathBuf,
        /// What would have dropped comments.
        reason: String,
    },
    /// An I/O failure.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> FileError + '_ {
    move |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a file that must hold a JSON object; a missing (or empty) file is an empty object.
pub fn read_json_object(path: &Path) -> Result<Map<String, Value>, FileError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(io(path)(e)),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(malformed(path, "it must hold a JSON object")),
        Err(e) => Err(malformed(
            path,
            &format!("invalid JSON at line {} column {}", e.line(), e.column()),
        )),
    }
}

/// Builds a [`FileError::Malformed`].
pub fn malformed(path: &Path, reason: &str) -> FileError {
    FileError::Malformed {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    }
}

/// Pretty JSON (2-space indent) with a final newline.
pub fn pretty(value: &Value) -> String {
    format!("{value:#}\n")
}

/// Writes `text` to `path` atomically, creating parent folders. `private` creates the file with
/// mode 0600 (Unix); otherwise an existing file's mode is kept (new files get the umask default).
pub fn write_atomic(path: &Path, text: &str, private: bool) -> Result<(), FileError> {
    let temp = write_temp(path, text, private)?;
    fs::rename(&temp, path).map_err(|e| {
        let _ = fs::remove_file(&temp);
        io(path)(e)
    })
}

/// Writes `text` to a fresh temporary file beside `path` and returns its path; the caller renames
/// it over `path` (or removes it). Parent folders are created.
pub fn write_temp(path: &Path, text: &str, private: bool) -> Result<PathBuf, FileError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io(dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing_mode = existing_mode(path);
    for attempt in 0..16u32 {
        let temp = dir.join(format!(
            ".{name}.tmp-{}-{attempt}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        set_mode(&mut options, private, existing_mode);
        match options.open(&temp) {
            Ok(mut file) => {
                let written = file
                    .write_all(text.as_bytes())
                    .and_then(|()| file.sync_all());
                if let Err(e) = written {
                    let _ = fs::remove_file(&temp);
                    return Err(io(path)(e));
                }
                return Ok(temp);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&temp)(e)),
        }
    }
    Err(io(path)(std::io::Error::other(
        "could not create a temporary file",
    )))
}

#[cfg(unix)]
fn existing_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o777)
}

#[cfg(not(unix))]
fn existing_mode(_path: &Path) -> Option<u32> {
    None
}

#[cfg(unix)]
fn set_mode(options: &mut fs::OpenOptions, private: bool, existing: Option<u32>) {
    use std::os::unix::fs::OpenOptionsExt;
    if private {
        options.mode(0o600);
    } else if let Some(mode) = existing {
        options.mode(mode);
    }
}

#[cfg(not(unix))]
fn set_mode(_options: &mut fs::OpenOptions, _private: bool, _existing: Option<u32>) {}

/// Adds `entry` as a line of `<dir>/.gitignore` unless a line already ignores it. Returns whether
/// the file changed.
pub fn ensure_gitignore(dir: &Path, entry: &str) -> Result<bool, FileError> {
    let path = dir.join(".gitignore");
    let current = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&path)(e)),
    };
    let bare = entry.trim_matches('/');
    let covered = current.lines().any(|line| {
        let l = line.trim();
        l.trim_start_matches('/').trim_end_matches('/') == bare
    });
    if covered {
        return Ok(false);
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# nandi-proxmox-mcp: instance files hold API token secrets\n");
    text.push_str(entry);
    text.push('\n');
    write_atomic(&path, &text, false)?;
    Ok(true)
}

/// Why a file may be committed by mistake: it lies inside a git work tree and git does not
/// ignore it (or git could not say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unignored {
    /// The work tree's top folder (the one holding `.git`).
    pub work_tree: PathBuf,
    /// `false` when `git check-ignore` could not run (git not installed, …): not confirmed.
    pub confirmed: bool,
}

/// `Some` when `path` lies inside a git work tree and `git check-ignore` does not report it
/// ignored — `git status` would show it, ready to commit. `None` outside any work tree or when
/// it is ignored. Reads folder names and runs `git check-ignore` only; never reads the file.
pub fn unignored_in_git_work_tree(path: &Path) -> Option<Unignored> {
    let path = fs::canonicalize(path).ok()?;
    let work_tree = path
        .ancestors()
        .skip(1)
        .find(|dir| dir.join(".git").exists())?
        .to_path_buf();
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&work_tree)
        .args(["check-ignore", "-q", "--"])
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status.map(|s| s.code()) {
        Ok(Some(0)) => None,
        Ok(Some(1)) => Some(Unignored {
            work_tree,
            confirmed: true,
        }),
        _ => Some(Unignored {
            work_tree,
            confirmed: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_files_are_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        fs::write(&p, "{ nope").unwrap();
        assert!(matches!(
            read_json_object(&p),
            Err(FileError::Malformed { .. })
        ));
        fs::write(&p, "[1]").unwrap();
        assert!(read_json_object(&p).is_err());
        assert!(
            read_json_object(&dir.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }

    #[cfg(unix)]
    #[test]
    fn private_files_are_created_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/secret.json");
        write_atomic(&p, "{}\n", true).unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn gitignore_entry_added_once() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".gitignore"), "target").unwrap();
        assert!(ensure_gitignore(dir.path(), ".nandi-proxmox-mcp/").unwrap());
        assert!(!ensure_gitignore(dir.path(), ".nandi-proxmox-mcp/").unwrap());
        let text = fs::read_to_string(dir.path().join(".gitignore")).unwrap();
        assert!(text.starts_with("target\n"));
        assert_eq!(text.matches(".nandi-proxmox-mcp/").count(), 1);
    }
}
