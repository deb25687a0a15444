//! The tool catalog: every tool the server can expose, one `ToolSpec` row each.
//!
//! A row is the single source of truth for a tool. The JSON input schema, argument
//! validation, MCP annotations, `_meta`, retry class, policy decision and generated docs
//! are all *derived* from it (see `schema`, `registry`, `policy`), so a tool is never
//! described twice. Invariant guarded here: rows are plain `const` data — building the
//! catalog does no I/O and cannot fail at run time; `tests/catalog.rs` checks the rows
//! (unique names, described parameters, paths that exist in the official PVE API schema).

mod access;
mod agent;
mod api;
mod backend;
mod backup;
mod changes;
mod cluster;
mod downloads;
pub mod effects;
mod filter;
mod firewall;
mod gate;
pub mod indexed;
mod lxc;
mod lxc_lifecycle;
mod mapping;
mod monitoring;
mod network;
mod node_access;
mod node_ops;
mod nodes;
mod overview;
mod param;
pub mod params;
mod pbs;
mod plans;
mod pools;
pub mod privileges;
pub mod privileges_keys;
mod qemu;
mod qemu_lifecycle;
mod qemu_params;
mod remote;
mod storage;
mod tasks;
mod templates;
mod types;

pub use types::{
    ArgRule, Backend, Category, CompositeOp, Effect, FilterValue, HttpMethod, Legs, Location,
    Module, Param, ParamKind, ResultFilter, SshOp, Tier, ToolSpec, When, delete, get, post,
    power_action, put,
};

/// Every catalog row, grouped by category in a stable order (the order of `tools/list`).
pub fn all() -> impl Iterator<Item = &'static ToolSpec> {
    [
        nodes::TOOLS,
        node_ops::TOOLS,
        cluster::TOOLS,
        overview::TOOLS,
        mapping::TOOLS,
        qemu::TOOLS,
        qemu_lifecycle::TOOLS,
        lxc::TOOLS,
        lxc_lifecycle::TOOLS,
        storage::TOOLS,
        downloads::TOOLS,
        backup::TOOLS,
        pbs::TOOLS,
        tasks::TOOLS,
        changes::TOOLS,
        plans::TOOLS,
        network::TOOLS,
        firewall::TOOLS,
        pools::TOOLS,
        access::TOOLS,
        templates::TOOLS,
        agent::TOOLS,
        remote::TOOLS,
        monitoring::TOOLS,
        api::TOOLS,
        node_access::TOOLS,
    ]
    .into_iter()
    .flatten()
}

/// Looks a canonical tool up by its wire name (aliases are not resolved here).
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    all().find(|spec| spec.name == name)
}

/// Every wire name a user may write in an allow/deny list: canonical names only,
/// because aliases always follow their canonical tool.
pub fn canonical_names() -> impl Iterator<Item = &'static str> {
    all().map(|spec| spec.name)
}
