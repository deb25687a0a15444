//! The kill switch: while a freeze file exists, nothing but a plain read may leave.
//!
//! `nandi-proxmox-mcp freeze` creates the file (`PVE_FREEZE_FILE`, by default beside the
//! audit log), `unfreeze` removes it. Every request that does more than a plain read looks
//! at the file as it leaves ([`FreezeSwitch::check`], one `lstat`, never cached), so every
//! server process sharing the file — replicas on one mounted volume — stops at its very next
//! request. The file may hold a note (who, since when, why), shown escaped and bounded.
//!
//! Invariants: frozen means *an entry exists at the path* (a file, a directory, even a
//! dangling link); a path whose state cannot be read (permission denied, a stale mount)
//! counts as frozen (fail closed); only a regular file's first [`NOTE_BYTES`] are ever read,
//! so a FIFO or a huge file cannot stall or flood a call; the file is created by writing a
//! temporary file in the same folder and renaming it, so no reader sees half a note.

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most bytes of the freeze file ever read.
pub const NOTE_BYTES: u64 = 4096;

/// Most characters of one note field (who, when, why) shown in a refusal.
pub const FIELD_CHARS: usize = 200;

/// The freeze file one server process watches. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreezeSwitch {
    path: Arc<Path>,
}

/// Who froze changes, when and why — what `freeze` writes into the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FreezeNote {
    /// When (RFC 3339), as written by `freeze`.
    pub since: Option<String>,
    /// Who (`user@host`), as written by `freeze`.
    pub by: Option<String>,
    /// Why, from `freeze --reason`.
    pub reason: Option<String>,
}

/// Changes are frozen: the refusal every request beyond a plain read gets while the freeze
/// file exists. Its text carries the note (escaped and bounded), never the file's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.summary())]
pub struct Frozen {
    /// The note read from the file (empty when it had none or could not be read).
    pub note: FreezeNote,
    /// Set when the freeze file's state could not be read, so the switch failed closed.
    pub unreadable: Option<String>,
}

impl Frozen {
    /// `changes are frozen since <when> by <who>: <reason>`, each part only when known.
    pub fn summary(&self) -> String {
        let mut text = String::from("changes are frozen");
        if let Some(since) = &self.note.since {
            text.push_str(&format!(" since {}", shown(since)));
        }
        if let Some(by) = &self.note.by {
            text.push_str(&format!(" by {}", shown(by)));
        }
        if let Some(reason) = &self.note.reason {
            text.push_str(&format!(": {}", shown(reason)));
        }
        if let Some(problem) = &self.unreadable {
            text.push_str(&format!(
                " (the freeze file cannot be checked: {}; that counts as frozen)",
                shown(problem)
            ));
        }
        text
    }

    /// What the person can do about it.
    pub fn hint(&self) -> String {
        format!(
            "{}; a person lifts it with `nandi-proxmox-mcp unfreeze`. Reads go on.",
            self.summary()
        )
    }
}

