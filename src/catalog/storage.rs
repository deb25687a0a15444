//! Storage tools: datacenter storage definitions (`/storage`) and what each node sees
//! on them (`/nodes/{node}/storage`).
//!
//! Invariant: the create/update rows expose only keys the PVE 9.1 schema declares for
//! those endpoints (checked by `tests/catalog.rs`); defining a storage is confirm-gated
//! because a `dir` storage can point Proxmox at any path of the host.

use super::params::NODE;
use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

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

/// Volume content types a storage can hold.
pub(super) const CONTENT_TYPES: &[&str] = &[
    "images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import",
];

/// Proxmox storage ids: a letter, then letters, digits, `-`, `_`, `.`.
pub(super) const STORAGE_ID_PATTERN: &str = "^[A-Za-z][A-Za-z0-9._-]*[A-Za-z0-9]$";

/// The storage a request is addressed to (path parameter).
pub(super) const STORAGE: Param = Param::path(
    "storage",
    ParamKind::String,
    "Storage ID as pve_list_storage shows it (e.g. \"local\", \"local-lvm\").",
)
.pattern(STORAGE_ID_PATTERN, 100);

const CONTENT_LIST: &str = "Comma-separated content types the storage may hold: images (VM disks), rootdir (container volumes), vztmpl (container templates), iso, backup, snippets, import. E.g. \"iso,vztmpl,backup\".";
const NODES: &str = "Comma-separated node names allowed to use the storage (e.g. \"pve01,pve02\"); omit for all nodes.";
const SHARED: &str = "true if every node sees the same data (NFS, CIFS, Ceph); Proxmox then never copies volumes between nodes.";
const DISABLE: &str = "true disables the storage on every node (its definition stays).";
const PRUNE: &str = "Backup retention as a property string, e.g. \"keep-last=3,keep-daily=7,keep-weekly=4\" or \"keep-all=1\".";

/// Keys shared by create and update.
const COMMON_KEYS: [Param; 5] = [
    Param::body("content", ParamKind::String, CONTENT_LIST),
    Param::body("nodes", ParamKind::String, NODES),
    Param::body("shared", ParamKind::Boolean, SHARED),
    Param::body("disable", ParamKind::Boolean, DISABLE),
    Param::body("prune-backups", ParamKind::String, PRUNE),
];

