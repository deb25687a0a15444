//! One JSON snapshot per tool: exactly what `tools/list` advertises for it and its aliases.
//!
//! A change to a row shows up as a reviewable diff in `tests/snapshots/<tool>.json`.
//! `UPDATE_SNAPSHOTS=1 cargo test --test it snapshots::` rewrites them; a missing snapshot is
//! written (and reported) on a developer machine, but is a failure under `CI=true`.

use crate::common;

use std::path::Path;

use nandi_proxmox_mcp::catalog;
use nandi_proxmox_mcp::registry::Registry;
use serde_json::{Value, json};

#[test]
fn tool_snapshots_match() {
    let registry = Registry::from_specs(catalog::all());
    let tools = registry.tools();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    // An updater never writes under CI: there a stale snapshot must fail, not be accepted.
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let update = std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") && !ci;
    let mut failures = Vec::new();
    let mut expected_files = Vec::new();
    for spec in catalog::all() {
        let find = |name: &str| -> Value {
            let tool = tools.iter().find(|t| t.name == name).expect("tool listed");
            serde_json::to_value(tool).expect("serializable")
        };
        let snapshot = json!({
            "tool": find(spec.name),
            "aliases": spec.aliases.iter().map(|a| find(a)).collect::<Vec<_>>(),
            "backend": {
                "method": spec.backend.summary().0,
                "path": spec.backend.summary().1,
                "retriesReads": spec.retries_reads(),
                "timeoutMs": spec.timeout_ms,
            },
        });
        let text = format!("{}\n", serde_json::to_string_pretty(&snapshot).unwrap());
        let file = dir.join(format!("{}.json", spec.name));
        expected_files.push(format!("{}.json", spec.name));
        match std::fs::read_to_string(&file) {
            Ok(existing) if existing == text => {}
            Ok(_) if update => std::fs::write(&file, &text).unwrap(),
            Ok(_) => failures.push(format!(
                "{} differs (UPDATE_SNAPSHOTS=1 to accept)",
                file.display()
            )),
            Err(_) if common::in_ci() => failures.push(format!("{} is missing", file.display())),
            Err(_) => {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&file, &text).unwrap();
                eprintln!("wrote new snapshot {}", file.display());
            }
        }
    }
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !expected_files.contains(&name) {
            failures.push(format!("stale snapshot {name}: no such tool"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
