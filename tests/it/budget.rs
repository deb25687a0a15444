//! Context budgets: what the model sees of each tool listing (name + description + input
//! schema) stays under a fixed number of bytes per surface.
//!
//! Clients keep `_meta`, annotations and titles for themselves; the name, the description and
//! the input schema go into the model's context on every turn, so they are what is budgeted.
//! The registry is built as the server builds it with no SSH configured (as
//! `scripts/tools-list-size.py` measures); a listing that grows past its budget fails here,
//! and the fix is a tighter description or schema, not a bigger number.

use nandi_proxmox_mcp::compact;
use nandi_proxmox_mcp::policy::{Settings, Surface};
use nandi_proxmox_mcp::registry::{Capabilities, Registry};
use rmcp::model::Tool;

// Budgets of issue 22: default 24,000 B, full/advanced 90,000 B, compact 4,000 B
// (docs/PERFORMANCE.md has the before/after figures). Every surface is measured twice: with no
// SSH configured (as `scripts/tools-list-size.py` measures) and with SSH configured (five more
// tools), and both must hold. Lower a budget whenever a listing shrinks for good.

/// Default (read-only, core): the issue-22 goal, ≤ 24 KB.
const DEFAULT_BUDGET: usize = 24_000;
/// read-execute, core: a ceiling a little above the measured size.
const READ_EXECUTE_BUDGET: usize = 32_000;
/// full, advanced: the issue-22 goal, ≤ 90 KB.
const FULL_ADVANCED_BUDGET: usize = 90_000;
/// compact, any tier: the issue-22 goal, ≤ 4 KB.
const COMPACT_BUDGET: usize = 4_000;

fn settings(vars: &[(&str, &str)]) -> Settings {
    Settings::from_lookup(|key| {
        vars.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("valid settings")
}

/// Bytes of name + description + compact JSON of the input schema, summed over the listing.
fn model_visible(tools: &[Tool]) -> usize {
    tools
        .iter()
        .map(|tool| {
            tool.name.len()
                + tool.description.as_deref().map_or(0, str::len)
                + serde_json::to_vec(tool.input_schema.as_ref())
                    .expect("schema serialises")
                    .len()
        })
        .sum()
}

/// The listing as the server builds it (`Server::new` swaps in the meta-tools on the compact
/// surface), with or without SSH configured.
fn measure(vars: &[(&str, &str)], ssh: bool) -> (usize, usize) {
    let settings = settings(vars);
    let registry = Registry::build_for(&settings, Capabilities { ssh, pbs: false });
    let tools = match settings.surface {
        Surface::Compact => compact::tools(&registry),
        Surface::Full => registry.tools().as_ref().clone(),
    };
    (tools.len(), model_visible(&tools))
}

fn check(label: &str, vars: &[(&str, &str)], budget: usize) {
    for ssh in [false, true] {
        let (count, bytes) = measure(vars, ssh);
        let label = format!("{label}{}", if ssh { " with SSH" } else { "" });
        eprintln!("{label}: {count} tools, {bytes} model-visible bytes (budget {budget})");
        assert!(
            bytes <= budget,
            "{label}: {bytes} model-visible bytes in {count} tools exceed the budget of {budget}; \
             tighten descriptions or schemas (see docs/PERFORMANCE.md)"
        );
    }
}

#[test]
fn budget_default_listing() {
    check("default", &[], DEFAULT_BUDGET);
}

#[test]
fn budget_read_execute_listing() {
    check(
        "read-execute",
        &[("PVE_ACCESS_TIER", "read-execute")],
        READ_EXECUTE_BUDGET,
    );
}

#[test]
fn budget_full_advanced_listing() {
    check(
        "full/advanced",
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
        FULL_ADVANCED_BUDGET,
    );
}

#[test]
fn budget_compact_listing_at_every_tier() {
    for tier in ["read-only", "read-execute", "full"] {
        check(
            &format!("compact/{tier}/advanced"),
            &[
                ("PVE_TOOL_SURFACE", "compact"),
                ("PVE_ACCESS_TIER", tier),
                ("PVE_MODULE_MODE", "advanced"),
            ],
            COMPACT_BUDGET,
        );
    }
}

#[test]
fn budget_listed_aliases_cost_is_bounded() {
    // Listing the aliases again must stay a small addition, not a copy of each tool.
    let (_, hidden) = measure(
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
        false,
    );
    let (_, listed) = measure(
        &[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_MODULE_MODE", "advanced"),
            ("PVE_ALIASES", "listed"),
        ],
        false,
    );
    assert!(listed > hidden, "listed aliases add entries");
    assert!(listed - hidden < 12_000, "{}", listed - hidden);
}

/// What a configured Proxmox Backup Server adds to a listing: its rows are listed only where
/// one is, so the budgets above hold for every server without one. With one, the default
/// listing still holds the default budget, and what PBS adds to full/advanced is budgeted
/// on its own (19 tools; a ceiling a little above the measured 8,094 B).
const PBS_ADDITION_BUDGET: usize = 8_500;

#[test]
fn budget_a_pbs_adds_a_bounded_listing() {
    for (label, vars, whole) in [
        ("default", &[][..], Some(DEFAULT_BUDGET)),
        (
            "full/advanced",
            &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")][..],
            None,
        ),
    ] {
        let settings = settings(vars);
        let size = |pbs: bool| {
            let registry = Registry::build_for(&settings, Capabilities { ssh: false, pbs });
            let tools = registry.tools().as_ref().clone();
            (tools.len(), model_visible(&tools))
        };
        let ((without, bytes_without), (with, bytes_with)) = (size(false), size(true));
        let added = bytes_with - bytes_without;
        eprintln!(
            "{label} with a PBS: {with} tools ({} more), {bytes_with} model-visible bytes ({added} more; budget {PBS_ADDITION_BUDGET})",
            with - without
        );
        assert!(with > without, "{label}: a PBS lists its tools");
        assert!(
            added <= PBS_ADDITION_BUDGET,
            "{label}: a PBS adds {added} B"
        );
        if let Some(budget) = whole {
            assert!(bytes_with <= budget, "{label} with a PBS: {bytes_with} B");
        }
    }
}
