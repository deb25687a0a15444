//! Backup tools: scheduled vzdump jobs.

use super::types::{Category, ToolSpec, get};

/// Rows of the `backup` category.
pub(super) const TOOLS: &[ToolSpec] = &[ToolSpec {
    name: "pve_list_backup_jobs",
    title: "List backup jobs",
    description: "List the cluster's scheduled backup (vzdump) jobs: id, schedule (systemd calendar format, e.g. \"sun 01:00\"), target storage, mode (snapshot/suspend/stop), enabled flag and guest selection (`vmid` list, `all`, `pool`, `exclude`). Use it to audit which guests are covered; a schedule does not prove a backup succeeded — check tasks for that.",
    category: Category::Backup,
    backend: get("/cluster/backup"),
    ..ToolSpec::BASE
}];
