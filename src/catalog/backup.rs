//! Backup tools: scheduled vzdump jobs, one-off backups and the backups on a storage.
//!
//! Invariant: `pve_list_backups` really asks for backups (`content=backup`) instead of
//! repeating `pve_list_storage_content`; job and run rows expose only keys the PVE 9.1
//! schema declares for `/cluster/backup` and `/nodes/{node}/vzdump`.

use super::params::{NEW_VMID, NODE, POOL_BODY, STORAGE_PATTERN, VMID_LIST_PATTERN};
use super::storage::{STORAGE, STORAGE_ID_PATTERN};
use super::types::{
    ArgRule, Backend, Category, CompositeOp, Effect, Legs, Location, Module, Param, ParamKind,
    Tier, ToolSpec, delete, get, post,
};

/// The storage and the group a prune (or its preview) works on, and the retention.
const PRUNE_PARAMS: &[Param] = &[
    NODE,
    STORAGE,
    Param::query(
        "prune-backups",
        ParamKind::String,
        "e.g. keep-last=3 (default: the storage's).",
    ),
    Param::query("vmid", ParamKind::Integer, "One guest.").range(100, 999_999_999),
];

/// A restore replaces or creates a whole guest: never retried, confirm-gated.
const RESTORE: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

const JOB_ID: Param =
    Param::path("id", ParamKind::String, "Backup job ID.").matching("^\\S{1,50}$");

const VMID_LIST: &str = "Guest IDs, comma list.";
const MODE: &str = "snapshot = no downtime.";
const COMPRESS: &str = "zstd recommended; 0 = none.";
const TARGET_STORAGE: &str = "Backup storage ID.";
const NOTES: &str = "Backup notes; {{guestname}}, {{vmid}}, {{node}} expand.";
const MAILTO: &str = "E-mails or users to notify, comma list.";

const MODES: &[&str] = &["snapshot", "suspend", "stop"];

/// What turns a one-off backup from routine into a person's decision: mail leaves the
/// cluster, `all`/`mode` reach beyond the named guest's uptime, `remove` prunes old backups.
const RUN_BACKUP_GATES: &[ArgRule] = &[
    ArgRule::given(
        "mailto",
        "mails the backup report to this address, outside the cluster",
    ),
    ArgRule::is("all", "1", "backs up every guest on the node"),
    ArgRule::is("mode", "stop", "stops each guest for the backup"),
    ArgRule::is("mode", "suspend", "suspends each guest for the backup"),
    ArgRule::is(
        "remove",
        "1",
        "prunes older backups per the storage retention",
    ),
    ArgRule::given(
        "notes-template",
        "writes this text into each backup's notes",
    ),
];
const COMPRESSIONS: &[&str] = &["0", "1", "gzip", "lzo", "zstd"];

