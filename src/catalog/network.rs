//! Node network tools: `/etc/network/interfaces` of one node.
//!
//! Invariant: the three filtered list tools really send their `type` filter, and
//! create/update/delete only stage changes (`/etc/network/interfaces.new`) until
//! `pve_apply_network_changes` reloads the node's network — descriptions say so,
//! because a model that forgets the apply step believes a change is live.

use super::params::NODE;
use super::types::{
    Category, Effect, Location, Param, ParamKind, Tier, ToolSpec, delete, get, post, put,
};

/// Linux interface names as Proxmox accepts them (`vmbr0`, `bond0`, `eno1.20`).
const IFACE_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_]{1,20}([:.][0-9]+)?$";

const IFACE: Param = Param::path(
    "iface",
    ParamKind::String,
    "Interface name as pve_list_networks shows it, e.g. \"vmbr0\", \"bond0\", \"eno1\".",
)
.pattern(IFACE_PATTERN, 20);

/// Interface types that can be created or updated.
const IFACE_TYPES: &[&str] = &[
    "bridge",
    "bond",
    "eth",
    "alias",
    "vlan",
    "fabric",
    "OVSBridge",
    "OVSBond",
    "OVSPort",
    "OVSIntPort",
    "vnet",
    "unknown",
];

const BOND_MODES: &[&str] = &[
    "balance-rr",
    "active-backup",
    "balance-xor",
    "broadcast",
    "802.3ad",
    "balance-tlb",
    "balance-alb",
    "balance-slb",
    "lacp-balance-slb",
    "lacp-balance-tcp",
];

/// Interface settings shared by create and update (body parameters).
const SETTINGS: [Param; 14] = [
    Param::body(
        "cidr",
        ParamKind::String,
        "IPv4 address with prefix length, e.g. \"192.168.1.10/24\" (replaces address+netmask).",
    ),
    Param::body(
        "address",
        ParamKind::String,
        "IPv4 address without prefix, e.g. \"192.168.1.10\" (use with `netmask`, or prefer `cidr`).",
    ),
    Param::body(
        "netmask",
        ParamKind::String,
        "IPv4 netmask for `address`, e.g. \"255.255.255.0\".",
    ),
    Param::body(
        "gateway",
        ParamKind::String,
        "IPv4 default gateway, e.g. \"192.168.1.1\" (only one interface per node may have one).",
    ),
    Param::body(
        "cidr6",
        ParamKind::String,
        "IPv6 address with prefix length, e.g. \"fd00::10/64\".",
    ),
    Param::body(
        "gateway6",
        ParamKind::String,
        "IPv6 default gateway, e.g. \"fd00::1\".",
    ),
    Param::body(
        "bridge_ports",
        ParamKind::String,
        "Bridge: member interfaces, space-separated, e.g. \"eno1\" or \"bond0\"; empty for an internal bridge.",
    ),
    Param::body(
        "bridge_vlan_aware",
        ParamKind::Boolean,
        "Bridge: true makes it VLAN-aware (guests pick a VLAN tag on their NIC).",
    ),
    Param::body(
        "bond_mode",
        ParamKind::String,
        "Bond: mode, e.g. \"802.3ad\" (LACP, needs switch support) or \"active-backup\".",
    )
    .one_of(BOND_MODES),
    Param::body(
        "slaves",
        ParamKind::String,
        "Bond: member NICs, space-separated, e.g. \"eno1 eno2\".",
    ),
    Param::body(
        "vlan-raw-device",
        ParamKind::String,
        "VLAN: parent interface, e.g. \"eno1\" (or name the VLAN \"eno1.20\").",
    ),
    Param::body(
        "autostart",
        ParamKind::Boolean,
        "true brings the interface up at boot (\"auto\" line).",
    ),
    Param::body(
        "comments",
        ParamKind::String,
        "Free-text comment stored with the interface.",
    ),
    Param::body(
        "mtu",
        ParamKind::Integer,
        "MTU in bytes, 1280–65520 (e.g. 9000 for jumbo frames).",
    )
    .range(1280, 65520),
];

const VLAN_ID: Param = Param::body(
    "vlan-id",
    ParamKind::Integer,
    "VLAN: tag 1–4094 (with `vlan-raw-device`).",
)
.range(1, 4094);

const fn list_by_type(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    params: &'static [Param],
) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        category: Category::Network,
        params,
        backend: get("/nodes/{node}/network"),
        ..ToolSpec::BASE
    }
}

