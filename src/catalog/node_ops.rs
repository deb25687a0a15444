//! Node power and console tickets: rows that act on a node or open a console.
//!
//! Invariant: both are tier `full`; node power is confirm-gated and destructive (it takes
//! every guest on the node down with it); the console ticket is `advanced` because its
//! answer is a secret that opens a console, returned on purpose.

use super::params::{NODE, VMID};
use super::types::{Category, Effect, Legs, Module, Param, ParamKind, Tier, ToolSpec, post};

/// Rows of the node-operations part of the `nodes` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_node_power",
        title: "Reboot or shut down a node",
        description: "Reboot or shut down a whole node (its running guests go down with it). Returns null.",
        category: Category::Nodes,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            NODE,
            Param::body("command", ParamKind::String, "`reboot` or `shutdown`.")
                .one_of(&["reboot", "shutdown"])
                .required(),
        ],
        backend: post("/nodes/{node}/status"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_console_ticket",
        title: "Create console ticket",
        description: "Open a VNC or terminal proxy for a guest. Returns port, user and the console ticket (a secret, returned on purpose).",
        category: Category::Nodes,
        legs: Legs::SENSITIVE,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: false,
            idempotent: false,
        },
        params: &[
            NODE,
            Param::path("guest_type", ParamKind::String, "`qemu` or `lxc`.")
                .one_of(&["qemu", "lxc"]),
            VMID,
            Param::path("proxy", ParamKind::String, "`vncproxy` or `termproxy`.")
                .one_of(&["vncproxy", "termproxy"]),
        ],
        backend: post("/nodes/{node}/{guest_type}/{vmid}/{proxy}"),
        ..ToolSpec::BASE
    },
];
