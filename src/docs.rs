//! Generated documentation: `docs/TOOLS.md` rendered from the catalog rows.
//!
//! Pure functions (no I/O): the caller decides where the text goes. Invariant: the
//! document says nothing a row does not say — every cell is derived from a `ToolSpec`,
//! so `tests/docs_tools.rs` can demand that the committed file equals the rendering.

use std::fmt::Write as _;

use crate::catalog::{self, Backend, Category, Module, Tier, ToolSpec};

/// The file the rendering belongs in, relative to the project root.
pub const TOOLS_MD: &str = "docs/TOOLS.md";

/// `docs/TOOLS.md` for the whole catalog.
pub fn tools_markdown() -> String {
    let specs: Vec<&ToolSpec> = catalog::all().collect();
    render_tools(&specs)
}

/// Renders the tool reference for `specs` (in the given order).
pub fn render_tools(specs: &[&ToolSpec]) -> String {
    let mut out = String::new();
    let aliases: usize = specs.iter().map(|s| s.aliases.len()).sum();
    out.push_str("# Tools\n\n");
    out.push_str(
        "<!-- Generated from the catalog by src/docs.rs. Do not edit by hand: \
         `UPDATE_DOCS=1 cargo test --test docs_tools` rewrites this file. -->\n\n",
    );
    let _ = writeln!(
        out,
        "{} tools and {} legacy aliases. What a server exposes depends on `PVE_ACCESS_TIER` \
         (default `read-only`), `PVE_MODULE_MODE` (default `core`), `PVE_CATEGORIES` and the \
         allow/deny lists; `nandi-proxmox-mcp tools` prints the tools of your settings.\n",
        specs.len(),
        aliases
    );
    out.push_str(&counts_table(specs));
    out.push_str("\n## Tools\n\n");
    out.push_str(
        "Confirm: the call needs `confirm: true` and is announced to the client as needing a \
         person. Request: the Proxmox API call (`?key=value` is always sent; \
         `key=value by default` is sent unless the caller gives that parameter).\n\n",
    );
    out.push_str(
        "| Tool | Category | Tier | Module | Destructive | Confirm | Idempotent | Deprecated | Aliases | Request |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for spec in specs {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            spec.name,
            spec.category.as_str(),
            spec.tier.as_str(),
            spec.module.as_str(),
            yes_no(spec.effect.is_destructive()),
            yes_no(spec.confirm),
            yes_no(spec.effect.is_idempotent()),
            yes_no(spec.deprecated),
            aliases_cell(spec),
            escape(&request_cell(spec)),
        );
    }
    out
}

/// The per-category count table (categories without tools are left out).
fn counts_table(specs: &[&ToolSpec]) -> String {
    let mut out = String::from("## Counts by category\n\n");
    out.push_str("| Category | Tools | read-only | read-execute | full | core | advanced |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    let count = |category: Option<Category>, keep: &dyn Fn(&ToolSpec) -> bool| {
        specs
            .iter()
            .filter(|s| category.is_none_or(|c| s.category == c))
            .filter(|s| keep(s))
            .count()
    };
    let rows = Category::ALL.into_iter().map(Some).chain([None]);
    for category in rows {
        let total = count(category, &|_| true);
        if total == 0 && category.is_some() {
            continue;
        }
        let by_tier = |tier: Tier| count(category, &|s: &ToolSpec| s.tier == tier);
        let by_module = |module: Module| count(category, &|s: &ToolSpec| s.module == module);
        let label = category.map_or("**all**", Category::as_str);
        let _ = writeln!(
            out,
            "| {label} | {total} | {} | {} | {} | {} | {} |",
            by_tier(Tier::ReadOnly),
            by_tier(Tier::ReadExecute),
            by_tier(Tier::Full),
            by_module(Module::Core),
            by_module(Module::Advanced),
        );
    }
    out
}

fn yes_no(flag: bool) -> &'static str {
    if flag { "yes" } else { "no" }
}

fn aliases_cell(spec: &ToolSpec) -> String {
    if spec.aliases.is_empty() {
        return "—".into();
    }
    spec.aliases
        .iter()
        .map(|a| format!("`{a}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `GET /path?fixed=1` (`key=value by default`), plus the fan-out note of legacy lists.
fn request_cell(spec: &ToolSpec) -> String {
    let (method, path) = spec.backend.summary();
    let fixed: Vec<String> = spec
        .params
        .iter()
        .filter(|p| p.fixed)
        .filter_map(|p| p.default.map(|v| format!("{}={v}", p.api_name())))
        .collect();
    let defaults: Vec<String> = spec
        .params
        .iter()
        .filter(|p| !p.fixed)
        .filter_map(|p| p.default.map(|v| format!("{}={v}", p.api_name())))
        .collect();
    let mut cell = format!("`{method} {path}");
    if !fixed.is_empty() {
        cell.push('?');
        cell.push_str(&fixed.join("&"));
    }
    cell.push('`');
    if !defaults.is_empty() {
        let _ = write!(cell, " ({} by default)", defaults.join(", "));
    }
    if matches!(spec.backend, Backend::PerNodeList { .. }) {
        cell.push_str(" — every node when `node` is omitted");
    }
    cell
}

/// Keeps a table cell one cell: a `|` inside would split it.
fn escape(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_tool_and_counts_add_up() {
        let text = tools_markdown();
        let rows = text.lines().filter(|l| l.starts_with("| `")).count();
        assert_eq!(rows, catalog::all().count());
        let total_line = text
            .lines()
            .find(|l| l.starts_with("| **all** |"))
            .expect("total row");
        let total: usize = total_line
            .split('|')
            .nth(2)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(total, catalog::all().count());
    }

    #[test]
    fn fixed_and_default_parameters_show_in_the_request() {
        let bridges = catalog::find("pve_list_node_bridges").unwrap();
        assert_eq!(
            request_cell(bridges),
            "`GET /nodes/{node}/network?type=bridge`"
        );
        let syslog = catalog::find("pve_get_node_syslog").unwrap();
        assert_eq!(
            request_cell(syslog),
            "`GET /nodes/{node}/syslog` (limit=100 by default)"
        );
        let hour = catalog::find("pve_get_node_metrics_hour").unwrap();
        assert_eq!(
            request_cell(hour),
            "`GET /nodes/{node}/rrddata?timeframe=hour` (cf=AVERAGE by default)"
        );
    }

    #[test]
    fn pipes_never_split_a_cell() {
        assert_eq!(escape("a|b"), "a\\|b");
    }
}
