//! Command-line interface: argument parsing and dispatch to one file per command.
//!
//! Invariant: every command returns a `CliError` instead of exiting or panicking, so
//! `main` maps failures to exit codes in one place and nothing but MCP ever reaches stdout
//! while serving.

pub mod audit;
pub mod bootstrap;
pub mod bootstrap_pbs;
pub mod clients;
mod completions;
pub mod doctor;
pub mod files;
mod freeze;
pub mod harden;
mod health;
mod jsonc;
mod lease;
mod list;
mod man;
mod pbs_servers;
mod policy;
pub mod probe;
pub mod report;
mod run;
mod scope_flag;
mod served;
pub mod setup;
pub mod sshkey;
pub mod tools;
pub mod trust;

use clap::{Parser, Subcommand};
use thiserror::Error;

/// `nandi-proxmox-mcp` — MCP server for Proxmox VE.
#[derive(Debug, Parser)]
#[command(
    name = "nandi-proxmox-mcp",
    version,
    about = "MCP server for Proxmox VE: tiered, confirm-gated tools over the Proxmox REST API",
    after_help = "Examples:\n  nandi-proxmox-mcp run --demo        try the tools against a built-in emulator (read-only by default;\n                                      PVE_ACCESS_TIER=full PVE_MODULE_MODE=advanced for all)\n  PVE_ACCESS_TIER=full nandi-proxmox-mcp tools --json\n  nandi-proxmox-mcp                   same as `run`: serve MCP over stdio"
)]
pub struct Cli {
    /// The command; `run` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The command line of this process. The launches MCP clients make — no argument, or just
    /// `run` — are read without building clap's command tree (about a sixth of a cold start's
    /// instructions, `scripts/startup-anatomy`); every other command line goes through clap,
    /// so help, errors and the other commands are clap's as before.
    pub fn from_process_args() -> Cli {
        Cli::plain_launch(std::env::args_os().skip(1)).unwrap_or_else(Cli::parse)
    }

    /// The [`Cli`] of a plain launch (`args` without the program name), or `None` for any
    /// other command line. Equal to what clap parses from the same words.
    fn plain_launch(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Cli> {
        match (args.next(), args.next()) {
            (None, _) => Some(Cli { command: None }),
            (Some(word), None) if word == "run" => Some(Cli {
                command: Some(Command::Run(run::RunArgs::default())),
            }),
            _ => None,
        }
    }
}

/// The commands.
// Parsed once per process; boxing `setup`'s many flags would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over stdio (or Streamable HTTP when MCP_TRANSPORT=http).
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp run\n  nandi-proxmox-mcp run --demo\n  PVE_ACCESS_TIER=read-execute nandi-proxmox-mcp run"
    )]
    Run(run::RunArgs),
    /// List the tools registered under the current settings (PVE_ACCESS_TIER, PVE_MODULE_MODE, …).
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp tools\n  PVE_ACCESS_TIER=full PVE_MODULE_MODE=advanced nandi-proxmox-mcp tools --json"
    )]
    Tools(tools::ToolsArgs),
    /// Write an instance file and the MCP client entries (scripted with flags, else a wizard).
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp setup                       interactive wizard\n  nandi-proxmox-mcp setup --proxmox-host pve1.lan --proxmox-user mcp --token-name nandi \\\n      --token-secret-file ~/pve-token.txt --tls-fingerprint AB:CD:... --clients claude-code,cursor\n  printf '%s\\n' \"$SECRET\" | nandi-proxmox-mcp setup --proxmox-host 10.0.0.5 --proxmox-user mcp \\\n      --token-name nandi --token-secret-stdin --access-tier read-execute --name lab\n  nandi-proxmox-mcp setup --print-config --name lab    show the client blocks, write nothing"
    )]
    Setup(setup::SetupArgs),
    /// Check the configuration, the client entries and the cluster; exit 1 when anything is RED.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp doctor\n  nandi-proxmox-mcp doctor --name lab --check nodes,tls,permissions\n  nandi-proxmox-mcp doctor --json"
    )]
    Doctor(doctor::DoctorArgs),
    /// Print the pveum commands that create the API user, a least-privilege role and a token.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp bootstrap\n  nandi-proxmox-mcp bootstrap --tier read-execute --user mcp --realm pve\n  nandi-proxmox-mcp bootstrap --tier full --new-ssh-key"
    )]
    Bootstrap(bootstrap::BootstrapArgs),
    /// Add Claude Code `permissions.ask` rules so destructive tools need your approval.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp harden\n  nandi-proxmox-mcp harden --name lab --scope user"
    )]
    Harden(harden::HardenArgs),
    /// Trust a project-directory instance file (`.nandi-proxmox-mcp/<name>.json` in the working
    /// directory) so discovery may use it; a changed file loses the trust.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp trust                                 show this directory's project files\n  nandi-proxmox-mcp trust .nandi-proxmox-mcp/lab.json\n  nandi-proxmox-mcp trust --list\n  nandi-proxmox-mcp trust --revoke .nandi-proxmox-mcp/lab.json"
    )]
    Trust(trust::TrustArgs),
    /// Explain the operator's policy: which rule decides a call, and why (docs/POLICY.md).
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp policy explain pve_start_qemu_vm node=pve01 vmid=101\n  nandi-proxmox-mcp policy explain pve_delete_qemu_vm node=pve01 vmid=101 --json\n\nThe rules come from the instance file's `policy` key, else PVE_POLICY_FILE."
    )]
    Policy(policy::PolicyArgs),
    /// List the configured instances.
    #[command(after_help = "Examples:\n  nandi-proxmox-mcp list")]
    List,
    /// Print shell completions.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp completions bash > ~/.local/share/bash-completion/completions/nandi-proxmox-mcp\n  nandi-proxmox-mcp completions zsh > ~/.zfunc/_nandi-proxmox-mcp"
    )]
    Completions(completions::CompletionsArgs),
    /// Print the manual page (roff) generated from this command line; the `.deb` ships it.
    #[command(hide = true)]
    Man,
    /// Check the audit trail: `audit verify [FILE]` exits 1 at the first tampered line.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp audit verify\n  nandi-proxmox-mcp audit verify ~/.local/state/nandi-proxmox-mcp/audit.jsonl"
    )]
    Audit(audit::AuditArgs),
    /// Kill switch: refuse every change on every server process sharing the freeze file, from
    /// its next call (reads go on); `--status` only reports.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp freeze --reason \"incident 42: agent misbehaving\"\n  nandi-proxmox-mcp freeze --status\n  nandi-proxmox-mcp freeze --file /srv/nandi/frozen      replicas sharing a volume\n\nThe file is PVE_FREEZE_FILE, else ~/.local/state/nandi-proxmox-mcp/frozen ($XDG_STATE_HOME when set).\nA freeze never waits on the audit log: when its audit line cannot be written, changes are frozen all the same and a warning says so on stderr."
    )]
    Freeze(freeze::FreezeArgs),
    /// Leases people granted while approving: list them, or revoke one (or all) in every
    /// server sharing the freeze file.
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp lease list\n  nandi-proxmox-mcp lease revoke 3f9c0a1b2d4e5f60\n  nandi-proxmox-mcp lease revoke --all\n\nA lease is granted only by a person answering an approval question (\"also allow … for N min\"); the model cannot create one. `freeze` revokes every lease too."
    )]
    Lease(lease::LeaseArgs),
    /// Lift the kill switch: remove the freeze file (refused when its audit line cannot be written).
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp unfreeze\n  nandi-proxmox-mcp unfreeze --file /srv/nandi/frozen\n\nThe audit line is written and synced before the file is removed; when it cannot be (a full disk, an unwritable or misconfigured PVE_AUDIT_LOG), the unfreeze is refused with exit status 1 and the freeze file stays."
    )]
    Unfreeze(freeze::UnfreezeArgs),
    /// Exit 0 when a running HTTP server answers 200 on /health (container health checks).
    #[command(
        after_help = "Examples:\n  nandi-proxmox-mcp health --url http://127.0.0.1:3000/health"
    )]
    Health(health::HealthArgs),
}

