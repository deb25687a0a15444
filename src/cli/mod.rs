//! Command-line interface: argument parsing and dispatch to one file per command.
//!
//! Invariant: every command returns a `CliError` instead of exiting or panicking, so
//! `main` maps failures to exit codes in one place and nothing but MCP ever reaches stdout
//! while serving.

mod run;
mod tools;

use clap::{Parser, Subcommand};
use thiserror::Error;

/// `nandi-proxmox-mcp` — MCP server for Proxmox VE.
#[derive(Debug, Parser)]
#[command(
    name = "nandi-proxmox-mcp",
    version,
    about = "MCP server for Proxmox VE: tiered, confirm-gated tools over the Proxmox REST API",
    after_help = "Examples:\n  nandi-proxmox-mcp run --demo        try every tool against a built-in emulator\n  PVE_ACCESS_TIER=full nandi-proxmox-mcp tools --json\n  nandi-proxmox-mcp                   same as `run`: serve MCP over stdio"
)]
pub struct Cli {
    /// The command; `run` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands.
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
}

impl CliError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Config(_) => 2,
            CliError::Runtime(_) => 1,
        }
    }
}

/// Runs the parsed command line.
pub async fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        None => run::run(run::RunArgs::default()).await,
        Some(Command::Run(args)) => run::run(args).await,
        Some(Command::Tools(args)) => tools::print(args),
    }
}
