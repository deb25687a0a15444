//! Node tools: the physical hosts of the cluster.

use super::params::NODE;
use super::types::{Category, ToolSpec, get};

/// Rows of the `nodes` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_nodes",
        title: "List nodes",
        description: "Cluster nodes: node, status, cpu (fraction), maxcpu, mem/maxmem, disk/maxdisk (bytes), uptime (s). Start here for `node` names.",
        category: Category::Nodes,
        aliases: &["listNodes"],
        backend: get("/nodes"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_node_status",
        title: "Get node status",
        description: "One node's status: CPU, load, memory and rootfs (bytes), uptime (s), kernel and PVE versions.",
        category: Category::Nodes,
        aliases: &["getNodeStatus"],
        params: &[NODE],
        backend: get("/nodes/{node}/status"),
        ..ToolSpec::BASE
    },
];
