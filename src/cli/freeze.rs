//! `freeze` / `unfreeze`: the kill switch. `freeze` creates the freeze file
//! (`PVE_FREEZE_FILE`, else `frozen` beside the default audit log) and every server process
//! watching it refuses anything beyond a plain read from its next call; `unfreeze` removes
//! it; `freeze --status` only reports.
//!
//! Invariants: the file appears whole (temporary file + rename, `effects::freeze`); a freeze
//! never waits on the audit trail (its line is written after, and a failure to write it is
//! reported on stderr, not fatal — stopping changes must not depend on a disk that may be
//! full), while an unfreeze, which lets changes through again, writes and syncs its `sending`
//! line *before* it removes the file and is refused, the file left in place, when that line
//! cannot be written (fail closed, like every change; a full disk or `/dev/full` included);
//! its outcome (`executed`) follows on a second line. The lines go to the audit log of the
//! environment the command runs in.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use super::CliError;
use crate::audit::call::{PENDING, SENDING};
use crate::audit::{AuditEntry, AuditLog};
use crate::config::{self, ProcessEnv};
use crate::effects::{FreezeNote, FreezeSwitch, Frozen};

/// Longest `--reason`, in characters.
const MAX_REASON_CHARS: usize = 500;

/// Flags of `freeze`.
#[derive(Debug, Args)]
pub struct FreezeArgs {
    /// Why changes are frozen; shown in every refusal while frozen.
    #[arg(long, value_name = "TEXT", conflicts_with = "status")]
    pub reason: Option<String>,
    /// The freeze file (default: PVE_FREEZE_FILE, else the per-user state folder).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Only report whether changes are frozen (and since when, by whom, why); change nothing.
    #[arg(long)]
    pub status: bool,
}

