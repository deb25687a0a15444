//! QEMU lifecycle tools: create, clone, delete, migrate, configuration updates, disk
//! resize, snapshots, template conversion and guest-agent command execution.
//!
//! Invariant: names, tiers, modules and flags are the reference's (checked by
//! `tests/catalog.rs`); parameters are the PVE 9.1 schema's own names. Every tool that
//! starts a Proxmox worker says it returns a UPID to follow with pve_get_task_status.

use super::params::{
    GUEST, NEW_VMID, NODE, POOL_BODY, SNAPNAME_PATTERN, SNAPSHOT, STORAGE_BODY, STORAGE_PATTERN,
    TARGET_NODE, join, total,
};
use super::qemu_params::{CLOUDINIT, HARDWARE, UPDATABLE, UPDATE_ONLY};
use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

const CREATE: Effect = Effect::Write {
    destructive: false,
    idempotent: false,
};
const DESTROY: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

const CREATE_ONLY: &[Param] = &[
    STORAGE_BODY,
    POOL_BODY,
    Param::body(
        "start",
        ParamKind::Boolean,
        "Start the VM once it has been created.",
    ),
];
const CREATE_PARTS: &[&[Param]] = &[&[NODE, NEW_VMID], HARDWARE, CLOUDINIT, CREATE_ONLY];
const CREATE_PARAMS: [Param; total(CREATE_PARTS)] = join(CREATE_PARTS);

const UPDATE_PARTS: &[&[Param]] = &[GUEST, HARDWARE, CLOUDINIT, UPDATE_ONLY];
const UPDATE_PARAMS: [Param; total(UPDATE_PARTS)] = join(UPDATE_PARTS);

/// A disk key of a VM, as `resize` and `template` accept it.
const DISK_KEY_PATTERN: &str =
    "^(ide[0-3]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|efidisk0|tpmstate0)$";

const SNAPNAME_BODY: Param = Param::body(
    "snapname",
    ParamKind::String,
    "Name of the new snapshot: starts with a letter; letters, digits, '-' and '_'; up to 40 characters (e.g. \"before-upgrade\").",
)
.pattern(SNAPNAME_PATTERN, 40)
.required();

