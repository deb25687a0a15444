//! `pve_list_leases`: the caller's live leases, from this server process's store.
//!
//! Invariant: a caller sees only the leases it holds (its stdio user, HTTP session or OAuth
//! subject and client); a caller that can hold none sees none. Nothing is sent to Proxmox.

use serde_json::{Value, json};

use crate::approval::lease::describe;
use crate::backends::Backends;

/// The listing: the caller's live leases, soonest end first, and how to end them.
pub fn list(backends: &Backends<'_>) -> Value {
    let Some(holder) = backends.lease_holder else {
        return json!({
            "leases": [],
            "note": "This caller holds no leases: without a session or a signed-in subject, every approval is for one call.",
        });
    };
    let leases: Vec<Value> = backends
        .leases
        .list(Some(holder))
        .iter()
        .map(describe)
        .collect();
    json!({
        "leases": leases,
        "note": "A person grants a lease by choosing \"also allow … for N min\" when approving; it ends at its expiry, with this server process, on `nandi-proxmox-mcp lease revoke ID` (or --all), or on `freeze`.",
    })
}
