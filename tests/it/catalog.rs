//! Catalog invariants, and every REST row checked against the official PVE 9.1 API schema
//! and against the reference's tool table.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use nandi_proxmox_mcp::catalog::{self, Backend, Location, ParamKind, Tier};
use regex::Regex;
use serde_json::Value;

#[test]
fn wire_names_are_unique() {
    let mut seen = BTreeSet::new();
    for spec in catalog::all() {
        for name in std::iter::once(spec.name).chain(spec.aliases.iter().copied()) {
            assert!(seen.insert(name), "duplicate wire name {name}");
        }
    }
}

#[test]
fn rows_are_well_formed() {
    let placeholder = Regex::new(r"\{([a-z_]+)\}").unwrap();
    for spec in catalog::all() {
        let name = spec.name;
        assert!(spec.description.len() >= 40, "{name}: description too thin");
        assert!(!spec.title.is_empty(), "{name}: no title");
        let mut param_names = BTreeSet::new();
        for p in spec.params {
            assert!(
                param_names.insert(p.name),
                "{name}: duplicate param {}",
                p.name
            );
            assert!(
                p.description.len() >= 10,
                "{name}.{}: no description",
                p.name
            );
            if let Some(pattern) = p.pattern {
                assert!(
                    pattern.starts_with('^') && pattern.ends_with('$'),
                    "{name}.{}",
                    p.name
                );
                Regex::new(pattern).unwrap_or_else(|e| panic!("{name}.{}: {e}", p.name));
                assert_eq!(p.kind, ParamKind::String, "{name}.{}", p.name);
            }
        }
        let Some((method, path)) = spec
            .backend
            .method_and_path()
            .or(spec.backend.pbs_method_and_path())
        else {
            // SSH rows: inputs are argv template arguments, never REST parameters.
            for p in spec.params {
                assert_eq!(p.location, Location::Argument, "{name}.{}", p.name);
            }
            continue;
        };
        let in_path: BTreeSet<&str> = placeholder
            .captures_iter(path)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        let path_params: BTreeSet<&str> = spec
            .params
            .iter()
            .filter(|p| p.location == Location::Path)
            .map(|p| p.name)
            .collect();
        assert_eq!(
            in_path, path_params,
            "{name}: path placeholders vs path params"
        );
        for p in spec.params {
            match p.location {
                Location::Path => {
                    if !matches!(spec.backend, Backend::PerNodeList { .. }) {
                        assert!(p.required, "{name}.{}", p.name)
                    }
                }
                Location::Query => {
                    assert!(method.uses_query(), "{name}.{}: query on {method}", p.name)
                }
                Location::Body => {
                    assert!(!method.uses_query(), "{name}.{}: body on {method}", p.name)
                }
                // A PBS row's `pbs` names the server; it is never sent.
                Location::Argument if spec.backend.is_pbs() && p.name == "pbs" => {}
                Location::Argument => panic!("{name}.{}: SSH argument on a REST row", p.name),
            }
        }
        if spec.confirm {
            assert!(
                spec.effect.is_destructive(),
                "{name}: confirm implies destructive"
            );
        }
        // The agent ping is a POST in Proxmox's API that changes nothing; a PBS prune with
        // `dry-run` fixed only lists (the PBS classifier proves it: tests/it/effects_pbs.rs).
        let post_read = name == "pve_qemu_agent_ping" || name == "pbs_preview_prune";
        if spec.tier == Tier::ReadOnly {
            assert!(
                spec.effect.is_read(),
                "{name}: read-only tier must only read"
            );
            assert!(method.as_str() == "GET" || post_read, "{name}");
        }
        if spec.effect.is_read() {
            assert!(
                method.as_str() == "GET" || post_read,
                "{name}: a read is a GET"
            );
        }
        for field in spec.at_least_one_of {
            assert!(
                spec.param(field).is_some(),
                "{name}: at_least_one_of names {field}"
            );
        }
    }
}

/// `net0` → `net[n]`, as the schema lists indexed parameters once.
fn schema_key(name: &str) -> String {
    let digits = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if digits.len() < name.len() && !digits.is_empty() {
        format!("{digits}[n]")
    } else {
        name.to_owned()
    }
}

