//! QEMU lifecycle tools: create, clone, delete, migrate, configuration updates, disk
//! resize, snapshots, template conversion and guest-agent command execution.
//!
//! Invariant: names, tiers, modules and flags are the reference's (checked by
//! `tests/catalog.rs`); parameters are the PVE 9.1 schema's own names. Every tool that
//! starts a Proxmox worker says it returns a UPID to follow with pve_get_task_status.

use super::params::{
    GUEST, NEW_VMID, NODE, NODE_PATTERN, POOL_BODY, SNAPNAME_PATTERN, SNAPSHOT, STORAGE_BODY,
    STORAGE_PATTERN, TARGET_NODE, join, total,
};
use super::qemu_params::{CLOUDINIT, HARDWARE, UPDATABLE, UPDATE_ONLY};
use super::types::{
    ArgRule, Backend, Category, CompositeOp, Effect, Legs, Module, Param, ParamKind, Tier,
    ToolSpec, delete, get, post, put,
};

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
    Param::body("start", ParamKind::Boolean, "Start it afterwards."),
];
const CREATE_PARTS: &[&[Param]] = &[&[NODE, NEW_VMID], HARDWARE, CLOUDINIT, CREATE_ONLY];
const CREATE_PARAMS: [Param; total(CREATE_PARTS)] = join(CREATE_PARTS);

const UPDATE_PARTS: &[&[Param]] = &[GUEST, HARDWARE, CLOUDINIT, UPDATE_ONLY];
const UPDATE_PARAMS: [Param; total(UPDATE_PARTS)] = join(UPDATE_PARTS);

/// A disk key of a VM, as `resize` and `template` accept it.
const DISK_KEY_PATTERN: &str =
    "^(ide[0-3]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5]|efidisk0|tpmstate0)$";

const SNAPNAME_BODY: Param = Param::body("snapname", ParamKind::String, "New snapshot name.")
    .matching(SNAPNAME_PATTERN)
    .required();

/// Rows of the `qemu` category for the guest lifecycle.
/// A new VM with credentials or started at once is a ready foothold: a person decides.
const CREATE_GATES: &[ArgRule] = &[
    ArgRule::given("cipassword", "sets the cloud-init login password"),
    ArgRule::given("sshkeys", "installs SSH keys that can log in to the guest"),
    ArgRule::is("start", "1", "starts the new VM at once"),
];

pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_qemu_create",
        starts_task: true,
        title: "Create VM",
        description: "Create a VM, e.g. scsi0=\"local-lvm:32\" (GiB), net0=\"virtio,bridge=vmbr0\". Returns a task UPID.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: CREATE,
        gated_when: CREATE_GATES,
        params: &CREATE_PARAMS,
        backend: post("/nodes/{node}/qemu"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_delete",
        starts_task: true,
        title: "Delete VM",
        description: "Destroy a stopped VM and its disks, permanently. Returns a task UPID.",
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
                "Also drop from backup, replication, HA jobs.",
            ),
            Param::query(
                "destroy-unreferenced-disks",
                ParamKind::Boolean,
                "Also destroy unreferenced disks.",
            ),
        ],
        backend: delete("/nodes/{node}/qemu/{vmid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_migrate",
        starts_task: true,
        title: "Migrate VM",
        description: "Move a VM to another node (running: `online`). Returns a task UPID.",
        category: Category::Qemu,
        tier: Tier::ReadExecute,
        effect: DESTROY,
        confirm: true,
        params: &[
            NODE,
            GUEST[1],
            TARGET_NODE.required(),
            Param::body("online", ParamKind::Boolean, "Live-migrate a running VM."),
            Param::body(
                "with-local-disks",
                ParamKind::Boolean,
                "Also copy local disks.",
            ),
            Param::body(
                "targetstorage",
                ParamKind::String,
                "Target storage, or \"src:dst\" pairs, comma list.",
            ),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/migrate"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_clone",
        starts_task: true,
        title: "Clone VM",
        description: "Copy a VM or template to a new VMID (a normal VM needs `full`). Returns a task UPID.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            Param::body("newid", ParamKind::Integer, "Free VMID for the copy.")
                .range(100, 999_999_999)
                .required(),
            Param::body("name", ParamKind::String, "Name of the copy.")
                .matching(super::qemu_params::DNS_NAME_PATTERN),
            TARGET_NODE,
            Param::body("full", ParamKind::Boolean, "Full copy, not a linked clone."),
            Param::body("storage", ParamKind::String, "Storage for a full clone.")
                .matching(STORAGE_PATTERN),
            POOL_BODY,
            Param::body("description", ParamKind::String, "Notes for the copy."),
            Param::body("snapname", ParamKind::String, "Clone this snapshot.")
                .matching(SNAPNAME_PATTERN),
            Param::body("format", ParamKind::String, "Full clone disk format.")
                .one_of(&["raw", "qcow2", "vmdk"]),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/clone"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_update_config",
        title: "Update VM configuration",
        description: "Change VM config keys (as pve_get_qemu_config); scsi1=\"local-lvm:16\" adds 16 GiB. Some apply at restart. Returns null.",
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
        starts_task: true,
        title: "Resize VM disk",
        description: "Grow a VM disk (never shrink); grow partitions in the guest afterwards. Returns a task UPID.",
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
                "Disk key, e.g. \"scsi0\", \"virtio1\", \"efidisk0\".",
            )
            .matching(DISK_KEY_PATTERN)
            .required(),
            Param::body(
                "size",
                ParamKind::String,
                "\"+10G\" grows by 10 GiB; \"64G\" sets the total. K, M, G, T; none = bytes.",
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
        description: "A VM's snapshots: name, description, snaptime (Unix s), vmstate, parent; \"current\" is the live state.",
        category: Category::Qemu,
        params: GUEST,
        backend: get("/nodes/{node}/qemu/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_create_snapshot",
        starts_task: true,
        title: "Snapshot VM",
        description: "Snapshot a VM (not a backup: same storage). Returns a task UPID.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: CREATE,
        params: &[
            NODE,
            GUEST[1],
            SNAPNAME_BODY,
            Param::body("description", ParamKind::String, "Snapshot note."),
            Param::body("vmstate", ParamKind::Boolean, "Also save RAM."),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/snapshot"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_delete_snapshot",
        starts_task: true,
        title: "Delete VM snapshot",
        description: "Delete a VM snapshot (current state unchanged). Returns a task UPID.",
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
                "Remove even if disk removal fails.",
            ),
        ],
        backend: delete("/nodes/{node}/qemu/{vmid}/snapshot/{snapname}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_rollback_snapshot",
        starts_task: true,
        title: "Roll VM back to snapshot",
        description: "Roll a VM back to a snapshot; later changes are lost. Returns a task UPID.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: DESTROY,
        confirm: true,
        params: &[
            SNAPSHOT[0],
            SNAPSHOT[1],
            SNAPSHOT[2],
            Param::body("start", ParamKind::Boolean, "Start it afterwards."),
        ],
        backend: post("/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_qemu_create_template",
        starts_task: true,
        title: "Convert VM to template",
        description: "Convert a stopped VM into a template, irreversibly. Returns a task UPID.",
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
        description: "Run a program in a VM via the guest agent (no shell) and wait: exit code, stdout, stderr (capped).",
        category: Category::Qemu,
        legs: Legs::EXECUTES,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: DESTROY,
        confirm: true,
        params: &[
            Param::arg("node", ParamKind::String, "Node name.")
                .matching(NODE_PATTERN)
                .required(),
            Param::arg("vmid", ParamKind::Integer, "Guest ID (VMID).")
                .range(100, 999_999_999)
                .required(),
            Param::arg(
                "command",
                ParamKind::StringArray,
                "Program and arguments, one item each.",
            )
            .required(),
            // Multi-line text: a length cap and no pattern (patterns refuse newlines).
            Param {
                max_length: Some(65_536),
                ..Param::arg(
                    "input-data",
                    ParamKind::String,
                    "Stdin text (up to 64 KiB).",
                )
            },
            Param::arg(
                "timeout",
                ParamKind::Integer,
                "Seconds to wait (default 30).",
            )
            .range(1, 600)
            .default("30"),
        ],
        backend: Backend::Composite(CompositeOp::QemuGuestExec),
        timeout_ms: 30_000,
        ..ToolSpec::BASE
    },
];

/// Parameters of the two template-conversion rows (`pve_qemu_create_template` and its
/// older twin `pve_create_qemu_template`): the same request either way.
pub(super) const TEMPLATE_PARAMS: &[Param] = &[
    NODE,
    GUEST[1],
    Param::body("disk", ParamKind::String, "Convert only this disk.").matching(DISK_KEY_PATTERN),
];
