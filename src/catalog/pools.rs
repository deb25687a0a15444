//! Resource pool tools.

use super::types::{Category, Param, ParamKind, ToolSpec, get};

/// Rows of the `pools` category.
pub(super) const TOOLS: &[ToolSpec] = &[ToolSpec {
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
}];
