//! LXC lifecycle tools: create, clone, delete, migrate, configuration updates and
//! snapshots, with the container configuration keys described once.
//!
//! Invariant: names, tiers, modules and flags are the reference's (checked by
//! `tests/catalog.rs`); parameters are the PVE 9.1 schema's own names (mp 0–255,
//! net 0–31). Every tool that starts a Proxmox worker says it returns a UPID.

use super::params::{
    DIGEST, GUEST, NEW_VMID, NODE, POOL_BODY, SNAPNAME_PATTERN, SNAPSHOT, STORAGE_BODY,
    STORAGE_PATTERN, TARGET_NODE, join, total,
};
use super::types::{
    ArgRule, Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put,
};

const CREATE: Effect = Effect::Write {
    destructive: false,
    idempotent: false,
};
const DESTROY: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

/// Container configuration keys shared by create and update.
const CONFIG_KEYS: &[Param] = &[
    Param::body("hostname", ParamKind::String, "Host name.")
        .matching("^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$"),
    Param::body("cores", ParamKind::Integer, "CPU cores (default: all).").range(1, 8192),
    Param::body("memory", ParamKind::Integer, "Memory in MiB (default 512).").min(16),
    Param::body("swap", ParamKind::Integer, "Swap in MiB (default 512).").min(0),
    Param::body(
        "rootfs",
        ParamKind::String,
        "Root disk, \"<storage>:<GiB>\", e.g. \"local-lvm:8\".",
    ),
    Param::indexed(
        "mp",
        0..=255,
        ParamKind::String,
        "Mount point, e.g. \"local-lvm:10,mp=/srv\".",
    ),
    Param::indexed(
        "net",
        0..=31,
        ParamKind::String,
        "NIC, e.g. \"name=eth0,bridge=vmbr0,ip=dhcp\".",
    ),
    Param::body(
        "unprivileged",
        ParamKind::Boolean,
        "Unprivileged (recommended).",
    ),
    Param::body(
        "features",
        ParamKind::String,
        "Features, e.g. \"nesting=1\" (Docker).",
    ),
    Param::body(
        "nameserver",
        ParamKind::String,
        "DNS servers, space-separated.",
    ),
    Param::body("searchdomain", ParamKind::String, "DNS search domains."),
    Param::body("onboot", ParamKind::Boolean, "Start at node boot."),
    Param::body(
        "startup",
        ParamKind::String,
        "Boot order, e.g. \"order=1,up=30\".",
    ),
    Param::body("protection", ParamKind::Boolean, "Block removal."),
    Param::body("tags", ParamKind::String, "Tags, ';'-separated."),
    Param::body("description", ParamKind::String, "Notes (Markdown)."),
];

const CREATE_ONLY: &[Param] = &[
    Param::body(
        "ostemplate",
        ParamKind::String,
        "Template volid, e.g. \"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\".",
    )
    .required(),
    Param::body(
        "password",
        ParamKind::String,
        "Root password; prefer ssh-public-keys.",
    ),
    Param::body(
        "ssh-public-keys",
        ParamKind::String,
        "Root's SSH keys, one per line.",
    ),
    STORAGE_BODY,
    POOL_BODY,
    Param::body("start", ParamKind::Boolean, "Start it afterwards."),
];
const CREATE_PARTS: &[&[Param]] = &[&[NODE, NEW_VMID], CONFIG_KEYS, CREATE_ONLY];
const CREATE_PARAMS: [Param; total(CREATE_PARTS)] = join(CREATE_PARTS);

const UPDATE_ONLY: &[Param] = &[
    Param::body("delete", ParamKind::String, "Keys to remove, comma list."),
    DIGEST,
];
const UPDATE_PARTS: &[&[Param]] = &[GUEST, CONFIG_KEYS, UPDATE_ONLY];
const UPDATE_PARAMS: [Param; total(UPDATE_PARTS)] = join(UPDATE_PARTS);

/// Every key pve_lxc_update_config may change (its at-least-one-of list).
const UPDATABLE: &[&str] = &[
    "hostname",
    "cores",
    "memory",
    "swap",
    "rootfs",
    "mp",
    "net",
    "unprivileged",
    "features",
    "nameserver",
    "searchdomain",
    "onboot",
    "startup",
    "protection",
    "tags",
    "description",
    "delete",
];

