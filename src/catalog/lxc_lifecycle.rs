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
use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

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
    Param::body(
        "hostname",
        ParamKind::String,
        "Container host name, a DNS name.",
    )
    .pattern("^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$", 253),
    Param::body(
        "cores",
        ParamKind::Integer,
        "CPU cores it may use (default: all).",
    )
    .range(1, 8192),
    Param::body(
        "memory",
        ParamKind::Integer,
        "Memory limit in MiB (2048 = 2 GiB); default 512.",
    )
    .min(16),
    Param::body(
        "swap",
        ParamKind::Integer,
        "Swap in MiB (0 = none); default 512.",
    )
    .min(0),
    Param::body(
        "rootfs",
        ParamKind::String,
        "Root disk: \"<storage>:<GiB>\" allocates (\"local-lvm:8\" = 8 GiB); options like \",acl=1\".",
    ),
    Param::indexed(
        "mp",
        0..=255,
        ParamKind::String,
        "Mount point: \"<storage>:<GiB>,mp=<path>\" allocates (\"local-lvm:10,mp=/srv\"); \"<host dir>,mp=<path>\" bind-mounts.",
    ),
    Param::indexed(
        "net",
        0..=31,
        ParamKind::String,
        "NIC: \"name=eth0,bridge=vmbr0,ip=dhcp\" or \"…,ip=192.168.1.60/24,gw=192.168.1.1\"; options tag=<VLAN>, firewall=1, ip6=auto.",
    ),
    Param::body(
        "unprivileged",
        ParamKind::Boolean,
        "Unprivileged container (recommended; set at creation).",
    ),
    Param::body(
        "features",
        ParamKind::String,
        "Features, e.g. \"nesting=1\" (Docker, systemd), \"keyctl=1\", \"fuse=1\".",
    ),
    Param::body(
        "nameserver",
        ParamKind::String,
        "DNS server IP(s), space-separated; unset = the host's.",
    ),
    Param::body(
        "searchdomain",
        ParamKind::String,
        "DNS search domain(s); unset = the host's.",
    ),
    Param::body("onboot", ParamKind::Boolean, "Start at node boot."),
    Param::body(
        "startup",
        ParamKind::String,
        "Boot order: \"order=<n>,up=<s>,down=<s>\".",
    ),
    Param::body(
        "protection",
        ParamKind::Boolean,
        "Block removal of the container.",
    ),
    Param::body(
        "tags",
        ParamKind::String,
        "Tags separated by ';' (e.g. \"prod;db\").",
    ),
    Param::body(
        "description",
        ParamKind::String,
        "Notes shown in the web UI (Markdown).",
    ),
];

const CREATE_ONLY: &[Param] = &[
    Param::body(
        "ostemplate",
        ParamKind::String,
        "OS template volid, e.g. \"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\" (see pve_list_storage_templates).",
    )
    .required(),
    Param::body(
        "password",
        ParamKind::String,
        "Root password (secret: sent, never logged). Prefer ssh-public-keys.",
    ),
    Param::body(
        "ssh-public-keys",
        ParamKind::String,
        "Root's public SSH keys, OpenSSH format, one per line.",
    ),
    STORAGE_BODY,
    POOL_BODY,
    Param::body(
        "start",
        ParamKind::Boolean,
        "Start the container once it has been created.",
    ),
];
const CREATE_PARTS: &[&[Param]] = &[&[NODE, NEW_VMID], CONFIG_KEYS, CREATE_ONLY];
const CREATE_PARAMS: [Param; total(CREATE_PARTS)] = join(CREATE_PARTS);

