//! The privileges Proxmox checks per configuration key when a guest is created or its
//! configuration written — on top of the endpoint's own `permissions` gate.
//!
//! `PUT /nodes/{node}/qemu/{vmid}/config` is gated by "any of VM.Config.Disk, …CPU, …Network,
//! …Cloudinit…", but the handler then checks each key it is given against its own privilege
//! (`cores` → VM.Config.CPU, `net0` → VM.Config.Network, `ciuser` → VM.Config.Cloudinit…), so a
//! role holding only the first of the list gets 403 on most updates. The rules below are
//! written down from the checks Proxmox documents in its sources:
//!
//! - QEMU: `PVE::API2::Qemu` — `check_vm_modify_config_perm` (CPU, memory, hardware, general
//!   options, power, boot/disk options, network, cloud-init, vmstate; anything else is
//!   root-only), drive keys checked by value on update (a CD-ROM needs VM.Config.CDROM, other
//!   drives VM.Config.Disk), `check_storage_access` (a new disk needs Datastore.AllocateSpace on
//!   its storage), `check_bridge_access` (a NIC needs SDN.Use on its bridge), `startup` also
//!   needs Sys.Modify on `/`, tags are VM.Config.Options;
//! - LXC: `PVE::LXC::check_ct_modify_config_perm` (cores/cpuunits/cpulimit → CPU, rootfs/mpN →
//!   Disk plus Datastore.AllocateSpace, memory/swap → Memory, netN → Network plus SDN.Use,
//!   nameserver/searchdomain/hostname → Network, features (nesting) → VM.Allocate, devN and
//!   hookscript root-only, everything else → VM.Config.Options), and on create the
//!   template/backup volume access and the storage check.
//!
//! Invariant: every parameter of a tool on one of these four endpoints has a rule (a request
//! parameter, a list of privileges, or root-only); `tests/privileges.rs` fails when a catalog
//! parameter is root-only, so no tool ships that a token can never use.

use std::collections::BTreeSet;

use crate::catalog::{Backend, HttpMethod, ToolSpec};

/// The guest the tool configures.
const VM: &str = "/vms/{vmid}";
/// The storage a volume is allocated on or read from.
const STORAGE: &str = "/storage/{storage}";
/// A plain Linux bridge is the SDN zone `localnetwork`; SDN.Use is checked on the bridge.
const BRIDGE: &str = "/sdn/zones/localnetwork/{bridge}";

/// Which per-key check an endpoint runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigCheck {
    /// `POST /nodes/{node}/qemu` (create or restore).
    QemuCreate,
    /// `PUT`/`POST /nodes/{node}/qemu/{vmid}/config`.
    QemuUpdate,
    /// `POST /nodes/{node}/lxc` (create or restore).
    LxcCreate,
    /// `PUT /nodes/{node}/lxc/{vmid}/config`.
    LxcUpdate,
}

impl ConfigCheck {
    /// The per-key check of a REST endpoint, if it runs one.
    pub fn of(method: HttpMethod, path: &str) -> Option<ConfigCheck> {
        match (method, path) {
            (HttpMethod::Post, "/nodes/{node}/qemu") => Some(ConfigCheck::QemuCreate),
            (HttpMethod::Put | HttpMethod::Post, "/nodes/{node}/qemu/{vmid}/config") => {
                Some(ConfigCheck::QemuUpdate)
            }
            (HttpMethod::Post, "/nodes/{node}/lxc") => Some(ConfigCheck::LxcCreate),
            (HttpMethod::Put, "/nodes/{node}/lxc/{vmid}/config") => Some(ConfigCheck::LxcUpdate),
            _ => None,
        }
    }
}

/// What sending one key requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRule {
    /// Every `(ACL path, privilege)` pair listed (none for plain request parameters).
    Needs(&'static [(&'static str, &'static str)]),
    /// Proxmox lets only `root@pam` set it; no role helps.
    RootOnly,
}

