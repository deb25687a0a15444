//! The effects classifier over every Proxmox VE schema carried: the committed endpoint table
//! is exactly what the derivation rules give over the newest (9.1.3, pinned), every endpoint
//! is placed, no non-GET is a read without a reviewed row, every prose permission rule has a
//! reviewed row, every PVE 9.2 operation has a row, and no GET that demands more than an
//! auditor's privilege or takes a URL/server parameter is a read. The cases come from the
//! schema files, never from the table under test.
//!
//! `UPDATE_EFFECTS=1 cargo test --test it effects_schema::` rewrites `src/effects/endpoints.tsv`
//! and the per-tool summary `src/catalog/effects.tsv` the listing reads (never under `CI=true`).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::schemas;
use nandi_proxmox_mcp::effects::reviewed::{self, Verdict};
use nandi_proxmox_mcp::effects::{self, Effect, derive};
use serde_json::Value;

const TABLE: &str = "src/effects/endpoints.tsv";

/// Every schema carried, newest first; 9.1.2 only where `../shared` is beside the project.
fn carried() -> Vec<(&'static str, Value)> {
    let mut all = vec![("9.1.3", schemas::pve_9_1_3())];
    if common::shared_dir()
        .join("pve-api/endpoints-pve-9.1.json.gz")
        .exists()
        || common::in_ci()
    {
        all.push(("9.1.2", common::pve_api_endpoints()));
    }
    all
}

fn methods(schema: &Value) -> impl Iterator<Item = (&String, &String, &Value)> {
    schema
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(path, entries)| {
            entries
                .as_object()
                .into_iter()
                .flatten()
                .map(move |(method, entry)| (path, method, entry))
        })
}

#[test]
fn the_carried_schemas_are_the_pinned_ones() {
    assert_eq!(
        schemas::sha256_of("apidata-pve-9.1.3.js.gz"),
        schemas::APIDATA_9_1_3_SHA256
    );
    assert_eq!(
        schemas::sha256_of("pve-9.2-ops.json"),
        schemas::OPS_9_2_SHA256
    );
}

#[test]
fn the_committed_table_is_derived_from_the_newest_schema() {
    let rendered = effects::table_render(&schemas::pve_9_1_3());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if rendered != committed {
        if std::env::var("UPDATE_EFFECTS").is_ok_and(|v| v == "1") && !common::in_ci() {
            std::fs::write(&path, &rendered).expect("table written");
            return;
        }
        panic!(
            "{TABLE} is not what the schema gives; run UPDATE_EFFECTS=1 cargo test --test it effects_schema::"
        );
    }
}

/// The listing reads each tool's effect sets from `src/catalog/effects.tsv` instead of
/// classifying every row at start: the committed file is exactly what the classifier gives
/// now, and every row's summary (as the listing sees it) is the classifier's own sets.
#[test]
fn the_listing_summary_is_what_the_classifier_gives() {
    const SUMMARY: &str = "src/catalog/effects.tsv";
    let rendered = nandi_proxmox_mcp::catalog::effects::render_summary();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SUMMARY);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if rendered != committed {
        if std::env::var("UPDATE_EFFECTS").is_ok_and(|v| v == "1") && !common::in_ci() {
            std::fs::write(&path, &rendered).expect("summary written");
            return;
        }
        panic!(
            "{SUMMARY} is not what the classifier gives; run UPDATE_EFFECTS=1 cargo test --test it effects_schema::"
        );
    }
    for spec in nandi_proxmox_mcp::catalog::all() {
        let full = nandi_proxmox_mcp::catalog::effects::of(spec);
        let summary = nandi_proxmox_mcp::catalog::effects::summary(spec);
        assert_eq!(summary.always, full.always, "{}", spec.name);
        assert_eq!(summary.possible, full.possible.effects, "{}", spec.name);
    }
}

