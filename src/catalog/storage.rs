//! Storage tools: datacenter storage definitions.

use super::types::{Category, Param, ParamKind, ToolSpec, get};

/// Storage types Proxmox VE 9 knows.
const STORAGE_TYPES: &[&str] = &[
    "btrfs",
    "cephfs",
    "cifs",
    "dir",
    "esxi",
    "iscsi",
    "iscsidirect",
    "lvm",
    "lvmthin",
    "nfs",
    "pbs",
    "rbd",
    "zfs",
    "zfspool",
];

/// Rows of the `storage` category.
pub(super) const TOOLS: &[ToolSpec] = &[ToolSpec {
    name: "pve_list_storage",
    title: "List storage definitions",
    description: "List the datacenter's storage definitions (/etc/pve/storage.cfg): id, type (dir, lvmthin, zfspool, nfs, pbs, …), allowed content (images, rootdir, iso, vztmpl, backup, snippets), path or pool, and which nodes may use it. Definitions only — for free space per node use the node storage tools. Filter with `type`.",
    category: Category::Storage,
    params: &[Param::query(
        "type",
        ParamKind::String,
        "Only list storages of this type, e.g. \"nfs\" or \"lvmthin\".",
    )
    .one_of(STORAGE_TYPES)],
    backend: get("/storage"),
    ..ToolSpec::BASE
}];
