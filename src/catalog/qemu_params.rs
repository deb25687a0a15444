//! QEMU configuration keys shared by the create, update and cloud-init rows, described
//! once with Proxmox's units and property-string syntax.
//!
//! Invariant: every key here exists under the same name in the PVE 9.1 schema of both
//! `POST /nodes/{node}/qemu` and `PUT /nodes/{node}/qemu/{vmid}/config` (checked by
//! `tests/catalog.rs`); index ranges are Proxmox's own (scsi 0–30, virtio 0–15, sata 0–5,
//! ide 0–3, net/ipconfig 0–31).

use super::params::DIGEST;
use super::types::{Param, ParamKind};

const OSTYPES: &[&str] = &[
    "other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24",
    "l26", "solaris",
];
const SCSIHW: &[&str] = &[
    "lsi",
    "lsi53c810",
    "virtio-scsi-pci",
    "virtio-scsi-single",
    "megasas",
    "pvscsi",
];

const DISK_HELP: &str =
    "Disk: \"local-lvm:32\" (new, GiB), a volid, or \"<iso volid>,media=cdrom\".";

/// The other disk buses take the same syntax; said once, in full, on `scsi`.
const OTHER_DISK_HELP: &str = "Disk, syntax as scsiN.";

/// Cloud-init keys (used by create, update and pve_set_qemu_cloudinit).
pub const CLOUDINIT: &[Param] = &[
    Param::indexed(
        "ipconfig",
        0..=31,
        ParamKind::String,
        "IP of netN: \"ip=dhcp\" or \"ip=10.0.0.5/24,gw=10.0.0.1\".",
    ),
    Param::body("ciuser", ParamKind::String, "Cloud-init user."),
    Param::body(
        "cipassword",
        ParamKind::String,
        "Cloud-init password; prefer `sshkeys`.",
    ),
    Param::body(
        "sshkeys",
        ParamKind::String,
        "SSH public keys, one per line.",
    )
    .urlencoded(),
    Param::body(
        "nameserver",
        ParamKind::String,
        "DNS servers, space-separated.",
    ),
    Param::body("searchdomain", ParamKind::String, "DNS search domains."),
];

/// Proxmox's `dns-name` format: dot-separated labels of letters, digits and inner hyphens,
/// checked here so an invalid name never reaches Proxmox. Like Proxmox, no length cap (a VM
/// name is not a host name; longer than 63 is accepted).
pub const DNS_NAME_PATTERN: &str =
    "^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\\.)*[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$";

/// Hardware and option keys of a VM configuration.
pub const HARDWARE: &[Param] = &[
    Param::body("name", ParamKind::String, "VM name (a DNS name).").matching(DNS_NAME_PATTERN),
    Param::body("cores", ParamKind::Integer, "Cores per socket (default 1).").min(1),
    Param::body("sockets", ParamKind::Integer, "CPU sockets (default 1).").min(1),
    Param::body("memory", ParamKind::Integer, "Memory in MiB (default 512).").min(16),
    Param::body(
        "balloon",
        ParamKind::Integer,
        "Balloon minimum, MiB; 0 = off.",
    )
    .min(0),
    Param::body(
        "cpu",
        ParamKind::String,
        "CPU type, e.g. host (default x86-64-v2-AES).",
    ),
    Param::body("ostype", ParamKind::String, "OS type; l26 = Linux.").one_of(OSTYPES),
    Param::body(
        "scsihw",
        ParamKind::String,
        "SCSI controller (virtio-scsi-single).",
    )
    .one_of(SCSIHW),
    Param::indexed("scsi", 0..=30, ParamKind::String, DISK_HELP),
    Param::indexed("virtio", 0..=15, ParamKind::String, OTHER_DISK_HELP),
    Param::indexed("sata", 0..=5, ParamKind::String, OTHER_DISK_HELP),
    Param::indexed("ide", 0..=3, ParamKind::String, OTHER_DISK_HELP),
    Param::body(
        "efidisk0",
        ParamKind::String,
        "EFI disk, e.g. \"local-lvm:1,efitype=4m\".",
    ),
    Param::body(
        "tpmstate0",
        ParamKind::String,
        "TPM disk, e.g. \"local-lvm:1,version=v2.0\".",
    ),
    Param::indexed(
        "net",
        0..=31,
        ParamKind::String,
        "NIC, e.g. \"virtio,bridge=vmbr0,tag=20\".",
    ),
    Param::body(
        "boot",
        ParamKind::String,
        "Boot order, e.g. \"order=scsi0;ide2;net0\".",
    ),
    Param::body("agent", ParamKind::String, "\"1\" enables the guest agent."),
    Param::body(
        "bios",
        ParamKind::String,
        "ovmf = UEFI (add efidisk0); default seabios.",
    )
    .one_of(&["seabios", "ovmf"]),
    Param::body(
        "machine",
        ParamKind::String,
        "Machine type, e.g. \"q35\" (default \"pc\").",
    ),
    Param::body("onboot", ParamKind::Boolean, "Start at node boot."),
    Param::body("protection", ParamKind::Boolean, "Block removal."),
    Param::body("tags", ParamKind::String, "Tags, ';'-separated."),
    Param::body("description", ParamKind::String, "Notes (Markdown)."),
];

/// Keys only update rows have: removal and optimistic locking.
pub const UPDATE_ONLY: &[Param] = &[
    Param::body("delete", ParamKind::String, "Keys to remove, comma list."),
    DIGEST,
];

/// Every key pve_qemu_update_config may change (its at-least-one-of list).
pub const UPDATABLE: &[&str] = &[
    "name",
    "cores",
    "sockets",
    "memory",
    "balloon",
    "cpu",
    "ostype",
    "scsihw",
    "scsi",
    "virtio",
    "sata",
    "ide",
    "efidisk0",
    "tpmstate0",
    "net",
    "boot",
    "agent",
    "bios",
    "machine",
    "onboot",
    "protection",
    "tags",
    "description",
    "ipconfig",
    "ciuser",
    "cipassword",
    "sshkeys",
    "nameserver",
    "searchdomain",
    "delete",
];
