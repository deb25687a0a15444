//! Node tools: the physical hosts of the cluster.

use super::params::NODE;
use super::types::{Category, ToolSpec, get};

/// Rows of the `nodes` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_nodes",
        title: "List nodes",
        description: "List every node of the Proxmox cluster with its online status, CPU load, memory and disk use and uptime. Start here: node names from this list are the `node` argument of most other tools. Returns an array of {node, status, cpu, maxcpu, mem, maxmem, disk, maxdisk, uptime}; cpu is a fraction (0.05 = 5 %), sizes are bytes, uptime is seconds.",
        category: Category::Nodes,
        aliases: &["listNodes"],
        backend: get("/nodes"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_node_status",
        title: "Get node status",
        description: "Read one node's live status: CPU model and load average, memory and root filesystem use (bytes), uptime (seconds), kernel and pve-manager versions. Use it to check a host's health or capacity before placing guests. Returns one object.",
        category: Category::Nodes,
        aliases: &["getNodeStatus"],
        params: &[NODE],
        backend: get("/nodes/{node}/status"),
        ..ToolSpec::BASE
    },
];