/// A bare integer is a valid value of a property string whose default key is an
/// integer (QEMU `memory` = `[current=]<integer>`), so an integer row may feed it.
fn integer_property_string(kind: ParamKind, schema: &Value) -> bool {
    kind == ParamKind::Integer
        && schema["type"] == "string"
        && schema["format"].as_object().is_some_and(|format| {
            format
                .values()
                .any(|key| key["default_key"] == 1 && key["type"] == "integer")
        })
}

/// The concrete paths of a template: each enum-valued path parameter replaced by each of
/// its values, with the names of the parameters so replaced.
fn concrete_paths(spec: &catalog::ToolSpec, template: &str) -> Vec<(String, Vec<&'static str>)> {
    let mut paths = vec![(template.to_owned(), Vec::new())];
    for p in spec
        .params
        .iter()
        .filter(|p| p.location == Location::Path && !p.one_of.is_empty())
    {
        let placeholder = format!("{{{}}}", p.name);
        paths = paths
            .into_iter()
            .flat_map(|(path, mut names)| {
                names.push(p.name);
                p.one_of
                    .iter()
                    .map(|v| (path.replace(&placeholder, v), names.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    paths
}

#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn every_rest_row_exists_in_the_pve_schema() {
    let endpoints = common::pve_api_endpoints();
    let mut failures = Vec::new();
    for spec in catalog::all() {
        let Some((method, template)) = spec.backend.method_and_path() else {
            continue;
        };
        // A path parameter with an enum (e.g. `guest_type`: qemu | lxc) stands for one
        // concrete endpoint per value; each of them must exist and accept the row.
        for (path, expanded) in concrete_paths(spec, template) {
            let Some(endpoint) = endpoints.get(&path).and_then(|e| e.get(method.as_str())) else {
                failures.push(format!("{}: {method} {path} is not in the API", spec.name));
                continue;
            };
            let declared = endpoint["parameters"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for p in spec.params.iter().filter(|p| !expanded.contains(&p.name)) {
                let name = p.api_name();
                let key = if p.index.is_some() {
                    // A family (`net` over 0..=31) is the API's `net[n]`.
                    format!("{name}[n]")
                } else if declared.contains_key(name) {
                    name.to_owned()
                } else {
                    schema_key(name)
                };
                let Some(schema) = declared.get(&key) else {
                    failures.push(format!(
                        "{}: parameter {} is not declared",
                        spec.name, p.name
                    ));
                    continue;
                };
                let api_type = schema["type"].as_str().unwrap_or("string");
                if api_type != p.kind.json_type() && !integer_property_string(p.kind, schema) {
                    failures.push(format!(
                        "{}.{}: type {} vs API {api_type}",
                        spec.name,
                        p.name,
                        p.kind.json_type()
                    ));
                }
                if let Some(values) = schema["enum"].as_array() {
                    let allowed: BTreeSet<&str> = values.iter().filter_map(Value::as_str).collect();
                    for v in p.one_of {
                        if !allowed.contains(v) {
                            failures.push(format!(
                                "{}.{}: enum value {v} not in API",
                                spec.name, p.name
                            ));
                        }
                    }
                }
            }
            for (key, schema) in &declared {
                let optional = schema["optional"].as_i64() == Some(1) || schema["optional"] == true;
                if !optional
                    && !key.contains("[n]")
                    && spec
                        .params
                        .iter()
                        .find(|p| p.api_name() == key)
                        .is_none_or(|p| {
                            !p.required
                                && p.default.is_none()
                                && !matches!(spec.backend, Backend::PerNodeList { .. })
                        })
                {
                    failures.push(format!("{}: API requires {key}", spec.name));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "schema mismatches:\n{}",
        failures.join("\n")
    );
}

/// Deliberate differences from the reference, `(tool, field)`, each recorded in
/// docs/MIGRATING.md. Keep one line per difference.
const DELIBERATE: &[(&str, &str)] = &[
    // Annotations that tell the truth (issue: approval): starting or resuming a guest removes
    // and interrupts nothing; a backup run can stop guests and prune archives; a scheduled
    // job runs unattended forever, so a person approves its creation.
    ("pve_start_qemu_vm", "destructive"),
    ("pve_resume_qemu_vm", "destructive"),
    ("pve_start_lxc_container", "destructive"),
    ("pve_resume_lxc_container", "destructive"),
    ("pve_run_backup", "destructive"),
    ("pve_create_backup_job", "destructive"),
    ("pve_create_backup_job", "confirm"),
    // Privilege-relevant creations are confirm-gated (issue: catalog parity).
    ("pve_create_user", "confirm"),
    ("pve_create_api_token", "confirm"),
    ("pve_create_cluster_firewall_rule", "confirm"),
    ("pve_create_guest_firewall_rule", "confirm"),
    ("pve_create_storage", "confirm"),
    ("pve_create_network", "confirm"),
    // Confirm-gated tools are destructive (rows_are_well_formed): a grant or a firewall rule
    // can let someone in or lock everyone out.
    ("pve_create_user", "destructive"),
    ("pve_create_api_token", "destructive"),
    ("pve_create_cluster_firewall_rule", "destructive"),
    ("pve_create_guest_firewall_rule", "destructive"),
    // A confirm-gated creation is announced as destructive too (the gate's invariant).
    ("pve_create_storage", "destructive"),
    ("pve_create_network", "destructive"),
    // Proxmox needs Datastore.Allocate to read one storage definition; a read-only role
    // must not hold it, so the tool is in the tier that does.
    ("pve_get_storage_config", "tier"),
    // Runs commands on the hypervisor, so it is not a read-only tool.
    ("pve_ssh_batch_diagnostics", "tier"),
    // PVE 9's `/pools?poolid=` form: pveproxy cannot route a nested id (`a/b`) in the path.
    ("pve_get_pool", "path"),
    ("pve_update_pool", "path"),
    ("pve_delete_pool", "path"),
    // Guest exec follows agent/exec-status to its output (a composite, no single path),
    // and as a command-execution tool it is `advanced`.
    ("pve_exec_qemu_guest_command", "method"),
    ("pve_exec_qemu_guest_command", "path"),
    ("pve_exec_qemu_guest_command", "module"),
];

/// Flags the reference users rely on (names, aliases, tier, module, category, flags,
/// method, path) stay as they were, except the deliberate differences listed above.
#[test]
#[cfg_attr(no_reference_tools, ignore = "needs ../shared/spec beside the project")]
fn rows_keep_the_reference_flags() {
    let reference = common::reference_tools();
    let by_name: BTreeMap<&str, &Value> = reference
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "canonical")
        .map(|t| (t["name"].as_str().unwrap(), t))
        .collect();
    let mut failures = Vec::new();
    for spec in catalog::all() {
        let Some(r) = by_name.get(spec.name) else {
            continue;
        };
        let (method, path) = match spec.backend.method_and_path() {
            Some((method, path)) => (Value::from(method.as_str()), Value::from(path)),
            None => (Value::Null, Value::Null),
        };
        let aliases: Vec<&str> = r["aliases"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let checks = [
            (
                "category",
                Value::from(spec.category.as_str()),
                r["category"].clone(),
            ),
            ("tier", spec.tier.as_str().into(), r["tier"].clone()),
            ("module", spec.module.as_str().into(), r["module"].clone()),
            (
                "destructive",
                spec.effect.is_destructive().into(),
                r["destructive"].clone(),
            ),
            ("confirm", spec.confirm.into(), r["confirm"].clone()),
            (
                "idempotent",
                spec.effect.is_idempotent().into(),
                r["idempotent"].clone(),
            ),
            (
                "deprecated",
                spec.deprecated.into(),
                r["deprecated"].clone(),
            ),
            ("method", method, r["method"].clone()),
            ("path", path, r["path"].clone()),
            ("aliases", spec.aliases.to_vec().into(), aliases.into()),
        ];
        for (what, ours, theirs) in checks {
            if ours != theirs && !DELIBERATE.contains(&(spec.name, what)) {
                failures.push(format!(
                    "{}: {what} is {ours}, reference {theirs}",
                    spec.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_walking_skeleton_slice_is_complete() {
    let slice = [
        "pve_list_nodes",
        "pve_get_node_status",
        "pve_list_qemu_vms",
        "pve_get_qemu_status",
        "pve_get_qemu_config",
        "pve_list_lxc_containers",
        "pve_get_lxc_status",
        "pve_get_lxc_config",
        "pve_get_cluster_status",
        "pve_list_cluster_resources",
        "pve_get_next_vmid",
        "pve_list_storage",
        "pve_list_tasks",
        "pve_get_task_status",
        "pve_get_task_log",
        "pve_stop_task",
        "pve_list_networks",
        "pve_list_pools",
        "pve_list_backup_jobs",
        "listVMs",
        "listContainers",
        "pve_start_qemu_vm",
        "pve_stop_qemu_vm",
        "pve_shutdown_qemu_vm",
        "pve_reboot_qemu_vm",
        "pve_reset_qemu_vm",
        "pve_suspend_qemu_vm",
        "pve_resume_qemu_vm",
        "pve_start_lxc_container",
        "pve_stop_lxc_container",
        "pve_shutdown_lxc_container",
        "pve_reboot_lxc_container",
        "pve_suspend_lxc_container",
        "pve_resume_lxc_container",
    ];
    for name in slice {
        assert!(catalog::find(name).is_some(), "{name} missing");
    }
    let aliases: BTreeSet<&str> = catalog::all()
        .flat_map(|s| s.aliases.iter().copied())
        .collect();
    for alias in [
        "listNodes",
        "getNodeStatus",
        "getVMStatus",
        "getContainerStatus",
        "startVM",
        "stopVM",
        "startContainer",
        "stopContainer",
    ] {
        assert!(aliases.contains(alias), "{alias} missing");
    }
}

/// The `tools/list` answer is what every session pays for up front; these caps keep the
/// trimmed descriptions from growing back one sentence at a time. Lengths are in characters.
#[test]
fn descriptions_stay_within_the_listing_budget() {
    const TOOL_CAP: usize = 200;
    const PARAM_CAP: usize = 100;
    // Totals over every row and every row's parameters (shared consts counted per use),
    // about 10 % above the trimmed catalog's own figures.
    const TOOL_TOTAL_CAP: usize = 22_200;
    const PARAM_TOTAL_CAP: usize = 27_700;
    let (mut tool_total, mut param_total) = (0, 0);
    for spec in catalog::all() {
        let len = spec.description.chars().count();
        assert!(
            len <= TOOL_CAP,
            "{}: description has {len} characters (cap {TOOL_CAP})",
            spec.name
        );
        tool_total += len;
        for p in spec.params {
            let len = p.description.chars().count();
            assert!(
                len <= PARAM_CAP,
                "{}.{}: description has {len} characters (cap {PARAM_CAP})",
                spec.name,
                p.name
            );
            param_total += len;
        }
    }
    eprintln!("tool descriptions: {tool_total} characters; parameters: {param_total}");
    assert!(
        tool_total <= TOOL_TOTAL_CAP,
        "tool descriptions total {tool_total} characters (cap {TOOL_TOTAL_CAP})"
    );
    assert!(
        param_total <= PARAM_TOTAL_CAP,
        "parameter descriptions total {param_total} characters (cap {PARAM_TOTAL_CAP})"
    );
}

/// The cluster log's `max` cap is in the listed schema, and the refusal of a larger value
/// names the same number: a model sees the cap before it is refused by it.
#[test]
fn cluster_log_max_cap_is_listed_and_matches_the_refusal() {
    let registry = nandi_proxmox_mcp::registry::Registry::from_specs(catalog::all());
    let tools = registry.tools();
    let tool = tools
        .iter()
        .find(|t| t.name == "pve_get_cluster_log")
        .expect("listed");
    let listed = serde_json::to_value(tool).expect("json");
    let max = &listed["inputSchema"]["properties"]["max"];
    assert_eq!(max["maximum"], 10_000, "{max}");
    let spec = catalog::find("pve_get_cluster_log").expect("row");
    let refused =
        nandi_proxmox_mcp::schema::validate(spec, serde_json::json!({"max": 20_000}).as_object())
            .expect_err("over the cap");
    assert_eq!(refused.errors["max"], "must be at most 10000");
    assert!(
        nandi_proxmox_mcp::schema::validate(spec, serde_json::json!({"max": 10_000}).as_object())
            .is_ok()
    );
}