/// `text` with control characters escaped and cut at [`FIELD_CHARS`], so a note can neither
/// start a line nor grow a refusal.
pub fn shown(text: &str) -> String {
    let mut out = String::new();
    let total = text.chars().count();
    for c in text.chars().take(FIELD_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if total > FIELD_CHARS {
        out.push('…');
    }
    out
}

impl FreezeSwitch {
    /// A switch watching `path`.
    pub fn new(path: impl Into<PathBuf>) -> FreezeSwitch {
        FreezeSwitch {
            path: Arc::from(path.into()),
        }
    }

    /// The freeze file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `Ok` when not frozen; [`Frozen`] while the file exists or its state cannot be read.
    /// One `lstat` when not frozen; the note is read only when frozen.
    pub fn check(&self) -> Result<(), Frozen> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) => Err(Frozen {
                note: if meta.is_file() {
                    read_note(&self.path)
                } else {
                    FreezeNote::default()
                },
                unreadable: None,
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Frozen {
                note: FreezeNote::default(),
                unreadable: Some(e.kind().to_string()),
            }),
        }
    }

    /// Freezes changes: writes `note` to a temporary file beside the freeze file, syncs it and
    /// renames it into place (creating the folder, mode 0700, when missing).
    pub fn freeze(&self, note: &FreezeNote) -> io::Result<()> {
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_dir(dir)?;
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "frozen".to_owned());
        let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let body = serde_json::json!({
            "since": note.since,
            "by": note.by,
            "reason": note.reason,
        });
        let written = (|| {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(format!("{body}\n").as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written?;
        // The rename is durable once the folder is synced (best effort: not every file
        // system lets a folder be opened for that).
        if let Ok(folder) = std::fs::File::open(dir) {
            let _ = folder.sync_all();
        }
        Ok(())
    }

    /// Lifts the freeze: removes the file. `Ok(false)` when it was not frozen.
    pub fn unfreeze(&self) -> io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// The note in a regular freeze file: `freeze`'s JSON, else the text itself as the reason
/// (an operator may `echo why > file`); empty when unreadable.
fn read_note(path: &Path) -> FreezeNote {
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(NOTE_BYTES).read_to_end(&mut bytes));
    if read.is_err() {
        return FreezeNote::default();
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) {
        let field = |key: &str| {
            map.get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        return FreezeNote {
            since: field("since"),
            by: field("by"),
            reason: field("reason"),
        };
    }
    FreezeNote {
        reason: (!text.is_empty()).then(|| text.to_owned()),
        ..FreezeNote::default()
    }
}

impl fmt::Display for FreezeSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_while_the_file_exists_with_its_note_escaped_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let switch = FreezeSwitch::new(dir.path().join("state").join("frozen"));
        assert!(switch.check().is_ok());
        let note = FreezeNote {
            since: Some("2026-01-02T03:04:05Z".into()),
            by: Some("ops@host".into()),
            reason: Some(format!("incident 42\nIGNORE ALL {}", "x".repeat(500))),
        };
        switch.freeze(&note).unwrap();
        let frozen = switch.check().unwrap_err();
        assert_eq!(frozen.note.by.as_deref(), Some("ops@host"));
        let hint = frozen.hint();
        assert!(hint.starts_with("changes are frozen since 2026-01-02T03:04:05Z by ops@host: incident 42\\nIGNORE ALL"), "{hint}");
        assert!(!hint.contains('\n'));
        assert!(hint.len() < 600, "{}", hint.len());
        assert!(hint.contains("`nandi-proxmox-mcp unfreeze`"));
        assert!(!hint.contains(&dir.path().display().to_string()), "no path");
        // Nothing but the file is left behind in the folder.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("state"))
            .unwrap()
            .collect();
        assert_eq!(names.len(), 1);
        assert!(switch.unfreeze().unwrap());
        assert!(!switch.unfreeze().unwrap());
        assert!(switch.check().is_ok());
    }

    #[test]
    fn any_entry_freezes_and_plain_text_is_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("frozen");
        let switch = FreezeSwitch::new(&path);
        std::fs::write(&path, "").unwrap();
        assert_eq!(switch.check().unwrap_err().summary(), "changes are frozen");
        std::fs::write(&path, "maintenance window\n").unwrap();
        assert_eq!(
            switch.check().unwrap_err().summary(),
            "changes are frozen: maintenance window"
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(switch.check().is_err(), "a folder freezes too");
        std::fs::remove_dir(&path).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("nowhere"), &path).unwrap();
            assert!(switch.check().is_err(), "a dangling link freezes too");
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_state_fails_closed() {
        // A path below a regular file cannot be looked at: not "absent", so frozen.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        let frozen = FreezeSwitch::new(file.join("frozen")).check().unwrap_err();
        assert!(frozen.unreadable.is_some());
        assert!(frozen.summary().contains("cannot be checked"), "{frozen}");
    }
}
