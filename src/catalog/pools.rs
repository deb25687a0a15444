//! Resource pool tools: named groups of guests and storages used for permissions and
//! organisation.
//!
//! Invariant: membership changes go through `pve_update_pool` only (add by default,
//! remove with `delete=true`), so there is one way to change a pool and it is gated.

use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

/// Pool ids: letters, digits, `-`, `_`; nested pools separate levels with `/`.
const POOL_ID_PATTERN: &str = "^[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9_-]*){0,2}$";

const POOLID: Param = Param::path("poolid", ParamKind::String, "Pool ID, e.g. \"prod\".")
    .pattern(POOL_ID_PATTERN, 192);

/// Rows of the `pools` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_pools",
        title: "List resource pools",
        description: "List resource pools: poolid, comment. Filter by member `type`.",
        category: Category::Pools,
        params: &[Param::query(
            "type",
            ParamKind::String,
            "Only pools with members of this kind.",
        )
        .one_of(&["qemu", "lxc", "storage"])],
        backend: get("/pools"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_pool",
        title: "Get pool",
        description: "One pool's comment and members (guests and storages). Filter members with `type`.",
        category: Category::Pools,
        params: &[
            POOLID,
            Param::query("type", ParamKind::String, "Only members of this kind.")
                .one_of(&["qemu", "lxc", "storage"]),
        ],
        backend: get("/pools/{poolid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_pool",
        title: "Create pool",
        description: "Create an empty resource pool; add members with pve_update_pool. Returns null.",
        category: Category::Pools,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: false,
            idempotent: false,
        },
        params: &[
            Param::body(
                "poolid",
                ParamKind::String,
                "New pool ID (\"parent/child\" for nested).",
            )
            .pattern(POOL_ID_PATTERN, 192)
            .required(),
            Param::body("comment", ParamKind::String, "Free-text description."),
        ],
        backend: post("/pools"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_pool",
        title: "Update pool",
        description: "Add `vms`/`storage` to a pool, or remove them with `delete`. `allow-move` takes guests from another pool. Returns null.",
        category: Category::Pools,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            POOLID,
            Param::body("comment", ParamKind::String, "New free-text description."),
            Param::body(
                "vms",
                ParamKind::String,
                "Guest IDs, comma list, e.g. \"101,201\".",
            )
            .pattern("^[0-9]{3,9}(,[0-9]{3,9})*$", 4096),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage IDs, comma list, e.g. \"local,nas\".",
            ),
            Param::body(
                "delete",
                ParamKind::Boolean,
                "Remove the listed members instead of adding.",
            ),
            Param::body(
                "allow-move",
                ParamKind::Boolean,
                "Move guests from another pool into this one.",
            ),
        ],
        at_least_one_of: &["comment", "vms", "storage"],
        backend: put("/pools/{poolid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_pool",
        title: "Delete pool",
        description: "Delete an empty resource pool; permissions on /pool/<id> are lost. Returns null.",
        category: Category::Pools,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[POOLID],
        backend: delete("/pools/{poolid}"),
        ..ToolSpec::BASE
    },
];
