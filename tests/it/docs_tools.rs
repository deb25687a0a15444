//! `docs/TOOLS.md` is generated from the catalog and must match it.
//!
//! A stale or missing file fails with the command that fixes it;
//! `UPDATE_DOCS=1 cargo test --test it docs_tools::` rewrites it (never under `CI=true`).

use crate::common;

use std::path::Path;

use nandi_proxmox_mcp::docs;

#[test]
fn tools_md_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(docs::TOOLS_MD);
    let expected = docs::tools_markdown(&nandi_proxmox_mcp::registry::tool_counts());
    let update = std::env::var("UPDATE_DOCS").is_ok_and(|v| v == "1");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current == expected {
        return;
    }
    if update && !common::in_ci() {
        std::fs::write(&path, &expected).expect("write docs/TOOLS.md");
        eprintln!("rewrote {}", path.display());
        return;
    }
    panic!(
        "{} is stale: run `UPDATE_DOCS=1 cargo test --test it docs_tools::` and commit it",
        path.display()
    );
}
