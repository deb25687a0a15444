//! Where undo records are kept: a JSON-lines file next to the audit log (`<audit
//! stem>.undo.jsonl`, one [`Record`] a line), or memory when the audit log is off.
//!
//! Invariants: the store is bounded — it keeps the newest [`MAX_RECORDS`] records and drops
//! the oldest when a new one comes; every write reads the file, changes it and writes it back
//! under a process mutex and an exclusive file lock (several server processes may share it),
//! then syncs it; the file is created 0600 (it holds old config values) in a folder created
//! 0700; a line that cannot be read is skipped and logged, never fatal; records name their
//! cluster and a store scoped to one cluster sees only its own. Nothing is read or written
//! until the first record is listed or added.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use thiserror::Error;

use super::record::{Part, Record};

/// How many records a store keeps; older ones are dropped.
pub const MAX_RECORDS: usize = 200;

/// Why the store could not be read or written.
#[derive(Debug, Error)]
pub enum UndoError {
    /// The file cannot be opened, locked, read, written or synced.
    #[error("the undo records {} cannot be used: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// The blocking writer stopped.
    #[error("the undo store stopped: {0}")]
    Stopped(String),
}

/// A new record, before the store gives it an id, a time and its cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// The audit `sending` line's sequence number.
    pub audit_seq: Option<u64>,
    /// The tool that made the change.
    pub tool: String,
    /// What it did.
    pub parts: Vec<Part>,
    /// The record it reverted, when it was a revert (marked `revertedBy` in the same write).
    pub reverts: Option<u64>,
}

#[derive(Debug)]
enum Backing {
    File(PathBuf),
    Memory(Mutex<Vec<Record>>),
}

#[derive(Debug)]
struct Inner {
    backing: Backing,
    /// Orders this process's writes; the file lock orders the processes.
    lock: Mutex<()>,
}

/// The undo store, cheap to clone; every clone shares the records.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
    instance: Option<Arc<str>>,
}

impl Store {
    /// Records kept in memory only (the audit log is off): lost at restart.
    pub fn memory() -> Store {
        Store::with_backing(Backing::Memory(Mutex::new(Vec::new())))
    }

    /// Records kept in `path`.
    pub fn file(path: PathBuf) -> Store {
        Store::with_backing(Backing::File(path))
    }

    /// The store beside the audit log `audit` (`audit.jsonl` → `audit.undo.jsonl`).
    pub fn beside(audit: &Path) -> Store {
        Store::file(audit.with_extension("undo.jsonl"))
    }

    fn with_backing(backing: Backing) -> Store {
        Store {
            inner: Arc::new(Inner {
                backing,
                lock: Mutex::new(()),
            }),
            instance: None,
        }
    }

    /// The same records, seen as one cluster's: new records name it, and only its records
    /// are listed.
    #[must_use]
    pub fn with_instance(mut self, instance: &str) -> Store {
        self.instance = Some(Arc::from(instance));
        self
    }

    /// The file, when records survive a restart.
    pub fn path(&self) -> Option<&Path> {
        match &self.inner.backing {
            Backing::File(path) => Some(path),
            Backing::Memory(_) => None,
        }
    }

    /// Every record of this store's cluster, oldest first.
    pub async fn list(&self) -> Result<Vec<Record>, UndoError> {
        let store = self.clone();
        blocking(move || store.list_blocking()).await
    }

    /// One record of this store's cluster.
    pub async fn get(&self, id: u64) -> Result<Option<Record>, UndoError> {
        Ok(self.list().await?.into_iter().find(|r| r.id == id))
    }

    /// The guest `vmid` was cloned from by this server when that source was not (known to be)
    /// a template, from the newest such record not yet reverted; `None` otherwise or when the
    /// records cannot be read.
    pub async fn copy_of(&self, vmid: &str) -> Option<String> {
        let records = self.list().await.ok()?;
        records
            .iter()
            .rev()
            .filter(|r| r.reverted_by.is_none())
            .find_map(|r| {
                r.parts.iter().find_map(|part| match part {
                    Part::Clone {
                        guest,
                        source,
                        source_template,
                    } if guest.vmid == vmid && *source_template != Some(true) => {
                        Some(source.clone().unwrap_or_else(|| "another guest".to_owned()))
                    }
                    _ => None,
                })
            })
    }

    /// Adds a record (dropping the oldest beyond [`MAX_RECORDS`]) and returns it.
    pub async fn add(&self, new: NewRecord) -> Result<Record, UndoError> {
        let store = self.clone();
        blocking(move || store.add_blocking(new)).await
    }

    /// [`Store::list`] from the calling thread.
    pub fn list_blocking(&self) -> Result<Vec<Record>, UndoError> {
        let all = self.with_records(|_| None::<()>)?.0;
        Ok(all
            .into_iter()
            .filter(|r| r.instance.as_deref() == self.instance.as_deref())
            .collect())
    }

    /// [`Store::add`] from the calling thread.
    pub fn add_blocking(&self, new: NewRecord) -> Result<Record, UndoError> {
        let instance = self.instance.as_deref().map(str::to_owned);
        let (_, added) = self.with_records(move |records| {
            let id = records.iter().map(|r| r.id).max().unwrap_or(0) + 1;
            if let Some(reverted) = new.reverts
                && let Some(original) = records
                    .iter_mut()
                    .find(|r| r.id == reverted && r.instance == instance)
            {
                original.reverted_by = Some(id);
            }
            let record = Record {
                id,
                audit_seq: new.audit_seq,
                time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                instance,
                tool: new.tool,
                parts: new.parts,
                reverts: new.reverts,
                reverted_by: None,
            };
            records.push(record.clone());
            let excess = records.len().saturating_sub(MAX_RECORDS);
            records.drain(..excess);
            Some(record)
        })?;
        added.ok_or_else(|| UndoError::Stopped("the record was not kept".into()))
    }

