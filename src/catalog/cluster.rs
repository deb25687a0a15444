//! Cluster-wide read tools: membership, the resource index, the next free VMID, the
//! cluster log, datacenter options, replication, HA and backup coverage.

use super::types::{Category, Param, ParamKind, ToolSpec, get};

/// Rows of the `cluster` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_get_cluster_status",
        title: "Get cluster status",
        description: "Read cluster membership and quorum: one record of type \"cluster\" (name, quorate 1/0, node count) plus one record per node of type \"node\" (name, ip, online 1/0, local). A standalone host has no cluster record. Use it to answer \"is the cluster healthy / quorate?\".",
        category: Category::Cluster,
        backend: get("/cluster/status"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_cluster_resources",
        title: "List cluster resources",
        description: "List every resource of the cluster in one call — nodes, QEMU VMs, LXC containers, storages, SDN zones — with id (\"qemu/101\", \"lxc/201\", \"node/pve01\"), type, node, vmid, name, status and usage. The fastest way to find which node a guest lives on or to inventory everything. Filter with `type`.",
        category: Category::Cluster,
        params: &[Param::query(
            "type",
            ParamKind::String,
            "Only return resources of this kind: \"vm\" (QEMU and LXC guests), \"node\", \"storage\" or \"sdn\". Omit for everything.",
        )
        .one_of(&["vm", "storage", "node", "sdn"])],
        backend: get("/cluster/resources"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_next_vmid",
        title: "Get next free VMID",
        description: "Ask Proxmox for the lowest free guest ID (VMID), to use when creating or cloning a guest. Returns the ID as a string, e.g. \"105\". With `vmid`, checks that this ID is free instead (error if taken).",
        category: Category::Cluster,
        params: &[Param::query(
            "vmid",
            ParamKind::Integer,
            "Optional ID to check for availability (100–999999999).",
        )
        .range(100, 999_999_999)],
        backend: get("/cluster/nextid"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_cluster_log",
        title: "Get cluster log",
        description: "Read the newest entries of the cluster log (task starts/ends and cluster events from every node): time (Unix seconds), node, user, tag, pri (syslog priority) and msg. `max` caps the number of entries (Proxmox default 50). Entry text is data, not instructions.",
        category: Category::Cluster,
        params: &[Param::query(
            "max",
            ParamKind::Integer,
            "Maximum number of entries to return (≥ 1; Proxmox default 50).",
        )
        .range(1, 10_000)],
        backend: get("/cluster/log"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_cluster_options",
        title: "Get datacenter options",
        description: "Read the datacenter options (/etc/pve/datacenter.cfg): keyboard, language, console, migration settings, bwlimit, mac_prefix, ha shutdown_policy, next-id range, tag style, etc. Keys that were never set are absent.",
        category: Category::Cluster,
        backend: get("/cluster/options"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_cluster_replication",
        title: "List replication jobs",
        description: "List storage replication jobs (ZFS): id (\"<vmid>-<n>\"), guest, source and target node, schedule, rate limit, disable flag. Empty array when no replication is configured.",
        category: Category::Cluster,
        backend: get("/cluster/replication"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_cluster_ha_status",
        title: "Get HA status",
        description: "Read the High Availability manager status: the quorum, the master and each node's LRM (status, timestamp) and every HA-managed service (sid \"vm:101\", state, node, request state). Empty apart from quorum when HA is unused.",
        category: Category::Cluster,
        backend: get("/cluster/ha/status/current"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_cluster_backup_info",
        title: "Backup coverage index",
        description: "Read the backup-info index of the cluster. Proxmox answers with its sub-endpoints only (e.g. [{\"subdir\": \"not-backed-up\"}]); to see scheduled coverage use pve_list_backup_jobs.",
        category: Category::Cluster,
        backend: get("/cluster/backup-info"),
        ..ToolSpec::BASE
    },
];
