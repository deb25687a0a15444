//! The guest behind a QEMU guest-agent call, checked as Proxmox checks it.
//!
//! Shared by the agent endpoints (`agent`) and the peer-side exec records (`peer`), so neither
//! imports the other. Invariant: only a running VM whose configuration enables the agent passes.

use serde_json::Value;

use super::super::api::{ApiError, Call};
use super::super::state::{Guest, GuestKind};
use super::guest;

/// Whether the `agent` option is on (`1`, `enabled=1`, `1,fstrim_cloned_disks=1`, …).
fn agent_enabled(g: &Guest) -> bool {
    let text = match g.config.get("agent") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return false,
    };
    let first = text.split(',').next().unwrap_or("");
    matches!(
        first.strip_prefix("enabled=").unwrap_or(first),
        "1" | "yes" | "on" | "true"
    )
}

/// The guest behind an agent call, checked as Proxmox checks it.
pub(super) fn agent_guest<'c>(call: &'c mut Call<'_>) -> Result<&'c mut Guest, ApiError> {
    let g = guest(call, GuestKind::Qemu)?;
    if !agent_enabled(g) {
        return Err(ApiError::server("No QEMU guest agent configured"));
    }
    if !g.is_running() {
        return Err(ApiError::server(format!("VM {} is not running", g.vmid)));
    }
    Ok(g)
}
