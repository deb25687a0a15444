//! `run`: build the server once and serve it over stdio, or Streamable HTTP when
//! `MCP_TRANSPORT=http`.
//!
//! Start-up does no network I/O: configuration and policy are read and validated, the
//! REST client is constructed (lazily connecting), and only then is the transport opened.
//! With `--demo` an in-process emulator stands in for Proxmox so a newcomer can try
//! every tool with no cluster. Invariant: nothing but MCP frames is written to stdout.

use std::sync::Arc;

use clap::Args;
use rmcp::ServiceExt;

use super::CliError;
use crate::config::{self, Paths, ProcessEnv};
use crate::policy::Settings;
use crate::pve;
use crate::registry::{Capabilities, Registry};
use crate::server::Server;
use crate::ssh;
use crate::state::AppState;
use crate::transport::{
    self,
    http::{HttpError, HttpSettings},
};
use pve_emulator::{Emulator, EmulatorOptions};

/// Flags of `run`.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Serve against a built-in Proxmox emulator (3 nodes, sample VMs and containers) instead of a real cluster.
    #[arg(long)]
    pub demo: bool,
}

/// Serves MCP until the client closes stdin or a termination signal arrives.
pub async fn run(args: RunArgs) -> Result<(), CliError> {
    // HTTP settings are validated before anything else starts, so a bad value fails fast.
    let http_settings = http_settings()?;
    let settings = Settings::from_lookup(|key| std::env::var(key).ok())
        .map_err(|e| CliError::Config(e.to_string()))?;
    let limits = pve::ClientLimits::from_lookup(|key| std::env::var(key).ok())
        .map_err(|e| CliError::Config(e.to_string()))?;
    announce_freeze(settings.freeze.as_ref());
    announce_people(&settings, http_settings.as_ref());

    // Held until the server stops: dropping it stops the demo emulator.
    let mut _demo: Option<(Emulator, pve_emulator::PbsEmulator)> = None;
    let server = if args.demo {
        let (emulator, client) = start_demo(limits).await?;
        let (pbs_emulator, pbs) = super::pbs_servers::start_demo(limits).await?;
        let note = format!(
            "DEMO MODE: connected to a built-in Proxmox emulator at {} (nodes pve01, pve02, pve03; VMs 101 and 102, template VM 9000, containers 201, 202, 203; backups on a Proxmox Backup Server storage pbs-demo; an emulated PBS `pbs` at {} with datastores store1 and offsite). Nothing real is touched.",
            emulator.base_url(),
            pbs_emulator.base_url()
        );
        eprintln!("nandi-proxmox-mcp: {note}");
        _demo = Some((emulator, pbs_emulator));
        // The demo's changes are not the user's: no record unless PVE_AUDIT_LOG asks for one.
        let audit = if std::env::var_os("PVE_AUDIT_LOG").is_none() {
            eprintln!(
                "nandi-proxmox-mcp: demo mode keeps no audit log (set PVE_AUDIT_LOG to record the demo's calls)"
            );
            crate::audit::AuditLog::off()
        } else {
            audit_log()?.with_instance("demo (built-in emulator)")
        };
        let state = cluster_state(settings, (Some(client), note, None), vec![pbs], audit);
        eprintln!(
            "nandi-proxmox-mcp: {}",
            state.registry.exposure(&state.settings)
        );
        Server::new(state)
    } else {
        serve_clusters(settings, limits)?
    };
    match http_settings {
        Some(settings) => serve_http(server, settings).await,
        None => serve_stdio(server).await,
    }
}

/// Says on stderr what the people file does here: nothing unless OAuth callers arrive.
fn announce_people(settings: &Settings, http: Option<&HttpSettings>) {
    let Some(people) = &settings.people else {
        return;
    };
    let oauth = http.is_some_and(|h| matches!(h.auth, crate::transport::http::Auth::OAuth(_)));
    if oauth {
        tracing::info!(people = people.tokens().count(), unmapped = ?people.unmapped, "per-person Proxmox identity: OAuth callers act with their own API token");
    } else {
        tracing::warn!(
            "PVE_PEOPLE_FILE is set but the transport is not HTTP with MCP_AUTH_MODE=oauth: every call acts with the server's token"
        );
    }
}

/// `Some` when `MCP_TRANSPORT=http`; an unknown transport name is a configuration error.
fn http_settings() -> Result<Option<HttpSettings>, CliError> {
    let transport = std::env::var("MCP_TRANSPORT").unwrap_or_default();
    match transport.trim().to_ascii_lowercase().as_str() {
        "" | "stdio" => Ok(None),
        "http" => HttpSettings::from_lookup(|key| std::env::var(key).ok())
            .map(Some)
            .map_err(|e| CliError::Config(e.to_string())),
        other => Err(CliError::Config(format!(
            "MCP_TRANSPORT={other:?} is not a transport: use stdio (default) or http"
        ))),
    }
}

/// The audit trail of `PVE_AUDIT_LOG`, opened once; every cluster's log shares it.
fn audit_log() -> Result<crate::audit::AuditLog, CliError> {
    crate::audit::AuditLog::from_env().map_err(|e| CliError::Config(e.to_string()))
}