const NONE: KeyRule = KeyRule::Needs(&[]);
const CPU: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.CPU")]);
const MEMORY: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.Memory")]);
const HWTYPE: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.HWType")]);
const OPTIONS: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.Options")]);
const NETWORK: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.Network")]);
const NIC: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.Network"), (BRIDGE, "SDN.Use")]);
// Proxmox accepts VM.Config.Cloudinit or VM.Config.Network here; Cloudinit is the narrower.
const CLOUDINIT: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.Cloudinit")]);
const DISK_OPTION: KeyRule = KeyRule::Needs(&[(VM, "VM.Config.Disk")]);
const NEW_VOLUME: KeyRule = KeyRule::Needs(&[(STORAGE, "Datastore.AllocateSpace")]);
const VOLUME: KeyRule =
    KeyRule::Needs(&[(VM, "VM.Config.Disk"), (STORAGE, "Datastore.AllocateSpace")]);
// On update a drive is checked by its value: `media=cdrom` needs VM.Config.CDROM, any other
// VM.Config.Disk; a new disk also needs space on its storage.
const QEMU_DRIVE_UPDATE: KeyRule = KeyRule::Needs(&[
    (VM, "VM.Config.Disk"),
    (VM, "VM.Config.CDROM"),
    (STORAGE, "Datastore.AllocateSpace"),
]);
const BACKUP_ARCHIVE: KeyRule =
    KeyRule::Needs(&[(STORAGE, "Datastore.AllocateSpace"), (VM, "VM.Backup")]);

const QEMU_DRIVES: &[&str] = &["ide", "sata", "scsi", "virtio", "efidisk", "tpmstate"];
const QEMU_CPU: &[&str] = &[
    "cores", "cpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus",
];
const QEMU_MEMORY: &[&str] = &["memory", "balloon", "shares"];
const QEMU_HWTYPE: &[&str] = &[
    "acpi", "hotplug", "kvm", "machine", "scsihw", "smbios", "tablet", "vga", "watchdog", "audio",
    "serial", "usb", "hostpci",
];
const QEMU_OPTIONS: &[&str] = &[
    "agent",
    "autostart",
    "bios",
    "description",
    "keyboard",
    "localtime",
    "migrate_downtime",
    "migrate_speed",
    "name",
    "onboot",
    "ostype",
    "protection",
    "reboot",
    "startdate",
    "tdf",
    "template",
    "tags",
];
const QEMU_CLOUDINIT: &[&str] = &[
    "cicustom",
    "cipassword",
    "citype",
    "ciuser",
    "ciupgrade",
    "nameserver",
    "searchdomain",
    "sshkeys",
    "ipconfig",
];
/// Parameters of the request itself, not configuration keys.
const QEMU_REQUEST: &[&str] = &[
    "node",
    "vmid",
    "pool",
    "start",
    "force",
    "unique",
    "bwlimit",
    "live-restore",
    "delete",
    "digest",
    "revert",
    "background_delay",
];
const LXC_REQUEST: &[&str] = &[
    "node",
    "vmid",
    "pool",
    "start",
    "force",
    "unique",
    "restore",
    "bwlimit",
    "ha-managed",
    "ignore-unpack-errors",
    "password",
    "ssh-public-keys",
    "delete",
    "digest",
    "revert",
];

