//! The effects classifier over the whole official PVE 9.1 schema: the committed endpoint
//! table is exactly what the derivation rules give, every endpoint is placed, and no GET
//! that demands more than an auditor's privilege or takes a URL/server parameter is a read.
//!
//! `UPDATE_EFFECTS=1 cargo test --test effects_schema` rewrites `src/effects/endpoints.tsv`
//! (never under `CI=true`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use nandi_proxmox_mcp::effects::{self, Effect, derive};
use serde_json::Value;

const TABLE: &str = "src/effects/endpoints.tsv";

#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn the_committed_table_is_derived_from_the_schema() {
    let schema = common::pve_api_endpoints();
    let rendered = effects::table_render(&schema);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if rendered != committed {
        if std::env::var("UPDATE_EFFECTS").is_ok_and(|v| v == "1") && !common::in_ci() {
            std::fs::write(&path, &rendered).expect("table written");
            return;
        }
        panic!(
            "{TABLE} is not what the schema gives; run UPDATE_EFFECTS=1 cargo test --test effects_schema"
        );
    }
}

/// Every method of every path is in the table, and the table holds nothing else.
#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn every_endpoint_is_classified() {
    let schema = common::pve_api_endpoints();
    let mut methods = 0;
    for (path, entries) in schema.as_object().expect("object") {
        for method in entries.as_object().expect("object").keys() {
            methods += 1;
            let found = effects::endpoint(method, &concrete(path))
                .unwrap_or_else(|| panic!("{method} {path} is not placed"));
            assert_eq!(
                &found.path, path,
                "{method} {path} resolves to another template"
            );
        }
    }
    assert_eq!(effects::endpoints().len(), methods);
}

/// The generated test the issue asks for: a GET whose permission check cannot be met with
/// an auditor's privileges, or that takes a URL/server parameter, is never a read. Prints the
/// per-effect counts for the note.
#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn no_get_that_demands_more_or_reaches_out_is_a_read() {
    let schema = common::pve_api_endpoints();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reads = 0;
    let mut total = 0;
    for (path, entries) in schema.as_object().expect("object") {
        for (method, entry) in entries.as_object().expect("object") {
            total += 1;
            let facts = derive::facts(method, path, entry);
            let params = sample_params(entry);
            let classified = effects::classify_rest(method, &concrete(path), &params);
            if classified.effects.is_read() {
                reads += 1;
            }
            for effect in classified.effects.iter() {
                *counts.entry(effect.as_str()).or_default() += 1;
            }
            if method != "GET" {
                continue;
            }
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
                    "GET {path} is classified as a read (demands more: {demands_more}, reaches out: {reaches_out})"
                );
            }
        }
    }
    eprintln!("classified {total} endpoint methods: {reads} reads; per effect: {counts:?}");
    assert!(counts.get("sensitive-read").copied().unwrap_or(0) > 10);
    assert!(counts.get(Effect::Egress.as_str()).copied().unwrap_or(0) > 5);
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
