//! Resource pool tools: named groups of guests and storages used for permissions and
//! organisation.
//!
//! Invariant: membership changes go through `pve_update_pool` only (add by default,
//! remove with `delete=true`), so there is one way to change a pool and it is gated.

use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

/// Pool ids: letters, digits, `-`, `_`; nested pools separate levels with `/`.
const POOL_ID_PATTERN: &str = "^[A-Za-z0-9_][A-Za-z0-9_-]*(/[A-Za-z0-9_][A-Za-z0-9_-]*){0,2}$";

const POOLID: Param = Param::path(
    "poolid",
    ParamKind::String,
    "Pool ID as pve_list_pools shows it, e.g. \"prod\".",
)
.pattern(POOL_ID_PATTERN, 192);

/// Rows of the `pools` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_pools",
        title: "List resource pools",
        description: "List resource pools (groups of guests and storages used for permissions and organisation): poolid and comment. Filter by `type` to list only pools holding a given kind of member.",
        category: Category::Pools,
        params: &[Param::query(
            "type",
            ParamKind::String,
            "Only list pools that contain members of this kind: \"qemu\", \"lxc\" or \"storage\".",
        )
        .one_of(&["qemu", "lxc", "storage"])],
        backend: get("/pools"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_pool",
        title: "Get pool",
        description: "Read one resource pool: comment and members — guests (id \"qemu/101\", type, vmid, node, name, status) and storages (id \"storage/pve01/local\", type \"storage\"). Filter members with `type`.",
        category: Category::Pools,
        params: &[
            POOLID,
            Param::query(
                "type",
                ParamKind::String,
                "Only members of this kind: \"qemu\", \"lxc\" or \"storage\".",
            )
            .one_of(&["qemu", "lxc", "storage"]),
        ],
        backend: get("/pools/{poolid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_pool",
        title: "Create pool",
        description: "Create an empty resource pool; add guests and storages afterwards with pve_update_pool. Returns null.",
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
                "New pool ID (letters, digits, - _; \"parent/child\" for a nested pool).",
            )
            .pattern(POOL_ID_PATTERN, 192)
            .required(),
            Param::body(
                "comment",
                ParamKind::String,
                "Free-text description of the pool.",
            ),
        ],
        backend: post("/pools"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_pool",
        title: "Update pool",
        description: "Change a pool's comment or membership: `vms` and `storage` are added, or removed when `delete` is true. A guest already in another pool needs `allow-move`. Requires confirm=true after asking the user. Returns null.",
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
                "Guest IDs to add (or remove with delete=true), comma-separated, e.g. \"101,201\".",
            )
            .pattern("^[0-9]{3,9}(,[0-9]{3,9})*$", 4096),
            Param::body(
                "storage",
                ParamKind::String,
                "Storage IDs to add (or remove with delete=true), comma-separated, e.g. \"local,nas\".",
            ),
            Param::body(
                "delete",
                ParamKind::Boolean,
                "true removes the listed `vms`/`storage` from the pool instead of adding them.",
            ),
            Param::body(
                "allow-move",
                ParamKind::Boolean,
                "true moves guests that are in another pool into this one (else that is an error).",
            ),
        ],
        at_least_one_of: &["comment", "vms", "storage"],
        backend: put("/pools/{poolid}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_pool",
        title: "Delete pool",
        description: "Delete a resource pool. Proxmox refuses while it still has members; permissions granted on /pool/<id> are lost. Requires confirm=true after asking the user. Returns null.",
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
