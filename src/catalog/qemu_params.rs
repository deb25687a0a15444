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

const DISK_HELP: &str = "Disk as a property string \"<storage>:<size in GiB>\" to allocate a new disk (e.g. \"local-lvm:32\" = 32 GiB) or \"<volume-id>\" to attach an existing one, plus options such as \",iothread=1,discard=on,ssd=1\"; \"<storage>:iso/<file>.iso,media=cdrom\" attaches an ISO.";

/// Cloud-init keys (used by create, update and pve_set_qemu_cloudinit).
pub const CLOUDINIT: &[Param] = &[
    Param::indexed(
        "ipconfig",
        0..=31,
        ParamKind::String,
        "Cloud-init IP settings of NIC netN (key ipconfigN): \"ip=dhcp\" or \"ip=192.168.1.50/24,gw=192.168.1.1\"; IPv6 \"ip6=auto\" or \"ip6=2001:db8::5/64,gw6=2001:db8::1\". Comma-separated.",
    ),
    Param::body(
        "ciuser",
        ParamKind::String,
        "Cloud-init user name to create (with sudo) instead of the image's default user.",
    ),
    Param::body(
        "cipassword",
        ParamKind::String,
        "Cloud-init password for `ciuser`. A secret: it is sent to Proxmox (which stores it hashed) and never logged. Prefer `sshkeys`.",
    ),
    Param::body(
        "sshkeys",
        ParamKind::String,
        "Cloud-init public SSH keys in OpenSSH format, one per line (e.g. \"ssh-ed25519 AAAA… user@host\"). Give the plain text: it is URL-encoded as Proxmox requires.",
    )
    .urlencoded(),
    Param::body(
        "nameserver",
        ParamKind::String,
        "Cloud-init DNS server IP address(es), space-separated (e.g. \"1.1.1.1 9.9.9.9\"); unset = the host's.",
    ),
    Param::body(
        "searchdomain",
        ParamKind::String,
        "Cloud-init DNS search domain(s), e.g. \"example.com\"; unset = the host's.",
    ),
];

/// Hardware and option keys of a VM configuration.
pub const HARDWARE: &[Param] = &[
    Param::body(
        "name",
        ParamKind::String,
        "VM name (a DNS name: letters, digits, '-' and '.', e.g. \"web-01\").",
    )
    .pattern("^[A-Za-z0-9]([A-Za-z0-9.-]{0,62})$", 63),
    Param::body(
        "cores",
        ParamKind::Integer,
        "CPU cores per socket (vCPUs = cores × sockets). Proxmox default 1.",
    )
    .min(1),
    Param::body(
        "sockets",
        ParamKind::Integer,
        "Number of CPU sockets. Proxmox default 1.",
    )
    .min(1),
    Param::body(
        "memory",
        ParamKind::Integer,
        "Memory in MiB (e.g. 4096 = 4 GiB). Proxmox default 512.",
    )
    .min(16),
    Param::body(
        "balloon",
        ParamKind::Integer,
        "Minimum memory in MiB for ballooning (the guest may be shrunk down to this); 0 disables the balloon device.",
    )
    .min(0),
    Param::body(
        "cpu",
        ParamKind::String,
        "Emulated CPU type, e.g. \"host\" (best performance, blocks migration between different CPUs), \"x86-64-v2-AES\" (PVE default) or \"kvm64\"; optional \",flags=+aes\".",
    ),
    Param::body("numa", ParamKind::Boolean, "Enable NUMA topology for the guest."),
    Param::body(
        "ostype",
        ParamKind::String,
        "Guest OS type, which tunes defaults: l26 = Linux 2.6+ kernel, win11/win10/… = Windows, other.",
    )
    .one_of(OSTYPES),
    Param::body(
        "scsihw",
        ParamKind::String,
        "SCSI controller model; \"virtio-scsi-single\" is the recommended one for Linux guests.",
    )
    .one_of(SCSIHW),
    Param::indexed("scsi", 0..=30, ParamKind::String, DISK_HELP),
    Param::indexed("virtio", 0..=15, ParamKind::String, DISK_HELP),
    Param::indexed("sata", 0..=5, ParamKind::String, DISK_HELP),
    Param::indexed("ide", 0..=3, ParamKind::String, DISK_HELP),
    Param::body(
        "efidisk0",
        ParamKind::String,
        "EFI vars disk for bios=ovmf, e.g. \"local-lvm:1,efitype=4m,pre-enrolled-keys=1\" (size is fixed by Proxmox).",
    ),
    Param::body(
        "tpmstate0",
        ParamKind::String,
        "TPM state disk, e.g. \"local-lvm:1,version=v2.0\" (needed for Windows 11).",
    ),
    Param::indexed(
        "net",
        0..=31,
        ParamKind::String,
        "Network card (key netN) as a property string: \"<model>[=<MAC>],bridge=<bridge>\" plus options, e.g. \"virtio,bridge=vmbr0,firewall=1\" or \"virtio,bridge=vmbr0,tag=20\" (VLAN 20). Model: virtio, e1000, rtl8139, vmxnet3. Omit the MAC to get a generated one.",
    ),
    Param::body(
        "boot",
        ParamKind::String,
        "Boot order, e.g. \"order=scsi0;ide2;net0\" (devices separated by ';').",
    ),
    Param::body(
        "agent",
        ParamKind::String,
        "QEMU guest agent: \"1\" to enable (install qemu-guest-agent in the guest), \"0\" to disable; options like \"1,fstrim_cloned_disks=1\".",
    ),
    Param::body(
        "bios",
        ParamKind::String,
        "Firmware: \"seabios\" (legacy BIOS, default) or \"ovmf\" (UEFI; add efidisk0).",
    )
    .one_of(&["seabios", "ovmf"]),
    Param::body(
        "machine",
        ParamKind::String,
        "Machine type, e.g. \"q35\" (modern, PCIe) or \"pc\" (i440fx, default); a version pins it (\"pc-q35-9.2\").",
    ),
    Param::body(
        "hotplug",
        ParamKind::String,
        "Comma-separated hot-plug features: network, disk, cpu, memory, usb, cloudinit; \"0\" disables, \"1\" = network,disk,usb.",
    ),
    Param::body(
        "onboot",
        ParamKind::Boolean,
        "Start the VM automatically when the node boots.",
    ),
    Param::body(
        "protection",
        ParamKind::Boolean,
        "Protect the VM from removal and from disk removal until this is cleared.",
    ),
    Param::body(
        "tags",
        ParamKind::String,
        "Tags separated by ';' (e.g. \"prod;web\"); letters, digits, '-', '_', '.', '+'.",
    ),
    Param::body(
        "description",
        ParamKind::String,
        "Free-text notes shown in the web UI (Markdown), up to 8192 characters.",
    ),
];

/// Keys only update rows have: removal and optimistic locking.
pub const UPDATE_ONLY: &[Param] = &[
    Param::body(
        "delete",
        ParamKind::String,
        "Comma-separated configuration keys to remove, e.g. \"net1,ide2\" (a disk removed this way becomes an unusedN entry, not deleted data).",
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
