//! Node network tools.

use super::params::NODE;
use super::types::{Category, ToolSpec, get};

/// Rows of the `network` category.
pub(super) const TOOLS: &[ToolSpec] = &[ToolSpec {
    name: "pve_list_networks",
    title: "List node network interfaces",
    description: "List the network interfaces configured on one node (/etc/network/interfaces): iface, type (bridge, bond, eth, vlan, OVS…), active, autostart, address/cidr, gateway, bridge_ports and bond slaves. Use it to find the bridge (e.g. \"vmbr0\") to attach a guest NIC to.",
    category: Category::Network,
    params: &[NODE],
    backend: get("/nodes/{node}/network"),
    ..ToolSpec::BASE
}];
