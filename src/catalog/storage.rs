//! Storage tools: datacenter storage definitions (`/storage`) and what each node sees
//! on them (`/nodes/{node}/storage`).
//!
//! Invariant: the create/update rows expose only keys the PVE 9.1 schema declares for
//! those endpoints (checked by `tests/catalog.rs`); defining a storage is confirm-gated
//! because a `dir` storage can point Proxmox at any path of the host.

use super::params::NODE;
use super::types::{
    Category, Effect, Legs, Param, ParamKind, Tier, ToolSpec, delete, get, post, put,
};

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
pub(super) const STORAGE: Param =
    Param::path("storage", ParamKind::String, "Storage ID.").pattern(STORAGE_ID_PATTERN, 100);

const CONTENT_LIST: &str =
    "Content types, comma list: iso, vztmpl, backup, images, rootdir, snippets, import.";
const NODES: &str = "Nodes allowed, comma list.";
const SHARED: &str = "Same data on every node.";
const DISABLE: &str = "Disable on every node.";
const PRUNE: &str = "Retention, e.g. \"keep-last=3,keep-weekly=4\".";

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
        description: "Datacenter storage definitions: id, type, content, path/pool, nodes. No free space: use the node storage tools.",
        category: Category::Storage,
        params: &[
            Param::query("type", ParamKind::String, "Only storages of this type.")
                .one_of(STORAGE_TYPES),
        ],
        backend: get("/storage"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_storage_config",
        title: "Get storage definition",
        description: "One storage definition with `digest`. Needs Datastore.Allocate; else use pve_list_storage.",
        category: Category::Storage,
        legs: Legs::SENSITIVE,
        // Full tier: its endpoint needs Datastore.Allocate, which no read-only role may hold.
        tier: Tier::Full,
        params: &[STORAGE],
        backend: get("/storage/{storage}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_node_storage",
        title: "List storages of a node",
        description: "Storages a node can use: type, content, active, total/used/avail (bytes).",
        category: Category::Storage,
        params: &[
            NODE,
            Param::query("content", ParamKind::String, "Content type filter."),
            Param::query("enabled", ParamKind::Boolean, "Only enabled storages."),
        ],
        backend: get("/nodes/{node}/storage"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_storage_status",
        title: "Get storage status on a node",
        description: "One storage's state on a node: type, content, active, total/used/avail (bytes).",
        category: Category::Storage,
        params: &[NODE, STORAGE],
        backend: get("/nodes/{node}/storage/{storage}/status"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_storage_content",
        title: "List storage content",
        description: "Volumes on a storage: volid, content, format, size (bytes), vmid, ctime (Unix s). Filter by `content`, `vmid`.",
        category: Category::Storage,
        params: &[
            NODE,
            STORAGE,
            Param::query(
                "content",
                ParamKind::String,
                "Only volumes of this content type.",
            )
            .one_of(CONTENT_TYPES),
            Param::query("vmid", ParamKind::Integer, "Only volumes of this guest.")
                .range(100, 999_999_999),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        long_list: true,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_storage",
        title: "Create storage",
        description: "Add a storage. Per `type`: dir path; nfs server+export; cifs server+share; lvm vgname; lvmthin +thinpool; zfspool pool; pbs server+datastore+username+password+fingerprint. Returns {storage, type}.",
        category: Category::Storage,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        // nfs/cifs/pbs storage makes every node connect to the named server.
        open_world: true,
        params: &[
            Param::body("storage", ParamKind::String, "New storage ID.")
                .pattern(STORAGE_ID_PATTERN, 100)
                .required(),
            Param::body("type", ParamKind::String, "Storage type.")
                .one_of(STORAGE_TYPES)
                .required(),
            COMMON_KEYS[0],
            Param::body("path", ParamKind::String, "Directory (dir/btrfs)."),
            COMMON_KEYS[1],
            COMMON_KEYS[2],
            COMMON_KEYS[3],
            Param::body("server", ParamKind::String, "Server host or IP."),
            Param::body("export", ParamKind::String, "NFS export path."),
            Param::body("share", ParamKind::String, "CIFS share name."),
            Param::body("pool", ParamKind::String, "ZFS or Ceph pool."),
            Param::body("vgname", ParamKind::String, "LVM volume group."),
            Param::body("thinpool", ParamKind::String, "Thin pool in `vgname`."),
            Param::body("datastore", ParamKind::String, "PBS datastore name."),
            Param::body(
                "username",
                ParamKind::String,
                "User (cifs/pbs; pbs: user@pbs or token).",
            ),
            Param::body(
                "password",
                ParamKind::String,
                "Password or token secret (cifs/pbs).",
            ),
            Param::body(
                "fingerprint",
                ParamKind::String,
                "PBS certificate SHA-256 fingerprint.",
            ),
            COMMON_KEYS[4],
        ],
        backend: post("/storage"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_storage",
        title: "Update storage",
        description: "Change a storage definition. Returns the summary.",
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
            Param::body("delete", ParamKind::String, "Keys to remove, comma list."),
            Param::body(
                "digest",
                ParamKind::String,
                "`digest` from pve_get_storage_config.",
            )
            .matching("^[0-9a-fA-F]{1,64}$"),
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
        description: "Remove a storage definition (data stays; guests using it break). Returns null.",
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