/// Rows of the `lxc` category for the container lifecycle.
/// A container with credentials, host access or started at once is a ready foothold.
/// Proxmox creates a *privileged* container when `unprivileged` is left out.
const CREATE_GATES: &[ArgRule] = &[
    ArgRule::given("password", "sets the root password"),
    ArgRule::given(
        "ssh-public-keys",
        "installs SSH keys that can log in as root",
    ),
    ArgRule::is_not(
        "unprivileged",
        "1",
        "creates a privileged container (root inside is root on the host)",
    ),
    ArgRule::given(
        "features",
        "enables container features such as nesting or mounts",
    ),
    ArgRule::given("mp", "adds mount points (possibly host paths)"),
    ArgRule::is("start", "1", "starts the new container at once"),
];

pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_lxc_create",
        starts_task: true,
        title: "Create container",
        description: "Create a container from `ostemplate` (pve_list_storage_templates). Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: CREATE,
        gated_when: CREATE_GATES,
        params: &CREATE_PARAMS,
        backend: post("/nodes/{node}/lxc"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_delete",
        starts_task: true,
        title: "Delete container",
        description: "Destroy a container and its volumes, permanently. Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            Param::query(
                "purge",
                ParamKind::Boolean,
                "Also drop from backup, replication, HA jobs.",
            ),
            Param::query("force", ParamKind::Boolean, "Stop it first if running."),
            Param::query(
                "destroy-unreferenced-disks",
                ParamKind::Boolean,
                "Also destroy unreferenced volumes.",
            ),
        ],
        backend: delete("/nodes/{node}/lxc/{vmid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_migrate",
        starts_task: true,
        title: "Migrate container",
        description: "Move a container to another node (running: `restart`). Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::ReadExecute,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            TARGET_NODE.required(),
            Param::body(
                "restart",
                ParamKind::Boolean,
                "Restart-migrate a running container.",
            ),
            Param::body(
                "timeout",
                ParamKind::Integer,
                "With `restart`: shutdown timeout, s (default 180).",
            )
            .min(0),
            Param::body(
                "target-storage",
                ParamKind::String,
                "Target storage, or \"src:dst\" pairs, comma list.",
            ),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/migrate"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_clone",
        starts_task: true,
        title: "Clone container",
        description: "Copy a container or template to a new VMID. Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            Param::body("newid", ParamKind::Integer, "Free VMID for the copy.")
                .range(100, 999_999_999)
                .required(),
            Param::body("hostname", ParamKind::String, "Host name of the copy.")
                .matching("^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$"),
            TARGET_NODE,
            Param::body("full", ParamKind::Boolean, "Full copy, not linked."),
            Param::body("storage", ParamKind::String, "Storage for a full clone.")
                .matching(STORAGE_PATTERN),
            POOL_BODY,
            Param::body("description", ParamKind::String, "Notes for the copy."),
            Param::body("snapname", ParamKind::String, "Clone this snapshot.")
                .matching(SNAPNAME_PATTERN),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/clone"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_update_config",
        title: "Update container configuration",
        description: "Change container config keys (as pve_get_lxc_config); some apply at restart. Returns null.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: true,
        },
        confirm: true,
        params: &UPDATE_PARAMS,
        at_least_one_of: UPDATABLE,
        backend: put("/nodes/{node}/lxc/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_lxc_snapshots",
        title: "List container snapshots",
        description: "A container's snapshots: name, description, snaptime (Unix s), parent; \"current\" is the live state.",
        category: Category::Lxc,
        params: GUEST,
        backend: get("/nodes/{node}/lxc/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_create_snapshot",
        starts_task: true,
        title: "Snapshot container",
        description: "Snapshot a container (LVM-thin, ZFS or Ceph). Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            Param::body("snapname", ParamKind::String, "New snapshot name.")
                .matching(SNAPNAME_PATTERN)
                .required(),
            Param::body("description", ParamKind::String, "Snapshot note."),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_delete_snapshot",
        starts_task: true,
        title: "Delete container snapshot",
        description: "Delete a container snapshot (current state unchanged). Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            SNAPSHOT[0],
            SNAPSHOT[1],
            SNAPSHOT[2],
            Param::query(
                "force",
                ParamKind::Boolean,
                "Remove even if data removal fails.",
            ),
        ],
        backend: delete("/nodes/{node}/lxc/{vmid}/snapshot/{snapname}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_rollback_snapshot",
        starts_task: true,
        title: "Roll container back to snapshot",
        description: "Roll a container back to a snapshot; later changes are lost. Returns a task UPID.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            SNAPSHOT[0],
            SNAPSHOT[1],
            SNAPSHOT[2],
            Param::body("start", ParamKind::Boolean, "Start it afterwards."),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback"),
        ..ToolSpec::BASE
    },
];
