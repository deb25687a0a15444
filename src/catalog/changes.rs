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
        description: "Changes this server recorded with their undo, newest first: id, auditSeq, time, tool, target, the revert it would send, revertible.",
        category: Category::Tasks,
        tier: Tier::ReadOnly,
        effect: Effect::Read,
        params: &[],
        backend: Backend::Composite(CompositeOp::ListChanges),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_undo_change",
        title: "Revert a recorded change",
        description: "Revert one recorded change (id from pve_list_changes); refused if its target changed since. Asks a person. Returns what was sent.",
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
