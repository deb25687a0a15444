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

const DISK_HELP: &str = "Disk property string: \"<storage>:<GiB>\" allocates (\"local-lvm:32\" = 32 GiB), \"<volume-id>\" attaches; options like \",iothread=1,discard=on\". ISO: \"local:iso/<file>.iso,media=cdrom\".";

/// The other disk buses take the same syntax; said once, in full, on `scsi`.
const OTHER_DISK_HELP: &str = "Disk on this bus, same syntax as scsiN (e.g. \"local-lvm:32\").";

/// Cloud-init keys (used by create, update and pve_set_qemu_cloudinit).
pub const CLOUDINIT: &[Param] = &[
    Param::indexed(
        "ipconfig",
        0..=31,
        ParamKind::String,
        "Cloud-init IP of NIC netN: \"ip=dhcp\" or \"ip=192.168.1.50/24,gw=192.168.1.1\"; IPv6 \"ip6=auto\" or \"ip6=<addr>/64,gw6=<gw>\".",
    ),
    Param::body(
        "ciuser",
        ParamKind::String,
        "Cloud-init user to create instead of the image's default user.",
    ),
    Param::body(
        "cipassword",
        ParamKind::String,
        "Cloud-init password for `ciuser` (secret: sent, stored hashed, never logged). Prefer `sshkeys`.",
    ),
    Param::body(
        "sshkeys",
        ParamKind::String,
        "Cloud-init public SSH keys, OpenSSH format, one per line, as plain text (URL-encoded for Proxmox automatically).",
    )
    .urlencoded(),
    Param::body(
        "nameserver",
        ParamKind::String,
        "Cloud-init DNS server IP(s), space-separated; unset = the host's.",
    ),
    Param::body(
        "searchdomain",
        ParamKind::String,
        "Cloud-init DNS search domain(s); unset = the host's.",
    ),
];

/// Hardware and option keys of a VM configuration.
pub const HARDWARE: &[Param] = &[
    Param::body(
        "name",
        ParamKind::String,
        "VM name, a DNS name (e.g. \"web-01\").",
    )
    .pattern("^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$", 63),
    Param::body(
        "cores",
        ParamKind::Integer,
        "CPU cores per socket (vCPUs = cores × sockets); default 1.",
    )
    .min(1),
    Param::body("sockets", ParamKind::Integer, "CPU sockets; default 1.").min(1),
    Param::body(
        "memory",
        ParamKind::Integer,
        "Memory in MiB (4096 = 4 GiB); default 512.",
    )
    .min(16),
    Param::body(
        "balloon",
        ParamKind::Integer,
        "Ballooning minimum in MiB; 0 disables the balloon device.",
    )
    .min(0),
    Param::body(
        "cpu",
        ParamKind::String,
        "CPU type: \"host\" (fastest; migration only between identical CPUs), \"x86-64-v2-AES\" (default), \"kvm64\".",
    ),
    Param::body(
        "numa",
        ParamKind::Boolean,
        "Enable NUMA topology for the guest.",
    ),
    Param::body(
        "ostype",
        ParamKind::String,
        "Guest OS type: l26 = Linux, win11/win10/… = Windows, other.",
    )
    .one_of(OSTYPES),
    Param::body(
        "scsihw",
        ParamKind::String,
        "SCSI controller; \"virtio-scsi-single\" is recommended.",
    )
    .one_of(SCSIHW),
    Param::indexed("scsi", 0..=30, ParamKind::String, DISK_HELP),
    Param::indexed("virtio", 0..=15, ParamKind::String, OTHER_DISK_HELP),
    Param::indexed("sata", 0..=5, ParamKind::String, OTHER_DISK_HELP),
    Param::indexed("ide", 0..=3, ParamKind::String, OTHER_DISK_HELP),
    Param::body(
        "efidisk0",
        ParamKind::String,
        "EFI vars disk for bios=ovmf, e.g. \"local-lvm:1,efitype=4m\".",
    ),
    Param::body(
        "tpmstate0",
        ParamKind::String,
        "TPM state disk, e.g. \"local-lvm:1,version=v2.0\" (Windows 11).",
    ),
    Param::indexed(
        "net",
        0..=31,
        ParamKind::String,
        "NIC property string \"<model>[=<MAC>],bridge=<bridge>[,tag=<VLAN>][,firewall=1]\", e.g. \"virtio,bridge=vmbr0\"; model virtio, e1000, vmxnet3; no MAC = generated.",
    ),
    Param::body(
        "boot",
        ParamKind::String,
        "Boot order, e.g. \"order=scsi0;ide2;net0\".",
    ),
    Param::body(
        "agent",
        ParamKind::String,
        "Guest agent: \"1\" enables (needs qemu-guest-agent in the guest), \"0\" disables.",
    ),
    Param::body(
        "bios",
        ParamKind::String,
        "Firmware: seabios (default) or ovmf (UEFI; add efidisk0).",
    )
    .one_of(&["seabios", "ovmf"]),
    Param::body(
        "machine",
        ParamKind::String,
        "Machine type: \"q35\" (PCIe) or \"pc\" (i440fx, default).",
    ),
    Param::body(
        "hotplug",
        ParamKind::String,
        "Hot-plug features, comma-separated: network, disk, cpu, memory, usb; \"0\" = none.",
    ),
    Param::body("onboot", ParamKind::Boolean, "Start at node boot."),
    Param::body(
        "protection",
        ParamKind::Boolean,
        "Block removal of the VM and its disks.",
    ),
    Param::body(
        "tags",
        ParamKind::String,
        "Tags separated by ';' (e.g. \"prod;web\").",
    ),
    Param::body(
        "description",
        ParamKind::String,
        "Notes shown in the web UI (Markdown).",
    ),
];

/// Keys only update rows have: removal and optimistic locking.
pub const UPDATE_ONLY: &[Param] = &[
    Param::body(
        "delete",
        ParamKind::String,
        "Comma-separated keys to remove, e.g. \"net1,ide2\" (a removed disk becomes unusedN).",
    ),
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
    "numa",
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
    "hotplug",
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
