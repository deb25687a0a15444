//! The Proxmox Backup Servers `run` serves beside a cluster: their REST clients from the
//! configuration (no I/O), and the demo's emulated PBS.
//!
//! Invariant: a PBS client speaks only `PBSAPIToken` and classifies every request by PBS's
//! schema (`pve::Client::pbs`); its secret is never printed (`Connection`'s `Debug` masks it).

use pve_emulator::{PbsEmulator, PbsOptions};

use super::CliError;
use crate::backends::PbsServer;
use crate::config::{TlsSetting, pbs::PbsConfig};
use crate::pve;

/// The REST client of each configured PBS.
pub(super) fn servers(
    configs: &[PbsConfig],
    limits: pve::ClientLimits,
) -> Result<Vec<PbsServer>, CliError> {
    configs
        .iter()
        .map(|c| {
            let client = pve::Client::pbs(&connection(c), limits).map_err(|e| {
                CliError::Config(format!("Proxmox Backup Server {:?}: {e}", c.name))
            })?;
            tracing::info!(pbs = %c.name, base_url = %client.base_url(), token = %format!("{}@{}!{}", c.user, c.realm, c.token_name), "Proxmox Backup Server configured");
            Ok(PbsServer {
                name: c.name.clone(),
                client,
            })
        })
        .collect()
}

/// The connection settings of one PBS, as the REST client takes them.
pub(crate) fn connection(c: &PbsConfig) -> pve::Connection {
    pve::Connection {
        host: c.host.clone(),
        port: c.port,
        user: c.user.clone(),
        realm: c.realm.clone(),
        token_name: c.token_name.clone(),
        token_secret: c.token_secret.expose().to_owned(),
        tls: tls_mode(&c.tls),
    }
}

/// The REST client's TLS mode for a configured one (PVE's and PBS's alike).
pub(crate) fn tls_mode(setting: &TlsSetting) -> pve::TlsMode {
    match setting {
        TlsSetting::Verify => pve::TlsMode::Verify,
        TlsSetting::CaFile(path) => pve::TlsMode::CaFile(path.clone()),
        TlsSetting::Fingerprint(fp) => pve::TlsMode::Fingerprint(fp.clone()),
        TlsSetting::Insecure => pve::TlsMode::Insecure,
    }
}

/// The demo's PBS: an emulated server named `pbs` with datastores, namespaces, snapshots of
/// the demo guests of several ages and verify states, a sync job and a verify job.
pub(super) async fn start_demo(
    limits: pve::ClientLimits,
) -> Result<(PbsEmulator, PbsServer), CliError> {
    let options = PbsOptions::default();
    let emulator = PbsEmulator::start(options.clone())
        .await
        .map_err(|e| CliError::Runtime(format!("could not start the demo PBS emulator: {e}")))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    emulator.seed_demo(&[("vm", 101), ("vm", 102), ("ct", 201), ("ct", 203)], now);
    let connection = pve::Connection {
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
    let client = pve::Client::pbs(&connection, limits)
        .map_err(|e| CliError::Runtime(format!("demo PBS client: {e}")))?;
    Ok((
        emulator,
        PbsServer {
            name: "pbs".to_owned(),
            client,
        },
    ))
}