/// Flags of `unfreeze`.
#[derive(Debug, Args)]
pub struct UnfreezeArgs {
    /// The freeze file (default: PVE_FREEZE_FILE, else the per-user state folder).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

/// Runs `freeze` (or `freeze --status`).
pub fn freeze(args: FreezeArgs) -> Result<(), CliError> {
    let switch = switch(args.file)?;
    if args.status {
        return status(&switch);
    }
    let reason = args
        .reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    if reason
        .as_ref()
        .is_some_and(|r| r.chars().count() > MAX_REASON_CHARS)
    {
        return Err(CliError::Config(format!(
            "--reason is longer than {MAX_REASON_CHARS} characters"
        )));
    }
    if let Err(frozen) = switch.check()
        && frozen.unreadable.is_none()
    {
        println!(
            "Already frozen: {}.\n  file: {}\n  Left as it is; `nandi-proxmox-mcp unfreeze` lifts it.",
            frozen.summary(),
            switch
        );
        return Ok(());
    }
    let note = FreezeNote {
        since: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        by: Some(who()),
        reason,
    };
    switch.freeze(&note).map_err(|e| {
        CliError::Runtime(format!(
            "cannot create the freeze file {switch}: {e}; changes are NOT frozen"
        ))
    })?;
    let frozen = Frozen {
        note: note.clone(),
        unreadable: None,
    };
    // The kill switch also ends every lease a person granted, in every process sharing the
    // file, even if the freeze is lifted before their next call.
    let revocations = crate::approval::lease::revocation_file(switch.path());
    if let Err(e) = crate::approval::lease::write_revocation(
        &revocations,
        &crate::approval::lease::revoke_all_line(),
    ) {
        eprintln!(
            "warning: changes are frozen, but the lease revocation file {} could not be written ({e}); leases end when a server sees the freeze",
            revocations.display()
        );
    }
    println!(
        "FROZEN: {}.\n  file: {switch}\n  Every server process watching this file refuses anything beyond a plain read from its next call (FROZEN), and every lease ends; reads go on.\n  `nandi-proxmox-mcp unfreeze` lifts it.",
        frozen.summary()
    );
    if let Err(problem) =
        audit_log().and_then(|log| record(&log, "freeze", &switch, &note, "executed", "ok"))
    {
        eprintln!(
            "warning: changes are frozen, but {problem}; the freeze holds all the same (a kill switch never waits on the audit log)"
        );
    }
    Ok(())
}

/// Runs `unfreeze`.
pub fn unfreeze(args: UnfreezeArgs) -> Result<(), CliError> {
    let switch = switch(args.file)?;
    let note = match switch.check() {
        Ok(()) => {
            println!("Not frozen: there is no freeze file at {switch}.");
            return Ok(());
        }
        Err(frozen) => frozen.note,
    };
    // Lifting the freeze lets changes through again: not without a record of it. The
    // `sending` line is written and synced before the file is removed, like the line of any
    // change (`audit::call::record_intent`); `ensure_writable` alone cannot see a full disk.
    let stay = |e: String| CliError::Runtime(format!("changes stay frozen: {e}"));
    let log = audit_log().map_err(stay)?;
    record(&log, "unfreeze", &switch, &note, SENDING, PENDING).map_err(|e| {
        stay(format!(
            "{e}; an unfreeze is refused while its audit line cannot be written (the freeze file {switch} is left in place)"
        ))
    })?;
    let lifted = match switch.unfreeze() {
        Ok(lifted) => lifted,
        Err(e) => {
            note_outcome(&log, &switch, &note, OUTCOME_NOT_REMOVED);
            return Err(CliError::Runtime(format!(
                "cannot remove the freeze file {switch}: {e}; changes stay frozen"
            )));
        }
    };
    if !lifted {
        note_outcome(&log, &switch, &note, OUTCOME_ALREADY_GONE);
        println!("Not frozen: the freeze file at {switch} was already gone.");
        return Ok(());
    }
    println!("Unfrozen: {switch} removed. Changes go through again, after their usual approval.");
    note_outcome(&log, &switch, &note, "ok");
    Ok(())
}

/// Outcome of an unfreeze whose file could not be removed (still frozen).
const OUTCOME_NOT_REMOVED: &str = "FREEZE_FILE_NOT_REMOVED";
/// Outcome of an unfreeze whose file was removed by someone else in the meantime.
const OUTCOME_ALREADY_GONE: &str = "NOT_FROZEN";

/// Appends the `executed` line after an unfreeze's `sending` line; its `sending` line is
/// already on disk, so a failure here is reported, not fatal.
fn note_outcome(log: &AuditLog, switch: &FreezeSwitch, note: &FreezeNote, outcome: &str) {
    if let Err(problem) = record(log, "unfreeze", switch, note, "executed", outcome) {
        eprintln!("warning: the unfreeze's outcome ({outcome}) was not recorded: {problem}");
    }
}

fn status(switch: &FreezeSwitch) -> Result<(), CliError> {
    match switch.check() {
        Ok(()) => println!(
            "not frozen: no freeze file at {switch}; changes go through after their usual approval."
        ),
        Err(frozen) => println!(
            "FROZEN: {}.\n  file: {switch}\n  Anything beyond a plain read is refused; `nandi-proxmox-mcp unfreeze` lifts it.",
            frozen.summary()
        ),
    }
    Ok(())
}

/// The freeze file: `--file`, else `PVE_FREEZE_FILE`, else the per-user state folder.
pub(super) fn switch(file: Option<PathBuf>) -> Result<FreezeSwitch, CliError> {
    let path = match file {
        Some(path) => path,
        None => config::freeze_file(&ProcessEnv)
            .map_err(|e| CliError::Config(e.to_string()))?
            .ok_or_else(|| {
                CliError::Config(
                    "no freeze file known: set PVE_FREEZE_FILE (or HOME), or pass --file".into(),
                )
            })?,
    };
    Ok(FreezeSwitch::new(path))
}

/// The audit log of the environment the command runs in.
pub(super) fn audit_log() -> Result<AuditLog, String> {
    config::audit_log(&ProcessEnv)
        .map(|setting| AuditLog::new(setting.into()))
        .map_err(|e| format!("the audit log is misconfigured: {e}"))
}

/// Appends and syncs the `tool` line (`freeze` or `unfreeze`): the file, who froze, when and
/// why, and for an unfreeze who lifted it.
fn record(
    log: &AuditLog,
    tool: &str,
    switch: &FreezeSwitch,
    note: &FreezeNote,
    decision: &str,
    outcome: &str,
) -> Result<(), String> {
    let mut arguments = json!({
        "file": switch.path().display().to_string(),
        "by": note.by,
        "since": note.since,
        "reason": note.reason,
    });
    if tool == "unfreeze" {
        arguments["liftedBy"] = who().into();
    }
    let entry = AuditEntry {
        tool: tool.to_owned(),
        canonical: None,
        arguments,
        decision: decision.to_owned(),
        approval: Some("cli".to_owned()),
        outcome: outcome.to_owned(),
        pve_status: None,
        upid: None,
        duration: Duration::ZERO,
        caller: Some(format!("cli:{}", who())),
        approver: None,
        plan: None,
    };
    log.append_blocking(&entry)
        .map(|_| ())
        .map_err(|e| format!("no audit line was written: {e}"))
}

/// The name of this process's user id without the environment (cron, systemd, `env -i`): its
/// line in `/etc/passwd`, else `uid N`. The id is the owner of `/proc/self`.
fn uid_name() -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let named = passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id = fields.nth(1)?;
            (id.parse::<u32>().ok()? == uid && !name.is_empty()).then(|| name.to_owned())
        });
        Some(named.unwrap_or_else(|| format!("uid {uid}")))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// `user@host` of whoever runs the command: the login variables, else the name of the uid.
pub(super) fn who() -> String {
    let user = ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
        .or_else(uid_name)
        .unwrap_or_else(|| "unknown".to_owned());
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty());
    match host {
        Some(host) => format!("{user}@{host}"),
        None => user,
    }
}
