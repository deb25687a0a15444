//! `lease list` / `lease revoke`: the leases people granted while approving, seen and ended
//! from a terminal.
//!
//! A lease lives in the memory of the server process that granted it; what every process
//! shares is the audit log (each lease's `granted` and `ended` lines) and the revocation file
//! beside the freeze file. `list` reads the former, `revoke` appends to the latter — and every
//! server process sharing it ends the named leases (or all) before its next lease lookup.
//!
//! Invariants: `revoke` only ever ends leases (it can name, never create or widen one); its
//! line is synced before it reports success; `list` never shows a session id whole.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

use super::CliError;
use crate::approval::lease::{
    AUDIT_TOOL, revocation_file, revoke_all_line, unix_seconds, write_revocation,
};
use crate::audit::AuditTarget;
use crate::config::{self, ProcessEnv};

/// Flags of `lease`.
#[derive(Debug, Args)]
pub struct LeaseArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: LeaseAction,
}

/// `lease` subcommands.
#[derive(Debug, Subcommand)]
pub enum LeaseAction {
    /// List the leases the audit log records as granted and not yet ended or expired.
    List {
        /// The audit log to read (default: PVE_AUDIT_LOG, else the per-user state folder).
        #[arg(long, value_name = "PATH")]
        audit_log: Option<PathBuf>,
    },
    /// End one lease by id, or every lease with --all, in every server sharing the freeze file.
    Revoke {
        /// The lease id (from `lease list`, the `pve_list_leases` tool or the audit log).
        #[arg(
            value_name = "ID",
            required_unless_present = "all",
            conflicts_with = "all"
        )]
        id: Option<String>,
        /// End every lease granted up to now.
        #[arg(long)]
        all: bool,
        /// The freeze file whose folder holds the revocation file (default: PVE_FREEZE_FILE,
        /// else the per-user state folder).
        #[arg(long, value_name = "PATH")]
        file: Option<PathBuf>,
    },
}

/// Runs `lease`.
pub fn run(args: LeaseArgs) -> Result<(), CliError> {
    match args.action {
        LeaseAction::List { audit_log } => list(audit_log),
        LeaseAction::Revoke { id, all, file } => revoke(id, all, file),
    }
}

fn revoke(id: Option<String>, all: bool, file: Option<PathBuf>) -> Result<(), CliError> {
    let line = match (all, id) {
        (true, _) => revoke_all_line(),
        (false, Some(id)) if is_lease_id(&id) => format!("lease {id}"),
        (false, Some(id)) => {
            return Err(CliError::Config(format!(
                "{id:?} is not a lease id (16 hexadecimal characters, as `lease list` shows)"
            )));
        }
        (false, None) => return Err(CliError::Config("name a lease id, or pass --all".into())),
    };
    let switch = super::freeze::switch(file)?;
    let revocations = revocation_file(switch.path());
    write_revocation(&revocations, &line).map_err(|e| {
        CliError::Runtime(format!(
            "cannot write the revocation file {}: {e}; no lease was ended",
            revocations.display()
        ))
    })?;
    let what = if all {
        "Every lease granted up to now ends".to_owned()
    } else {
        format!("Lease {} ends", line.trim_start_matches("lease "))
    };
    println!(
        "{what} in every server process sharing {}, before its next lease lookup.\n  revocation file: {}",
        switch,
        revocations.display()
    );
    Ok(())
}

/// A lease id as the server makes them: 16 lower-case hexadecimal characters.
fn is_lease_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn list(audit_log: Option<PathBuf>) -> Result<(), CliError> {
    let path = match audit_log {
        Some(path) => path,
        None => match config::audit_log(&ProcessEnv)
            .map_err(|e| CliError::Config(e.to_string()))?
            .into()
        {
            AuditTarget::File(path) => path,
            _ => {
                println!(
                    "The audit log is off or not a file, so leases are not recorded where this command can read them; ask the server with the pve_list_leases tool."
                );
                return Ok(());
            }
        },
    };
    let file = std::fs::File::open(&path).map_err(|e| {
        CliError::Runtime(format!("cannot read the audit log {}: {e}", path.display()))
    })?;
    let mut live: BTreeMap<String, Value> = BTreeMap::new();
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        let Ok(record) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if record["tool"] != AUDIT_TOOL {
            continue;
        }
        let Some(id) = record["arguments"]["id"].as_str().map(str::to_owned) else {
            continue;
        };
        match record["decision"].as_str() {
            Some("granted") => {
                live.insert(id, record["arguments"].clone());
            }
            Some("ended") => {
                live.remove(&id);
            }
            _ => {}
        }
    }
    let now = unix_seconds(std::time::SystemTime::now());
    live.retain(|_, lease| lease["expiresAt"].as_u64().is_some_and(|t| t > now));
    if live.is_empty() {
        println!("No live lease is recorded in {}.", path.display());
        return Ok(());
    }
    println!("Leases granted and not ended ({}):", path.display());
    for (id, lease) in &live {
        let left = lease["expiresAt"]
            .as_u64()
            .unwrap_or(now)
            .saturating_sub(now);
        println!(
            "  {id}  {}  · {} · {} min left · granted by {}",
            lease["covers"].as_str().unwrap_or("?"),
            lease["holder"].as_str().unwrap_or("?"),
            left.div_ceil(60),
            lease["grantedBy"].as_str().unwrap_or("?"),
        );
    }
    println!(
        "A lease also ends when its server process exits. `nandi-proxmox-mcp lease revoke ID` (or --all) ends it now."
    );
    Ok(())
}
