//! The audit trail: one hash-chained JSON line per change and per refusal, appended to a file.
//!
//! Line format (one JSON object, keys in this order, `hash` last):
//! `{"seq":N,"time":…,"instance":…,"caller":…,"tool":…,"canonical":…,"arguments":{masked},"decision":…,"approval":…,
//! "outcome":…,"pveStatus":…,"upid":…,"durationMs":…,"hash":"<64 hex>"}`; a call a signed-in
//! person approved or declined on the approval page also has `"approver":"oauth:<sub>"` after `approval`,
//! and a line of a plan (its call, steps and reverts) `"plan":"<id>"` after that.
//! `hash = SHA-256(previous line's hash + this line without its hash)` in lower-case hex,
//! where "this line without its hash" is the exact text up to `,"hash":` closed with `}`;
//! the first line chains to [`GENESIS`]. `seq` counts from 1, so a deleted or reordered
//! line is told apart from a modified one (see [`verify`]).
//!
//! Invariants: a line is written whole, then `fsync`'d (`sync_data`), under a process
//! mutex and an exclusive file lock (several server processes may share one file; each
//! re-reads the last line under the lock, so the chain never forks); the file is reopened
//! for every line, so a log that fills up or is replaced is noticed at the next line. An
//! append succeeds only when every byte was written *and* synced: a short or failed write
//! or sync (ENOSPC, EIO, EDQUOT, a full tmpfs, `/dev/full`) is an error, and the bytes of
//! the failed line are cut off again so the chain stays valid for the lines after it. A
//! change is sent only after its `sending` line was appended ([`call::record_intent`]);
//! any error refuses it (fail closed). Arguments are masked before they get here.

pub mod call;
pub mod verify;

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// The hash the first line chains to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The stable error code of a call refused because the audit log cannot be written.
pub const AUDIT_LOG_UNAVAILABLE: &str = "AUDIT_LOG_UNAVAILABLE";

/// The text between a line's body and its hash.
const HASH_KEY: &str = ",\"hash\":\"";

/// Why the audit log cannot be written.
#[derive(Debug, Error)]
pub enum AuditError {
    /// The file or its folder cannot be created, opened, locked, written or synced.
    #[error("the audit log {} cannot be written: {source}", path.display())]
    Io {
        /// The log file.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },
    /// No file could be chosen (no state directory and no `PVE_AUDIT_LOG`).
    #[error("no audit log is available: {reason}")]
    Unavailable {
        /// What is missing.
        reason: String,
    },
    /// The last line of the file is incomplete or not an audit line, so the chain cannot
    /// be continued.
    #[error(
        "the audit log {} ends with an unreadable line ({reason}); run `nandi-proxmox-mcp audit verify {}`, keep the file as evidence and start a new one",
        path.display(), path.display()
    )]
    Corrupt {
        /// The log file.
        path: PathBuf,
        /// What is wrong with the last line.
        reason: String,
    },
}

/// Where audit lines go, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditTarget {
    /// `PVE_AUDIT_LOG=off`: nothing is recorded and nothing is refused for it.
    Off,
    /// Append to this file.
    File(PathBuf),
    /// A log is wanted but no path could be chosen; changes are refused.
    Unavailable(String),
}

impl From<crate::config::AuditLogSetting> for AuditTarget {
    fn from(setting: crate::config::AuditLogSetting) -> AuditTarget {
        use crate::config::AuditLogSetting;
        match setting {
            AuditLogSetting::Off => AuditTarget::Off,
            AuditLogSetting::File(path) => AuditTarget::File(path),
            AuditLogSetting::NoStateDir => AuditTarget::Unavailable(
                "neither PVE_AUDIT_LOG, XDG_STATE_HOME nor a home folder is set".into(),
            ),
        }
    }
}

