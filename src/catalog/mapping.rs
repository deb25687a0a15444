//! PCI resource mappings (`/cluster/mapping/pci`): cluster-wide names for host devices
//! that guests use as `hostpciN: mapping=<id>`.
//!
//! Invariant: reads are `read-only`; writes are `full`, and the update and delete rows are
//! confirm-gated because a changed or removed mapping detaches devices from guests.

use super::params::DIGEST;
use super::types::{Category, Effect, Param, ParamKind, Tier, ToolSpec, delete, get, post, put};

/// A mapping id (`pve-configid`).
const ID_PATTERN: &str = "^[A-Za-z][A-Za-z0-9_-]{0,63}$";

const ID: Param = Param::path("id", ParamKind::String, "Mapping ID.").matching(ID_PATTERN);

const MAP: Param = Param::body(
    "map",
    ParamKind::StringArray,
    "Per node: \"node=pve01,path=0000:01:00.0,id=10de:1eb8\".",
);

const DESCRIPTION: Param =
    Param::body("description", ParamKind::String, "Free text.").pattern("^[^\\x00]*$", 4096);

const CHANGE: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

/// Rows of the PCI-mapping part of the `cluster` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_pci_mappings",
        title: "List PCI mappings",
        description: "Cluster PCI mappings: id, description, map (node, path, id per node). Use in hostpciN as mapping=<id>.",
        category: Category::Cluster,
        params: &[Param::query(
            "check-node",
            ParamKind::String,
            "Check the mapping on this node.",
        )
        .matching(super::params::NODE_PATTERN)],
        backend: get("/cluster/mapping/pci"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_pci_mapping",
        title: "Get PCI mapping",
        description: "One PCI mapping: description, map entries per node, mdev, live-migration-capable, `digest`.",
        category: Category::Cluster,
        params: &[ID],
        backend: get("/cluster/mapping/pci/{id}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_pci_mapping",
        title: "Create PCI mapping",
        description: "Create a cluster PCI mapping from per-node device entries. Returns null.",
        category: Category::Cluster,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: false,
            idempotent: false,
        },
        params: &[
            Param::body("id", ParamKind::String, "New mapping ID, e.g. \"gpu0\".")
                .matching(ID_PATTERN)
                .required(),
            MAP.required(),
            DESCRIPTION,
            Param::body("mdev", ParamKind::Boolean, "Supports mediated devices."),
            Param::body(
                "live-migration-capable",
                ParamKind::Boolean,
                "Devices can be live-migrated.",
            ),
        ],
        backend: post("/cluster/mapping/pci"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_update_pci_mapping",
        title: "Update PCI mapping",
        description: "Change a PCI mapping's map, description or flags; `delete` clears keys. Guests using it see the change.",
        category: Category::Cluster,
        tier: Tier::Full,
        effect: CHANGE,
        confirm: true,
        params: &[
            ID,
            MAP,
            DESCRIPTION,
            Param::body("mdev", ParamKind::Boolean, "Supports mediated devices."),
            Param::body(
                "live-migration-capable",
                ParamKind::Boolean,
                "Devices can be live-migrated.",
            ),
            Param::body("delete", ParamKind::String, "Comma list of keys to clear.")
                .pattern("^[A-Za-z0-9_-]+(,[A-Za-z0-9_-]+)*$", 4096),
            DIGEST,
        ],
        at_least_one_of: &[
            "map",
            "description",
            "mdev",
            "live-migration-capable",
            "delete",
        ],
        backend: put("/cluster/mapping/pci/{id}"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_pci_mapping",
        title: "Delete PCI mapping",
        description: "Delete a PCI mapping; guests referring to it fail to start until changed.",
        category: Category::Cluster,
        tier: Tier::Full,
        effect: CHANGE,
        confirm: true,
        params: &[ID],
        backend: delete("/cluster/mapping/pci/{id}"),
        ..ToolSpec::BASE
    },
];
