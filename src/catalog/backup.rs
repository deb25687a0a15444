//! Backup tools: scheduled vzdump jobs.

use super::params::{NEW_VMID, NODE, POOL_BODY, STORAGE_PATTERN};
use super::types::{Category, Effect, Location, Param, ParamKind, Tier, ToolSpec, get, post};

/// A restore replaces or creates a whole guest: never retried, confirm-gated.
const RESTORE: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

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
];