/// Rows of the `network` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_networks",
        title: "List node network interfaces",
        description: "List the network interfaces configured on one node (/etc/network/interfaces): iface, type (bridge, bond, eth, vlan, OVS…), active, autostart, address/cidr, gateway, bridge_ports and bond slaves. Use it to find the bridge (e.g. \"vmbr0\") to attach a guest NIC to.",
        category: Category::Network,
        params: &[NODE],
        backend: get("/nodes/{node}/network"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_network",
        title: "Get network interface",
        description: "Read one interface's configuration on a node: type, method, address/cidr, gateway, bridge_ports/bridge_vlan_aware, bond slaves/bond_mode, autostart, mtu, comments, active (1/0).",
        category: Category::Network,
        params: &[NODE, IFACE],
        backend: get("/nodes/{node}/network/{iface}"),
        ..ToolSpec::BASE
    },
    list_by_type(
        "pve_list_node_bridges",
        "List node bridges",
        "List the Linux bridges of one node (type=bridge, e.g. vmbr0) with bridge_ports, bridge_vlan_aware, address/cidr, gateway and active/autostart. These are the names a guest NIC's `bridge=` takes.",
        &[
            NODE,
            Param::fixed(
                "type",
                ParamKind::String,
                Location::Query,
                "bridge",
                "Linux bridges only.",
            ),
        ],
    ),
    list_by_type(
        "pve_list_node_bonds",
        "List node bonds",
        "List the Linux bonds of one node (type=bond): iface, slaves (member NICs), bond_mode (e.g. 802.3ad, active-backup), active/autostart. Empty array if the node has no bonds.",
        &[
            NODE,
            Param::fixed(
                "type",
                ParamKind::String,
                Location::Query,
                "bond",
                "Linux bonds only.",
            ),
        ],
    ),
    list_by_type(
        "pve_list_node_physical_nics",
        "List node physical NICs",
        "List the physical network cards of one node (type=eth, e.g. eno1, enp3s0): iface, active (link configured), exists, autostart and any address. Use it to find free ports for a new bridge or bond.",
        &[
            NODE,
            Param::fixed(
                "type",
                ParamKind::String,
                Location::Query,
                "eth",
                "Physical NICs only.",
            ),
        ],
    ),
    ToolSpec {
        name: "pve_create_network",
        title: "Create network interface",
        description: "Stage a new interface on a node: a bridge (type=bridge, bridge_ports), a bond (type=bond, slaves, bond_mode), a VLAN (type=vlan, iface \"eno1.20\" or vlan-raw-device + vlan-id), with optional cidr/gateway/mtu. A wrong gateway or port can cut the node off the network, so this requires confirm=true after asking the user. Staged only (interfaces.new) until pve_apply_network_changes. Returns null.",
        category: Category::Network,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            NODE,
            Param::body(
                "iface",
                ParamKind::String,
                "New interface name, e.g. \"vmbr1\", \"bond0\", \"eno1.20\".",
            )
            .pattern(IFACE_PATTERN, 20)
            .required(),
            Param::body("type", ParamKind::String, "Interface type.")
                .one_of(IFACE_TYPES)
                .required(),
            SETTINGS[0],
            SETTINGS[1],
            SETTINGS[2],
            SETTINGS[3],
            SETTINGS[4],
            SETTINGS[5],
            SETTINGS[6],
            SETTINGS[7],
            SETTINGS[8],
            SETTINGS[9],
            SETTINGS[10],
            VLAN_ID,
            SETTINGS[11],
            SETTINGS[12],
            SETTINGS[13],
        ],
        backend: post("/nodes/{node}/network"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_network",
        title: "Update network interface",
        description: "Change a staged interface definition on a node. Proxmox requires the interface's `type` (see pve_get_network); given keys are set, keys named in `delete` are removed. Staged only until pve_apply_network_changes. Requires confirm=true after asking the user. Returns null.",
        category: Category::Network,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            NODE,
            IFACE,
            Param::body(
                "type",
                ParamKind::String,
                "The interface's current type as pve_get_network reports it (required by Proxmox).",
            )
            .one_of(IFACE_TYPES)
            .required(),
            SETTINGS[0],
            SETTINGS[1],
            SETTINGS[2],
            SETTINGS[3],
            SETTINGS[4],
            SETTINGS[5],
            SETTINGS[6],
            SETTINGS[7],
            SETTINGS[8],
            SETTINGS[9],
            SETTINGS[10],
            VLAN_ID,
            SETTINGS[11],
            SETTINGS[12],
            SETTINGS[13],
            Param::body(
                "delete",
                ParamKind::String,
                "Comma-separated settings to remove, e.g. \"gateway,comments\".",
            ),
        ],
        at_least_one_of: &[
            "cidr",
            "address",
            "netmask",
            "gateway",
            "cidr6",
            "gateway6",
            "bridge_ports",
            "bridge_vlan_aware",
            "bond_mode",
            "slaves",
            "vlan-raw-device",
            "vlan-id",
            "autostart",
            "comments",
            "mtu",
            "delete",
        ],
        backend: put("/nodes/{node}/network/{iface}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_network",
        title: "Delete network interface",
        description: "Stage the removal of an interface on a node. Removing the bridge or NIC that carries the management address cuts the node off after apply. Staged only until pve_apply_network_changes. Requires confirm=true after asking the user. Returns null.",
        category: Category::Network,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[NODE, IFACE],
        backend: delete("/nodes/{node}/network/{iface}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_apply_network_changes",
        title: "Apply pending network changes",
        description: "Make a node's staged network changes live (ifreload of /etc/network/interfaces.new). Check the staged config with pve_list_networks first: a mistake can cut the node off the network. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
        category: Category::Network,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: true,
        },
        confirm: true,
        params: &[
            NODE,
            Param::body(
                "regenerate-frr",
                ParamKind::Boolean,
                "true also regenerates the FRR routing config (SDN fabrics); default false.",
            ),
        ],
        backend: put("/nodes/{node}/network"),
        ..ToolSpec::BASE
    },
];
