//! Generates `src/catalog/privileges.rs` and `docs/PERMISSIONS.md` from the catalog and the official
//! PVE API schema (`permissions` of each tool's endpoint), and fails when the committed files
//! drift. `UPDATE_PRIVILEGES=1 cargo test --test it privileges::` rewrites them.
//!
//! Derivation: `check: ['perm', path, [privs]]` needs every listed privilege (with `'any', 1`,
//! one of them: one the tool's parameters need anyway, else the first — the least powerful);
//! `and` joins, `or` takes the alternative needing least;
//! `perm-modify` needs `Permissions.Modify`; `userid-param`/`userid-group` need the named
//! privileges on `/access/…`. `user: all` needs nothing — except that the endpoint's description
//! names what filters the answer (a GET lists only objects with `*.Audit`) or what it needs for its
//! plain use (a write, ignoring sentences about optional parameters/settings). On top of the
//! endpoint's gate come the per-key checks Proxmox runs on guest configuration keys
//! (`catalog::privileges_keys`): a tool needs the union of both.

use crate::common;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use nandi_proxmox_mcp::catalog::privileges_keys;
use nandi_proxmox_mcp::catalog::{self, Tier};
use nandi_proxmox_mcp::cli::bootstrap::{privileges_for, role_name};
use serde_json::Value;

type Needs = BTreeSet<(String, String)>;

