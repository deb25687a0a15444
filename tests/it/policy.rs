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
        // The reason a tool is hidden follows the same rules, in the same order.
        assert_eq!(
            s.why_hidden(spec).is_none(),
            *expected,
            "rule: {rule}: {:?}",
            s.why_hidden(spec)
        );
    }
}

/// A hidden tool's reason names the first rule that hides it and the setting that would
/// show it (the words a client sees when it calls a hidden tool).
#[test]
fn the_reason_names_the_first_rule_that_hides() {
    let power = catalog::find("pve_stop_qemu_vm").unwrap(); // read-execute, core, qemu
    let cases: &[(Vars, &ToolSpec, &str)] = &[
        (
            &[
                ("PVE_TOOL_BLACKLIST", "pve_stop_qemu_vm"),
                ("PVE_CATEGORIES", "nodes"),
            ],
            power,
            "denied by PVE_TOOL_BLACKLIST",
        ),
        (
            &[("PVE_CATEGORIES", "nodes")],
            power,
            "tier read-execute is above PVE_ACCESS_TIER=read-only; set PVE_ACCESS_TIER=read-execute",
        ),
        (
            &[("PVE_ACCESS_TIER", "full"), ("PVE_CATEGORIES", "nodes")],
            &ADVANCED_FULL,
            "an advanced tool; set PVE_MODULE_MODE=advanced",
        ),
        (
            &[
                ("PVE_ACCESS_TIER", "full"),
                ("PVE_CATEGORIES", "nodes"),
                ("PVE_TOOL_WHITELIST", "pve_list_nodes"),
            ],
            power,
            "category qemu is not in PVE_CATEGORIES",
        ),
        (
            &[
                ("PVE_ACCESS_TIER", "read-execute"),
                ("PVE_TOOL_WHITELIST", "pve_list_nodes"),
            ],
            power,
            "not in PVE_TOOL_WHITELIST",
        ),
    ];
    for (vars, spec, reason) in cases {
        let s = settings(vars).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
        assert_eq!(s.why_hidden(spec).as_deref(), Some(*reason), "{vars:?}");
    }
}

/// The one-line summary (logs, server instructions) names the tier and module always, and
/// every other setting only when it is not the default.
#[test]
fn the_summary_names_what_is_not_default() {
    let plain = settings(&[]).expect("defaults");
    assert_eq!(plain.summary(), "access tier read-only, module mode core");
    let all = settings(&[
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_MODULE_MODE", "advanced"),
        ("PVE_HUMAN_APPROVAL", "confirm"),
        ("PVE_TOOL_SURFACE", "compact"),
        ("PVE_CATEGORIES", "qemu,nodes"),
        ("PVE_TOOL_WHITELIST", "pve_list_nodes,pve_stop_qemu_vm"),
        ("PVE_TOOL_BLACKLIST", "pve_stop_task"),
    ])
    .expect("valid");
    assert_eq!(
        all.summary(),
        "access tier full, module mode advanced, approval confirm, surface compact, \
         categories nodes,qemu, 2 allow-listed tools, 1 deny-listed tools"
    );
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
        // Listed only where a Proxmox Backup Server is configured.
        .filter(|s| !s.backend.is_pbs())
        .count();
    assert_eq!(count(&[]).0, read_only_core);
    assert_eq!(count(&[]), count(&[("PVE_ACCESS_TIER", "read-only")]));
    let (full, aliases) = count(&[("PVE_ACCESS_TIER", "full")]);
    assert!(full > read_only_core);
    assert!(aliases >= 8);
    assert_eq!(count(&[("PVE_TOOL_WHITELIST", "pve_list_nodes")]), (1, 1));
}

/// The defaults the README and the registry descriptor document are the ones the server
/// takes when nothing is set.
#[test]
fn documented_defaults_are_the_defaults() {
    use nandi_proxmox_mcp::policy::ENV_VARS;
    let taken = settings(&[]).expect("defaults");
    let documented = |name: &str| {
        ENV_VARS
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("{name} is documented"))
            .default
    };
    assert_eq!(documented("PVE_ACCESS_TIER"), taken.tier.as_str());
    assert_eq!(documented("PVE_MODULE_MODE"), taken.module.as_str());
    assert_eq!(documented("PVE_HUMAN_APPROVAL"), taken.approval.as_str());
    assert_eq!(documented("PVE_TOOL_SURFACE"), taken.surface.as_str());
    assert_eq!(documented("PVE_ALIASES"), taken.aliases.as_str());
    let seconds = |name: &str| documented(name).parse::<u64>().expect("a number");
    assert_eq!(
        seconds("PVE_APPROVAL_TIMEOUT_SECS"),
        taken.approval_timeout.as_secs()
    );
    assert_eq!(seconds("PVE_TASK_TTL_SECS"), taken.task_ttl.as_secs());
    assert_eq!(
        documented("PVE_OUTPUT_CAP_BYTES"),
        taken.output_cap.to_string()
    );
}