/// One audit record, from plain inputs (the pipeline stage that fills it is [`call`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// The wire name the client called.
    pub tool: String,
    /// The canonical name when `tool` is an alias.
    pub canonical: Option<String>,
    /// The arguments, already masked (`redact::mask_arguments`).
    pub arguments: Value,
    /// `sending` (about to be sent, written before the request), `executed` (sent to
    /// Proxmox), `rejected` (stopped before sending) or `refused` (stopped by a gate).
    pub decision: String,
    /// How the change was approved (`confirm=true`, a person via elicitation, …), if at all.
    pub approval: Option<String>,
    /// `ok`, or the envelope's error code; `pending` on a `sending` line.
    pub outcome: String,
    /// The HTTP status Proxmox answered with, when there was an answer.
    pub pve_status: Option<u16>,
    /// The task the call started, when it started one.
    pub upid: Option<String>,
    /// Wall time of the call.
    pub duration: Duration,
    /// Who asked for it ([`crate::identity::Caller::label`]: `stdio`, `static token`,
    /// `oauth:<sub>`, `cli:<user>`), when known; written as `caller` after `instance`.
    pub caller: Option<String>,
    /// Who approved it on the approval page after signing in (`oauth:<sub>`), when a person
    /// did; written as `approver` after `approval` (absent otherwise).
    pub approver: Option<String>,
    /// The plan the call is a step (or a revert) of, when it is one
    /// ([`call::in_plan`]); written as `plan` after `approver`.
    pub plan: Option<String>,
}

/// The line appended for an entry: its number and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// Sequence number (1 for the first line).
    pub seq: u64,
    /// The line's hash.
    pub hash: String,
}

/// The audit log handle, cheap to clone and shared by every session.
#[derive(Debug, Clone)]
pub struct AuditLog {
    target: Arc<AuditTarget>,
    lock: Arc<Mutex<()>>,
    /// Which cluster the records are about (`instance` on every line), when known.
    instance: Option<Arc<str>>,
    /// The undo records beside the log (`<stem>.undo.jsonl`; memory when the log is off).
    undo: crate::undo::Store,
}

impl AuditLog {
    /// A handle for `target`. No I/O: the first check or append opens the file.
    pub fn new(target: AuditTarget) -> AuditLog {
        let undo = match &target {
            AuditTarget::File(path) => crate::undo::Store::beside(path),
            AuditTarget::Off | AuditTarget::Unavailable(_) => crate::undo::Store::memory(),
        };
        AuditLog {
            target: Arc::new(target),
            lock: Arc::new(Mutex::new(())),
            instance: None,
            undo,
        }
    }

    /// The undo records of the changes this log records (see `undo`), scoped to its cluster.
    pub fn undo(&self) -> &crate::undo::Store {
        &self.undo
    }

    /// The same log, with every record naming `instance` (the cluster the server talks to,
    /// or `demo` for the built-in emulator), so a record never reads as another cluster's.
    #[must_use]
    pub fn with_instance(mut self, instance: &str) -> AuditLog {
        self.instance = Some(Arc::from(instance));
        self.undo = self.undo.with_instance(instance);
        self
    }

    /// A handle that records nothing (`PVE_AUDIT_LOG=off`, and tests that do not audit).
    pub fn off() -> AuditLog {
        AuditLog::new(AuditTarget::Off)
    }

    /// The handle `run` uses: `PVE_AUDIT_LOG` from the process environment, checked once so
    /// a log that cannot be written is reported at start-up (changes are then refused).
    pub fn from_env() -> Result<AuditLog, crate::config::ConfigError> {
        let setting = crate::config::audit_log(&crate::config::ProcessEnv)?;
        let log = AuditLog::new(setting.into());
        match log.ensure_writable() {
            Ok(()) if log.is_enabled() => {
                tracing::info!(log = ?log.target(), "audit trail enabled");
            }
            Ok(()) => tracing::warn!("audit trail disabled (PVE_AUDIT_LOG=off)"),
            Err(e) => {
                tracing::error!(error = %e, "audit trail unavailable: changes will be refused")
            }
        }
        Ok(log)
    }

    /// What this handle writes to.
    pub fn target(&self) -> &AuditTarget {
        &self.target
    }

    /// Whether lines are recorded at all.
    pub fn is_enabled(&self) -> bool {
        !matches!(*self.target, AuditTarget::Off)
    }

    /// Checks, now and without caching, that a line could be appended: the folder exists
    /// (created 0700 when missing), the file opens for appending (created 0600), and its
    /// last line continues the chain. An early check (before a person is asked): it cannot
    /// see a full disk, so the change is only sent after its `sending` line was actually
    /// written and synced ([`call::record_intent`]). An error means the change is refused.
    pub fn ensure_writable(&self) -> Result<(), AuditError> {
        match &*self.target {
            AuditTarget::Off => Ok(()),
            AuditTarget::Unavailable(reason) => Err(AuditError::Unavailable {
                reason: reason.clone(),
            }),
            AuditTarget::File(path) => {
                let mut file = open_append(path)?;
                tail(&mut file, path).map(|_| ())
            }
        }
    }