fn privs_of(list: &Value) -> Vec<String> {
    match list {
        Value::Array(a) => a
            .iter()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// What `check` requires, given `wanted` — the privileges the tool needs anyway (an `any` list
/// is satisfied by one of them).
fn walk(check: &Value, wanted: &Needs) -> Needs {
    let Some(items) = check.as_array() else {
        return Needs::new();
    };
    let kind = items.first().and_then(Value::as_str).unwrap_or_default();
    match kind {
        "perm" => {
            let path = items
                .get(1)
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_owned();
            let privs = items.get(2).map(privs_of).unwrap_or_default();
            let any = items.iter().skip(3).any(|o| o == "any");
            let chosen: Vec<String> = if any {
                if privs
                    .iter()
                    .any(|p| wanted.contains(&(path.clone(), p.clone())))
                {
                    Vec::new()
                } else {
                    privs.into_iter().take(1).collect()
                }
            } else {
                privs
            };
            chosen.into_iter().map(|p| (path.clone(), p)).collect()
        }
        "and" => items.iter().skip(1).flat_map(|c| walk(c, wanted)).collect(),
        "or" => items
            .iter()
            .skip(1)
            .map(|c| walk(c, wanted))
            // The smallest alternative; among equals, an audit-only one (what a read needs).
            .min_by_key(|needs| {
                let audit_only = needs.iter().all(|(_, p)| p.ends_with(".Audit"));
                (needs.len(), !audit_only)
            })
            .unwrap_or_default(),
        "perm-modify" => {
            let path = items
                .get(1)
                .and_then(Value::as_str)
                .unwrap_or("/")
                .to_owned();
            [(path, "Permissions.Modify".to_owned())].into()
        }
        "userid-param" => match items.get(1).and_then(Value::as_str) {
            Some("self") | None => Needs::new(),
            Some(p) => [("/access/realm/{realm}".to_owned(), p.to_owned())].into(),
        },
        "userid-group" => items
            .get(1)
            .map(privs_of)
            .unwrap_or_default()
            .into_iter()
            .map(|p| ("/access/groups".to_owned(), p))
            .collect(),
        _ => Needs::new(),
    }
}

fn mentioned(text: &str) -> Vec<String> {
    let re = regex::Regex::new(
        r"\b(VM|Sys|Datastore|Pool|SDN|Mapping|User|Group|Realm|Permissions)\.[A-Z][A-Za-z]*(\.[A-Z][A-Za-z]*)?",
    )
    .unwrap();
    re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

fn from_description(method: &str, description: &str) -> Needs {
    let mut needs = Needs::new();
    if method == "GET" {
        for p in mentioned(description) {
            if p.ends_with(".Audit") {
                needs.insert(("/".to_owned(), p));
            }
        }
        return needs;
    }
    for sentence in description.split(". ") {
        let lower = sentence.to_lowercase();
        if ["parameter", "setting", "option", "restricted"]
            .iter()
            .any(|w| lower.contains(w))
        {
            continue;
        }
        for p in mentioned(sentence) {
            needs.insert(("/".to_owned(), p));
        }
    }
    needs
}

struct Row {
    tool: &'static str,
    tier: Tier,
    method: &'static str,
    path: &'static str,
    needs: Needs,
    note: String,
}

fn rows(endpoints: &Value) -> Vec<Row> {
    catalog::all()
        // A PBS row needs privileges on the PBS, not on PVE (`bootstrap --pbs`).
        .filter(|spec| !spec.backend.is_pbs())
        .map(|spec| {
            // The endpoints the tool's requests reach: a composite's known requests, or the
            // schema templates a REST row's path template can reach (`{guest_type}` → both).
            let (method, path, routes): (&'static str, &'static str, Vec<(String, String)>) =
                match spec.backend {
                    catalog::Backend::Composite(op) => (
                        "COMPOSITE",
                        "-",
                        op.reaches()
                            .iter()
                            .map(|(m, p)| (m.as_str().to_owned(), (*p).to_owned()))
                            .collect(),
                    ),
                    catalog::Backend::Ssh(_) => {
                        // SSH rows: the SSH key, not an API privilege, grants what they do.
                        return Row {
                            tool: spec.name,
                            tier: spec.tier,
                            method: "SSH",
                            path: "-",
                            needs: Needs::new(),
                            note: "runs over SSH; the SSH key grants access".to_owned(),
                        };
                    }
                    backend => {
                        let (m, p) = backend.method_and_path().expect("REST row");
                        let routes = if endpoints[p][m.as_str()].is_object() {
                            vec![(m.as_str().to_owned(), p.to_owned())]
                        } else {
                            catalog::effects::reached_endpoints(spec, m.as_str(), p)
                                .into_iter()
                                .map(|e| (e.method.clone(), e.path.clone()))
                                .collect()
                        };
                        (m.as_str(), p, routes)
                    }
                };
            if routes.is_empty() {
                let note = match spec.backend {
                    catalog::Backend::Composite(op) => {
                        format!(
                            "{}: the privileges of the endpoint the caller names",
                            op.describe()
                        )
                    }
                    _ => "endpoint not in the PVE 9.1 schema".to_owned(),
                };
                return Row {
                    tool: spec.name,
                    tier: spec.tier,
                    method,
                    path,
                    needs: Needs::new(),
                    note,
                };
            }
            let per_key: Needs = privileges_keys::parameter_needs(spec)
                .into_iter()
                .map(|(p, v)| (p.to_owned(), v.to_owned()))
                .collect();
            let mut needs = Needs::new();
            let mut notes: Vec<String> = Vec::new();
            for (route_method, route_path) in &routes {
                let perms = &endpoints[route_path.as_str()][route_method.as_str()]["permissions"];
                if let Some(check) = perms.get("check") {
                    let found = walk(check, &per_key);
                    if found.is_empty() && check.to_string().contains("userid-param") {
                        notes.push(
                            "allowed for the token's own user (userid-param self)".to_owned(),
                        );
                    }
                    needs.extend(found);
                } else {
                    let desc = perms["description"].as_str().unwrap_or_default();
                    let user = perms["user"].as_str().unwrap_or_default();
                    let found = from_description(route_method, desc);
                    if found.is_empty() {
                        notes.push(format!("any authenticated user ({user})"));
                    } else {
                        notes.push("from the endpoint's description".to_owned());
                    }
                    needs.extend(found);
                }
            }
            if routes.len() > 1 {
                notes.insert(
                    0,
                    format!(
                        "every request it makes: {}",
                        routes
                            .iter()
                            .map(|(m, p)| format!("{m} {p}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            notes.dedup();
            let mut note = notes.join("; ");
            if !per_key.is_empty() {
                note = if note.is_empty() {
                    "plus the per-key checks of its parameters".to_owned()
                } else {
                    format!("{note}; plus the per-key checks of its parameters")
                };
                needs.extend(per_key);
            }
            Row {
                tool: spec.name,
                tier: spec.tier,
                method,
                path,
                needs,
                note,
            }
        })
        .collect()
}

fn render_source(rows: &[Row]) -> String {
    let mut out = String::from(
        "//! GENERATED by `UPDATE_PRIVILEGES=1 cargo test --test it privileges::` from the catalog and\n\
         //! `../shared/pve-api/endpoints-pve-9.1.json.gz` — do not edit by hand.\n\
         //!\n\
         //! Invariant: one row per catalog tool, in catalog order; `tests/privileges.rs` fails when\n\
         //! this file and the catalog or the schema disagree.\n\n\
         /// Per tool: the `(ACL path, privilege)` pairs its endpoint checks.\n\
         pub const TOOL_PRIVILEGES: &[(&str, &[(&str, &str)])] = &[\n",
    );
    for r in rows {
        let needs: Vec<String> = r
            .needs
            .iter()
            .map(|(p, v)| format!("({p:?}, {v:?})"))
            .collect();
        let _ = writeln!(out, "    ({:?}, &[{}]),", r.tool, needs.join(", "));
    }
    out.push_str("];\n");
    out
}

fn render_doc(rows: &[Row]) -> String {
    let mut out = String::from(
        "# Proxmox permissions\n\n\
         Generated by `UPDATE_PRIVILEGES=1 cargo test --test it privileges::` from the tool catalog and the\n\
         official PVE 9.1 API schema (the `permissions` of each tool's endpoint); do not edit by hand.\n\n\
         `nandi-proxmox-mcp bootstrap --tier <tier>` creates one role per tier holding exactly the\n\
         privileges below and grants it to the API user on `/` (privileges propagate to every\n\
         guest, storage and node), or on a narrower ACL path with `--acl-path` (e.g.\n\
         `/pool/NAME`: only the guests and storages of that pool). Each tier includes the tools of\n\
         the tiers below it.\n\n\
         A tool needs the privileges its endpoint checks plus those Proxmox checks per\n\
         configuration key (`cores` → VM.Config.CPU, `net0` → VM.Config.Network and SDN.Use on the\n\
         bridge, `ciuser` → VM.Config.Cloudinit, a new disk → Datastore.AllocateSpace on its\n\
         storage…; `src/catalog/privileges_keys.rs`). `doctor --check permissions` runs the same\n\
         table against the token.\n\n\
         ## Roles\n\n| tier | role | privileges |\n|---|---|---|\n",
    );
    for tier in Tier::ALL {
        let privs: Vec<&str> = privileges_for(tier).into_iter().collect();
        let _ = writeln!(
            out,
            "| {} | `{}` | {} |",
            tier.as_str(),
            role_name(tier),
            if privs.is_empty() {
                "(none)".to_owned()
            } else {
                privs.join(", ")
            }
        );
    }
    out.push_str(
        "\n## Per tool\n\n\
         A privilege \"from the endpoint's description\" is one the schema states in prose: for a\n\
         list, the privilege that decides which objects are returned (without it the list is empty).\n\n\
         | tool | tier | endpoint | privileges (ACL path) | note |\n|---|---|---|---|---|\n",
    );
    for r in rows {
        let needs: Vec<String> = r
            .needs
            .iter()
            .map(|(p, v)| format!("{v} (`{p}`)"))
            .collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | `{} {}` | {} | {} |",
            r.tool,
            r.tier.as_str(),
            r.method,
            r.path,
            if needs.is_empty() {
                "–".to_owned()
            } else {
                needs.join(", ")
            },
            r.note
        );
    }
    out
}

/// Issue 20.8: no tool has an empty privilege row unless the schema itself says why (an
/// endpoint open to every user, one a user may call for themselves), the SSH key grants it,
/// or the caller names the endpoint (the generic API call).
#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn no_tool_has_an_unexplained_empty_privilege_row() {
    let endpoints = common::pve_api_endpoints();
    let unexplained: Vec<String> = rows(&endpoints)
        .into_iter()
        .filter(|row| row.needs.is_empty())
        .filter(|row| {
            ![
                "any authenticated user",
                "SSH key",
                "caller names",
                "userid-param self",
            ]
            .iter()
            .any(|why| row.note.contains(why))
        })
        .map(|row| format!("{} ({} {}): {}", row.tool, row.method, row.path, row.note))
        .collect();
    assert!(
        unexplained.is_empty(),
        "empty privilege rows: {unexplained:#?}"
    );
}

#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn privileges_table_and_doc_are_current() {
    let endpoints = common::pve_api_endpoints();
    let rows = rows(&endpoints);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source_path = root.join("src/catalog/privileges.rs");
    let doc_path = root.join("docs/PERMISSIONS.md");
    let source = render_source(&rows);
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if std::env::var_os("UPDATE_PRIVILEGES").is_some() && !ci {
        std::fs::write(&source_path, &source).unwrap();
        // Keep the file as `cargo fmt` would leave it (best effort: rustfmt may be absent).
        let _ = std::process::Command::new("rustfmt")
            .args(["--edition", "2024"])
            .arg(&source_path)
            .status();
        // The doc is rendered from the compiled table: run the test a second time after an
        // update so the doc reflects the new table.
        std::fs::write(&doc_path, render_doc(&rows)).unwrap();
        return;
    }
    // Compare data, not text, so formatting the generated file is not drift.
    let compiled: Vec<(String, Vec<(String, String)>)> =
        nandi_proxmox_mcp::catalog::privileges::TOOL_PRIVILEGES
            .iter()
            .map(|(t, n)| {
                let needs = n.iter().map(|(p, v)| ((*p).to_owned(), (*v).to_owned()));
                ((*t).to_owned(), needs.collect())
            })
            .collect();
    let generated: Vec<(String, Vec<(String, String)>)> = rows
        .iter()
        .map(|r| (r.tool.to_owned(), r.needs.iter().cloned().collect()))
        .collect();
    assert_eq!(
        compiled, generated,
        "src/catalog/privileges.rs is out of date: run UPDATE_PRIVILEGES=1 cargo test --test it privileges:: (twice)"
    );
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    assert_eq!(
        doc,
        render_doc(&rows),
        "docs/PERMISSIONS.md is out of date: run UPDATE_PRIVILEGES=1 cargo test --test it privileges::"
    );
}

#[test]
fn derivation_examples() {
    let stop: Value = serde_json::json!(["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]);
    assert_eq!(
        walk(&stop, &Needs::new()),
        [("/vms/{vmid}".to_owned(), "VM.PowerMgmt".to_owned())].into()
    );
    let any: Value = serde_json::json!([
        "perm",
        "/storage/{storage}",
        ["Datastore.Audit", "Datastore.AllocateSpace"],
        "any",
        1
    ]);
    assert_eq!(walk(&any, &Needs::new()).len(), 1);
    // An `any` gate is met by a privilege the parameters need anyway: nothing extra.
    let wanted: Needs = [(
        "/storage/{storage}".to_owned(),
        "Datastore.AllocateSpace".to_owned(),
    )]
    .into();
    assert!(walk(&any, &wanted).is_empty());
    let or: Value =
        serde_json::json!(["or", ["userid-param", "self"], ["perm", "/", ["Sys.Audit"]]]);
    assert!(walk(&or, &Needs::new()).is_empty());
    let d = from_description(
        "GET",
        "Only list VMs where you have VM.Audit permissions on /vms/<vmid>.",
    );
    assert_eq!(d, [("/".to_owned(), "VM.Audit".to_owned())].into());
    let d = from_description(
        "POST",
        "The user needs 'VM.Backup' permissions on any VM, and 'Datastore.AllocateSpace' on the backup storage. The 'bwlimit' parameters require 'Sys.Modify' on '/'.",
    );
    assert!(
        d.iter().all(|(_, p)| p != "Sys.Modify") && d.len() == 2,
        "{d:?}"
    );
}

#[test]
fn read_only_role_grants_only_what_read_only_tools_need() {
    let read_only = privileges_for(Tier::ReadOnly);
    let needed: BTreeSet<&str> = nandi_proxmox_mcp::catalog::privileges::TOOL_PRIVILEGES
        .iter()
        .filter(|(t, _)| catalog::find(t).is_some_and(|s| s.tier == Tier::ReadOnly))
        .flat_map(|(_, n)| n.iter().map(|(_, p)| *p))
        .collect();
    assert_eq!(read_only, needed);
    // A read-only tool that needs one of these is a catalog mistake, not a role to widen.
    for p in &read_only {
        let power = p.starts_with("VM.Config.")
            || [
                "VM.PowerMgmt",
                "VM.Allocate",
                "VM.Migrate",
                "VM.Snapshot",
                "VM.Console",
                "Sys.Modify",
                "Sys.PowerMgmt",
                "Sys.Console",
                "Permissions.Modify",
                "User.Modify",
                "Realm.AllocateUser",
            ]
            .contains(p);
        assert!(!power, "read-only role grants the changing privilege {p}");
    }
    assert!(privileges_for(Tier::ReadExecute).is_superset(&read_only));
    assert!(privileges_for(Tier::Full).is_superset(&privileges_for(Tier::ReadExecute)));
}

fn table_privileges(tool: &str) -> BTreeSet<&'static str> {
    nandi_proxmox_mcp::catalog::privileges::TOOL_PRIVILEGES
        .iter()
        .find(|(t, _)| *t == tool)
        .map(|(_, needs)| needs.iter().map(|(_, p)| *p).collect())
        .unwrap_or_default()
}

#[test]
fn guest_config_tools_need_every_per_key_privilege_of_their_parameters() {
    let cases: &[(&str, &[&str])] = &[
        (
            "pve_qemu_update_config",
            &[
                "VM.Config.CPU",
                "VM.Config.Memory",
                "VM.Config.Network",
                "VM.Config.Cloudinit",
                "VM.Config.Disk",
                "VM.Config.CDROM",
                "VM.Config.HWType",
                "VM.Config.Options",
                "SDN.Use",
                "Datastore.AllocateSpace",
            ],
        ),
        (
            "pve_qemu_create",
            &[
                "VM.Allocate",
                "VM.Config.CPU",
                "VM.Config.Memory",
                "VM.Config.Network",
                "VM.Config.Cloudinit",
                "VM.Config.HWType",
                "VM.Config.Options",
                "Datastore.AllocateSpace",
                "SDN.Use",
            ],
        ),
        ("pve_set_qemu_cloudinit", &["VM.Config.Cloudinit"]),
        (
            "pve_lxc_update_config",
            &[
                "VM.Config.CPU",
                "VM.Config.Memory",
                "VM.Config.Network",
                "VM.Config.Disk",
                "VM.Config.Options",
                "SDN.Use",
            ],
        ),
        (
            "pve_lxc_create",
            &[
                "VM.Allocate",
                "VM.Config.CPU",
                "VM.Config.Memory",
                "VM.Config.Network",
                "VM.Config.Disk",
                "VM.Config.Options",
                "Datastore.AllocateSpace",
                "Datastore.Audit",
            ],
        ),
        (
            "pve_restore_qemu_backup",
            &["VM.Backup", "Datastore.AllocateSpace"],
        ),
    ];
    let full = privileges_for(Tier::Full);
    for (tool, expected) in cases {
        let table = table_privileges(tool);
        for privilege in *expected {
            assert!(
                table.contains(privilege),
                "{tool} lacks {privilege}: {table:?}"
            );
            assert!(full.contains(privilege), "full role lacks {privilege}");
        }
    }
    // Cloud-init alone meets the config endpoint's "any" gate: no disk privilege for it.
    assert!(!table_privileges("pve_set_qemu_cloudinit").contains("VM.Config.Disk"));
}

#[test]
fn no_tool_sends_a_key_only_root_may_set() {
    for spec in catalog::all() {
        assert_eq!(
            privileges_keys::root_only_parameters(spec),
            Vec::<&str>::new(),
            "{} sends keys a token can never set",
            spec.name
        );
    }
}