/// Every method of every path of every carried schema is in the table.
#[test]
fn every_endpoint_is_classified() {
    let newest = schemas::pve_9_1_3();
    for (name, schema) in carried() {
        for (path, method, _) in methods(&schema) {
            let found = effects::endpoint(method, &concrete(path))
                .unwrap_or_else(|| panic!("{name}: {method} {path} is not placed"));
            assert_eq!(
                &found.path, path,
                "{name}: {method} {path} resolves to another template"
            );
        }
    }
    assert_eq!(effects::endpoints().len(), methods(&newest).count());
}

/// A read is proven, never presumed: over every carried schema and the 9.2 operation list,
/// a POST/PUT/DELETE is a read only where the reviewed table says `read` for it. Prints the
/// per-effect counts over the newest schema for the note.
#[test]
fn no_non_get_is_a_read_without_a_reviewed_row() {
    let mut cases: Vec<(String, String, String)> = Vec::new();
    for (name, schema) in carried() {
        for (path, method, _) in methods(&schema) {
            cases.push((name.to_owned(), method.clone(), path.clone()));
        }
    }
    for (method, path) in schemas::pve_9_2_ops() {
        cases.push(("9.2".to_owned(), method, path));
    }
    let mut non_get = 0;
    for (name, method, path) in &cases {
        if method == "GET" {
            continue;
        }
        non_get += 1;
        let got = effects::classify_rest(method, &concrete(path), &[]);
        let reviewed_read =
            reviewed::reviewed(method, path).is_some_and(|r| r.verdict == Verdict::Read);
        assert_eq!(
            got.effects.is_read(),
            reviewed_read,
            "{name}: {method} {path} is {:?}",
            got.effects
        );
        if !reviewed_read {
            assert!(
                got.effects.contains(Effect::Change) || got.effects.contains(Effect::SensitiveRead),
                "{name}: {method} {path}: {got:?}"
            );
        }
    }
    assert!(non_get > 600, "{non_get}");
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reads = 0;
    let newest = schemas::pve_9_1_3();
    for (path, method, _) in methods(&newest) {
        let got = effects::classify_rest(method, &concrete(path), &[]);
        reads += usize::from(got.effects.is_read());
        for effect in got.effects.iter() {
            *counts.entry(effect.as_str()).or_default() += 1;
        }
    }
    eprintln!(
        "9.1.3: {} endpoint methods, {reads} plain reads without arguments; per effect: {counts:?}",
        methods(&newest).count()
    );
}

/// Every endpoint whose permission rule is prose (`permissions.description`), or whose check
/// an auditor satisfies although it is not a GET, has a reviewed row.
#[test]
fn every_prose_permission_rule_is_reviewed() {
    let mut prose = 0;
    for (name, schema) in carried() {
        for (path, method, entry) in methods(&schema) {
            let has_prose = entry.pointer("/permissions/description").is_some();
            let auditor_write =
                method != "GET" && derive::facts(method, path, entry).read_satisfies;
            if !(has_prose || auditor_write) {
                continue;
            }
            prose += 1;
            assert!(
                reviewed::reviewed(method, path).is_some(),
                "{name}: {method} {path} has a prose permission rule or an auditor's check on a write, and no row in src/effects/reviewed.tsv"
            );
        }
    }
    assert!(prose > 100, "{prose}");
    // A row for an endpoint no carried schema has would be a row nobody checks.
    let newest = schemas::pve_9_1_3();
    for row in reviewed::reviewed_rows() {
        assert!(
            newest
                .pointer(&format!(
                    "/{}/{}",
                    row.path.replace('~', "~0").replace('/', "~1"),
                    row.method
                ))
                .is_some(),
            "reviewed row {} {} names no endpoint of the newest schema",
            row.method,
            row.path
        );
    }
}