const UPDATE_ONLY: &[Param] = &[
    Param::body(
        "delete",
        ParamKind::String,
        "Comma-separated configuration keys to remove, e.g. \"mp1,net1\".",
    ),
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
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_lxc_create",
        title: "Create container",
        description: "Create an LXC container from an OS template. Give `vmid` (pve_get_next_vmid suggests one) and `ostemplate` (pve_list_storage_templates lists them); usual keys: hostname, cores, memory and swap (MiB), rootfs=\"local-lvm:8\" (8 GiB), net0=\"name=eth0,bridge=vmbr0,ip=dhcp\", password or ssh-public-keys, unprivileged=true, features=\"nesting=1\". Indexed keys: mp0–255, net0–31. Returns a task UPID; follow it with pve_get_task_status, then read the result with pve_get_lxc_config.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: CREATE,
        params: &CREATE_PARAMS,
        backend: post("/nodes/{node}/lxc"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_delete",
        title: "Delete container",
        description: "Destroy a container and its volumes, permanently (it must be stopped unless `force`, and not protected). Set `purge` to also remove it from backup jobs, replication and HA. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
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
                "Also remove the container from backup jobs, replication jobs and HA resources.",
            ),
            Param::query(
                "force",
                ParamKind::Boolean,
                "Destroy even if the container is running (it is stopped first).",
            ),
            Param::query(
                "destroy-unreferenced-disks",
                ParamKind::Boolean,
                "Also destroy volumes that carry this VMID but are not in its configuration.",
            ),
        ],
        backend: delete("/nodes/{node}/lxc/{vmid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_migrate",
        title: "Migrate container",
        description: "Move a container to another node. Containers cannot move while running without `restart`=true (restart migration: shut down, move, start again — `timeout` seconds for the shutdown); a stopped one moves as is. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status — the container is on the target once the task is OK.",
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
                "Restart migration for a running container: it is shut down, moved and started on the target.",
            ),
            Param::body(
                "timeout",
                ParamKind::Integer,
                "With `restart`: seconds to wait for the clean shutdown before it is stopped hard (Proxmox default 180).",
            )
            .min(0),
            Param::body(
                "target-storage",
                ParamKind::String,
                "Storage for the volumes on the target: one storage ID, or \"source:target\" pairs separated by commas.",
            ),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/migrate"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_clone",
        title: "Clone container",
        description: "Copy a container or container template to a new VMID (a linked clone from a template unless `full`; a normal container needs `full`=true). Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            Param::body(
                "newid",
                ParamKind::Integer,
                "VMID of the copy, 100–999999999 and unused (pve_get_next_vmid suggests one).",
            )
            .range(100, 999_999_999)
            .required(),
            Param::body(
                "hostname",
                ParamKind::String,
                "Host name of the copy (a DNS name).",
            )
            .pattern("^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$", 253),
            TARGET_NODE,
            Param::body(
                "full",
                ParamKind::Boolean,
                "Full copy of all volumes instead of a linked clone.",
            ),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage for the copy's volumes (full clones only).",
            )
            .pattern(STORAGE_PATTERN, 100),
            POOL_BODY,
            Param::body("description", ParamKind::String, "Notes for the copy."),
            Param::body(
                "snapname",
                ParamKind::String,
                "Clone the state of this snapshot instead of the current one.",
            )
            .pattern(SNAPNAME_PATTERN, 40),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/clone"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_update_config",
        title: "Update container configuration",
        description: "Change a container's configuration keys (names as pve_get_lxc_config shows them): hostname, cores, memory and swap (MiB), netN, mpN, features, onboot, tags, …; `delete` removes keys. Pass `digest` from pve_get_lxc_config to refuse the change if someone else edited it meanwhile. Some changes to a running container stay pending until restart. Requires confirm=true. Returns null on success.",
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
        description: "List a container's snapshots: name, description, snaptime (Unix seconds) and parent, plus a pseudo-entry named \"current\" for the live state. Use it before a rollback or delete.",
        category: Category::Lxc,
        params: GUEST,
        backend: get("/nodes/{node}/lxc/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_create_snapshot",
        title: "Snapshot container",
        description: "Take a snapshot of a container's volumes so it can be rolled back later (needs snapshot-capable storage such as LVM-thin, ZFS or Ceph). Returns a task UPID; follow it with pve_get_task_status, then pve_list_lxc_snapshots shows it.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            Param::body(
                "snapname",
                ParamKind::String,
                "Name of the new snapshot: starts with a letter; letters, digits, '-' and '_'; up to 40 characters.",
            )
            .pattern(SNAPNAME_PATTERN, 40)
            .required(),
            Param::body(
                "description",
                ParamKind::String,
                "Free-text note stored with the snapshot.",
            ),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_delete_snapshot",
        title: "Delete container snapshot",
        description: "Delete one snapshot of a container (its current state is not changed). Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
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
                "Remove the snapshot from the configuration even if removing its data fails.",
            ),
        ],
        backend: delete("/nodes/{node}/lxc/{vmid}/snapshot/{snapname}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_lxc_rollback_snapshot",
        title: "Roll container back to snapshot",
        description: "Return a container to the state of a snapshot: everything changed since is lost. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Lxc,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            SNAPSHOT[0],
            SNAPSHOT[1],
            SNAPSHOT[2],
            Param::body(
                "start",
                ParamKind::Boolean,
                "Start the container after the rollback.",
            ),
        ],
        backend: post("/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback"),
        ..ToolSpec::BASE
    },
];