/// Rows of the `backup` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_backup_jobs",
        title: "List backup jobs",
        description: "Scheduled backup jobs: id, schedule, storage, mode, enabled, guest selection. Shows coverage, not success.",
        category: Category::Backup,
        backend: get("/cluster/backup"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_restore_qemu_backup",
        starts_task: true,
        title: "Restore VM from backup",
        description: "Create a VM from a backup archive (pve_list_backups). Returns a task UPID.",
        category: Category::Backup,
        tier: Tier::Full,
        effect: RESTORE,
        confirm: true,
        params: &[
            NODE,
            NEW_VMID,
            Param::body(
                "archive",
                ParamKind::String,
                "Backup volid (pve_list_backups).",
            )
            .required(),
            Param::body("storage", ParamKind::String, "Storage for restored disks.")
                .matching(STORAGE_PATTERN),
            Param::body(
                "force",
                ParamKind::Boolean,
                "Overwrite an existing VM (its disks are destroyed).",
            ),
            Param::body("unique", ParamKind::Boolean, "New MACs and UUID."),
            Param::body("start", ParamKind::Boolean, "Start it afterwards."),
            POOL_BODY,
        ],
        backend: post("/nodes/{node}/qemu"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_restore_lxc_backup",
        starts_task: true,
        title: "Restore container from backup",
        description: "Create a container from a backup archive (pve_list_backups). Returns a task UPID.",
        category: Category::Backup,
        tier: Tier::Full,
        effect: RESTORE,
        confirm: true,
        params: &[
            NODE,
            NEW_VMID,
            Param::body(
                "archive",
                ParamKind::String,
                "Backup volid (pve_list_backups).",
            )
            .sent_as("ostemplate")
            .required(),
            Param::fixed(
                "restore",
                ParamKind::Boolean,
                Location::Body,
                "1",
                "Always 1: marks the create as a restore.",
            ),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage for restored volumes.",
            )
            .matching(STORAGE_PATTERN),
            Param::body(
                "force",
                ParamKind::Boolean,
                "Overwrite an existing container.",
            ),
            Param::body("unique", ParamKind::Boolean, "New MAC addresses."),
            Param::body("start", ParamKind::Boolean, "Start it afterwards."),
            POOL_BODY,
        ],
        backend: post("/nodes/{node}/lxc"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_backup_job",
        title: "Get backup job",
        description: "One backup job: schedule, storage, mode, guests, retention.",
        category: Category::Backup,
        params: &[JOB_ID],
        backend: get("/cluster/backup/{id}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_backups",
        title: "List backups on a storage",
        description: "Backup archives on a storage: volid, vmid, size (bytes), ctime (Unix s), notes, protected. A volid is a restore tool's `archive`.",
        category: Category::Backup,
        legs: Legs::UNTRUSTED,
        params: &[
            NODE,
            STORAGE,
            Param::query("vmid", ParamKind::Integer, "Only backups of this guest.")
                .range(100, 999_999_999),
            Param::fixed(
                "content",
                ParamKind::String,
                Location::Query,
                "backup",
                "Backup archives only.",
            ),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        long_list: true,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_backup_health",
        title: "Backup health",
        description: "Newest backup per guest and storage (PBS too), age, verified; guests with none (verified) in `days`.",
        category: Category::Backup,
        legs: Legs::UNTRUSTED,
        params: &[Param::arg("days", ParamKind::Integer, "Default 7.").range(1, 3650)],
        backend: Backend::Composite(CompositeOp::BackupHealth),
        timeout_ms: 60_000,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_preview_prune_backups",
        title: "Preview a prune of backups",
        description: "Which backups a prune would keep, remove or protect.",
        category: Category::Backup,
        module: Module::Advanced,
        params: PRUNE_PARAMS,
        backend: get("/nodes/{node}/storage/{storage}/prunebackups"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_prune_backups",
        starts_task: true,
        title: "Prune backups",
        description: "Delete the backups a prune marks remove (see the preview). Returns a task UPID.",
        category: Category::Backup,
        module: Module::Advanced,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        params: PRUNE_PARAMS,
        backend: delete("/nodes/{node}/storage/{storage}/prunebackups"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_run_backup",
        starts_task: true,
        title: "Run a backup now",
        description: "Back up `vmid`, `all` or `pool` guests on a node now. Returns a task UPID.",
        category: Category::Backup,
        tier: Tier::ReadExecute,
        // Routine for one guest in snapshot mode (`remove=0` is sent unless the caller asks to
        // prune); pruning, `mode` stop/suspend, several guests or mail make it consequential.
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        gated_when: RUN_BACKUP_GATES,
        open_world: true,
        params: &[
            NODE,
            Param::body("vmid", ParamKind::String, VMID_LIST).pattern(VMID_LIST_PATTERN, 4096),
            Param::body("all", ParamKind::Boolean, "Back up every guest."),
            Param::body("pool", ParamKind::String, "Back up this pool's guests."),
            Param::body(
                "exclude",
                ParamKind::String,
                "With `all`: guest IDs to skip.",
            )
            .pattern(VMID_LIST_PATTERN, 4096),
            Param::body("storage", ParamKind::String, TARGET_STORAGE)
                .pattern(STORAGE_ID_PATTERN, 100),
            Param::body("mode", ParamKind::String, MODE).one_of(MODES),
            Param::body("compress", ParamKind::String, COMPRESS).one_of(COMPRESSIONS),
            Param::body("notes-template", ParamKind::String, NOTES),
            Param::body("protected", ParamKind::Boolean, "Protect from pruning."),
            Param::body(
                "remove",
                ParamKind::Boolean,
                "Prune per storage retention (default false: remove=0 is sent unless you ask).",
            )
            .default("0"),
            Param::body("mailto", ParamKind::String, MAILTO),
        ],
        at_least_one_of: &["vmid", "all", "pool"],
        backend: post("/nodes/{node}/vzdump"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_backup_job",
        title: "Create backup job",
        description: "Create a scheduled backup job for `vmid`, `all` or `pool`. Returns null.",
        category: Category::Backup,
        tier: Tier::Full,
        // A job runs unattended forever: its schedule, mode, retention and mail target are
        // a person's decision, so every creation is gated.
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        open_world: true,
        params: &[
            Param::body(
                "schedule",
                ParamKind::String,
                "Systemd calendar event, e.g. \"sun 01:00\", \"daily\".",
            )
            .required(),
            Param::body("storage", ParamKind::String, TARGET_STORAGE)
                .pattern(STORAGE_ID_PATTERN, 100)
                .required(),
            Param::body("vmid", ParamKind::String, VMID_LIST).pattern(VMID_LIST_PATTERN, 4096),
            Param::body("all", ParamKind::Boolean, "Back up every guest."),
            Param::body("pool", ParamKind::String, "Back up this pool's guests."),
            Param::body(
                "exclude",
                ParamKind::String,
                "With `all`: guest IDs to skip.",
            )
            .pattern(VMID_LIST_PATTERN, 4096),
            Param::body(
                "node",
                ParamKind::String,
                "Only run on this node; omit for all.",
            )
            .matching(super::params::NODE_PATTERN),
            Param::body("mode", ParamKind::String, MODE).one_of(MODES),
            Param::body("compress", ParamKind::String, COMPRESS).one_of(COMPRESSIONS),
            Param::body(
                "enabled",
                ParamKind::Boolean,
                "false creates the job disabled.",
            ),
            Param::body(
                "prune-backups",
                ParamKind::String,
                "Retention, e.g. \"keep-last=3,keep-weekly=4\".",
            ),
            Param::body("notes-template", ParamKind::String, NOTES),
            Param::body("mailto", ParamKind::String, MAILTO),
            Param::body("comment", ParamKind::String, "Free text."),
            Param::body("id", ParamKind::String, "Job ID (default generated).")
                .matching("^[A-Za-z][A-Za-z0-9_-]{1,49}$"),
        ],
        at_least_one_of: &["vmid", "all", "pool"],
        backend: post("/cluster/backup"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_backup_job",
        title: "Delete backup job",
        description: "Delete a scheduled backup job; existing backups stay. Returns null.",
        category: Category::Backup,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[JOB_ID],
        backend: delete("/cluster/backup/{id}"),
        ..ToolSpec::BASE
    },
];