/// A command failure, mapped to an exit status by `main`.
#[derive(Debug, Error)]
pub enum CliError {
    /// Settings that cannot be honoured (exit status 2).
    #[error("configuration error: {0}")]
    Config(String),
    /// A failure while running (exit status 1).
    #[error("{0}")]
    Runtime(String),
    /// The command ran and its report is RED (exit status 1).
    #[error("{0}")]
    Red(String),
}

impl CliError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Config(_) => 2,
            CliError::Runtime(_) | CliError::Red(_) => 1,
        }
    }
}

/// Writes `bytes` to stdout. A reader that has closed the pipe (`| head`) wanted no more
/// output: that ends the command successfully, without an error line.
pub(crate) fn write_stdout(bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Runtime(format!("cannot write to stdout: {e}"))),
    }
}

/// Runs the parsed command line.
pub async fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        None => run::run(run::RunArgs::default()).await,
        Some(Command::Run(args)) => run::run(args).await,
        Some(Command::Tools(args)) => tools::print(args),
        Some(Command::Setup(args)) => setup::run(args).await,
        Some(Command::Doctor(args)) => doctor::run(args).await,
        Some(Command::Bootstrap(args)) => bootstrap::run(args),
        Some(Command::Harden(args)) => harden::run(args),
        Some(Command::Policy(args)) => policy::run(args).await,
        Some(Command::List) => list::run(),
        Some(Command::Trust(args)) => trust::run(args),
        Some(Command::Completions(args)) => completions::run(args),
        Some(Command::Man) => man::run(),
        Some(Command::Audit(args)) => audit::run(args),
        Some(Command::Freeze(args)) => freeze::freeze(args),
        Some(Command::Lease(args)) => lease::run(args),
        Some(Command::Unfreeze(args)) => freeze::unfreeze(args),
        Some(Command::Health(args)) => health::run(args).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(Into::into).collect()
    }

    #[test]
    fn a_plain_launch_reads_as_clap_reads_it() {
        for args in [&[][..], &["run"][..]] {
            let fast = Cli::plain_launch(words(args).into_iter()).expect("a plain launch");
            let mut argv = vec!["nandi-proxmox-mcp"];
            argv.extend_from_slice(args);
            let clap = Cli::try_parse_from(argv).unwrap();
            assert_eq!(format!("{fast:?}"), format!("{clap:?}"), "{args:?}");
        }
    }

    #[test]
    fn every_other_command_line_goes_to_clap() {
        for args in [
            &["run", "--demo"][..],
            &["run", "--help"],
            &["--help"],
            &["--version"],
            &["-V"],
            &["tools"],
            &["runn"],
            &["RUN"],
            &["run", ""],
            &[""],
        ] {
            assert!(
                Cli::plain_launch(words(args).into_iter()).is_none(),
                "{args:?}"
            );
        }
    }
}