    /// Appends one line (blocking I/O, run on the blocking pool). `Ok(None)` when off.
    pub async fn append(&self, entry: AuditEntry) -> Result<Option<Appended>, AuditError> {
        let log = self.clone();
        tokio::task::spawn_blocking(move || log.append_blocking(&entry))
            .await
            .map_err(|e| AuditError::Unavailable {
                reason: format!("the audit writer stopped: {e}"),
            })?
    }

    /// Appends one line from the calling thread (CLI and tests).
    pub fn append_blocking(&self, entry: &AuditEntry) -> Result<Option<Appended>, AuditError> {
        let path = match &*self.target {
            AuditTarget::Off => return Ok(None),
            AuditTarget::Unavailable(reason) => {
                return Err(AuditError::Unavailable {
                    reason: reason.clone(),
                });
            }
            AuditTarget::File(path) => path,
        };
        // A poisoned mutex only means another append panicked; the file lock still orders us.
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let io = |source| AuditError::Io {
            path: path.clone(),
            source,
        };
        let mut file = open_append(path)?;
        file.lock().map_err(io)?;
        let result = (|| {
            let (last_seq, last_hash) = tail(&mut file, path)?;
            let before = file.metadata().map_err(io)?.len();
            let seq = last_seq + 1;
            let line = render_line(seq, entry, self.instance.as_deref(), &last_hash);
            // `write_all` retries short writes and fails on the first error (ENOSPC from a
            // full disk or `/dev/full`); the line counts only once it is on disk.
            let written = file
                .write_all(line.text.as_bytes())
                .and_then(|()| file.sync_data());
            if let Err(source) = written {
                cut_back(&file, path, before);
                return Err(io(source));
            }
            Ok(Some(Appended {
                seq,
                hash: line.hash,
            }))
        })();
        // Closing the file releases the lock too; unlocking first is only tidier.
        let _ = file.unlock();
        result
    }
}

/// Removes the bytes of a line whose write or sync failed, so the file again ends with the
/// last complete line and the next line continues the chain. Still under the file lock.
/// When even this fails the file ends with a cut line: later appends then refuse
/// ([`AuditError::Corrupt`]) and `audit verify` names that line as truncated.
fn cut_back(file: &File, path: &Path, len: u64) -> CutBack {
    let grew = file.metadata().map(|m| m.len() > len).unwrap_or(true);
    if !grew {
        // Nothing reached the file (or it is a device such as `/dev/full`, which has no length).
        return CutBack::NothingWritten;
    }
    match file.set_len(len).and_then(|()| file.sync_data()) {
        Ok(()) => CutBack::Cut,
        Err(e) => {
            tracing::error!(
                log = %path.display(),
                error = %e,
                "a failed audit line could not be cut off; the log now ends with a cut line"
            );
            CutBack::Failed
        }
    }
}

/// What [`cut_back`] did with the bytes of a failed line.
#[derive(Debug, PartialEq, Eq)]
enum CutBack {
    /// The file is as long as before the line: nothing to remove.
    NothingWritten,
    /// The partial line was removed.
    Cut,
    /// It could not be removed (logged): the file ends with a cut line.
    Failed,
}

