//! Backup tools: scheduled vzdump jobs, one-off backups and the backups on a storage.
//!
//! Invariant: `pve_list_backups` really asks for backups (`content=backup`) instead of
//! repeating `pve_list_storage_content`; job and run rows expose only keys the PVE 9.1
//! schema declares for `/cluster/backup` and `/nodes/{node}/vzdump`.

use super::params::{NEW_VMID, NODE, POOL_BODY, STORAGE_PATTERN};
use super::storage::{STORAGE, STORAGE_ID_PATTERN};
use super::types::{
    Category, Effect, Location, Param, ParamKind, Tier, ToolSpec, delete, get, post,
};

/// A restore replaces or creates a whole guest: never retried, confirm-gated.
const RESTORE: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

const JOB_ID: Param = Param::path(
    "id",
    ParamKind::String,
    "Backup job ID as pve_list_backup_jobs shows it, e.g. \"backup-5d1e2c3a-9f01\".",
)
.pattern("^\\S{1,50}$", 50);

const VMID_LIST: &str = "Guest IDs to back up, comma-separated, e.g. \"101,102,201\".";
const MODE: &str = "snapshot (default, no downtime), suspend (short pause) or stop (guest shut down during backup).";
const COMPRESS: &str = "Compression: \"zstd\" (recommended), \"lzo\", \"gzip\", or \"0\" for none.";
const TARGET_STORAGE: &str =
    "Storage ID that receives the backup (must allow content \"backup\"), e.g. \"local\".";
const NOTES: &str =
    "Notes attached to each backup; placeholders {{guestname}}, {{node}}, {{vmid}}, {{cluster}}.";
const MAILTO: &str = "Comma-separated e-mail addresses or users notified about the result.";

const MODES: &[&str] = &["snapshot", "suspend", "stop"];
const COMPRESSIONS: &[&str] = &["0", "1", "gzip", "lzo", "zstd"];