/// Each numeric setting takes exactly its documented range: both ends in, one past either out.
#[test]
fn numeric_settings_take_exactly_their_range() {
    let cases: &[(&str, u64, u64)] = &[
        ("PVE_APPROVAL_TIMEOUT_SECS", 1, 86_400),
        ("PVE_TASK_TTL_SECS", 1, 604_800),
        ("PVE_OUTPUT_CAP_BYTES", 1024, 16 * 1024 * 1024),
    ];
    for (name, low, high) in cases {
        for inside in [low, high] {
            let value = inside.to_string();
            let taken =
                settings(&[(name, &value)]).unwrap_or_else(|e| panic!("{name}={value}: {e}"));
            let read = match *name {
                "PVE_APPROVAL_TIMEOUT_SECS" => taken.approval_timeout.as_secs(),
                "PVE_TASK_TTL_SECS" => taken.task_ttl.as_secs(),
                _ => taken.output_cap as u64,
            };
            assert_eq!(read, *inside, "{name}={value}");
        }
        for outside in [low - 1, high + 1] {
            let value = outside.to_string();
            let err = settings(&[(name, &value)])
                .expect_err("out of range")
                .to_string();
            assert!(err.contains(name) && err.contains(&value), "{err}");
        }
    }
}

/// Each mode setting takes every one of its wire forms, exactly as written, and nothing else.
#[test]
fn mode_settings_take_their_wire_forms_and_nothing_else() {
    use nandi_proxmox_mcp::policy::{AliasMode, ApprovalMode, Surface};
    for (value, mode) in [
        ("listed", AliasMode::Listed),
        ("hidden", AliasMode::Hidden),
        ("off", AliasMode::Off),
    ] {
        let taken = settings(&[("PVE_ALIASES", value)]).expect(value);
        assert_eq!(taken.aliases, mode, "PVE_ALIASES={value}");
    }
    for (value, mode) in [("full", Surface::Full), ("compact", Surface::Compact)] {
        let taken = settings(&[("PVE_TOOL_SURFACE", value)]).expect(value);
        assert_eq!(taken.surface, mode, "PVE_TOOL_SURFACE={value}");
    }
    for (value, mode) in [
        ("auto", ApprovalMode::Auto),
        ("elicit", ApprovalMode::Elicit),
        ("confirm", ApprovalMode::Confirm),
    ] {
        let taken = settings(&[("PVE_HUMAN_APPROVAL", value)]).expect(value);
        assert_eq!(taken.approval, mode, "PVE_HUMAN_APPROVAL={value}");
    }
    for (name, value) in [
        ("PVE_ALIASES", "Listed"),
        ("PVE_ALIASES", "none"),
        ("PVE_TOOL_SURFACE", "minimal"),
        ("PVE_HUMAN_APPROVAL", "always"),
    ] {
        let err = settings(&[(name, value)]).expect_err(value).to_string();
        assert!(err.contains(name) && err.contains(value), "{err}");
    }
}

/// The kill switch's file is read from the same variables as the rest of the policy: its own
/// setting, else `frozen` in the state folder under the home; none when neither is known.
#[test]
fn the_freeze_file_comes_from_the_settings_variables() {
    let freeze = |vars: Vars| {
        settings(vars)
            .expect("valid")
            .freeze
            .map(|switch| switch.path().to_path_buf())
    };
    assert_eq!(
        freeze(&[("PVE_FREEZE_FILE", "/srv/mcp/stop-now")]),
        Some("/srv/mcp/stop-now".into())
    );
    assert_eq!(
        freeze(&[("HOME", "/home/ops")]),
        Some("/home/ops/.local/state/nandi-proxmox-mcp/frozen".into())
    );
    assert_eq!(freeze(&[]), None);
    let err = settings(&[("PVE_FREEZE_FILE", "/srv/a\u{7}b")]).expect_err("control character");
    assert!(err.to_string().contains("PVE_FREEZE_FILE"), "{err}");
}

/// Approval by link needs someone to ask: a webhook with `confirm` (nobody is asked) is an
/// error naming both, a webhook with any mode that asks is taken.
#[test]
fn a_webhook_with_confirm_is_refused_and_with_asking_modes_taken() {
    let hook = ("PVE_APPROVAL_NOTIFY", "https://hooks.example/approve");
    let err = settings(&[hook, ("PVE_HUMAN_APPROVAL", "confirm")]).expect_err("contradiction");
    let text = err.to_string();
    assert!(
        text.contains("PVE_HUMAN_APPROVAL=confirm") && text.contains("PVE_APPROVAL_NOTIFY"),
        "{text}"
    );
    for mode in ["auto", "elicit"] {
        let taken = settings(&[hook, ("PVE_HUMAN_APPROVAL", mode)]).expect(mode);
        assert!(taken.links.notify.is_some(), "{mode}");
    }
}
