//! Binary entry point: parse the command line, send logs to stderr, run, exit.
//!
//! Invariant: stdout belongs to the MCP transport, so the tracing subscriber writes to
//! stderr only; every error leaves through one `exit` with the command's status.

use clap::Parser;
use nandi_proxmox_mcp::cli::{self, Cli};
use tracing_subscriber::EnvFilter;

fn main() {
    let cli = Cli::parse();
    let mut filter = EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,nandi_proxmox_mcp=info"));
    // rmcp logs whole requests (tool arguments, passwords included) at debug and trace;
    // no RUST_LOG setting may turn that on. Added last, these directives win.
    for directive in ["rmcp=info", "rmcp::service=info"] {
        match directive.parse() {
            Ok(directive) => filter = filter.add_directive(directive),
            Err(err) => eprintln!("nandi-proxmox-mcp: bad built-in log directive: {err}"),
        }
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
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
