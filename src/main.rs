//! Binary entry point: parse the command line, send logs to stderr, run, exit.
//!
//! Invariant: stdout belongs to the MCP transport, so the tracing subscriber writes to
//! stderr only; every error leaves through one `exit` with the command's status.

use clap::Parser;
use nandi_proxmox_mcp::cli::{self, Cli};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The MCP library logs every message it sends or receives, whole, at DEBUG and TRACE —
/// tool arguments (a new user's password) and results (a new API token's secret)
/// included. No `RUST_LOG` may turn that on: its events are capped at INFO.
fn not_a_protocol_dump(meta: &tracing::Metadata<'_>) -> bool {
    !(meta.target().starts_with("rmcp") && *meta.level() > tracing::Level::INFO)
}

fn main() {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,nandi_proxmox_mcp=info"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .finish()
        .with(filter_fn(not_a_protocol_dump))
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