/// Rows of the `qemu` category for the guest lifecycle.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_qemu_create",
        title: "Create VM",
        description: "Create a new QEMU VM on a node. Give at least `vmid` (pve_get_next_vmid suggests one); usual keys: name, cores, sockets, memory (MiB), ostype, scsihw, a disk such as scsi0=\"local-lvm:32\" (32 GiB), a NIC such as net0=\"virtio,bridge=vmbr0\", an ISO as ide2=\"local:iso/debian.iso,media=cdrom\", boot, agent, cloud-init keys. Indexed keys: scsi0–30, virtio0–15, sata0–5, ide0–3, net0–31, ipconfig0–31. Returns a task UPID; follow it with pve_get_task_status, then read the result with pve_get_qemu_config.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: CREATE,
        params: &CREATE_PARAMS,
        backend: post("/nodes/{node}/qemu"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_delete",
        title: "Delete VM",
        description: "Destroy a VM and all its disks, permanently (the VM must be stopped, and not protected). Set `purge` to also remove it from backup jobs, replication and HA. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            Param::query(
                "purge",
                ParamKind::Boolean,
                "Also remove the VM from backup jobs, replication jobs and HA resources.",
            ),
            Param::query(
                "destroy-unreferenced-disks",
                ParamKind::Boolean,
                "Also destroy disks on enabled storages that carry this VMID but are not in its configuration.",
            ),
        ],
        backend: delete("/nodes/{node}/qemu/{vmid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_migrate",
        title: "Migrate VM",
        description: "Move a VM to another node of the cluster. A running VM needs `online`=true (live migration); local disks need `with-local-disks`. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status — the VM is on the target node once the task is OK.",
        category: Category::Qemu,
        tier: Tier::ReadExecute,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            TARGET_NODE.required(),
            Param::body(
                "online",
                ParamKind::Boolean,
                "Live-migrate a running VM (it keeps running); without it a running VM is refused.",
            ),
            Param::body(
                "with-local-disks",
                ParamKind::Boolean,
                "Also copy disks on local (non-shared) storage to the target node.",
            ),
            Param::body(
                "targetstorage",
                ParamKind::String,
                "Storage for the local disks on the target: one storage ID, or \"source:target\" pairs separated by commas.",
            ),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/migrate"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_clone",
        title: "Clone VM",
        description: "Copy a VM or template to a new VMID. From a template the default is a linked clone (fast, shares the base disks); set `full`=true for an independent copy (required when cloning a normal VM). Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Qemu,
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
                "name",
                ParamKind::String,
                "Name of the copy (a DNS name, e.g. \"web-02\").",
            )
            .pattern("^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$", 63),
            TARGET_NODE,
            Param::body(
                "full",
                ParamKind::Boolean,
                "Full copy of all disks instead of a linked clone (linked clones only work from templates).",
            ),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage for the copy's disks (full clones only); default: the source's.",
            )
            .pattern(STORAGE_PATTERN, 100),
            POOL_BODY,
            Param::body(
                "description",
                ParamKind::String,
                "Notes for the copy.",
            ),
            Param::body(
                "snapname",
                ParamKind::String,
                "Clone the state of this snapshot instead of the current one.",
            )
            .pattern(SNAPNAME_PATTERN, 40),
            Param::body(
                "format",
                ParamKind::String,
                "Disk format of a full clone on file storage: raw, qcow2 or vmdk.",
            )
            .one_of(&["raw", "qcow2", "vmdk"]),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/clone"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_update_config",
        title: "Update VM configuration",
        description: "Change a VM's configuration keys (same names as pve_get_qemu_config shows): name, cores, sockets, memory (MiB), cpu, disks (scsiN/virtioN/sataN/ideN, e.g. scsi1=\"local-lvm:16\" adds a 16 GiB disk), NICs (netN), boot, agent, tags, cloud-init keys, …; `delete` removes keys. Pass `digest` from pve_get_qemu_config to refuse the change if someone else edited it meanwhile. Changes to a running VM may stay pending until its next restart. Requires confirm=true. Returns null on success. To grow a disk use pve_qemu_resize_disk.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: true,
        },
        confirm: true,
        params: &UPDATE_PARAMS,
        at_least_one_of: UPDATABLE,
        backend: put("/nodes/{node}/qemu/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_resize_disk",
        title: "Resize VM disk",
        description: "Grow a VM disk (shrinking is not possible). `size` is \"+10G\" to add 10 GiB or an absolute new size such as \"64G\" (suffix K, M, G, T; no suffix = bytes). The guest's partitions and filesystems still need to be grown inside the guest. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            Param::body(
                "disk",
                ParamKind::String,
                "Disk key as in the configuration, e.g. \"scsi0\", \"virtio1\", \"sata0\", \"ide0\", \"efidisk0\".",
            )
            .pattern(DISK_KEY_PATTERN, 10)
            .required(),
            Param::body(
                "size",
                ParamKind::String,
                "\"+<n><unit>\" to grow by that much (e.g. \"+10G\") or \"<n><unit>\" as the new total (e.g. \"64G\"); units K, M, G, T (powers of 1024), none = bytes.",
            )
            .pattern("^\\+?[0-9]+(\\.[0-9]+)?[KMGT]?$", 32)
            .required(),
            super::params::DIGEST,
        ],
        backend: put("/nodes/{node}/qemu/{vmid}/resize"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_qemu_snapshots",
        title: "List VM snapshots",
        description: "List a VM's snapshots: name, description, snaptime (Unix seconds), vmstate (RAM included) and parent, plus a pseudo-entry named \"current\" for the live state (its parent is the latest snapshot). Use it before a rollback or delete.",
        category: Category::Qemu,
        params: GUEST,
        backend: get("/nodes/{node}/qemu/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_create_snapshot",
        title: "Snapshot VM",
        description: "Take a snapshot of a VM's disks (and, with `vmstate`, its RAM) so it can be rolled back later. Snapshots are not backups: they live on the same storage. Returns a task UPID; follow it with pve_get_task_status, then pve_list_qemu_snapshots shows it.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            SNAPNAME_BODY,
            Param::body(
                "description",
                ParamKind::String,
                "Free-text note stored with the snapshot.",
            ),
            Param::body(
                "vmstate",
                ParamKind::Boolean,
                "Also save the RAM of a running VM, so a rollback resumes it running.",
            ),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_delete_snapshot",
        title: "Delete VM snapshot",
        description: "Delete one snapshot of a VM (the VM's current state is not changed). Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Qemu,
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
                "Remove the snapshot from the configuration even if removing its disk data fails.",
            ),
        ],
        backend: delete("/nodes/{node}/qemu/{vmid}/snapshot/{snapname}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_rollback_snapshot",
        title: "Roll VM back to snapshot",
        description: "Return a VM to the state of a snapshot: everything changed since is lost. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Qemu,
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
                "Start the VM after the rollback (a snapshot with RAM resumes anyway).",
            ),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_create_template",
        title: "Convert VM to template",
        description: "Convert a stopped VM into a template, irreversibly: it can no longer be started, only cloned (pve_qemu_clone). This is the canonical tool; pve_create_qemu_template is the same call under its older name. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: TEMPLATE_PARAMS,
        backend: post("/nodes/{node}/qemu/{vmid}/template"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_exec_qemu_guest_command",
        title: "Run command in VM (guest agent)",
        description: "Start a program inside a running VM through the QEMU guest agent (agent enabled in the config and qemu-guest-agent running in the guest). `command` is the program and its arguments as an array, e.g. [\"systemctl\", \"is-active\", \"nginx\"] — no shell unless you call one ([\"sh\", \"-c\", \"…\"]). Returns {pid} only; the output is read from the agent's exec-status for that pid. Requires confirm=true after asking the user.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            Param::body(
                "command",
                ParamKind::StringArray,
                "Program and arguments, one array item each (e.g. [\"ls\", \"-la\", \"/var/log\"]). A single string is split on whitespace, so pass an array when an argument contains spaces.",
            )
            .required(),
            Param::body(
                "input-data",
                ParamKind::String,
                "Text passed to the program's standard input (up to 64 KiB).",
            ),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/agent/exec"),
        ..ToolSpec::BASE
    },
];

/// Parameters of the two template-conversion rows (`pve_qemu_create_template` and its
/// older twin `pve_create_qemu_template`): the same request either way.
pub(super) const TEMPLATE_PARAMS: &[Param] = &[
    NODE,
    GUEST[1],
    Param::body(
        "disk",
        ParamKind::String,
        "Convert only this disk to a base image (e.g. \"scsi0\"); default: the whole VM.",
    )
    .pattern(DISK_KEY_PATTERN, 10),
];
