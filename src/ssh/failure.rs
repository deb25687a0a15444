//! SSH failures as tool failures: routing errors, executor errors, SSH not configured.
//!
//! Shared by the container/diagnostic operations (`ops`) and the node operations (`node_ops`),
//! so neither imports the other. Invariant: every failure keeps its stable SSH code and a hint.

use super::router::RouteError;
use super::{SshError, codes};
use crate::envelope::ToolFailure;

/// A routing failure (SSH, API lookup, unknown or non-LXC guest) as the tool failure.
pub(super) fn route_failure(error: RouteError) -> ToolFailure {
    match error {
        RouteError::Ssh(e) => ssh_failure(e),
        RouteError::Pve(e) => crate::envelope::failure_from(e),
        RouteError::GuestNotFound { ctid, is_qemu } => {
            let message = if is_qemu {
                format!(
                    "Guest {ctid} is a QEMU VM, not an LXC container; pct exec only reaches containers."
                )
            } else {
                format!("No VM or container with ID {ctid} exists in this installation.")
            };
            ToolFailure::new(codes::GUEST_NOT_FOUND, message)
                .with_hint("List containers with pve_list_cluster_resources (type \"vm\") and use an LXC vmid.")
        }
    }
}

/// An SSH failure with its own code and hint.
pub(super) fn ssh_failure(error: SshError) -> ToolFailure {
    let mut failure = ToolFailure::new(error.code(), error.to_string());
    failure.hint = error.hint();
    failure
}

/// The answer of every SSH tool when SSH is not configured.
pub(super) fn ssh_disabled() -> ToolFailure {
    ToolFailure::new(codes::SSH_DISABLED, "SSH is not configured for this server.").with_hint(
        "Set PROXMOX_SSH_KEY_PATH (and PROXMOX_SSH_HOST/USER if they differ from the API host and root), or sshKeyPath in the instance file, with sshStrategy other than \"disabled\"; then restart.",
    )
}
