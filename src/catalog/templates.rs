//! Template tools: QEMU templates, ISO images, container templates and cloud-init.
//!
//! Invariant: the list tools really select what their names promise — ISO and container
//! template lists send Proxmox's `content` filter, and the QEMU template list keeps only
//! `template == 1` entries (a result filter, because the API has no such parameter).

use super::params::{GUEST, NODE, STORAGE, join, total};
use super::qemu_lifecycle::TEMPLATE_PARAMS;
use super::qemu_params::CLOUDINIT;
use super::types::{
    Category, Effect, Legs, Location, Param, ParamKind, ResultFilter, Tier, ToolSpec, get, post,
    put,
};

const CLOUDINIT_PARTS: &[&[Param]] = &[
    GUEST,
    CLOUDINIT,
    &[
        Param::body(
            "ciupgrade",
            ParamKind::Boolean,
            "Upgrade packages on first boot.",
        ),
        super::params::DIGEST,
    ],
];
const CLOUDINIT_PARAMS: [Param; total(CLOUDINIT_PARTS)] = join(CLOUDINIT_PARTS);

/// Rows of the `templates` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_get_qemu_cloudinit_dump",
        title: "Dump VM cloud-init data",
        description: "Cloud-init data Proxmox generates for a VM: user (default), network or meta document. May hold keys: sensitive.",
        category: Category::Templates,
        legs: Legs::SENSITIVE,
        params: &[
            NODE,
            GUEST[1],
            Param::query("type", ParamKind::String, "Which document (default user).")
                .one_of(&["user", "network", "meta"])
                .default("user"),
        ],
        backend: get("/nodes/{node}/qemu/{vmid}/cloudinit/dump"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_qemu_templates",
        title: "List VM templates on a node",
        description: "A node's VM templates: vmid, name, maxdisk/maxmem (bytes), tags. Clone with pve_qemu_clone.",
        category: Category::Templates,
        params: &[NODE],
        backend: get("/nodes/{node}/qemu"),
        result_filter: Some(ResultFilter::int("template", 1)),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_iso_images",
        title: "List ISO images",
        description: "ISO images on a storage: volid (use as ide2=\"<volid>,media=cdrom\"), size (bytes), ctime (Unix s).",
        category: Category::Templates,
        params: &[
            NODE,
            STORAGE,
            Param::fixed(
                "content",
                ParamKind::String,
                Location::Query,
                "iso",
                "Always \"iso\": only ISO images.",
            ),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_storage_templates",
        title: "List container templates",
        description: "Container templates on a storage: volid (pve_lxc_create `ostemplate`), size (bytes), ctime (Unix s).",
        category: Category::Templates,
        params: &[
            NODE,
            STORAGE,
            Param::fixed(
                "content",
                ParamKind::String,
                Location::Query,
                "vztmpl",
                "Always \"vztmpl\": only templates.",
            ),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_set_qemu_cloudinit",
        title: "Set VM cloud-init options",
        description: "Set a VM's cloud-init keys; needs a cloud-init drive, applies at next boot. Returns null.",
        category: Category::Templates,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &CLOUDINIT_PARAMS,
        at_least_one_of: &[
            "ipconfig",
            "ciuser",
            "cipassword",
            "sshkeys",
            "nameserver",
            "searchdomain",
            "ciupgrade",
        ],
        backend: put("/nodes/{node}/qemu/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_create_qemu_template",
        starts_task: true,
        title: "Convert VM to template (older name)",
        description: "Older name of pve_qemu_create_template. Returns a task UPID.",
        category: Category::Templates,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: TEMPLATE_PARAMS,
        backend: post("/nodes/{node}/qemu/{vmid}/template"),
        ..ToolSpec::BASE
    },
];