/// Rows of the `storage` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
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
    },
    ToolSpec {
        name: "pve_get_storage_config",
        title: "Get storage definition",
        description: "Read one storage definition from /etc/pve/storage.cfg: type, content, path/server/export/pool, nodes, shared, disable, prune-backups and a `digest`. Use it before pve_update_storage. Proxmox only answers tokens allowed to change storage (Datastore.Allocate); pve_list_storage shows the same definitions to auditors.",
        category: Category::Storage,
        // Full tier: its endpoint needs Datastore.Allocate, which no read-only role may hold.
        tier: Tier::Full,
        params: &[STORAGE],
        backend: get("/storage/{storage}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_node_storage",
        title: "List storages of a node",
        description: "List the storages one node can use, with live usage: storage, type, content, active/enabled (1/0), shared, total/used/avail in bytes and used_fraction (0–1). Use it to find where a disk, ISO or backup fits; filter by `content` (e.g. \"backup\") or `enabled`.",
        category: Category::Storage,
        params: &[
            NODE,
            Param::query(
                "content",
                ParamKind::String,
                "Only storages allowing this content type (comma list allowed), e.g. \"images\" or \"backup\".",
            ),
            Param::query(
                "enabled",
                ParamKind::Boolean,
                "true: only storages that are enabled on this node.",
            ),
        ],
        backend: get("/nodes/{node}/storage"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_storage_status",
        title: "Get storage status on a node",
        description: "Read one storage's state on one node: type, content, active/enabled (1/0), shared, total/used/avail in bytes. Errors if the storage is not available on that node.",
        category: Category::Storage,
        params: &[NODE, STORAGE],
        backend: get("/nodes/{node}/storage/{storage}/status"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_storage_content",
        title: "List storage content",
        description: "List the volumes on one storage as one node sees it: volid (\"local:iso/debian.iso\", \"local-lvm:vm-101-disk-0\"), content type, format, size in bytes, vmid owner, ctime (Unix seconds) and, for backups, notes/protected. Filter with `content` and `vmid`; for backups only use pve_list_backups.",
        category: Category::Storage,
        params: &[
            NODE,
            STORAGE,
            Param::query(
                "content",
                ParamKind::String,
                "Only volumes of this content type: images, rootdir, vztmpl, iso, backup, snippets or import.",
            )
            .one_of(CONTENT_TYPES),
            Param::query(
                "vmid",
                ParamKind::Integer,
                "Only volumes owned by this guest ID (100–999999999).",
            )
            .range(100, 999_999_999),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_storage",
        title: "Create storage",
        description: "Add a storage definition to the datacenter. Set `type` and the keys that type needs: dir → path; nfs → server + export; cifs → server + share (+ username/password); lvm → vgname; lvmthin → vgname + thinpool; zfspool → pool; pbs → server + datastore + username + password + fingerprint. A dir storage makes Proxmox write to any host path, so this requires confirm=true after asking the user. Returns the new definition summary ({storage, type}).",
        category: Category::Storage,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            Param::body(
                "storage",
                ParamKind::String,
                "New storage ID (letters, digits, - _ .), e.g. \"nas-backup\".",
            )
            .pattern(STORAGE_ID_PATTERN, 100)
            .required(),
            Param::body("type", ParamKind::String, "Storage type (plugin).")
                .one_of(STORAGE_TYPES)
                .required(),
            COMMON_KEYS[0],
            Param::body(
                "path",
                ParamKind::String,
                "Absolute directory on the nodes for type dir (or btrfs), e.g. \"/mnt/data\".",
            ),
            COMMON_KEYS[1],
            COMMON_KEYS[2],
            COMMON_KEYS[3],
            Param::body(
                "server",
                ParamKind::String,
                "Server host name or IP for nfs, cifs and pbs, e.g. \"192.168.1.20\".",
            ),
            Param::body(
                "export",
                ParamKind::String,
                "NFS export path on the server, e.g. \"/export/pve\".",
            ),
            Param::body("share", ParamKind::String, "CIFS share name, e.g. \"backups\"."),
            Param::body(
                "pool",
                ParamKind::String,
                "ZFS pool (zfspool, e.g. \"rpool/data\") or Ceph pool (rbd).",
            ),
            Param::body(
                "vgname",
                ParamKind::String,
                "LVM volume group for lvm and lvmthin, e.g. \"pve\".",
            ),
            Param::body(
                "thinpool",
                ParamKind::String,
                "LVM thin pool inside `vgname` for lvmthin, e.g. \"data\".",
            ),
            Param::body(
                "datastore",
                ParamKind::String,
                "Proxmox Backup Server datastore name (pbs).",
            ),
            Param::body(
                "username",
                ParamKind::String,
                "User for cifs or pbs (pbs form \"user@realm!token\" or \"user@pbs\").",
            ),
            Param::body(
                "password",
                ParamKind::String,
                "Password or token secret for cifs or pbs; stored by Proxmox, never returned.",
            ),
            Param::body(
                "fingerprint",
                ParamKind::String,
                "PBS server certificate SHA-256 fingerprint, \"AB:CD:…\" (32 hex pairs).",
            ),
            Param::body(
                "format",
                ParamKind::String,
                "Default image format for file storages: raw, qcow2, subvol or vmdk.",
            )
            .one_of(&["raw", "qcow2", "subvol", "vmdk"]),
            COMMON_KEYS[4],
        ],
        backend: post("/storage"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_storage",
        title: "Update storage",
        description: "Change an existing storage definition: content types, nodes, shared, disable, retention (prune-backups), or remove keys with `delete`. Pass `digest` from pve_get_storage_config to refuse the change if someone else edited it meanwhile. Requires confirm=true after asking the user. Returns the storage summary.",
        category: Category::Storage,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            STORAGE,
            COMMON_KEYS[0],
            COMMON_KEYS[1],
            COMMON_KEYS[2],
            COMMON_KEYS[3],
            COMMON_KEYS[4],
            Param::body(
                "delete",
                ParamKind::String,
                "Comma-separated keys to remove from the definition, e.g. \"nodes,prune-backups\".",
            ),
            Param::body(
                "digest",
                ParamKind::String,
                "Digest from pve_get_storage_config; the update fails if the config changed since.",
            )
            .pattern("^[0-9a-fA-F]{1,64}$", 64),
        ],
        at_least_one_of: &[
            "content",
            "nodes",
            "shared",
            "disable",
            "prune-backups",
            "delete",
        ],
        backend: put("/storage/{storage}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_storage",
        title: "Delete storage",
        description: "Remove a storage definition from the datacenter. The data on the disk/NAS is not erased, but guests whose disks live there stop working. Requires confirm=true after asking the user. Returns null.",
        category: Category::Storage,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[STORAGE],
        backend: delete("/storage/{storage}"),
        ..ToolSpec::BASE
    },
];
