//! Parameters shared by many rows, described once.
//!
//! The patterns here are the first line of defence for path parameters: a value that
//! passes them cannot change the shape of the request path even before percent-encoding.

use super::types::{Param, ParamKind};

/// Proxmox node names are host names: letters, digits and inner hyphens.
/// (Kept short: it is advertised on nearly every tool; leading hyphens are left to Proxmox.)
pub const NODE_PATTERN: &str = "^[A-Za-z0-9-]{1,63}$";

/// A task id as Proxmox prints it: `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:`.
pub const UPID_PATTERN: &str =
    "^UPID:[A-Za-z0-9.-]+:([0-9A-Fa-f]{8,}:){3}[^:\\s]+:[^:\\s]*:[^:\\s]+:$";

/// The node a request is addressed to.
pub const NODE: Param = Param::path("node", ParamKind::String, "Node name.").matching(NODE_PATTERN);

/// A guest id.
pub const VMID: Param =
    Param::path("vmid", ParamKind::Integer, "Guest VMID.").range(100, 999_999_999);

/// A task id in the path.
pub const UPID: Param = Param::path("upid", ParamKind::String, "Task UPID (its node as `node`).")
    .pattern(UPID_PATTERN, 512);

/// `node` + `vmid`, the address of a guest.
pub const GUEST: &[Param] = &[NODE, VMID];

/// Page start for log-like reads.
pub const LOG_START: Param =
    Param::query("start", ParamKind::Integer, "First line (0-based).").min(0);

/// Page size for log-like reads (Proxmox's own bounds: at least 0, no maximum).
pub const LOG_LIMIT: Param =
    Param::query("limit", ParamKind::Integer, "Lines to return (default 50).").min(0);

/// A snapshot name (Proxmox `pve-configid`, at most 40 characters).
pub const SNAPNAME_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,39}$";

/// A storage id (`local`, `local-lvm`, `nfs.backup`).
pub const STORAGE_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_.-]{0,99}$";

/// The snapshot addressed by a path.
pub const SNAPNAME: Param =
    Param::path("snapname", ParamKind::String, "Snapshot name.").matching(SNAPNAME_PATTERN);

/// A storage in the path.
pub const STORAGE: Param =
    Param::path("storage", ParamKind::String, "Storage ID.").matching(STORAGE_PATTERN);

/// `node` + `vmid` + `snapname`, the address of a snapshot.
pub const SNAPSHOT: &[Param] = &[NODE, VMID, SNAPNAME];

/// A new guest's id in a create/restore body.
pub const NEW_VMID: Param =
    Param::body("vmid", ParamKind::Integer, "Free VMID (pve_get_next_vmid).")
        .range(100, 999_999_999)
        .required();

/// A target node in a body (migrate, clone).
pub const TARGET_NODE: Param =
    Param::body("target", ParamKind::String, "Target node.").matching(NODE_PATTERN);

/// The optimistic-locking digest of update tools.
pub const DIGEST: Param = Param::body("digest", ParamKind::String, "`digest` from the read.")
    .matching("^[0-9a-fA-F]{1,40}$");

/// A storage in a body.
pub const STORAGE_BODY: Param =
    Param::body("storage", ParamKind::String, "Storage for new disks.").matching(STORAGE_PATTERN);

/// A pool id (`pve-poolid`): letters, digits, `-`, `_`; nested pools separate up to three
/// levels with `/` (`prod/web`). Never a path parameter: PVE 9 addresses pools as `?poolid=`.
pub const POOL_ID_PATTERN: &str = "^[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9_-]*){0,2}$";

/// Longest pool id accepted (three levels of generous names).
pub const POOL_ID_MAX: u32 = 192;

/// A `pve-vmid-list`: guest ids separated by commas, semicolons or spaces, as Proxmox splits it.
pub const VMID_LIST_PATTERN: &str = "^\\s*[0-9]{3,9}([\\s,;]+[0-9]{3,9})*\\s*$";

/// A resource pool in a body (nested ids such as `prod/web` included).
pub const POOL_BODY: Param = Param::body("pool", ParamKind::String, "Pool to add the guest to.")
    .pattern(POOL_ID_PATTERN, POOL_ID_MAX);

/// Joins parameter lists at compile time, so rows can share key groups (a create row =
/// address + hardware + cloud-init + create-only keys) without writing a key twice.
/// `N` must equal the total length; a mismatch is a compile error, not a run-time one.
pub const fn join<const N: usize>(parts: &[&[Param]]) -> [Param; N] {
    let mut out = [NODE; N];
    let mut filled = 0;
    let mut part = 0;
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            assert!(filled < N, "join: N is smaller than the parts");
            out[filled] = parts[part][i];
            filled += 1;
            i += 1;
        }
        part += 1;
    }
    assert!(filled == N, "join: N is larger than the parts");
    out
}

/// Total length of parameter lists (the `N` of [`join`]).
pub const fn total(parts: &[&[Param]]) -> usize {
    let mut n = 0;
    let mut part = 0;
    while part < parts.len() {
        n += parts[part].len();
        part += 1;
    }
    n
}
