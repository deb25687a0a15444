//! Firewall tools: the datacenter (cluster) firewall and the per-guest firewalls.
//!
//! Guest firewall tools address VMs and containers alike: `guest_type` (`qemu` | `lxc`) is
//! a path parameter with a closed set of values, so the rendered path is always one of the
//! two real endpoints (`/nodes/{node}/qemu/{vmid}/…` or `/nodes/{node}/lxc/{vmid}/…`) and
//! the schema test checks both. Rules are addressed by `pos` (0 = first), as Proxmox does;
//! `digest` guards a change against a ruleset that moved meanwhile.

use super::params::{NODE, VMID};
use super::types::{
    Category, Effect, Module, Param, ParamKind, Tier, ToolSpec, delete, get, post, put,
};

/// A firewall change: never retried; a wrong rule can cut traffic, including your own.
const CHANGE: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

/// QEMU VM or LXC container: the path segment that selects the guest's API subtree.
const GUEST_TYPE: Param = Param::path(
    "guest_type",
    ParamKind::String,
    "qemu = VM, lxc = container.",
)
.one_of(&["qemu", "lxc"]);

/// A rule position in the path.
const POS: Param = Param::path("pos", ParamKind::Integer, "Rule `pos` from the list.").min(0);

const DIGEST_DESCRIPTION: &str = "`digest` from the list.";

/// `digest` in a form body.
const DIGEST: Param =
    Param::body("digest", ParamKind::String, DIGEST_DESCRIPTION).matching("^[0-9a-fA-F]{1,64}$");

const ACTION_DESCRIPTION: &str = "ACCEPT, DROP, REJECT or a security group.";
const TYPE_DESCRIPTION: &str = "Direction; group = security group in `action`.";
const RULE_TYPES: &[&str] = &["in", "out", "forward", "group"];

/// Every rule key the API accepts on create and update, all optional; create marks
/// `type` and `action` required.
const RULE_FIELDS: [Param; 12] = [
    Param::body("type", ParamKind::String, TYPE_DESCRIPTION).one_of(RULE_TYPES),
    Param::body("action", ParamKind::String, ACTION_DESCRIPTION)
        .pattern("^[A-Za-z][A-Za-z0-9_-]+$", 20),
    Param::body("enable", ParamKind::Integer, "1 = active, 0 = inactive.").range(0, 1),
    Param::body(
        "source",
        ParamKind::String,
        "IP, CIDR, a-b, alias or +ipset, comma list; omit = any.",
    )
    .pattern("^[^\\s\\x00-\\x1F]+$", 512),
    Param::body("dest", ParamKind::String, "Destination, as `source`.")
        .pattern("^[^\\s\\x00-\\x1F]+$", 512),
    Param::body("proto", ParamKind::String, "tcp, udp, icmp... or a number.")
        .pattern("^[A-Za-z0-9._-]+$", 32),
    Param::body(
        "dport",
        ParamKind::String,
        "Port, service, range 8000:8010 or list.",
    )
    .pattern("^[A-Za-z0-9:,_-]+$", 512),
    Param::body("sport", ParamKind::String, "Source ports, as `dport`.")
        .pattern("^[A-Za-z0-9:,_-]+$", 512),
    Param::body("iface", ParamKind::String, "NIC, e.g. net0 or vmbr0.")
        .matching("^[A-Za-z0-9._-]{2,20}$"),
    Param::body("log", ParamKind::String, "Log level.").one_of(&[
        "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog",
    ]),
    Param::body(
        "macro",
        ParamKind::String,
        "Macro instead of proto/dport, e.g. SSH.",
    )
    .pattern("^[A-Za-z0-9_-]+$", 128),
    Param::body("comment", ParamKind::String, "Free text.").pattern("^[^\\x00-\\x1F]*$", 1024),
];

/// Keys only create knows: where to insert, and the concurrency guard.
const CREATE_EXTRA: [Param; 2] = [
    Param::body("pos", ParamKind::Integer, "Position; 0 = top (default).").min(0),
    DIGEST,
];

/// Keys only update knows.
const UPDATE_EXTRA: [Param; 3] = [
    Param::body(
        "moveto",
        ParamKind::Integer,
        "Move the rule to this position (other fields ignored).",
    )
    .min(0),
    Param::body(
        "delete",
        ParamKind::String,
        "Rule keys to clear, comma list.",
    )
    .pattern("^[a-z-]+(?:,[a-z-]+)*$", 256),
    DIGEST,
];

/// Fields an update may change (the at-least-one-of guard).
const UPDATE_FIELDS: &[&str] = &[
    "type", "action", "enable", "source", "dest", "proto", "dport", "sport", "iface", "log",
    "macro", "comment", "moveto", "delete",
];

/// `node`, `guest_type`, `vmid`: the address of a guest's firewall.
const GUEST_FW: [Param; 3] = [NODE, GUEST_TYPE, VMID];

