//! Cluster-wide read tools: membership, the resource index, the next free VMID.

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
];
