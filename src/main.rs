//! Binary entry point: parse the command line, send logs to stderr, run, exit.
//!
//! Invariant: stdout belongs to the MCP transport, so the tracing subscriber writes to
//! stderr only; every error leaves through one `exit` with the command's status, and a
//! reader that closes stdout early (`tools | head -1`) ends the process quietly with
//! status 0 instead of a panic.

use nandi_proxmox_mcp::cli::{self, Cli, Command};
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

/// The platform certificate verifier logs every certificate it cannot trust at ERROR before
/// returning the failure to its caller, which reports it with a fix (e.g. `setup` offers the
/// fingerprint to pin). Its WARN/ERROR lines only repeat that as a stray, alarming line, so
/// they are dropped; its DEBUG/TRACE detail stays available through `RUST_LOG`.
fn not_a_repeated_tls_failure(meta: &tracing::Metadata<'_>) -> bool {
    !(meta.target().starts_with("rustls_platform_verifier")
        && *meta.level() <= tracing::Level::WARN)
}

/// True for the panic `print!`/`println!` raise when stdout is a pipe whose reader has gone:
/// `failed printing to stdout: Broken pipe (os error 32)`.
fn is_closed_stdout(info: &std::panic::PanicHookInfo<'_>) -> bool {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    message.starts_with("failed printing to stdout")
        && (message.contains("Broken pipe") || message.contains("os error 32"))
}

/// Every command prints with `println!`, which panics when the reader of a pipe has gone
/// away (Rust ignores SIGPIPE). That is not a failure of the command: the reader simply
/// wanted no more. Exit quietly, as a shell tool killed by SIGPIPE would, but with status 0.
fn exit_quietly_on_closed_stdout() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if is_closed_stdout(info) {
            std::process::exit(0);
        }
        default_hook(info);
    }));
}

/// True when this invocation serves MCP over stdio: `run` (or no command) without
/// `MCP_TRANSPORT=http`.
fn serves_stdio(cli: &Cli) -> bool {
    let is_run = matches!(cli.command, None | Some(Command::Run(_)));
    let transport = std::env::var("MCP_TRANSPORT").unwrap_or_default();
    is_run && !transport.trim().eq_ignore_ascii_case("http")
}

/// The stdio server runs on one thread: every message is read, dispatched, sent to Proxmox
/// and answered on the thread that polls the pipes, with no hand-off between workers (the
/// profile of the two-worker runtime showed a third of the CPU in waking and parking
/// threads). Everything else — the HTTP transport, the CLI commands — keeps two workers.
fn runtime_builder(cli: &Cli) -> tokio::runtime::Builder {
    if serves_stdio(cli) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    }
}

fn main() {
    exit_quietly_on_closed_stdout();
    let cli = Cli::from_process_args();
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| EnvFilter::new("warn,nandi_proxmox_mcp=info"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(filter)
        .finish()
        .with(filter_fn(not_a_protocol_dump))
        .with(filter_fn(not_a_repeated_tls_failure))
        .init();

    let runtime = match runtime_builder(&cli).enable_all().build() {
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
