//! The policy table: one row per rule, in the documented order.

use nandi_proxmox_mcp::catalog::{self, Category, Module, Tier, ToolSpec};
use nandi_proxmox_mcp::policy::{PolicyError, Settings};
use nandi_proxmox_mcp::registry::Registry;

fn settings(vars: &[(&str, &str)]) -> Result<Settings, PolicyError> {
    Settings::from_lookup(|key| {
        vars.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
    })
}

/// Environment variables for one case.
type Vars<'a> = &'a [(&'a str, &'a str)];

const ADVANCED_FULL: ToolSpec = ToolSpec {
    name: "pve_list_nodes",
    tier: Tier::Full,
    module: Module::Advanced,
    category: Category::Access,
    ..ToolSpec::BASE
};

#[test]
fn policy_table() {
    let read = catalog::find("pve_list_nodes").unwrap(); // read-only, core, nodes
    let power = catalog::find("pve_stop_qemu_vm").unwrap(); // read-execute, core, qemu
    let task = catalog::find("pve_stop_task").unwrap(); // full, core, tasks
    let advanced = &ADVANCED_FULL;
    let rows: &[(&str, Vars, &ToolSpec, bool)] = &[
        ("default tier is read-only: reads pass", &[], read, true),
        ("default tier is read-only: power hidden", &[], power, false),
        (
            "read-execute admits power",
            &[("PVE_ACCESS_TIER", "read-execute")],
            power,
            true,
        ),
        (
            "read-execute still hides full",
            &[("PVE_ACCESS_TIER", "read-execute")],
            task,
            false,
        ),
        (
            "full admits full",
            &[("PVE_ACCESS_TIER", "full")],
            task,
            true,
        ),
        (
            "core hides advanced",
            &[("PVE_ACCESS_TIER", "full")],
            advanced,
            false,
        ),
        (
            "advanced shows advanced",
            &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
            advanced,
            true,
        ),
        (
            "blacklist removes",
            &[("PVE_TOOL_BLACKLIST", "pve_list_nodes")],
            read,
            false,
        ),
        (
            "blacklist beats whitelist",
            &[
                ("PVE_TOOL_BLACKLIST", "pve_list_nodes"),
                ("PVE_TOOL_WHITELIST", "pve_list_nodes"),
            ],
            read,
            false,
        ),
        (
            "whitelist never lifts above tier",
            &[("PVE_TOOL_WHITELIST", "pve_stop_task")],
            task,
            false,
        ),
        (
            "whitelist never lifts above module",
            &[
                ("PVE_ACCESS_TIER", "full"),
                ("PVE_TOOL_WHITELIST", "pve_list_nodes"),
            ],
            advanced,
            false,
        ),
        (
            "whitelist narrows",
            &[("PVE_TOOL_WHITELIST", "pve_get_node_status")],
            read,
            false,
        ),
        (
            "whitelist admits listed",
            &[(
                "PVE_TOOL_WHITELIST",
                " pve_list_nodes , pve_get_node_status",
            )],
            read,
            true,
        ),
        (
            "categories narrow",
            &[("PVE_CATEGORIES", "qemu")],
            read,
            false,
        ),
        (
            "categories admit, case-insensitive",
            &[("PVE_CATEGORIES", "QEMU,Nodes")],
            read,
            true,
        ),
        (
            "categories never lift above tier",
            &[("PVE_CATEGORIES", "tasks")],
            task,
            false,
        ),
        (
            "whitelist and categories both apply",
            &[
                ("PVE_CATEGORIES", "qemu"),
                ("PVE_TOOL_WHITELIST", "pve_list_nodes"),
            ],
            read,
            false,
        ),
        (
            "empty values mean defaults",
            &[("PVE_ACCESS_TIER", " "), ("PVE_CATEGORIES", "")],
            read,
            true,
        ),
    ];
    for (rule, vars, spec, expected) in rows {
        let s = settings(vars).unwrap_or_else(|e| panic!("{rule}: {e}"));
        assert_eq!(s.decide(spec), *expected, "rule: {rule}");
    }
}

#[test]
fn aliases_follow_their_canonical_tool() {
    let hidden = Registry::build(
        &settings(&[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_TOOL_BLACKLIST", "pve_stop_qemu_vm"),
        ])
        .unwrap(),
    );
    assert!(hidden.get("pve_stop_qemu_vm").is_none());
    assert!(hidden.get("stopVM").is_none());
    let shown = Registry::build(&settings(&[("PVE_ACCESS_TIER", "full")]).unwrap());
    let alias = shown.get("stopVM").unwrap();
    assert_eq!(alias.alias_for, Some("pve_stop_qemu_vm"));
    // A list naming an alias is an error that points at the canonical name.
    let err = settings(&[("PVE_TOOL_BLACKLIST", "stopVM")]).unwrap_err();
    assert!(err.to_string().contains("pve_stop_qemu_vm"), "{err}");
}

#[test]
fn invalid_settings_are_errors_listing_valid_values() {
    let cases: &[(Vars, &[&str])] = &[
        (
            &[("PVE_ACCESS_TIER", "admin")],
            &["read-only", "read-execute", "full"],
        ),
        (&[("PVE_ACCESS_TIER", "Full")], &["full"]),
        (&[("PVE_MODULE_MODE", "all")], &["core", "advanced"]),
        (
            &[("PVE_CATEGORIES", "qemu,vms")],
            &["vms", "nodes", "monitoring"],
        ),
        (
            &[("PVE_TOOL_WHITELIST", "pve_list_nodez")],
            &["pve_list_nodez", "pve_list_nodes"],
        ),
        (
            &[("PVE_TOOL_BLACKLIST", "nope")],
            &["nope", "pve_stop_task"],
        ),
    ];
    for (vars, needles) in cases {
        let err = settings(vars).unwrap_err().to_string();
        for needle in *needles {
            assert!(err.contains(needle), "{vars:?}: {err}");
        }
    }
}

#[test]
fn registry_counts_per_setting() {
    let count = |vars: &[(&str, &str)]| {
        let r = Registry::build(&settings(vars).unwrap());
        (r.canonical_count(), r.alias_count())
    };
    let read_only_core = catalog::all()
        .filter(|s| s.tier == Tier::ReadOnly && s.module == Module::Core)
        // The cross-cluster overview is offered only by a process serving several clusters.
        .filter(|s| s.superseded_by.is_none() && !s.spans_clusters())
        .count();
    assert_eq!(count(&[]).0, read_only_core);
    assert_eq!(count(&[]), count(&[("PVE_ACCESS_TIER", "read-only")]));
    let (full, aliases) = count(&[("PVE_ACCESS_TIER", "full")]);
    assert!(full > read_only_core);
    assert!(aliases >= 8);
    assert_eq!(count(&[("PVE_TOOL_WHITELIST", "pve_list_nodes")]), (1, 1));
}
