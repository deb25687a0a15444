//! Guest lifecycle routes: create, clone, delete, migrate, snapshots, configuration
//! updates, cloud-init, guest agent and templates, for QEMU and LXC.
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema accepts for
//! it, so a tool that sends anything else is refused with a 400 like pveproxy does.

use super::guest_params::*;
use super::handlers::{agent, guest_config, lifecycle, snapshots};
use super::route::{Route, delete, get, post, put};

/// Routes of this table (see `routes::TABLES`).
pub(super) static ROUTES: &[Route] = &[
    post("/nodes/{node}/qemu", QM_CREATE, lifecycle::qemu_create),
    delete(
        "/nodes/{node}/qemu/{vmid}",
        QM_DESTROY,
        lifecycle::qemu_destroy,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/migrate",
        QM_MIGRATE,
        lifecycle::qemu_migrate,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/clone",
        QM_CLONE,
        lifecycle::qemu_clone,
    ),
    put(
        "/nodes/{node}/qemu/{vmid}/config",
        QM_CONFIG_PUT,
        guest_config::qemu_update,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/config",
        QM_CONFIG_POST,
        guest_config::qemu_update_async,
    ),
    put(
        "/nodes/{node}/qemu/{vmid}/resize",
        QM_RESIZE,
        guest_config::qemu_resize,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/template",
        QM_TEMPLATE,
        guest_config::qemu_template,
    ),
    get(
        "/nodes/{node}/qemu/{vmid}/snapshot",
        &[],
        snapshots::qemu_list,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/snapshot",
        QM_SNAPSHOT,
        snapshots::qemu_create,
    ),
    delete(
        "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}",
        SNAPSHOT_DELETE,
        snapshots::qemu_delete,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
        SNAPSHOT_ROLLBACK,
        snapshots::qemu_rollback,
    ),
    get("/nodes/{node}/qemu/{vmid}/agent/info", &[], agent::info),
    get(
        "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
        &[],
        agent::network,
    ),
    get(
        "/nodes/{node}/qemu/{vmid}/agent/get-osinfo",
        &[],
        agent::osinfo,
    ),
    get(
        "/nodes/{node}/qemu/{vmid}/agent/get-fsinfo",
        &[],
        agent::fsinfo,
    ),
    post("/nodes/{node}/qemu/{vmid}/agent/exec", QM_EXEC, agent::exec),
    get(
        "/nodes/{node}/qemu/{vmid}/cloudinit/dump",
        QM_CLOUDINIT_DUMP,
        agent::cloudinit_dump,
    ),
    post("/nodes/{node}/lxc", CT_CREATE, lifecycle::lxc_create),
    delete(
        "/nodes/{node}/lxc/{vmid}",
        CT_DESTROY,
        lifecycle::lxc_destroy,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/migrate",
        CT_MIGRATE,
        lifecycle::lxc_migrate,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/clone",
        CT_CLONE,
        lifecycle::lxc_clone,
    ),
    put(
        "/nodes/{node}/lxc/{vmid}/config",
        CT_CONFIG_PUT,
        guest_config::lxc_update,
    ),
    get(
        "/nodes/{node}/lxc/{vmid}/snapshot",
        &[],
        snapshots::lxc_list,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/snapshot",
        CT_SNAPSHOT,
        snapshots::lxc_create,
    ),
    delete(
        "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}",
        SNAPSHOT_DELETE,
        snapshots::lxc_delete,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback",
        SNAPSHOT_ROLLBACK,
        snapshots::lxc_rollback,
    ),
];