/// Rows of the `backup` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_backup_jobs",
        title: "List backup jobs",
        description: "List the cluster's scheduled backup (vzdump) jobs: id, schedule (systemd calendar format, e.g. \"sun 01:00\"), target storage, mode (snapshot/suspend/stop), enabled flag and guest selection (`vmid` list, `all`, `pool`, `exclude`). Use it to audit which guests are covered; a schedule does not prove a backup succeeded — check tasks for that.",
        category: Category::Backup,
        backend: get("/cluster/backup"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_restore_qemu_backup",
        title: "Restore VM from backup",
        description: "Create a VM from a vzdump backup archive (a `volid` such as \"local:backup/vzdump-qemu-101-2025_01_01-01_00_00.vma.zst\" from the storage's backup content). Restoring over an existing VMID needs `force`=true and replaces that VM entirely. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
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
                "Backup volume ID (\"<storage>:backup/vzdump-qemu-….vma.zst\") or a PBS snapshot volid.",
            )
            .required(),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage for the restored disks (default: the ones recorded in the backup).",
            )
            .pattern(STORAGE_PATTERN, 100),
            Param::body(
                "force",
                ParamKind::Boolean,
                "Allow overwriting an existing VM with this VMID (its current disks are destroyed).",
            ),
            Param::body(
                "unique",
                ParamKind::Boolean,
                "Give the restored VM new MAC addresses and a new UUID (use when the original still exists).",
            ),
            Param::body("start", ParamKind::Boolean, "Start the VM after the restore."),
            POOL_BODY,
        ],
        backend: post("/nodes/{node}/qemu"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_restore_lxc_backup",
        title: "Restore container from backup",
        description: "Create a container from a vzdump backup archive (a volid such as \"local:backup/vzdump-lxc-201-2025_01_01-01_00_00.tar.zst\"). Sent as Proxmox expects a restore: the archive as `ostemplate` with restore=1. Restoring over an existing VMID needs `force`=true and replaces that container. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
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
                "Backup volume ID (\"<storage>:backup/vzdump-lxc-….tar.zst\") or a PBS snapshot volid.",
            )
            .sent_as("ostemplate")
            .required(),
            Param::fixed(
                "restore",
                ParamKind::Boolean,
                Location::Body,
                "1",
                "Always 1: marks the create request as a restore of `archive`.",
            ),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage for the restored volumes (default: the ones recorded in the backup).",
            )
            .pattern(STORAGE_PATTERN, 100),
            Param::body(
                "force",
                ParamKind::Boolean,
                "Allow overwriting an existing container with this VMID.",
            ),
            Param::body(
                "unique",
                ParamKind::Boolean,
                "Give the restored container new MAC addresses.",
            ),
            Param::body(
                "start",
                ParamKind::Boolean,
                "Start the container after the restore.",
            ),
            POOL_BODY,
        ],
        backend: post("/nodes/{node}/lxc"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_backup_job",
        title: "Get backup job",
        description: "Read one scheduled backup job by id: schedule, storage, mode, compress, enabled, guest selection (vmid/all/pool/exclude), retention, notes-template and mail settings.",
        category: Category::Backup,
        params: &[JOB_ID],
        backend: get("/cluster/backup/{id}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_backups",
        title: "List backups on a storage",
        description: "List the backup archives (vzdump) on one storage as one node sees it: volid (e.g. \"local:backup/vzdump-qemu-101-2025_01_05-01_00_02.vma.zst\"), vmid, size in bytes, ctime (Unix seconds), format, notes and protected (1/0). Sends content=backup; filter by `vmid`. Use a volid as the archive of a restore tool.",
        category: Category::Backup,
        params: &[
            NODE,
            STORAGE,
            Param::query(
                "vmid",
                ParamKind::Integer,
                "Only backups of this guest ID (100–999999999).",
            )
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
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_run_backup",
        title: "Run a backup now",
        description: "Start an immediate vzdump backup on one node of the guests given by `vmid` (comma list), or `all` guests of the node, or a `pool`. Returns a task UPID; follow it with pve_get_task_status, then find the archive with pve_list_backups.",
        category: Category::Backup,
        tier: Tier::ReadExecute,
        effect: Effect::Write {
            destructive: false,
            idempotent: false,
        },
        params: &[
            NODE,
            Param::body("vmid", ParamKind::String, VMID_LIST)
                .pattern("^[0-9]{3,9}(,[0-9]{3,9})*$", 4096),
            Param::body(
                "all",
                ParamKind::Boolean,
                "true: back up every guest on the node (combine with `exclude`).",
            ),
            Param::body(
                "pool",
                ParamKind::String,
                "Back up every guest of this resource pool.",
            ),
            Param::body(
                "exclude",
                ParamKind::String,
                "With `all`: guest IDs to skip, comma-separated.",
            )
            .pattern("^[0-9]{3,9}(,[0-9]{3,9})*$", 4096),
            Param::body("storage", ParamKind::String, TARGET_STORAGE)
                .pattern(STORAGE_ID_PATTERN, 100),
            Param::body("mode", ParamKind::String, MODE).one_of(MODES),
            Param::body("compress", ParamKind::String, COMPRESS).one_of(COMPRESSIONS),
            Param::body("notes-template", ParamKind::String, NOTES),
            Param::body(
                "protected",
                ParamKind::Boolean,
                "true: mark the new backup protected so pruning never deletes it.",
            ),
            Param::body(
                "remove",
                ParamKind::Boolean,
                "Prune older backups per the storage retention (default true).",
            ),
            Param::body("mailto", ParamKind::String, MAILTO),
        ],
        at_least_one_of: &["vmid", "all", "pool"],
        backend: post("/nodes/{node}/vzdump"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_backup_job",
        title: "Create backup job",
        description: "Create a scheduled backup job. Give `schedule` (systemd calendar event, e.g. \"sun 01:00\", \"*-*-* 02:30\", \"mon..fri 22:00\"), the target `storage`, and the guests: `vmid` list, `all` (optionally with `exclude`) or a `pool`. Returns null; see the job with pve_list_backup_jobs.",
        category: Category::Backup,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: false,
            idempotent: false,
        },
        params: &[
            Param::body(
                "schedule",
                ParamKind::String,
                "When to run, systemd calendar event: \"sun 01:00\", \"daily\", \"*-*-* 02:30\".",
            )
            .required(),
            Param::body("storage", ParamKind::String, TARGET_STORAGE)
                .pattern(STORAGE_ID_PATTERN, 100)
                .required(),
            Param::body("vmid", ParamKind::String, VMID_LIST)
                .pattern("^[0-9]{3,9}(,[0-9]{3,9})*$", 4096),
            Param::body("all", ParamKind::Boolean, "true: back up every guest."),
            Param::body(
                "pool",
                ParamKind::String,
                "Back up the guests of this resource pool (members at run time).",
            ),
            Param::body(
                "exclude",
                ParamKind::String,
                "With `all`: guest IDs to skip, comma-separated.",
            )
            .pattern("^[0-9]{3,9}(,[0-9]{3,9})*$", 4096),
            Param::body(
                "node",
                ParamKind::String,
                "Only run on this node (guests elsewhere are skipped); omit for all nodes.",
            )
            .matching(super::params::NODE_PATTERN),
            Param::body("mode", ParamKind::String, MODE).one_of(MODES),
            Param::body("compress", ParamKind::String, COMPRESS).one_of(COMPRESSIONS),
            Param::body(
                "enabled",
                ParamKind::Boolean,
                "false creates the job disabled (default true).",
            ),
            Param::body(
                "prune-backups",
                ParamKind::String,
                "Retention for this job, e.g. \"keep-last=3,keep-weekly=4\" (default: the storage's).",
            ),
            Param::body("notes-template", ParamKind::String, NOTES),
            Param::body("mailto", ParamKind::String, MAILTO),
            Param::body(
                "comment",
                ParamKind::String,
                "Free-text description of the job (max 512 characters).",
            ),
            Param::body(
                "id",
                ParamKind::String,
                "Job ID to use instead of a generated \"backup-…\" one (letters, digits, - _).",
            )
            .pattern("^[A-Za-z][A-Za-z0-9_-]{1,49}$", 50),
        ],
        at_least_one_of: &["vmid", "all", "pool"],
        backend: post("/cluster/backup"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_backup_job",
        title: "Delete backup job",
        description: "Delete a scheduled backup job; existing backups stay on their storage. Requires confirm=true after asking the user. Returns null.",
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