fn open_append(path: &Path) -> Result<File, AuditError> {
    let io = |source| AuditError::Io {
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
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(io)
}

/// A rendered line and its hash.
pub(crate) struct Line {
    pub(crate) text: String,
    pub(crate) hash: String,
}

/// `hash = SHA-256(previous hash + body)` in lower-case hex.
pub(crate) fn chain_hash(previous: &str, body: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(previous.as_bytes());
    hasher.update(body.as_bytes());
    hex::encode(hasher.finalize())
}

fn render_line(seq: u64, entry: &AuditEntry, instance: Option<&str>, previous: &str) -> Line {
    let mut record = Map::new();
    record.insert("seq".into(), seq.into());
    record.insert(
        "time".into(),
        chrono::Utc::now()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            .into(),
    );
    if let Some(instance) = instance {
        record.insert("instance".into(), instance.into());
    }
    if let Some(caller) = &entry.caller {
        record.insert("caller".into(), caller.clone().into());
    }
    record.insert("tool".into(), entry.tool.clone().into());
    record.insert("canonical".into(), entry.canonical.clone().into());
    record.insert("arguments".into(), entry.arguments.clone());
    record.insert("decision".into(), entry.decision.clone().into());
    record.insert("approval".into(), entry.approval.clone().into());
    if let Some(approver) = &entry.approver {
        record.insert("approver".into(), approver.clone().into());
    }
    if let Some(plan) = &entry.plan {
        record.insert("plan".into(), plan.clone().into());
    }
    record.insert("outcome".into(), entry.outcome.clone().into());
    record.insert("pveStatus".into(), entry.pve_status.into());
    record.insert("upid".into(), entry.upid.clone().into());
    let millis = u64::try_from(entry.duration.as_millis()).unwrap_or(u64::MAX);
    record.insert("durationMs".into(), millis.into());
    // Serialising a map of JSON values cannot fail; `{}` keeps the line well-formed anyway.
    let body = serde_json::to_string(&Value::Object(record)).unwrap_or_else(|_| "{}".into());
    let hash = chain_hash(previous, &body);
    let text = format!("{}{HASH_KEY}{hash}\"}}\n", &body[..body.len() - 1]);
    Line { text, hash }
}

/// Splits a line (without its newline) into its body and hash, checking the shape.
pub(crate) fn split_line(line: &str) -> Option<(String, &str)> {
    let hash_start = line.len().checked_sub(64 + 2)?;
    let key_start = hash_start.checked_sub(HASH_KEY.len())?;
    if !line.is_char_boundary(key_start)
        || !line.is_char_boundary(hash_start)
        || !line.starts_with('{')
        || !line.ends_with("\"}")
    {
        return None;
    }
    if &line[key_start..hash_start] != HASH_KEY {
        return None;
    }
    let hash = &line[hash_start..line.len() - 2];
    if !hash
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    {
        return None;
    }
    Some((format!("{}}}", &line[..key_start]), hash))
}

/// The `seq` of a body, if it is an audit record.
pub(crate) fn seq_of(body: &str) -> Option<u64> {
    /// Only `seq` is read; the other members are skipped without being built.
    #[derive(serde::Deserialize)]
    struct Seq {
        seq: u64,
    }
    serde_json::from_str::<Seq>(body).ok().map(|s| s.seq)
}

/// The last line's `(seq, hash)`, or `(0, GENESIS)` for an empty file.
fn tail(file: &mut File, path: &Path) -> Result<(u64, String), AuditError> {
    let io = |source| AuditError::Io {
        path: path.to_path_buf(),
        source,
    };
    let corrupt = |reason: &str| AuditError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    };
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        return Ok((0, GENESIS.to_owned()));
    }
    // Read backwards in chunks until the newline that ends the line before the last one is in
    // the buffer, or the whole file is. `start` is where the last line begins.
    let mut buf: Vec<u8> = Vec::new();
    let mut pos = len;
    let start = loop {
        let chunk = pos.min(4096);
        pos -= chunk;
        file.seek(SeekFrom::Start(pos)).map_err(io)?;
        let mut part = vec![0u8; chunk as usize];
        file.read_exact(&mut part).map_err(io)?;
        part.extend_from_slice(&buf);
        buf = part;
        let body_end = buf.len().saturating_sub(1);
        if let Some(newline) = buf[..body_end].iter().rposition(|b| *b == b'\n') {
            break newline + 1;
        }
        if pos == 0 {
            break 0;
        }
    };
    if buf.last() != Some(&b'\n') {
        return Err(corrupt("the last line has no line end: it was cut short"));
    }
    let last = std::str::from_utf8(&buf[start..buf.len() - 1])
        .map_err(|_| corrupt("the last line is not UTF-8"))?;
    let (body, hash) = split_line(last).ok_or_else(|| corrupt("the last line has no hash"))?;
    let seq = seq_of(&body).ok_or_else(|| corrupt("the last line has no sequence number"))?;
    Ok((seq, hash.to_owned()))
}

#[cfg(test)]
mod tests;