/// One cluster's state: its backends, its policy's registry, its audit log.
fn cluster_state(
    settings: Settings,
    (pve, connection_note, ssh_config): Connected,
    pbs: Vec<crate::backends::PbsServer>,
    audit: crate::audit::AuditLog,
) -> AppState {
    let (ssh, ssh_note) = build_ssh(ssh_config.as_ref());
    let registry = Registry::build_for(
        &settings,
        Capabilities {
            ssh: ssh.is_some(),
            pbs: !pbs.is_empty(),
        },
    );
    tracing::info!(
        tools = registry.canonical_count(),
        aliases = registry.alias_count(),
        policy = %settings.summary(),
        "tool registry initialized"
    );
    AppState {
        registry,
        settings,
        pve,
        connection_note,
        ssh,
        ssh_note,
        audit,
        pbs,
    }
}

/// Every configured cluster (one in the plain case: every record names its base URL, as
/// before); with several, each has its own policy (its file's keys beat the variables) and
/// its audit lines name it.
fn serve_clusters(settings: Settings, limits: pve::ClientLimits) -> Result<Server, CliError> {
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let set = config::clusters::load_clusters(&ProcessEnv, &paths)
        .map_err(|e| CliError::Config(e.to_string()))?;
    let audit = audit_log()?;
    let several = set.clusters.len() > 1;
    if several && let Some(people) = &settings.people {
        // A person's token belongs to one cluster: sent to another, it would leak.
        return Err(CliError::Config(format!(
            "{} {}: per-person Proxmox identity serves one cluster per server, and {} clusters are configured; run one server per cluster, each with its own people file",
            crate::policy::ENV_PEOPLE_FILE,
            people.path,
            set.clusters.len()
        )));
    }
    let mut members = Vec::new();
    for cluster in set.clusters {
        let settings = super::served::cluster_settings(&settings, &cluster)?;
        let pbs = super::pbs_servers::servers(&cluster.config.pbs, limits)?;
        let connected = connect(cluster.config, limits)?;
        let instance = match (&connected.0, several) {
            (_, true) => cluster.name.clone(),
            (Some(client), false) => client.base_url().to_owned(),
            (None, false) => "not configured".to_owned(),
        };
        let state = cluster_state(
            settings,
            connected,
            pbs,
            audit.clone().with_instance(&instance),
        );
        members.push((cluster.name, state));
    }
    if several {
        let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
        tracing::info!(clusters = %names.join(", "), default = set.default.as_deref().unwrap_or("none"), "serving several clusters");
    }
    let clusters = crate::clusters::Clusters::new(members, set.default.as_deref())
        .map_err(|e| CliError::Config(e.to_string()))?;
    Ok(Server::with_clusters(clusters))
}

async fn serve_http(server: Server, settings: HttpSettings) -> Result<(), CliError> {
    let running = transport::http::start(server, settings)
        .await
        .map_err(|e| match e {
            HttpError::Config(msg) => CliError::Config(msg),
            other => CliError::Runtime(other.to_string()),
        })?;
    shutdown_signal().await;
    tracing::info!("termination signal received, shutting down the HTTP transport");
    running.shutdown().await;
    Ok(())
}

async fn start_demo(limits: pve::ClientLimits) -> Result<(Emulator, pve::Client), CliError> {
    let options = EmulatorOptions::default();
    let connection = |emulator: &Emulator| pve::Connection {
        host: emulator.host().to_owned(),
        port: emulator.port(),
        user: options.user.clone(),
        realm: options.realm.clone(),
        token_name: options.token_name.clone(),
        token_secret: options.token_secret.clone(),
        tls: emulator
            .cert_fingerprint()
            .map_or(pve::TlsMode::Insecure, pve::TlsMode::Fingerprint),
    };
    let emulator = Emulator::start(EmulatorOptions::default())
        .await
        .map_err(|e| CliError::Runtime(format!("could not start the demo emulator: {e}")))?;
    let client = pve::Client::with_limits(&connection(&emulator), limits)
        .map_err(|e| CliError::Runtime(format!("demo client: {e}")))?;
    seed_demo_backups(&emulator);
    Ok((emulator, client))
}

/// The demo's Proxmox Backup Server datastore (a shared `pbs` storage) with a few backups
/// of different ages and verify states, so `pve_backup_health` has something to say.
fn seed_demo_backups(emulator: &Emulator) {
    const DAY: u64 = 86_400;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    emulator.add_backup_storage("pbs-demo", "pbs", true);
    for (vmid, age_days, verified) in [
        (101, 1, Some("ok")),
        (102, 2, None),
        (102, 9, Some("ok")),
        (201, 12, Some("ok")),
        (203, 3, Some("failed")),
    ] {
        emulator.add_backup(
            "pbs-demo",
            vmid,
            now.saturating_sub(age_days * DAY),
            verified,
        );
    }
}