    /// Runs `change` on every record (all clusters), writing them back when it returns
    /// `Some`. Returns the records as they are afterwards.
    fn with_records<T>(
        &self,
        change: impl FnOnce(&mut Vec<Record>) -> Option<T>,
    ) -> Result<(Vec<Record>, Option<T>), UndoError> {
        // A poisoned mutex only means another write panicked; the data is still whole.
        let _guard = self.inner.lock.lock().unwrap_or_else(|p| p.into_inner());
        match &self.inner.backing {
            Backing::Memory(records) => {
                let mut records = records.lock().unwrap_or_else(|p| p.into_inner());
                let out = change(&mut records);
                Ok((records.clone(), out))
            }
            Backing::File(path) => {
                let io = |source| UndoError::Io {
                    path: path.clone(),
                    source,
                };
                let mut file = open(path)?;
                file.lock().map_err(io)?;
                let result = (|| {
                    let mut records = read_records(&mut file, path)?;
                    let out = change(&mut records);
                    if out.is_some() {
                        write_records(&mut file, &records).map_err(io)?;
                    }
                    Ok((records, out))
                })();
                let _ = file.unlock();
                result
            }
        }
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, UndoError> + Send + 'static,
) -> Result<T, UndoError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| UndoError::Stopped(e.to_string()))?
}

fn open(path: &Path) -> Result<File, UndoError> {
    let io = |source| UndoError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.exists()
    {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(parent).map_err(io)?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(io)
}

fn read_records(file: &mut File, path: &Path) -> Result<Vec<Record>, UndoError> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text))
        .map_err(|source| UndoError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(parse(&text, path))
}

/// The records of a file's text; unreadable lines are skipped (and logged).
fn parse(text: &str, path: &Path) -> Vec<Record> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .filter_map(|(n, line)| match serde_json::from_str::<Record>(line) {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::warn!(file = %path.display(), line = n + 1, error = %e, "an unreadable undo record was skipped");
                None
            }
        })
        .collect()
}

fn write_records(file: &mut File, records: &[Record]) -> std::io::Result<()> {
    let mut text = String::new();
    for record in records {
        // Serialising plain data cannot fail; a record that somehow does is left out.
        if let Ok(line) = serde_json::to_string(record) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(text.as_bytes())?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(n: u64) -> NewRecord {
        NewRecord {
            audit_seq: Some(n),
            tool: "pve_qemu_create_snapshot".into(),
            parts: vec![Part::Snapshot {
                guest: super::super::record::Guest {
                    node: "pve01".into(),
                    kind: super::super::record::GuestKind::Qemu,
                    vmid: "101".into(),
                },
                snapname: format!("s{n}"),
            }],
            reverts: None,
        }
    }

    #[test]
    fn the_file_sits_beside_the_audit_log_and_survives_a_new_handle() {
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("state/audit.jsonl");
        let store = Store::beside(&audit);
        assert_eq!(
            store.path(),
            Some(dir.path().join("state/audit.undo.jsonl").as_path())
        );
        let first = store.add_blocking(snapshot(1)).unwrap();
        assert_eq!(first.id, 1);
        let again = Store::beside(&audit);
        assert_eq!(again.list_blocking().unwrap(), vec![first]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn the_store_is_bounded_and_ids_keep_counting() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::file(dir.path().join("undo.jsonl"));
        for n in 0..(MAX_RECORDS as u64 + 5) {
            store.add_blocking(snapshot(n)).unwrap();
        }
        let records = store.list_blocking().unwrap();
        assert_eq!(records.len(), MAX_RECORDS);
        assert_eq!(records[0].id, 6, "the five oldest were dropped");
        assert_eq!(records.last().unwrap().id, MAX_RECORDS as u64 + 5);
        let memory = Store::memory();
        for n in 0..(MAX_RECORDS as u64 + 1) {
            memory.add_blocking(snapshot(n)).unwrap();
        }
        assert_eq!(memory.list_blocking().unwrap().len(), MAX_RECORDS);
    }

    #[test]
    fn a_revert_marks_its_original_and_clusters_stay_apart() {
        let store = Store::memory();
        let a = store.clone().with_instance("a");
        let b = store.with_instance("b");
        let original = a.add_blocking(snapshot(1)).unwrap();
        assert!(b.list_blocking().unwrap().is_empty());
        let revert = a
            .add_blocking(NewRecord {
                reverts: Some(original.id),
                ..snapshot(2)
            })
            .unwrap();
        let records = a.list_blocking().unwrap();
        assert_eq!(records[0].reverted_by, Some(revert.id));
        assert_eq!(records[1].reverts, Some(original.id));
        // Another cluster's revert of the same id marks nothing here.
        b.add_blocking(NewRecord {
            reverts: Some(revert.id),
            ..snapshot(3)
        })
        .unwrap();
        assert_eq!(a.list_blocking().unwrap()[1].reverted_by, None);
    }

    #[test]
    fn an_unreadable_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("undo.jsonl");
        let store = Store::file(path.clone());
        store.add_blocking(snapshot(1)).unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"cut\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(store.list_blocking().unwrap().len(), 1);
        assert_eq!(store.add_blocking(snapshot(2)).unwrap().id, 2);
    }
}