/// `net3` → `net`, `efidisk0` → `efidisk`: Proxmox's rules are per key family.
fn family(key: &str) -> &str {
    key.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// The rule for sending `key` (a Proxmox parameter name) to an endpoint running `check`.
pub fn key_rule(check: ConfigCheck, key: &str) -> KeyRule {
    let base = family(key);
    match check {
        ConfigCheck::QemuCreate | ConfigCheck::QemuUpdate => qemu_rule(check, key, base),
        ConfigCheck::LxcCreate | ConfigCheck::LxcUpdate => lxc_rule(check, key, base),
    }
}

fn qemu_rule(check: ConfigCheck, key: &str, base: &str) -> KeyRule {
    let update = check == ConfigCheck::QemuUpdate;
    if QEMU_REQUEST.contains(&key) {
        return NONE;
    }
    match key {
        // The default storage of new disks.
        "storage" if !update => return NEW_VOLUME,
        "archive" if !update => return BACKUP_ARCHIVE,
        "startup" => {
            return KeyRule::Needs(&[(VM, "VM.Config.Options"), ("/", "Sys.Modify")]);
        }
        "freeze" => return KeyRule::Needs(&[(VM, "VM.PowerMgmt")]),
        "vmstate" => return KeyRule::Needs(&[(VM, "VM.Config.Disk"), (VM, "VM.PowerMgmt")]),
        "boot" | "bootdisk" => return DISK_OPTION,
        "vmstatestorage" => return VOLUME,
        "cdrom" if update => return KeyRule::Needs(&[(VM, "VM.Config.CDROM")]),
        "cdrom" => return NEW_VOLUME,
        _ => {}
    }
    if QEMU_DRIVES.contains(&base) {
        // On create Proxmox checks only the storage of each drive (VM.Allocate covers the rest).
        return if update {
            QEMU_DRIVE_UPDATE
        } else {
            NEW_VOLUME
        };
    }
    if base == "unused" {
        return DISK_OPTION;
    }
    if base == "net" {
        return NIC;
    }
    let rules: [(&[&str], KeyRule); 5] = [
        (QEMU_CPU, CPU),
        (QEMU_MEMORY, MEMORY),
        (QEMU_HWTYPE, HWTYPE),
        (QEMU_OPTIONS, OPTIONS),
        (QEMU_CLOUDINIT, CLOUDINIT),
    ];
    rules
        .iter()
        .find(|(keys, _)| keys.contains(&key) || keys.contains(&base))
        .map_or(KeyRule::RootOnly, |(_, rule)| *rule)
}

fn lxc_rule(check: ConfigCheck, key: &str, base: &str) -> KeyRule {
    let create = check == ConfigCheck::LxcCreate;
    if LXC_REQUEST.contains(&key) {
        return NONE;
    }
    match (key, base) {
        ("storage", _) if create => NEW_VOLUME,
        // A template needs read access to its storage; `archive` (a backup) is handled by the
        // caller, which knows whether the tool restores.
        ("ostemplate", _) if create => KeyRule::Needs(&[(STORAGE, "Datastore.Audit")]),
        // A privileged container (unprivileged=0) needs Sys.Modify on `/`.
        ("unprivileged", _) if create => KeyRule::Needs(&[("/", "Sys.Modify")]),
        ("cores" | "cpuunits" | "cpulimit", _) => CPU,
        ("rootfs", _) | (_, "mp") => VOLUME,
        ("memory" | "swap", _) => MEMORY,
        (_, "net") => NIC,
        ("nameserver" | "searchdomain" | "hostname", _) => NETWORK,
        // Only `nesting` may be changed by a non-root user, and it needs VM.Allocate.
        ("features", _) => KeyRule::Needs(&[(VM, "VM.Allocate")]),
        (_, "dev") | ("hookscript", _) => KeyRule::RootOnly,
        _ => OPTIONS,
    }
}

/// The Proxmox name of each parameter a tool sends, with whether it is a backup archive.
fn sent_keys(spec: &ToolSpec) -> impl Iterator<Item = (&'static str, bool)> {
    spec.params
        .iter()
        .map(|p| (p.wire_name.unwrap_or(p.name), p.name == "archive"))
}

/// The per-key check the tool's endpoint runs, if any.
pub fn config_check(spec: &ToolSpec) -> Option<ConfigCheck> {
    match spec.backend {
        Backend::Rest { method, path } => ConfigCheck::of(method, path),
        _ => None,
    }
}

/// Every `(ACL path, privilege)` the tool's parameters can need, sorted (empty for tools whose
/// endpoint runs no per-key check).
pub fn parameter_needs(spec: &ToolSpec) -> BTreeSet<(&'static str, &'static str)> {
    let Some(check) = config_check(spec) else {
        return BTreeSet::new();
    };
    sent_keys(spec)
        .flat_map(|(key, is_archive)| {
            let rule = if is_archive {
                BACKUP_ARCHIVE
            } else {
                key_rule(check, key)
            };
            match rule {
                KeyRule::Needs(pairs) => pairs.iter().copied(),
                KeyRule::RootOnly => [].iter().copied(),
            }
        })
        .collect()
}

/// The tool's parameters only `root@pam` may send (should be none).
pub fn root_only_parameters(spec: &ToolSpec) -> Vec<&'static str> {
    let Some(check) = config_check(spec) else {
        return Vec::new();
    };
    sent_keys(spec)
        .filter(|(key, is_archive)| !is_archive && key_rule(check, key) == KeyRule::RootOnly)
        .map(|(key, _)| key)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(check: ConfigCheck, key: &str) -> Vec<&'static str> {
        match key_rule(check, key) {
            KeyRule::Needs(pairs) => pairs.iter().map(|(_, p)| *p).collect(),
            KeyRule::RootOnly => vec!["root"],
        }
    }

    #[test]
    fn qemu_keys_follow_proxmox_per_key_checks() {
        let u = ConfigCheck::QemuUpdate;
        assert_eq!(needs(u, "cores"), ["VM.Config.CPU"]);
        assert_eq!(needs(u, "sockets"), ["VM.Config.CPU"]);
        assert_eq!(needs(u, "balloon"), ["VM.Config.Memory"]);
        assert_eq!(needs(u, "net0"), ["VM.Config.Network", "SDN.Use"]);
        assert_eq!(needs(u, "ciuser"), ["VM.Config.Cloudinit"]);
        assert_eq!(needs(u, "ipconfig5"), ["VM.Config.Cloudinit"]);
        assert_eq!(needs(u, "scsihw"), ["VM.Config.HWType"]);
        assert_eq!(needs(u, "name"), ["VM.Config.Options"]);
        assert_eq!(needs(u, "tags"), ["VM.Config.Options"]);
        assert_eq!(needs(u, "boot"), ["VM.Config.Disk"]);
        assert!(needs(u, "ide2").contains(&"VM.Config.CDROM"));
        assert!(needs(u, "scsi0").contains(&"VM.Config.Disk"));
        assert_eq!(needs(u, "startup"), ["VM.Config.Options", "Sys.Modify"]);
        assert_eq!(needs(u, "args"), ["root"]);
        assert_eq!(needs(u, "hookscript"), ["root"]);
        assert!(needs(u, "digest").is_empty());
        let c = ConfigCheck::QemuCreate;
        assert_eq!(needs(c, "scsi0"), ["Datastore.AllocateSpace"]);
        assert_eq!(needs(c, "storage"), ["Datastore.AllocateSpace"]);
    }

    #[test]
    fn lxc_keys_follow_proxmox_per_key_checks() {
        let u = ConfigCheck::LxcUpdate;
        assert_eq!(needs(u, "cores"), ["VM.Config.CPU"]);
        assert_eq!(needs(u, "swap"), ["VM.Config.Memory"]);
        assert_eq!(needs(u, "hostname"), ["VM.Config.Network"]);
        assert_eq!(needs(u, "net1"), ["VM.Config.Network", "SDN.Use"]);
        assert_eq!(
            needs(u, "mp0"),
            ["VM.Config.Disk", "Datastore.AllocateSpace"]
        );
        assert_eq!(needs(u, "features"), ["VM.Allocate"]);
        assert_eq!(needs(u, "onboot"), ["VM.Config.Options"]);
        assert_eq!(needs(u, "dev0"), ["root"]);
        assert_eq!(
            needs(ConfigCheck::LxcCreate, "unprivileged"),
            ["Sys.Modify"]
        );
        assert!(needs(ConfigCheck::LxcCreate, "password").is_empty());
    }

    #[test]
    fn endpoints_are_recognised() {
        assert_eq!(
            ConfigCheck::of(HttpMethod::Put, "/nodes/{node}/qemu/{vmid}/config"),
            Some(ConfigCheck::QemuUpdate)
        );
        assert_eq!(
            ConfigCheck::of(HttpMethod::Get, "/nodes/{node}/qemu/{vmid}/config"),
            None
        );
        let update = crate::catalog::find("pve_qemu_update_config").unwrap();
        let privs: BTreeSet<&str> = parameter_needs(update).iter().map(|(_, p)| *p).collect();
        for p in [
            "VM.Config.CPU",
            "VM.Config.Memory",
            "VM.Config.Network",
            "VM.Config.Cloudinit",
            "VM.Config.Disk",
            "VM.Config.Options",
            "VM.Config.HWType",
        ] {
            assert!(privs.contains(p), "{p}: {privs:?}");
        }
    }
}
