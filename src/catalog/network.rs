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

const IFACE: Param = Param::path("iface", ParamKind::String, "Interface name, e.g. vmbr0.")
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
        "IPv4 CIDR, e.g. \"192.168.1.10/24\".",
    ),
    Param::body(
        "address",
        ParamKind::String,
        "IPv4 address (with `netmask`); prefer `cidr`.",
    ),
    Param::body("netmask", ParamKind::String, "IPv4 netmask for `address`."),
    Param::body("gateway", ParamKind::String, "IPv4 gateway (one per node)."),
    Param::body(
        "cidr6",
        ParamKind::String,
        "IPv6 CIDR, e.g. \"fd00::10/64\".",
    ),
    Param::body("gateway6", ParamKind::String, "IPv6 default gateway."),
    Param::body(
        "bridge_ports",
        ParamKind::String,
        "Ports, space-separated; empty = internal.",
    ),
    Param::body(
        "bridge_vlan_aware",
        ParamKind::Boolean,
        "Make the bridge VLAN-aware.",
    ),
    Param::body("bond_mode", ParamKind::String, "Bond mode; 802.3ad = LACP.").one_of(BOND_MODES),
    Param::body(
        "slaves",
        ParamKind::String,
        "Bond members, space-separated.",
    ),
    Param::body(
        "vlan-raw-device",
        ParamKind::String,
        "VLAN parent interface.",
    ),
    Param::body(
        "autostart",
        ParamKind::Boolean,
        "Bring up at boot (\"auto\").",
    ),
    Param::body("comments", ParamKind::String, "Free text."),
    Param::body("mtu", ParamKind::Integer, "MTU in bytes.").range(1280, 65520),
];

const VLAN_ID: Param = Param::body(
    "vlan-id",
    ParamKind::Integer,
    "VLAN tag (with `vlan-raw-device`).",
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
        description: "A node's network interfaces: iface, type, active, cidr, gateway, bridge_ports, slaves.",
        category: Category::Network,
        params: &[NODE],
        backend: get("/nodes/{node}/network"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_network",
        title: "Get network interface",
        description: "One interface's config: type, method, cidr, gateway, bridge/bond settings, autostart, mtu, active.",
        category: Category::Network,
        params: &[NODE, IFACE],
        backend: get("/nodes/{node}/network/{iface}"),
        ..ToolSpec::BASE
    },
    list_by_type(
        "pve_list_node_bridges",
        "List node bridges",
        "A node's Linux bridges (e.g. vmbr0): ports, VLAN-aware, cidr, gateway. These are a guest NIC's `bridge=` values.",
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
        "A node's bonds: iface, slaves, bond_mode, active/autostart. Empty if none.",
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
        "A node's physical NICs (e.g. eno1): iface, active, exists, address. Finds free ports for a bridge or bond.",
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
        description: "Stage a bridge, bond or VLAN; live after pve_apply_network_changes (a wrong gateway cuts the node off). Returns null.",
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
                "New interface name, e.g. vmbr1, bond0, eno1.20.",
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
        description: "Stage changes to an interface; live after pve_apply_network_changes. Returns null.",
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
            Param::body("type", ParamKind::String, "Current type (pve_get_network).")
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
            Param::body("delete", ParamKind::String, "Keys to remove, comma list."),
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
        description: "Stage removal of an interface (the management bridge cuts the node off). Returns null.",
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
        starts_task: true,
        title: "Apply pending network changes",
        description: "Make staged network changes live (ifreload). Check pve_list_networks first: a mistake can cut the node off. Returns a task UPID.",
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
                "Also regenerate FRR (SDN fabrics).",
            ),
        ],
        backend: put("/nodes/{node}/network"),
        ..ToolSpec::BASE
    },
];
