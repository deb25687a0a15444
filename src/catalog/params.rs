//! Parameters shared by many rows, described once.
//!
//! The patterns here are the first line of defence for path parameters: a value that
//! passes them cannot change the shape of the request path even before percent-encoding.

use super::types::{Param, ParamKind};

/// Proxmox node names are host names: letters, digits and inner hyphens.
pub const NODE_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9-]{0,62}$";

/// A task id as Proxmox prints it: `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:`.
pub const UPID_PATTERN: &str =
    "^UPID:[A-Za-z0-9.-]+:([0-9A-Fa-f]{8,}:){3}[^:\\s]+:[^:\\s]*:[^:\\s]+:$";

/// The node a request is addressed to.
pub const NODE: Param = Param::path(
    "node",
    ParamKind::String,
    "Node name as listed by pve_list_nodes, e.g. \"pve01\".",
)
.pattern(NODE_PATTERN, 63);

/// A guest id.
pub const VMID: Param =
    Param::path("vmid", ParamKind::Integer, "Guest ID (VMID), e.g. 101.").range(100, 999_999_999);

/// A task id in the path.
pub const UPID: Param = Param::path(
    "upid",
    ParamKind::String,
    "Task ID (UPID) returned by an action tool; `node` must be the node named in it.",
)
.pattern(UPID_PATTERN, 512);

/// `node` + `vmid`, the address of a guest.
pub const GUEST: &[Param] = &[NODE, VMID];

/// Page start for log-like reads.
pub const LOG_START: Param = Param::query(
    "start",
    ParamKind::Integer,
    "First line to return (0-based); page with `limit`.",
)
.min(0);

/// Page size for log-like reads.
pub const LOG_LIMIT: Param = Param::query(
    "limit",
    ParamKind::Integer,
    "Lines to return (Proxmox default 50).",
)
.range(1, 100_000);
