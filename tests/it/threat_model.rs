//! docs/THREAT_MODEL.md carries the per-tier table of the toxic flow's legs, generated from
//! the rows (`docs::sink_tables`), and every sink in it has a person's gate.
//! `UPDATE_DOCS=1 cargo test --test it threat_model::` rewrites the block (never under `CI=true`).

use std::path::Path;

use nandi_proxmox_mcp::catalog;
use nandi_proxmox_mcp::docs::{self, SINKS_BEGIN, SINKS_END, THREAT_MODEL_MD};

#[test]
fn every_sink_at_every_tier_has_a_persons_gate() {
    let ungated: Vec<&str> = catalog::all()
        .filter(|s| docs::is_sink(s) && docs::approval_kind(s) == "none")
        .map(|s| s.name)
        .collect();
    assert!(ungated.is_empty(), "sinks without a gate: {ungated:?}");
    assert!(!docs::sink_tables().contains("**none**"));
}

#[test]
fn the_threat_model_carries_the_current_sink_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(THREAT_MODEL_MD);
    let text = std::fs::read_to_string(&path).expect("threat model readable");
    let begin = text.find(SINKS_BEGIN).expect("begin marker present");
    let end = text.find(SINKS_END).expect("end marker present");
    let current = &text[begin + SINKS_BEGIN.len()..end];
    let wanted = format!("\n\n{}", docs::sink_tables());
    if current == wanted {
        return;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1") && !ci {
        let updated = format!(
            "{}{wanted}{}",
            &text[..begin + SINKS_BEGIN.len()],
            &text[end..]
        );
        std::fs::write(&path, updated).expect("rewrite threat model");
        return;
    }
    panic!(
        "{THREAT_MODEL_MD} sink table is stale: run UPDATE_DOCS=1 cargo test --test it threat_model::"
    );
}
