//! Binary entry point: parse the command line, send logs to stderr, run, exit.
//!
//! Invariant: stdout belongs to the MCP transport, so the tracing subscriber writes to
//! stderr only; every error leaves through one `exit` with the command's status.

use clap::Parser;
use nandi_proxmox_mcp::cli::{self, Cli};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

fn main() {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,nandi_proxmox_mcp=info"));
    // rmcp logs whole requests (tool arguments, passwords included) at debug and trace;
    // this second filter caps it at info whatever RUST_LOG says (a ceiling, not a floor).
    let rmcp_cap = Targets::new()
        .with_target("rmcp", LevelFilter::INFO)
        .with_default(LevelFilter::TRACE);
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
                .with_filter(filter)
                .with_filter(rmcp_cap),
        )
        .init();

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("nandi-proxmox-mcp: cannot start the async runtime: {err}");
            std::process::exit(1);
        }
    };
    let result = runtime.block_on(cli::dispatch(cli));
    if let Err(err) = result {
        eprintln!("nandi-proxmox-mcp: {err}");
        // Dropping the runtime first lets in-flight tasks finish their cleanup.
        drop(runtime);
        std::process::exit(err.exit_code());
    }
}
