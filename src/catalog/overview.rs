//! Cluster-wide overviews: inventory, this server's capabilities, Ceph status and SDN.
//!
//! Invariant: every row here only reads. The two composite rows make a fixed, small number
//! of requests whatever the cluster's size (no per-guest request storm).

use super::types::{Backend, Category, CompositeOp, Legs, Param, ParamKind, Tier, ToolSpec, get};

/// Rows of the overview part of the `cluster` and `network` categories.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_inventory_overview",
        title: "Inventory overview",
        description: "Counts of nodes, VMs, containers and storage per node, type and status, PVE version and quorum.",
        category: Category::Cluster,
        legs: Legs::UNTRUSTED,
        backend: Backend::Composite(CompositeOp::InventoryOverview),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_clusters_overview",
        title: "Clusters overview",
        description: "What runs where: nodes and guests by status for every configured cluster, read in parallel; a cluster that fails is reported with its error.",
        category: Category::Cluster,
        legs: Legs::UNTRUSTED,
        backend: Backend::Composite(CompositeOp::ClustersOverview),
        timeout_ms: 30_000,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_capabilities",
        title: "Server capabilities",
        description: "What this server can do here: tools by category/tier/module, SSH, PVE version, the token's permissions and tools it cannot run.",
        category: Category::Cluster,
        backend: Backend::Composite(CompositeOp::Capabilities),
        timeout_ms: 30_000,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_leases",
        title: "List approval leases",
        description: "Your live approval leases a person granted (id, scope, expiry, uses).",
        category: Category::Cluster,
        // Nothing is approved, so nothing leased, below read-execute.
        tier: Tier::ReadExecute,
        backend: Backend::Composite(CompositeOp::ListLeases),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_ceph_status",
        title: "Ceph status",
        description: "Ceph status: health, monitors, OSD map, PGs, usage. Fails without Ceph.",
        category: Category::Cluster,
        backend: get("/cluster/ceph/status"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_sdn_zones",
        title: "List SDN zones",
        description: "SDN zones: zone, type (simple, vlan, vxlan, evpn, qinq), bridge, nodes, state.",
        category: Category::Network,
        params: &[
            Param::query("type", ParamKind::String, "Only zones of this type.")
                .one_of(&["evpn", "faucet", "qinq", "simple", "vlan", "vxlan"]),
        ],
        backend: get("/cluster/sdn/zones"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_sdn_vnets",
        title: "List SDN VNets",
        description: "SDN virtual networks: vnet, zone, tag, alias, vlanaware. Guests attach with bridge=<vnet>.",
        category: Category::Network,
        backend: get("/cluster/sdn/vnets"),
        ..ToolSpec::BASE
    },
];
