//! The Proxmox Backup Server classifier against PBS's own schema (the pinned `apidoc.js`):
//! the committed table is exactly what the rules give over it, every endpoint is placed, no
//! POST/PUT/DELETE is a read, and every GET whose permission check needs more than an
//! auditor's privileges — read here from the schema, not from the table — is not a read.
//!
//! `UPDATE_EFFECTS=1 cargo test --test it effects_pbs::` rewrites `src/effects/pbs-endpoints.tsv`
//! (never under `CI=true`).

use std::path::Path;

use nandi_proxmox_mcp::effects::pbs::{self, PBS_READ_PRIVILEGES};
use nandi_proxmox_mcp::effects::{Effect, classify_pbs};
use serde_json::Value;

use crate::common::{self, schemas};

const TABLE: &str = "src/effects/pbs-endpoints.tsv";

fn methods(schema: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, entries) in schema.as_object().into_iter().flatten() {
        for (method, entry) in entries.as_object().into_iter().flatten() {
            out.push((path.clone(), method.clone(), entry.clone()));
        }
    }
    out
}

fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|s| if s.starts_with('{') { "x" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn the_carried_pbs_schema_is_the_pinned_one() {
    assert_eq!(
        schemas::sha256_of("apidoc-pbs-4.js.gz"),
        schemas::APIDOC_PBS_4_SHA256
    );
    // The API viewer's 4.x tree: every method of every path.
    assert!(methods(&schemas::pbs_4()).len() > 340);
}

#[test]
fn the_committed_pbs_table_is_derived_from_the_schema() {
    let rendered = pbs::render_pbs(&schemas::pbs_4());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if rendered != committed {
        if std::env::var("UPDATE_EFFECTS").is_ok_and(|v| v == "1") && !common::in_ci() {
            std::fs::write(&path, &rendered).expect("table written");
            return;
        }
        panic!(
            "{TABLE} is not what the PBS schema gives; run UPDATE_EFFECTS=1 cargo test --test it effects_pbs::"
        );
    }
}

#[test]
fn every_pbs_endpoint_is_placed_and_no_write_is_a_read() {
    let schema = schemas::pbs_4();
    let all = methods(&schema);
    for (path, method, _) in &all {
        let found = pbs::pbs_endpoint(method, &concrete(path))
            .unwrap_or_else(|| panic!("{method} {path} is not placed"));
        assert_eq!(&found.path, path, "{method} {path} resolves elsewhere");
        let got = classify_pbs(method, &concrete(path), &[]);
        if method != "GET" {
            assert!(
                got.effects.contains(Effect::Change),
                "{method} {path}: {got:?}"
            );
        }
        if method == "DELETE" {
            assert!(got.effects.contains(Effect::Destroy), "{method} {path}");
        }
    }
    assert_eq!(pbs::pbs_endpoints().len(), all.len());
    assert!(
        classify_pbs("GET", "/no/such/thing", &[])
            .effects
            .contains(Effect::Unplaced)
    );
}

/// The privileges a structured check (`check`, `or`, `and`) demands, read from the schema:
/// `None` when the entry has no structured check.
fn auditor_passes(permissions: &Value) -> Option<bool> {
    if let Some(check) = permissions.get("check") {
        let privs: Vec<&str> = check["privs"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let audit = |p: &&str| PBS_READ_PRIVILEGES.contains(p);
        return Some(if check["partial"] == Value::Bool(true) {
            privs.iter().any(audit)
        } else {
            !privs.is_empty() && privs.iter().all(audit)
        });
    }
    if let Some(items) = permissions.get("or").and_then(Value::as_array) {
        return Some(items.iter().any(|i| auditor_passes(i) == Some(true)));
    }
    if let Some(items) = permissions.get("and").and_then(Value::as_array) {
        return Some(items.iter().all(|i| auditor_passes(i) == Some(true)));
    }
    None
}

#[test]
fn no_get_beyond_an_auditor_is_a_read() {
    let mut sensitive = 0;
    for (path, method, entry) in methods(&schemas::pbs_4()) {
        if method != "GET" {
            continue;
        }
        let permissions = entry.get("permissions").cloned().unwrap_or(Value::Null);
        let text = permissions["description"].as_str().unwrap_or("");
        let beyond = match auditor_passes(&permissions) {
            Some(passes) => !passes,
            // The superuser's (no permissions at all), or a described check naming only
            // backup contents (`DATASTORE_READ`) and ownership.
            None => {
                permissions.as_object().is_none_or(|o| o.is_empty())
                    || (text.contains("DATASTORE_READ") && !text.contains("AUDIT"))
            }
        };
        let got = classify_pbs("GET", &concrete(&path), &[]);
        if beyond {
            sensitive += 1;
            assert!(
                got.effects.contains(Effect::SensitiveRead),
                "GET {path} needs more than an auditor: {permissions}"
            );
        }
    }
    assert!(sensitive > 20, "{sensitive}");
    // The backup contents themselves.
    for path in [
        "download",
        "download-decoded",
        "pxar-file-download",
        "catalog",
    ] {
        let got = classify_pbs("GET", &format!("/admin/datastore/store1/{path}"), &[]);
        assert!(got.effects.contains(Effect::SensitiveRead), "{path}");
    }
}

#[test]
fn the_hand_rules_say_what_the_schema_cannot() {
    let gc = classify_pbs("POST", "/admin/datastore/store1/gc", &[]);
    assert!(gc.effects.contains(Effect::Destroy), "{gc:?}");
    let prune_args = |dry: &str| {
        vec![
            ("backup-type".to_owned(), "vm".to_owned()),
            ("backup-id".to_owned(), "101".to_owned()),
            ("keep-last".to_owned(), "2".to_owned()),
            ("dry-run".to_owned(), dry.to_owned()),
        ]
    };
    let prune = classify_pbs("POST", "/admin/datastore/store1/prune", &prune_args("0"));
    assert!(prune.effects.contains(Effect::Destroy), "{prune:?}");
    let preview = classify_pbs("POST", "/admin/datastore/store1/prune", &prune_args("1"));
    assert!(preview.effects.is_read(), "{preview:?}");
    let smuggled = classify_pbs(
        "POST",
        "/admin/datastore/store1/prune",
        &[
            ("dry-run".to_owned(), "1".to_owned()),
            ("evil".to_owned(), "1".to_owned()),
        ],
    );
    assert!(smuggled.effects.contains(Effect::Unplaced), "{smuggled:?}");
    let snapshots = classify_pbs(
        "GET",
        "/admin/datastore/store1/snapshots",
        &[("ns".into(), "prod".into())],
    );
    assert!(snapshots.effects.is_read(), "{snapshots:?}");
    let remote = classify_pbs(
        "POST",
        "/config/remote",
        &[("host".into(), "evil.example".into())],
    );
    assert!(remote.effects.contains(Effect::Egress), "{remote:?}");
}
