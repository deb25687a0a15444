//! The state every call reads, shared by all sessions: registry, policy, backends, audit trail.
//!
//! It lives below `server` and `pipeline` (both read it; neither is imported from here), so the
//! call walk goes downward only. Invariant: built once at start-up, never mutated by a call.

use std::sync::Arc;

use crate::audit::AuditLog;
use crate::policy::Settings;
use crate::pve;
use crate::registry::Registry;
use crate::ssh;

/// Everything a call needs, shared by all sessions.
#[derive(Debug)]
pub struct AppState {
    /// Exposed tools.
    pub registry: Registry,
    /// Policy in force (for the instructions).
    pub settings: Settings,
    /// REST client; `None` when no Proxmox is configured.
    pub pve: Option<pve::Client>,
    /// Where the Proxmox connection comes from, for the instructions.
    pub connection_note: String,
    /// SSH router (executor + node routes); `None` when SSH is not configured.
    pub ssh: Option<Arc<ssh::Router>>,
    /// Why the SSH tools are or are not available, for the instructions.
    pub ssh_note: String,
    /// The audit trail of changes and refusals (`PVE_AUDIT_LOG`).
    pub audit: AuditLog,
}
