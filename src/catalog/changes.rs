//! The undo tools: `pve_list_changes` lists the recorded changes (undo records beside the
//! audit log) and `pve_undo_change` reverts one of them.
//!
//! Invariant: the revert row is not `confirm`: its requests are planned and checked against
//! Proxmox before the gate (`composite::undo_change`), so the gate asks a person exactly when
//! the revert does more than read — every revert that changes something — and a stale record
//! is refused before anyone is asked.

use super::types::{Backend, Category, CompositeOp, Effect, Param, ParamKind, Tier, ToolSpec};

/// Rows of the undo tools.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_changes",
        title: "List recorded changes",
        description: "Recorded changes with their undo, newest first: id, tool, target, the revert it would send.",
        category: Category::Tasks,
        // Nothing is changed, so nothing recorded, below read-execute.
        tier: Tier::ReadExecute,
        effect: Effect::Read,
        params: &[],
        backend: Backend::Composite(CompositeOp::ListChanges),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_undo_change",
        title: "Revert a recorded change",
        description: "Revert one recorded change (id from pve_list_changes); refused if its target changed since.",
        category: Category::Tasks,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        params: &[Param::arg(
            "id",
            ParamKind::Integer,
            "The change's id, as pve_list_changes lists it.",
        )
        .range(1, 9_007_199_254_740_991)
        .required()],
        backend: Backend::Composite(CompositeOp::UndoChange),
        timeout_ms: 60_000,
        ..ToolSpec::BASE
    },
];
