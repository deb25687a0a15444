//! The generic API call, as two rows: `pve_api_call` (GET, tier read-only) and
//! `pve_api_write` (POST/PUT/DELETE, tier full, approval on every call).
//!
//! Two rows rather than one row gated on `method`: the tier is a property of the row, so
//! the policy filter hides the write row below `full` (it is never even listed with default
//! settings), its annotations say `destructiveHint: true` while the read row says
//! `readOnlyHint: true`, and no handler has to re-implement a tier check. Invariant: the
//! read row has no `method` parameter, so its handler can only send GET.

use super::types::{
    Backend, Category, CompositeOp, Effect, Legs, Module, Param, ParamKind, Tier, ToolSpec,
};

// No row pattern: the handler's structural check names the exact rule a path breaks.
const PATH: Param = Param {
    max_length: Some(1024),
    ..Param::arg(
        "path",
        ParamKind::String,
        "Path under /api2/json, unencoded: /nodes/pve01/qemu/100/config. No .., %, ?, #.",
    )
    .required()
};

const PARAMS: Param = Param::arg(
    "params",
    ParamKind::StringArray,
    "Array of \"key=value\" strings, e.g. [\"type=vm\"]; indexed keys as net0; booleans 0/1.",
);

/// Rows of the generic API call.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_api_call",
        title: "Read any API path",
        description: "GET any /api2/json path, checked first against this cluster's API schema. Returns {endpoint, schema, data}.",
        category: Category::Cluster,
        tier: Tier::ReadOnly,
        module: Module::Advanced,
        effect: Effect::Read,
        params: &[PATH, PARAMS],
        legs: Legs::SENSITIVE_UNTRUSTED,
        backend: Backend::Composite(CompositeOp::ApiCall),
        timeout_ms: 30_000,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_api_write",
        title: "Change anything through the API",
        description: "POST/PUT/DELETE any /api2/json path after a person approves; schema-checked, never retried. Returns {endpoint, schema, data}.",
        category: Category::Cluster,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            Param::arg(
                "method",
                ParamKind::String,
                "POST (create/act), PUT (update) or DELETE.",
            )
            .required()
            .one_of(&["POST", "PUT", "DELETE"]),
            PATH,
            PARAMS,
        ],
        // POST …/agent/exec, …/execute and the like run programs.
        legs: Legs {
            untrusted: true,
            sensitive: true,
            executes: true,
        },
        backend: Backend::Composite(CompositeOp::ApiCall),
        timeout_ms: 60_000,
        ..ToolSpec::BASE
    },
];