/// Every PVE 9.2 operation is placed: by the embedded (newest) schema or by exactly one row of
/// the 9.2 table, never both, and a 9.2 GET the table holds is not a read.
#[test]
fn every_pve_9_2_operation_has_a_row() {
    let ops = schemas::pve_9_2_ops();
    assert_eq!(ops.len(), 680);
    let mut by_hand = 0;
    for (method, path) in &ops {
        let rendered = concrete(path);
        let embedded = effects::endpoint(method, &rendered).filter(|e| &e.path == path);
        let newer = reviewed::newer(method, &rendered).filter(|r| r.path == path);
        assert!(
            embedded.is_some() != newer.is_some(),
            "9.2 {method} {path}: embedded {}, 9.2 row {}",
            embedded.is_some(),
            newer.is_some()
        );
        if newer.is_some() {
            by_hand += 1;
            let got = effects::classify_rest(method, &rendered, &[]);
            assert!(
                !got.effects.is_read(),
                "9.2 {method} {path} is a read: {got:?}"
            );
        }
    }
    assert_eq!(
        by_hand,
        reviewed::newer_rows().len(),
        "a 9.2 row names no 9.2 operation"
    );
    eprintln!(
        "9.2: {} operations, {by_hand} placed by the 9.2 table",
        ops.len()
    );
}

/// The generated test of the earlier issue: a GET whose permission check cannot be met with
/// an auditor's privileges, or that takes a URL/server parameter, is never a read.
#[test]
fn no_get_that_demands_more_or_reaches_out_is_a_read() {
    for (name, schema) in carried() {
        for (path, method, entry) in methods(&schema) {
            if method != "GET" {
                continue;
            }
            let facts = derive::facts(method, path, entry);
            let params = sample_params(entry);
            let classified = effects::classify_rest(method, &concrete(path), &params);
            let demands_more = !facts.read_satisfies;
            let reaches_out = entry
                .get("parameters")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .any(|(name, p)| {
                    let pattern = p.get("pattern").and_then(Value::as_str).unwrap_or("");
                    let format = p.get("format").and_then(Value::as_str).unwrap_or("");
                    pattern.contains("http")
                        || matches!(name.as_str(), "url" | "server" | "portal")
                        || format == "pve-storage-server"
                });
            if demands_more || reaches_out {
                assert!(
                    !classified.effects.is_read(),
                    "{name}: GET {path} is classified as a read (demands more: {demands_more}, reaches out: {reaches_out})"
                );
            }
        }
    }
}

/// A parameter the schema does not declare is never part of a read: the embedded table
/// cannot place it (a newer PVE's `url`, a typo), so it is asked about.
#[test]
fn an_undeclared_parameter_is_not_a_read() {
    for (path, params) in [
        (
            "/version",
            vec![("check-url".to_owned(), "https://x.example/".to_owned())],
        ),
        (
            "/nodes/pve01/qemu/101/config",
            vec![("remote".to_owned(), "203.0.113.9".to_owned())],
        ),
        (
            "/nodes/pve01/qemu/101/config",
            vec![("url".to_owned(), "https://x.example/".to_owned())],
        ),
    ] {
        let got = effects::classify_rest("GET", path, &params);
        assert!(got.effects.contains(Effect::Unplaced), "{path}: {got:?}");
    }
    assert!(
        effects::classify_rest(
            "GET",
            "/nodes/pve01/qemu/101/config",
            &[("current".into(), "1".into())]
        )
        .effects
        .is_read()
    );
}

/// A rendered path for a template: each placeholder becomes a plausible value.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|s| match s {
            "{vmid}" => "101",
            "{node}" => "pve01",
            s if s.starts_with('{') => "x",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every parameter that can add an effect, with a value that would (URLs, servers).
fn sample_params(entry: &Value) -> Vec<(String, String)> {
    entry
        .get("parameters")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, p)| {
            p.get("optional").and_then(Value::as_i64) != Some(1)
                || matches!(name.as_str(), "url" | "server" | "portal" | "directory")
        })
        .filter(|(name, _)| {
            !name.contains("[n]") && name.as_str() != "node" && name.as_str() != "vmid"
        })
        .map(|(name, _)| (name.clone(), "https://example.invalid/x".to_owned()))
        .collect()
}
