//! Resource pool tools: named groups of guests and storages used for permissions and
//! organisation.
//!
//! Invariants: membership changes go through `pve_update_pool` only (add by default,
//! remove with `delete=true`), so there is one way to change a pool and it is gated; every
//! row uses PVE 9's non-deprecated `/pools` endpoints with `poolid` as a parameter, never
//! `/pools/{poolid}`, because pveproxy decodes `%2F` before routing and so cannot reach a
//! nested pool (`prod/web`) through the path.

use super::params::{POOL_ID_MAX, POOL_ID_PATTERN, VMID_LIST_PATTERN};
use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

const POOLID_DESCRIPTION: &str = "Pool ID (nested: \"prod/web\").";

/// The pool addressed by a read or a delete (query string).
const POOLID_QUERY: Param = Param::query("poolid", ParamKind::String, POOLID_DESCRIPTION)
    .pattern(POOL_ID_PATTERN, POOL_ID_MAX)
    .required();

/// The pool addressed by an update (form body).
const POOLID_BODY: Param = Param::body("poolid", ParamKind::String, POOLID_DESCRIPTION)
    .pattern(POOL_ID_PATTERN, POOL_ID_MAX)
    .required();

/// Rows of the `pools` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_pools",
        title: "List resource pools",
        description: "Resource pools: poolid, comment. Members and the member `type` filter are in pve_get_pool.",
        category: Category::Pools,
        backend: get("/pools"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_pool",
        title: "Get pool",
        description: "One pool (nested \"prod/web\" too) as [{poolid, comment, members}]; members are guests and storages, filtered by `type`.",
        category: Category::Pools,
        params: &[
            POOLID_QUERY,
            Param::query("type", ParamKind::String, "Only members of this kind.")
                .one_of(&["qemu", "lxc", "storage"]),
        ],
        backend: get("/pools"),
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
                "New pool ID (\"parent/child\" nests).",
            )
            .pattern(POOL_ID_PATTERN, POOL_ID_MAX)
            .required(),
            Param::body("comment", ParamKind::String, "Free text."),
        ],
        backend: post("/pools"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_pool",
        title: "Update pool",
        description: "Add `vms`/`storage` to a pool, or remove them with `delete`. Returns null.",
        category: Category::Pools,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[
            POOLID_BODY,
            Param::body("comment", ParamKind::String, "New free-text description."),
            Param::body("vms", ParamKind::String, "Guest IDs, comma list.")
                .pattern(VMID_LIST_PATTERN, 4096),
            Param::body("storage", ParamKind::String, "Storage IDs, comma list."),
            Param::body("delete", ParamKind::Boolean, "Remove the members instead."),
            Param::body(
                "allow-move",
                ParamKind::Boolean,
                "Take guests from another pool.",
            ),
        ],
        at_least_one_of: &["comment", "vms", "storage"],
        backend: put("/pools"),
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
        params: &[POOLID_QUERY],
        backend: delete("/pools"),
        ..ToolSpec::BASE
    },
];
