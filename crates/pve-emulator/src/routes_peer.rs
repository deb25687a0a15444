//! Routes of the peer-surface tools: agent ping, exec status and files, node power, PCI
//! mappings, download-url, console proxies, Ceph status and SDN.
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema accepts for it
//! (checked by `tests/schema.rs`).

use super::api::{bool, int, one_of, s};
use super::handlers::peer;
use super::route::{Route, delete, get, post, put};

const CHECKSUMS: &[&str] = &["md5", "sha1", "sha224", "sha256", "sha384", "sha512"];

/// Routes of this table (see `routes::TABLES`).
pub(super) static ROUTES: &[Route] = &[
    post(
        "/nodes/{node}/status",
        &[one_of("command", &["reboot", "shutdown"]).required()],
        peer::node_power,
    ),
    post("/nodes/{node}/qemu/{vmid}/agent/ping", &[], peer::ping),
    get(
        "/nodes/{node}/qemu/{vmid}/agent/exec-status",
        &[int("pid").required()],
        peer::exec_status,
    ),
    get(
        "/nodes/{node}/qemu/{vmid}/agent/file-read",
        &[s("file").required()],
        peer::file_read,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/agent/file-write",
        &[
            s("content").required(),
            bool("encode"),
            s("file").required(),
        ],
        peer::file_write,
    ),
    get("/cluster/mapping/pci", &[s("check-node")], peer::pci_list),
    post(
        "/cluster/mapping/pci",
        &[
            s("description"),
            s("id").required(),
            bool("live-migration-capable"),
            s("map").required(),
            bool("mdev"),
        ],
        peer::pci_create,
    ),
    get("/cluster/mapping/pci/{id}", &[], peer::pci_get),
    put(
        "/cluster/mapping/pci/{id}",
        &[
            s("delete"),
            s("description"),
            s("digest"),
            bool("live-migration-capable"),
            s("map"),
            bool("mdev"),
        ],
        peer::pci_update,
    ),
    delete("/cluster/mapping/pci/{id}", &[], peer::pci_delete),
    post(
        "/nodes/{node}/storage/{storage}/download-url",
        &[
            s("checksum"),
            one_of("checksum-algorithm", CHECKSUMS),
            s("compression"),
            one_of("content", &["iso", "vztmpl", "import"]).required(),
            s("filename").required(),
            s("url").required(),
            bool("verify-certificates"),
        ],
        peer::download_url,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/vncproxy",
        &[bool("generate-password"), bool("websocket")],
        peer::qemu_console,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/termproxy",
        &[one_of(
            "serial",
            &["serial0", "serial1", "serial2", "serial3"],
        )],
        peer::qemu_console,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/vncproxy",
        &[int("height"), bool("websocket"), int("width")],
        peer::lxc_console,
    ),
    post("/nodes/{node}/lxc/{vmid}/termproxy", &[], peer::lxc_console),
    get("/cluster/ceph/status", &[], peer::ceph_status),
    get(
        "/cluster/sdn/zones",
        &[
            bool("pending"),
            bool("running"),
            one_of(
                "type",
                &["evpn", "faucet", "qinq", "simple", "vlan", "vxlan"],
            ),
        ],
        peer::sdn_zones,
    ),
    get(
        "/cluster/sdn/vnets",
        &[bool("pending"), bool("running")],
        peer::sdn_vnets,
    ),
];
