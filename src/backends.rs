//! What a call can reach, and the REST request a row renders: below both `dispatch` and
//! `composite`.
//!
//! `Backends` (REST client, SSH router, registry, policy) is what every backend handler is
//! given; `build_request` turns a row, a path template and validated arguments into the exact
//! `ApiRequest` — the one the gate classifies, the preview shows and the client sends.
//! Invariant: this file imports nothing above the REST client, SSH router and registry, so the
//! dispatcher, composite tools, gate and preview all read it without a circle.

use std::time::Duration;

use serde_json::json;

use crate::catalog::{HttpMethod, Location, ToolSpec};
use crate::envelope::{ToolFailure, codes};
use crate::policy::Settings;
use crate::pve::{self, ApiRequest, RetryPolicy};
use crate::registry::Registry;
use crate::schema::ValidArgs;
use crate::ssh::Router;

/// What a call can reach: the REST client, the SSH router, and (for the tools that report
/// on the server itself) the registry and policy in force.
#[derive(Debug, Clone, Copy)]
pub struct Backends<'a> {
    /// REST client; `None` when no Proxmox is configured.
    pub pve: Option<&'a pve::Client>,
    /// SSH router; `None` when SSH is not configured.
    pub ssh: Option<&'a Router>,
    /// The exposed tools.
    pub registry: &'a Registry,
    /// The policy in force.
    pub settings: &'a Settings,
    /// Every configured cluster's REST client (several clusters only; empty otherwise), for
    /// the tools that read them all at once.
    pub clusters: &'a [ClusterClient],
    /// The undo records of this cluster's changes (beside the audit log).
    pub undo: &'a crate::undo::Store,
    /// The leases people granted in this server process.
    pub leases: &'a crate::approval::lease::Leases,
    /// Whose call this is, as a lease holder (`None`: the caller can hold no lease).
    pub lease_holder: Option<&'a str>,
    /// The configured Proxmox Backup Servers (none for a person acting under their own
    /// Proxmox token: the PBS token is the server's).
    pub pbs: &'a [PbsServer],
}

/// One configured Proxmox Backup Server, named as tools' `pbs` argument names it.
#[derive(Debug, Clone)]
pub struct PbsServer {
    /// Its name (`pbs` unless the configuration names it).
    pub name: String,
    /// Its REST client (`PBSAPIToken`, requests classified by PBS's schema).
    pub client: pve::Client,
}

/// The PBS a call's `pbs` argument names — or the only one, when it names none. No PBS, an
/// unknown name, or several without a name are refused before anything is sent.
// Failures are the cold path (see `dispatch`).
#[allow(clippy::result_large_err)]
pub fn pbs_server<'a>(
    backends: &Backends<'a>,
    args: &ValidArgs,
) -> Result<&'a PbsServer, ToolFailure> {
    let names = || {
        backends
            .pbs
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (args.str("pbs"), backends.pbs) {
        (_, []) => Err(ToolFailure::new(
            codes::PROXMOX_NOT_CONFIGURED,
            "No Proxmox Backup Server is configured for this call.",
        )
        .with_hint(
            "Add a `pbs` entry to the instance file (or set PBS_HOST, PBS_USER, PBS_TOKEN_NAME and PBS_TOKEN_SECRET) and restart the server; `nandi-proxmox-mcp bootstrap --pbs` prints the token commands. Under a person's own Proxmox token, PBS tools are not available.",
        )),
        (None, [only]) => Ok(only),
        (None, _) => Err(ToolFailure::new(
            codes::TOOL_INPUT_REJECTED,
            format!("Several Proxmox Backup Servers are configured: name one with `pbs` ({}).", names()),
        )
        .with_details(json!({"errors": {"pbs": "required when several PBS are configured"}}))),
        (Some(name), servers) => servers.iter().find(|s| s.name == name).ok_or_else(|| {
            ToolFailure::new(
                codes::TOOL_INPUT_REJECTED,
                format!("No Proxmox Backup Server is called {name:?}; configured: {}.", names()),
            )
            .with_details(json!({"errors": {"pbs": "not a configured PBS"}}))
        }),
    }
}

/// One configured cluster's REST client, named.
#[derive(Debug, Clone)]
pub struct ClusterClient {
    /// The cluster's name.
    pub name: &'static str,
    /// Its REST client; `None` when it has no Proxmox connection.
    pub pve: Option<pve::Client>,
    /// Whether this cluster's own tool policy lets a cross-cluster read reach it; a cluster
    /// whose lists or categories leave the overview out is never read by it.
    pub readable: bool,
}

/// Renders the path and splits the remaining arguments into query or body parameters.
pub fn build_request(
    spec: &ToolSpec,
    method: HttpMethod,
    template: &str,
    args: &ValidArgs,
    overrides: &[(&str, &str)],
) -> ApiRequest {
    let mut path = template.to_owned();
    let mut params = Vec::new();
    for param in spec.params.iter().filter(|p| p.index.is_none()) {
        let value = overrides
            .iter()
            .find(|(name, _)| *name == param.name)
            .map(|(_, v)| vec![(*v).to_owned()])
            .or_else(|| args.values.get(param.name).map(|v| v.wire_values()))
            .or_else(|| param.default.map(|d| vec![d.to_owned()]));
        let Some(values) = value else { continue };
        match param.location {
            Location::Path => {
                let placeholder = format!("{{{}}}", param.name);
                let value = values.concat();
                path = path.replace(&placeholder, &pve::encode_path_segment(&value));
            }
            Location::Query | Location::Body => params.extend(
                values
                    .into_iter()
                    .map(|v| (param.api_name().to_owned(), wire_encode(param, v))),
            ),
            // SSH inputs never go to the REST API.
            Location::Argument => {}
        }
    }
    // Indexed keys (`net1`, `scsi0`) go out under the name the client gave.
    for (key, (param, value)) in &args.indexed {
        params.extend(
            value
                .wire_values()
                .into_iter()
                .map(|v| (key.clone(), wire_encode(param, v))),
        );
    }
    ApiRequest {
        method: pve_method(method),
        path,
        params,
        timeout: Duration::from_millis(spec.timeout_ms),
        retry: if spec.retries_reads() {
            RetryPolicy::Reads
        } else {
            RetryPolicy::Never
        },
    }
}

/// Proxmox reads `format: urlencoded` values (cloud-init `sshkeys`) percent-decoded
/// after the form layer has decoded them once, so they are encoded here first — every
/// byte but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`, as JavaScript's `encodeURIComponent` does,
/// which is the set Proxmox's format check accepts.
fn wire_encode(param: &crate::catalog::Param, value: String) -> String {
    if !param.urlencoded {
        return value;
    }
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'!')
        .remove(b'~')
        .remove(b'*')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')');
    percent_encoding::utf8_percent_encode(&value, KEEP).to_string()
}

fn pve_method(method: HttpMethod) -> pve::Method {
    match method {
        HttpMethod::Get => pve::Method::Get,
        HttpMethod::Post => pve::Method::Post,
        HttpMethod::Put => pve::Method::Put,
        HttpMethod::Delete => pve::Method::Delete,
    }
}
