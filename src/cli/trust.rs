//! `trust`: approve a project-directory instance file (`<cwd>/.nandi-proxmox-mcp/<name>.json`) so
//! discovery may use it; `--list` shows the trust store, `--revoke PATH` removes an entry; with
//! no argument it shows the working directory's project files and whether each is trusted.
//!
//! Invariant: this command is the only writer of the trust store, and it records a file only
//! after validating the exact bytes it hashes, together with the SHA-256 of the CA file
//! (`tlsCaFile`) those bytes name, so swapping that file loses the trust too; it never trusts
//! anything on its own (no PATH means "show", not "trust everything here").

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::CliError;
use crate::config::trust::TrustState;
use crate::config::{self, Paths, ProcessEnv};

/// Arguments of `trust`.
#[derive(Debug, Args, Default)]
pub struct TrustArgs {
    /// The instance file to trust (its current content and that of the CA file it names; a
    /// later change to either loses the trust).
    #[arg(value_name = "PATH", conflicts_with_all = ["list", "revoke"])]
    pub path: Option<PathBuf>,
    /// List every trusted file and whether its content is still the trusted one.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Remove this file from the trust store.
    #[arg(long, value_name = "PATH")]
    pub revoke: Option<PathBuf>,
}

/// Runs `trust`.
pub fn run(args: TrustArgs) -> Result<(), CliError> {
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let out = if let Some(path) = &args.revoke {
        revoke(&paths, path)?
    } else if args.list {
        list(&paths)?
    } else if let Some(path) = &args.path {
        trust(&paths, path)?
    } else {
        show_project(&paths)
    };
    super::write_stdout(out.as_bytes())
}

fn config_err(e: config::ConfigError) -> CliError {
    CliError::Config(e.to_string())
}

fn trust(paths: &Paths, path: &std::path::Path) -> Result<String, CliError> {
    // A policy file (`PVE_POLICY_FILE`, docs/POLICY.md) is trusted as itself, not as an
    // instance file: its rules must parse, and its exact bytes are recorded.
    let full = paths.cwd.join(path);
    if std::fs::read(&full).is_ok_and(|b| crate::policy::looks_like_policy(&b)) {
        let entry =
            crate::policy::trust_policy_file(&ProcessEnv, &full).map_err(CliError::Config)?;
        return Ok(format!(
            "trusted the policy file {}\n  sha256 {}\nPVE_POLICY_FILE may name it now; any change to it needs `trust` again.\n",
            entry.path.display(),
            entry.sha256
        ));
    }
    let (entry, ignored) = config::trust_file(&ProcessEnv, paths, path).map_err(config_err)?;
    let store = config::trust_store(&ProcessEnv, paths).map_err(config_err)?;
    let mut out = format!(
        "trusted {}\n  sha256 {}\n",
        entry.path.display(),
        entry.sha256
    );
    for named in &entry.named_files {
        let _ = writeln!(
            out,
            "  {} {}\n    sha256 {}",
            named.key,
            named.path.display(),
            named.sha256
        );
    }
    let _ = writeln!(out, "  recorded in {}", store.path().display());
    out.push_str(
        "Discovery uses it from a working directory only while no PROXMOX_* variable, \
         NANDI_PROXMOX_CONFIG or ~/.nandi-proxmox-mcp/ file is set; any change to the file, \
         or to the CA file it names, needs `trust` again.\n",
    );
    if !ignored.is_empty() {
        let _ = writeln!(
            out,
            "note: its {} stays ignored (a project-directory file never chooses SSH \
             credentials), so SSH tools are off for it; put the instance in \
             ~/.nandi-proxmox-mcp/ or name it with NANDI_PROXMOX_CONFIG to use SSH.",
            ignored.join(" and ")
        );
    }
    Ok(out)
}

fn revoke(paths: &Paths, path: &std::path::Path) -> Result<String, CliError> {
    match config::revoke_file(&ProcessEnv, paths, path).map_err(config_err)? {
        Some(removed) => Ok(format!("no longer trusted: {}\n", removed.display())),
        None => Err(CliError::Config(format!(
            "{} is not in the trust store (`nandi-proxmox-mcp trust --list` shows it)",
            path.display()
        ))),
    }
}

fn state_word(state: TrustState) -> String {
    match state {
        TrustState::Trusted => "trusted".to_owned(),
        TrustState::Changed => "CHANGED since trusted (ignored)".to_owned(),
        TrustState::NamedFileChanged(change) => format!(
            "NAMED FILE CHANGED (ignored): its {} {} {}",
            change.key,
            change.path.display(),
            change.reason
        ),
        TrustState::Unknown => "not trusted (ignored)".to_owned(),
    }
}

fn list(paths: &Paths) -> Result<String, CliError> {
    let store = config::trust_store(&ProcessEnv, paths).map_err(config_err)?;
    let mut out = format!("trust store: {}\n", store.path().display());
    if store.entries().is_empty() {
        out.push_str("no trusted files\n");
    }
    for entry in store.entries() {
        let state = match config::trust_status(&ProcessEnv, paths, &entry.path) {
            Ok((_, _, state)) => state_word(state),
            Err(e) => format!("unreadable: {e}"),
        };
        let _ = writeln!(out, "{}  {}", entry.path.display(), state);
    }
    Ok(out)
}

fn show_project(paths: &Paths) -> String {
    let files = config::instances::list_instances(paths)
        .into_iter()
        .filter(|i| i.scope == config::Scope::Project)
        .collect::<Vec<_>>();
    if files.is_empty() {
        return format!(
            "no project-directory instance files in {}\n\
             usage: nandi-proxmox-mcp trust PATH | --list | --revoke PATH\n",
            paths.cwd.join(config::instances::CONFIG_DIR_NAME).display()
        );
    }
    let mut out = String::new();
    for inst in files {
        match config::trust_status(&ProcessEnv, paths, &inst.path) {
            Ok((_, _, TrustState::Trusted)) => {
                let _ = writeln!(out, "{}  trusted", inst.path.display());
            }
            Ok((_, _, state)) => {
                let _ = writeln!(
                    out,
                    "{}  {}; review it, then: nandi-proxmox-mcp trust {}",
                    inst.path.display(),
                    state_word(state),
                    inst.path.display()
                );
            }
            Err(e) => {
                let _ = writeln!(out, "{}  {e}", inst.path.display());
            }
        }
    }
    out
}