/// The SSH router when SSH is configured, and the sentence the instructions carry about it.
fn build_ssh(config: Option<&config::SshConfig>) -> (Option<Arc<ssh::Router>>, String) {
    let Some(config) = config else {
        return (
            None,
            "SSH tools (pct exec, docker, diagnostics) are not offered: SSH is not configured (set PROXMOX_SSH_KEY_PATH or sshKeyPath; sshStrategy \"disabled\" turns them off).".into(),
        );
    };
    let note = format!(
        "SSH tools run commands as {}@{} (strategy {}); host keys are verified, never trusted on first use.",
        config.user, config.host, config.strategy
    );
    (Some(Arc::new(ssh_router(config))), note)
}

/// The russh executor and node router for an SSH configuration (no I/O; connects on use).
pub(super) fn ssh_router(config: &config::SshConfig) -> ssh::Router {
    let home = config::home_from_env(&ProcessEnv);
    let settings = ssh::ClientSettings::from_config(config, home.as_deref());
    if let Err(e) = ssh::RusshExecutor::load_key(&settings.key_path) {
        // Not fatal: REST tools still work, and each SSH call repeats this clear error.
        tracing::warn!(error = %e, "SSH private key is not usable");
    }
    let executor: Arc<dyn ssh::Executor> = Arc::new(ssh::RusshExecutor::new(settings));
    ssh::Router::new(executor, config)
}

type Connected = (Option<pve::Client>, String, Option<config::SshConfig>);

/// The REST client of one configured cluster (no I/O), its connection note and SSH settings.
pub(super) fn connect(
    config: config::Config,
    limits: pve::ClientLimits,
) -> Result<Connected, CliError> {
    let Some(proxmox) = config.proxmox else {
        tracing::warn!(
            "no Proxmox connection configured: tools are listed but every call returns PROXMOX_NOT_CONFIGURED; run `nandi-proxmox-mcp setup` or try `run --demo`"
        );
        return Ok((
            None,
            "No Proxmox connection is configured yet: calls return PROXMOX_NOT_CONFIGURED until `nandi-proxmox-mcp setup` is run.".into(),
            config.ssh,
        ));
    };
    let connection = pve::Connection {
        host: proxmox.host.clone(),
        port: proxmox.port,
        user: proxmox.user.clone(),
        realm: proxmox.realm.clone(),
        token_name: proxmox.token_name.clone(),
        token_secret: proxmox.token_secret.expose().to_owned(),
        tls: super::pbs_servers::tls_mode(&proxmox.tls),
    };
    let client = pve::Client::with_limits(&connection, limits)
        .map_err(|e| CliError::Config(e.to_string()))?;
    let note = format!(
        "Connected to Proxmox at {} as {}@{}!{}.",
        client.base_url(),
        proxmox.user,
        proxmox.realm,
        proxmox.token_name
    );
    Ok((Some(client), note, config.ssh))
}

/// Said on stderr when a person starts `run` at a terminal: without it the server looks hung.
pub const WAITING_ON_A_TERMINAL: &str = "waiting for an MCP client on stdin (this is meant to be started by an MCP client; Ctrl-C to stop)";

/// Serves MCP over stdin/stdout. When both are pipes (as MCP clients start servers) they are
/// driven by the runtime's reactor instead of tokio's blocking pool, so a message costs no
/// thread hand-off; a terminal or file falls back to the blocking handles. Input that ends before an `initialize` request (Ctrl-D at a
/// terminal, a client that gives up) is a normal exit, not a failure.
async fn serve_stdio(server: Server) -> Result<(), CliError> {
    use std::io::IsTerminal as _;
    if std::io::stdin().is_terminal() {
        eprintln!("nandi-proxmox-mcp: {WAITING_ON_A_TERMINAL}");
    }
    // A headless agent's person needs the approval page: its listener, when configured.
    let page = transport::page_listener::start(&server)
        .await
        .map_err(CliError::Config)?;
    let service = match server.serve(crate::transport::stdio::stdio()).await {
        Ok(service) => service,
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(during)) => {
            tracing::debug!(%during, "stdin closed before the MCP handshake; nothing to serve");
            return Ok(());
        }
        Err(e) => return Err(CliError::Runtime(format!("MCP initialization failed: {e}"))),
    };
    let cancel = service.cancellation_token();
    tokio::select! {
        finished = service.waiting() => {
            finished.map_err(|e| CliError::Runtime(format!("server task failed: {e}")))?;
        }
        _ = shutdown_signal() => {
            tracing::info!("termination signal received, shutting down");
            cancel.cancel();
        }
    }
    if let Some(page) = page {
        page.shutdown().await;
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
}

/// Says at start-up which freeze file this process watches, and whether it is frozen now.
fn announce_freeze(switch: Option<&crate::effects::FreezeSwitch>) {
    match switch.map(|s| (s, s.check())) {
        Some((switch, Ok(()))) => tracing::info!(file = %switch, "kill switch: not frozen"),
        Some((switch, Err(frozen))) => tracing::warn!(
            file = %switch,
            "{frozen}: every call beyond a plain read is refused until `nandi-proxmox-mcp unfreeze`"
        ),
        None => tracing::warn!(
            "no freeze file is known (set PVE_FREEZE_FILE or HOME): `nandi-proxmox-mcp freeze` cannot stop this process"
        ),
    }
}
