//! `audit verify [FILE]`: checks the hash chain of an audit trail and names the first bad line.
//!
//! Invariant: verification only reads the file; a broken chain, an unreadable file or no file
//! at all is a non-zero exit, so scripts and monitoring can rely on the status alone.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CliError;
use crate::audit::verify::verify_file;
use crate::config::{self, AuditLogSetting, ProcessEnv};

/// Flags of `audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// What to do with the audit trail.
    #[command(subcommand)]
    pub action: AuditAction,
}

/// The `audit` actions.
#[derive(Debug, Subcommand)]
pub enum AuditAction {
    /// Verify the hash chain; exit 1 and name the first modified, deleted, reordered,
    /// inserted or truncated line when it is broken.
    Verify {
        /// The audit file (default: PVE_AUDIT_LOG, else the per-user state folder).
        file: Option<PathBuf>,
    },
}

/// Runs `audit`.
pub fn run(args: AuditArgs) -> Result<(), CliError> {
    match args.action {
        AuditAction::Verify { file } => verify(file),
    }
}

fn verify(file: Option<PathBuf>) -> Result<(), CliError> {
    let path = match file {
        Some(path) => path,
        None => {
            match config::audit_log(&ProcessEnv).map_err(|e| CliError::Config(e.to_string()))? {
                AuditLogSetting::File(path) => path,
                AuditLogSetting::Off => {
                    return Err(CliError::Config(
                    "PVE_AUDIT_LOG=off: there is no audit trail to verify; pass the file to check".into(),
                ));
                }
                AuditLogSetting::NoStateDir => {
                    return Err(CliError::Config(
                    "no audit file given and no state folder known (set PVE_AUDIT_LOG or pass the file)".into(),
                ));
                }
            }
        }
    };
    let report = verify_file(&path).map_err(|e| {
        CliError::Runtime(format!("cannot read the audit log {}: {e}", path.display()))
    })?;
    match report.first_break {
        None => {
            println!(
                "OK: {} — {} line(s), hash chain intact; last hash {}",
                path.display(),
                report.verified,
                report.head
            );
            Ok(())
        }
        Some(broken) => Err(CliError::Red(format!(
            "audit log {} is BROKEN at line {}: {} ({} line(s) before it verified; last good hash {})",
            path.display(),
            broken.line,
            broken.problem,
            report.verified,
            report.head
        ))),
    }
}
