//! Route handlers, grouped by API area, plus the lookups they share.
//!
//! Invariant: a handler only sees a request whose node exists and whose
//! parameters passed validation (see `routes::dispatch`); what is left to
//! check here is object existence, which fails the way Proxmox fails it.

pub(super) mod access;
pub(super) mod agent;
mod agent_guest;
pub(super) mod backup;
pub(super) mod cluster;
pub(super) mod cluster_infra;
pub(super) mod firewall;
pub(super) mod guest_config;
pub(super) mod guests;
pub(super) mod lifecycle;
pub(super) mod monitoring;
pub(super) mod network;
pub(super) mod nodes;
pub(super) mod peer;
pub(super) mod pools;
pub(super) mod prune;
pub(super) mod snapshots;
pub(super) mod storage;
pub(super) mod tasks;

use super::api::{ApiError, Call};
use super::state::{Guest, GuestKind};

/// The error Proxmox gives for a guest that is not on the node in the path:
/// it looks for the config file and does not find it (500, not 404).
pub(super) fn no_such_guest(node: &str, kind: GuestKind, vmid: u32) -> ApiError {
    ApiError::server(format!(
        "Configuration file 'nodes/{node}/{}/{vmid}.conf' does not exist",
        kind.config_dir()
    ))
}

/// The guest addressed by the `{node}` and `{vmid}` captures.
pub(super) fn guest<'c>(
    call: &'c mut Call<'_>,
    kind: GuestKind,
) -> Result<&'c mut Guest, ApiError> {
    let node = call.cap("node").to_string();
    let vmid = call.vmid();
    call.st
        .guest_mut(&node, kind, vmid)
        .ok_or_else(|| no_such_guest(&node, kind, vmid))
}
