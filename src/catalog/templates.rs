//! Template tools: QEMU templates, ISO images, container templates and cloud-init.
//!
//! Invariant: the list tools really select what their names promise — ISO and container
//! template lists send Proxmox's `content` filter, and the QEMU template list keeps only
//! `template == 1` entries (a result filter, because the API has no such parameter).

use super::params::{GUEST, NODE, STORAGE, join, total};
use super::qemu_lifecycle::TEMPLATE_PARAMS;
use super::qemu_params::CLOUDINIT;
use super::types::{
    Category, Effect, Location, Param, ParamKind, ResultFilter, Tier, ToolSpec, get, post, put,
};

const CLOUDINIT_PARTS: &[&[Param]] = &[
    GUEST,
    CLOUDINIT,
    &[
        Param::body(
            "ciupgrade",
            ParamKind::Boolean,
            "Let cloud-init upgrade the guest's packages on first boot (Proxmox default true).",
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
        description: "Show the cloud-init configuration Proxmox generates for a VM, as the YAML/text the guest will read: `type` user (user-data: users, SSH keys, packages; default), network (network-config) or meta (meta-data). May contain user names and keys; treat it as sensitive.",
        category: Category::Templates,
        params: &[
            NODE,
            GUEST[1],
            Param::query(
                "type",
                ParamKind::String,
                "Which document: \"user\" (user-data), \"network\" (network-config) or \"meta\" (meta-data).",
            )
            .one_of(&["user", "network", "meta"])
            .default("user"),
        ],
        backend: get("/nodes/{node}/qemu/{vmid}/cloudinit/dump"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_qemu_templates",
        title: "List VM templates on a node",
        description: "List only the QEMU VM templates on one node (entries with template=1): vmid, name, maxdisk/maxmem (bytes), tags. Clone one with pve_qemu_clone. Ordinary VMs are left out; for those use pve_list_qemu_vms.",
        category: Category::Templates,
        params: &[NODE],
        backend: get("/nodes/{node}/qemu"),
        result_filter: Some(ResultFilter::int("template", 1)),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_iso_images",
        title: "List ISO images",
        description: "List the ISO images on one storage of a node: volid (e.g. \"local:iso/debian-12.iso\", usable as ide2=\"<volid>,media=cdrom\" when creating a VM), size (bytes), ctime (Unix seconds). The storage must have content type \"iso\" (see pve_list_storage).",
        category: Category::Templates,
        params: &[
            NODE,
            STORAGE,
            Param::fixed(
                "content",
                ParamKind::String,
                Location::Query,
                "iso",
                "Always \"iso\": only ISO images are listed.",
            ),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_list_storage_templates",
        title: "List container templates",
        description: "List the LXC OS templates on one storage of a node: volid (e.g. \"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst\", the `ostemplate` of pve_lxc_create), size (bytes), ctime (Unix seconds). The storage must have content type \"vztmpl\".",
        category: Category::Templates,
        params: &[
            NODE,
            STORAGE,
            Param::fixed(
                "content",
                ParamKind::String,
                Location::Query,
                "vztmpl",
                "Always \"vztmpl\": only container templates are listed.",
            ),
        ],
        backend: get("/nodes/{node}/storage/{storage}/content"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_set_qemu_cloudinit",
        title: "Set VM cloud-init options",
        description: "Set a VM's cloud-init options: ciuser, cipassword (secret, never logged), sshkeys (plain OpenSSH public keys, one per line — encoded for Proxmox automatically), ipconfigN (\"ip=dhcp\" or \"ip=10.0.0.5/24,gw=10.0.0.1\" for netN), nameserver, searchdomain. The VM needs a cloud-init drive (e.g. ide2=\"local-lvm:cloudinit\"); changes apply at the next boot. Requires confirm=true. Returns null on success; check with pve_get_qemu_cloudinit_dump.",
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
        title: "Convert VM to template (older name)",
        description: "Same tool as pve_qemu_create_template, kept under this name for existing allow-lists: converts a stopped VM into a template, irreversibly. Prefer pve_qemu_create_template. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
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