/// Concatenates parameter lists at compile time (rows need one contiguous slice).
const fn join<const N: usize>(parts: &[&[Param]]) -> [Param; N] {
    let mut out = [POS; N];
    let mut n = 0;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[n] = parts[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(n == N, "join: wrong length");
    out
}

/// The create fields: `type` and `action` required.
const CREATE_FIELDS: [Param; 14] = {
    let mut fields: [Param; 14] = join(&[&RULE_FIELDS, &CREATE_EXTRA]);
    fields[0] = RULE_FIELDS[0].required();
    fields[1] = RULE_FIELDS[1].required();
    fields
};

const CLUSTER_CREATE: [Param; 14] = CREATE_FIELDS;
const CLUSTER_UPDATE: [Param; 16] = join(&[&[POS], &RULE_FIELDS, &UPDATE_EXTRA]);
const CLUSTER_DELETE: [Param; 2] = [
    POS,
    Param::query("digest", ParamKind::String, DIGEST_DESCRIPTION).matching("^[0-9a-fA-F]{1,64}$"),
];
const GUEST_LIST: [Param; 3] = GUEST_FW;
const GUEST_CREATE: [Param; 17] = join(&[&GUEST_FW, &CREATE_FIELDS]);
const GUEST_UPDATE: [Param; 19] = join(&[&GUEST_FW, &[POS], &RULE_FIELDS, &UPDATE_EXTRA]);
const GUEST_DELETE: [Param; 5] = join(&[&GUEST_FW, &CLUSTER_DELETE]);

/// Rows of the `firewall` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_cluster_firewall_rules",
        title: "List datacenter firewall rules",
        description: "Datacenter firewall rules in order (pos, type, action, source, dest, proto, dport, macro) and `digest`.",
        category: Category::Firewall,
        module: Module::Advanced,
        backend: get("/cluster/firewall/rules"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_cluster_firewall_options",
        title: "Get datacenter firewall options",
        description: "Datacenter firewall options: enable, policy_in/out/forward, ebtables, log_ratelimit, `digest`.",
        category: Category::Firewall,
        module: Module::Advanced,
        backend: get("/cluster/firewall/options"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_cluster_firewall_aliases",
        title: "List firewall aliases",
        description: "Firewall aliases (named addresses for `source`/`dest`): name, cidr, comment.",
        category: Category::Firewall,
        module: Module::Advanced,
        backend: get("/cluster/firewall/aliases"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_cluster_firewall_ipsets",
        title: "List firewall IP sets",
        description: "Firewall IP sets (used as \"+name\" in `source`/`dest`): name, comment.",
        category: Category::Firewall,
        module: Module::Advanced,
        backend: get("/cluster/firewall/ipset"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_guest_firewall_rules",
        title: "List guest firewall rules",
        description: "A guest's firewall rules in order (pos, type, action, source, dest, proto, dport, macro) and `digest`.",
        category: Category::Firewall,
        module: Module::Advanced,
        params: &GUEST_LIST,
        backend: get("/nodes/{node}/{guest_type}/{vmid}/firewall/rules"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_cluster_firewall_options",
        title: "Update datacenter firewall options",
        description: "Enable the datacenter firewall, set default policies; enable=1 with policy_in DROP and no 8006/22 rule locks you out. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &[
            Param::body(
                "enable",
                ParamKind::Integer,
                "1 = firewall on cluster-wide, 0 = off.",
            )
            .range(0, 1),
            Param::body("policy_in", ParamKind::String, "Incoming default (DROP).")
                .one_of(&["ACCEPT", "REJECT", "DROP"]),
            Param::body(
                "policy_out",
                ParamKind::String,
                "Outgoing default (ACCEPT).",
            )
            .one_of(&["ACCEPT", "REJECT", "DROP"]),
            Param::body(
                "policy_forward",
                ParamKind::String,
                "Routed default (nftables).",
            )
            .one_of(&["ACCEPT", "DROP"]),
            Param::body(
                "log_ratelimit",
                ParamKind::String,
                "Log rate limit, e.g. \"enable=1,rate=1/second,burst=5\".",
            )
            .pattern("^[a-z0-9=,/]+$", 128),
            Param::body("delete", ParamKind::String, "Options to reset, comma list.")
                .pattern("^[a-z_]+(?:,[a-z_]+)*$", 256),
            DIGEST,
        ],
        at_least_one_of: &[
            "enable",
            "policy_in",
            "policy_out",
            "policy_forward",
            "log_ratelimit",
            "delete",
        ],
        backend: put("/cluster/firewall/options"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_cluster_firewall_rule",
        title: "Create datacenter firewall rule",
        description: "Add a datacenter firewall rule; DROP/REJECT can cut off access. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &CLUSTER_CREATE,
        backend: post("/cluster/firewall/rules"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_cluster_firewall_rule",
        title: "Update datacenter firewall rule",
        description: "Change or move (`moveto`) the datacenter firewall rule at `pos`. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &CLUSTER_UPDATE,
        at_least_one_of: UPDATE_FIELDS,
        backend: put("/cluster/firewall/rules/{pos}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_cluster_firewall_rule",
        title: "Delete datacenter firewall rule",
        description: "Delete the datacenter firewall rule at `pos`. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &CLUSTER_DELETE,
        backend: delete("/cluster/firewall/rules/{pos}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_guest_firewall_rule",
        title: "Create guest firewall rule",
        description: "Add a firewall rule to a VM or container; applies to NICs with firewall=1. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &GUEST_CREATE,
        backend: post("/nodes/{node}/{guest_type}/{vmid}/firewall/rules"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_guest_firewall_rule",
        title: "Update guest firewall rule",
        description: "Change or move (`moveto`) a guest's firewall rule at `pos`. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &GUEST_UPDATE,
        at_least_one_of: UPDATE_FIELDS,
        backend: put("/nodes/{node}/{guest_type}/{vmid}/firewall/rules/{pos}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_guest_firewall_rule",
        title: "Delete guest firewall rule",
        description: "Delete a guest's firewall rule at `pos`. Returns null.",
        category: Category::Firewall,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: CHANGE,
        confirm: true,
        params: &GUEST_DELETE,
        backend: delete("/nodes/{node}/{guest_type}/{vmid}/firewall/rules/{pos}"),
        ..ToolSpec::BASE
    },
];
