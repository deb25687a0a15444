//! Declared parameters of the guest lifecycle routes, exactly as the PVE 9.1 schema
//! lists them (generated from `endpoints-pve-9.1.json.gz`; `idx` families use Proxmox's
//! index ranges).
//!
//! Invariant: a route accepts a parameter iff Proxmox's schema declares it, so a catalog
//! row that sends an unknown key fails its test with Proxmox's 400;
//! `tests::guest_routes_match_the_schema` compares these lists with the schema file.

use super::api::{Param, bool, idx, int, num, one_of, s};

/// A slice literal whose contents rustfmt leaves on few lines (the lists are long and
/// generated, one-per-line would triple the file for no reader's benefit).
macro_rules! list {
    ($($item:tt)*) => {
        &[$($item)*]
    };
}

const ARCH_VALUES: &[&str] = list! {
    "x86_64", "aarch64",
};

const BIOS_VALUES: &[&str] = list! {
    "seabios", "ovmf",
};

const CITYPE_VALUES: &[&str] = list! {
    "configdrive2", "nocloud", "opennebula",
};

const HUGEPAGES_VALUES: &[&str] = list! {
    "any", "2", "1024",
};

const KEYBOARD_VALUES: &[&str] = list! {
    "de", "de-ch", "da", "en-gb", "en-us", "es", "fi", "fr", "fr-be", "fr-ca", "fr-ch", "hu",
    "is", "it", "ja", "lt", "mk", "nl", "no", "pl", "pt", "pt-br", "sv", "sl", "tr",
};

const LOCK_VALUES: &[&str] = list! {
    "backup", "clone", "create", "migrate", "rollback", "snapshot", "snapshot-delete",
    "suspending", "suspended",
};

const OSTYPE_VALUES: &[&str] = list! {
    "other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24",
    "l26", "solaris",
};

const SCSIHW_VALUES: &[&str] = list! {
    "lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi",
};

const MIGRATION_TYPE_VALUES: &[&str] = list! {
    "secure", "insecure",
};

const FORMAT_VALUES: &[&str] = list! {
    "raw", "qcow2", "vmdk",
};

const DISK_VALUES: &[&str] = list! {
    "ide0", "ide1", "ide2", "ide3", "scsi0", "scsi1", "scsi2", "scsi3", "scsi4", "scsi5",
    "scsi6", "scsi7", "scsi8", "scsi9", "scsi10", "scsi11", "scsi12", "scsi13", "scsi14",
    "scsi15", "scsi16", "scsi17", "scsi18", "scsi19", "scsi20", "scsi21", "scsi22", "scsi23",
    "scsi24", "scsi25", "scsi26", "scsi27", "scsi28", "scsi29", "scsi30", "virtio0", "virtio1",
    "virtio2", "virtio3", "virtio4", "virtio5", "virtio6", "virtio7", "virtio8", "virtio9",
    "virtio10", "virtio11", "virtio12", "virtio13", "virtio14", "virtio15", "sata0", "sata1",
    "sata2", "sata3", "sata4", "sata5", "efidisk0", "tpmstate0",
};

const ARCH_VALUES_LXC: &[&str] = list! {
    "amd64", "i386", "arm64", "armhf", "riscv32", "riscv64",
};

const CMODE_VALUES: &[&str] = list! {
    "shell", "console", "tty",
};

const LOCK_VALUES_LXC: &[&str] = list! {
    "backup", "create", "destroyed", "disk", "fstrim", "migrate", "mounted", "rollback",
    "snapshot", "snapshot-delete",
};

const OSTYPE_VALUES_LXC: &[&str] = list! {
    "debian", "devuan", "ubuntu", "centos", "fedora", "opensuse", "archlinux", "alpine",
    "gentoo", "nixos", "unmanaged",
};

/// `POST /nodes/{node}/qemu`.
pub(super) const QM_CREATE: &[Param] = list! {
    bool("acpi"), s("affinity"), s("agent"), bool("allow-ksm"), s("amd-sev"),
    one_of("arch", ARCH_VALUES), s("archive"), s("args"), s("audio0"), bool("autostart"),
    int("balloon"), one_of("bios", BIOS_VALUES), s("boot"), s("bootdisk"), int("bwlimit"),
    s("cdrom"), s("cicustom"), s("cipassword"), one_of("citype", CITYPE_VALUES),
    bool("ciupgrade"), s("ciuser"), int("cores"), s("cpu"), num("cpulimit"), int("cpuunits"),
    s("description"), s("efidisk0"), bool("force"), bool("freeze"), bool("ha-managed"),
    s("hookscript"), idx("hostpci", 15), s("hotplug"), one_of("hugepages", HUGEPAGES_VALUES),
    idx("ide", 3), s("import-working-storage"), s("intel-tdx"), idx("ipconfig", 31),
    s("ivshmem"), bool("keephugepages"), one_of("keyboard", KEYBOARD_VALUES), bool("kvm"),
    bool("live-restore"), bool("localtime"), one_of("lock", LOCK_VALUES), s("machine"),
    s("memory"), num("migrate_downtime"), int("migrate_speed"), s("name"), s("nameserver"),
    idx("net", 31), bool("numa"), idx("numa", 7), bool("onboot"),
    one_of("ostype", OSTYPE_VALUES), idx("parallel", 2), s("pool"), bool("protection"),
    bool("reboot"), s("rng0"), idx("sata", 5), idx("scsi", 30), one_of("scsihw", SCSIHW_VALUES),
    s("searchdomain"), idx("serial", 3), int("shares"), s("smbios1"), int("smp"), int("sockets"),
    s("spice_enhancements"), s("sshkeys"), bool("start"), s("startdate"), s("startup"),
    s("storage"), bool("tablet"), s("tags"), bool("tdf"), bool("template"), s("tpmstate0"),
    bool("unique"), idx("unused", 255), idx("usb", 13), int("vcpus"), s("vga"),
    idx("virtio", 15), idx("virtiofs", 9), s("vmgenid"), int("vmid").required(),
    s("vmstatestorage"), s("watchdog"),
};

/// `DELETE /nodes/{node}/qemu/{vmid}`.
pub(super) const QM_DESTROY: &[Param] = list! {
    bool("destroy-unreferenced-disks"), bool("purge"), bool("skiplock"),
};

/// `POST /nodes/{node}/qemu/{vmid}/migrate`.
pub(super) const QM_MIGRATE: &[Param] = list! {
    int("bwlimit"), bool("force"), s("migration_network"),
    one_of("migration_type", MIGRATION_TYPE_VALUES), bool("online"), s("target").required(),
    s("targetstorage"), bool("with-conntrack-state"), bool("with-local-disks"),
};

/// `POST /nodes/{node}/qemu/{vmid}/clone`.
pub(super) const QM_CLONE: &[Param] = list! {
    int("bwlimit"), s("description"), one_of("format", FORMAT_VALUES), bool("full"), s("name"),
    int("newid").required(), s("pool"), s("snapname"), s("storage"), s("target"),
};

/// `PUT /nodes/{node}/qemu/{vmid}/config`.
pub(super) const QM_CONFIG_PUT: &[Param] = list! {
    bool("acpi"), s("affinity"), s("agent"), bool("allow-ksm"), s("amd-sev"),
    one_of("arch", ARCH_VALUES), s("args"), s("audio0"), bool("autostart"), int("balloon"),
    one_of("bios", BIOS_VALUES), s("boot"), s("bootdisk"), s("cdrom"), s("cicustom"),
    s("cipassword"), one_of("citype", CITYPE_VALUES), bool("ciupgrade"), s("ciuser"),
    int("cores"), s("cpu"), num("cpulimit"), int("cpuunits"), s("delete"), s("description"),
    s("digest"), s("efidisk0"), bool("force"), bool("freeze"), s("hookscript"),
    idx("hostpci", 15), s("hotplug"), one_of("hugepages", HUGEPAGES_VALUES), idx("ide", 3),
    s("intel-tdx"), idx("ipconfig", 31), s("ivshmem"), bool("keephugepages"),
    one_of("keyboard", KEYBOARD_VALUES), bool("kvm"), bool("localtime"),
    one_of("lock", LOCK_VALUES), s("machine"), s("memory"), num("migrate_downtime"),
    int("migrate_speed"), s("name"), s("nameserver"), idx("net", 31), bool("numa"),
    idx("numa", 7), bool("onboot"), one_of("ostype", OSTYPE_VALUES), idx("parallel", 2),
    bool("protection"), bool("reboot"), s("revert"), s("rng0"), idx("sata", 5), idx("scsi", 30),
    one_of("scsihw", SCSIHW_VALUES), s("searchdomain"), idx("serial", 3), int("shares"),
    bool("skiplock"), s("smbios1"), int("smp"), int("sockets"), s("spice_enhancements"),
    s("sshkeys"), s("startdate"), s("startup"), bool("tablet"), s("tags"), bool("tdf"),
    bool("template"), s("tpmstate0"), idx("unused", 255), idx("usb", 13), int("vcpus"), s("vga"),
    idx("virtio", 15), idx("virtiofs", 9), s("vmgenid"), s("vmstatestorage"), s("watchdog"),
};

/// `POST /nodes/{node}/qemu/{vmid}/config`.
pub(super) const QM_CONFIG_POST: &[Param] = list! {
    bool("acpi"), s("affinity"), s("agent"), bool("allow-ksm"), s("amd-sev"),
    one_of("arch", ARCH_VALUES), s("args"), s("audio0"), bool("autostart"),
    int("background_delay"), int("balloon"), one_of("bios", BIOS_VALUES), s("boot"),
    s("bootdisk"), s("cdrom"), s("cicustom"), s("cipassword"), one_of("citype", CITYPE_VALUES),
    bool("ciupgrade"), s("ciuser"), int("cores"), s("cpu"), num("cpulimit"), int("cpuunits"),
    s("delete"), s("description"), s("digest"), s("efidisk0"), bool("force"), bool("freeze"),
    s("hookscript"), idx("hostpci", 15), s("hotplug"), one_of("hugepages", HUGEPAGES_VALUES),
    idx("ide", 3), s("import-working-storage"), s("intel-tdx"), idx("ipconfig", 31),
    s("ivshmem"), bool("keephugepages"), one_of("keyboard", KEYBOARD_VALUES), bool("kvm"),
    bool("localtime"), one_of("lock", LOCK_VALUES), s("machine"), s("memory"),
    num("migrate_downtime"), int("migrate_speed"), s("name"), s("nameserver"), idx("net", 31),
    bool("numa"), idx("numa", 7), bool("onboot"), one_of("ostype", OSTYPE_VALUES),
    idx("parallel", 2), bool("protection"), bool("reboot"), s("revert"), s("rng0"),
    idx("sata", 5), idx("scsi", 30), one_of("scsihw", SCSIHW_VALUES), s("searchdomain"),
    idx("serial", 3), int("shares"), bool("skiplock"), s("smbios1"), int("smp"), int("sockets"),
    s("spice_enhancements"), s("sshkeys"), s("startdate"), s("startup"), bool("tablet"),
    s("tags"), bool("tdf"), bool("template"), s("tpmstate0"), idx("unused", 255), idx("usb", 13),
    int("vcpus"), s("vga"), idx("virtio", 15), idx("virtiofs", 9), s("vmgenid"),
    s("vmstatestorage"), s("watchdog"),
};

/// `PUT /nodes/{node}/qemu/{vmid}/resize`.
pub(super) const QM_RESIZE: &[Param] = list! {
    s("digest"), one_of("disk", DISK_VALUES).required(), s("size").required(), bool("skiplock"),
};

/// `POST /nodes/{node}/lxc`.
pub(super) const CT_CREATE: &[Param] = list! {
    one_of("arch", ARCH_VALUES_LXC), num("bwlimit"), one_of("cmode", CMODE_VALUES),
    bool("console"), int("cores"), num("cpulimit"), int("cpuunits"), bool("debug"),
    s("description"), idx("dev", 255), s("entrypoint"), s("env"), s("features"), bool("force"),
    bool("ha-managed"), s("hookscript"), s("hostname"), bool("ignore-unpack-errors"),
    one_of("lock", LOCK_VALUES_LXC), int("memory"), idx("mp", 255), s("nameserver"),
    idx("net", 31), bool("onboot"), s("ostemplate").required(),
    one_of("ostype", OSTYPE_VALUES_LXC), s("password"), s("pool"), bool("protection"),
    bool("restore"), s("rootfs"), s("searchdomain"), s("ssh-public-keys"), bool("start"),
    s("startup"), s("storage"), int("swap"), s("tags"), bool("template"), s("timezone"),
    int("tty"), bool("unique"), bool("unprivileged"), idx("unused", 255), int("vmid").required(),
};

/// `DELETE /nodes/{node}/lxc/{vmid}`.
pub(super) const CT_DESTROY: &[Param] = list! {
    bool("destroy-unreferenced-disks"), bool("force"), bool("purge"),
};

/// `POST /nodes/{node}/lxc/{vmid}/migrate`.
pub(super) const CT_MIGRATE: &[Param] = list! {
    num("bwlimit"), bool("online"), bool("restart"), s("target").required(), s("target-storage"),
    int("timeout"),
};

/// `POST /nodes/{node}/lxc/{vmid}/clone`.
pub(super) const CT_CLONE: &[Param] = list! {
    num("bwlimit"), s("description"), bool("full"), s("hostname"), int("newid").required(),
    s("pool"), s("snapname"), s("storage"), s("target"),
};

/// `PUT /nodes/{node}/lxc/{vmid}/config`.
pub(super) const CT_CONFIG_PUT: &[Param] = list! {
    one_of("arch", ARCH_VALUES_LXC), one_of("cmode", CMODE_VALUES), bool("console"),
    int("cores"), num("cpulimit"), int("cpuunits"), bool("debug"), s("delete"), s("description"),
    idx("dev", 255), s("digest"), s("entrypoint"), s("env"), s("features"), s("hookscript"),
    s("hostname"), one_of("lock", LOCK_VALUES_LXC), int("memory"), idx("mp", 255),
    s("nameserver"), idx("net", 31), bool("onboot"), one_of("ostype", OSTYPE_VALUES_LXC),
    bool("protection"), s("revert"), s("rootfs"), s("searchdomain"), s("startup"), int("swap"),
    s("tags"), bool("template"), s("timezone"), int("tty"), bool("unprivileged"),
    idx("unused", 255),
};

/// `POST /nodes/{node}/{qemu,lxc}/{vmid}/snapshot` (QEMU also takes `vmstate`).
pub(super) const QM_SNAPSHOT: &[Param] =
    &[s("snapname").required(), s("description"), bool("vmstate")];
/// `POST /nodes/{node}/lxc/{vmid}/snapshot`.
pub(super) const CT_SNAPSHOT: &[Param] = &[s("snapname").required(), s("description")];
/// `DELETE .../snapshot/{snapname}`.
pub(super) const SNAPSHOT_DELETE: &[Param] = &[bool("force")];
/// `POST .../snapshot/{snapname}/rollback`.
pub(super) const SNAPSHOT_ROLLBACK: &[Param] = &[bool("start")];
/// `POST /nodes/{node}/qemu/{vmid}/template`.
pub(super) const QM_TEMPLATE: &[Param] = &[one_of("disk", DISK_VALUES)];
/// `POST /nodes/{node}/qemu/{vmid}/agent/exec`.
pub(super) const QM_EXEC: &[Param] = &[s("command").required(), s("input-data")];
/// `GET /nodes/{node}/qemu/{vmid}/cloudinit/dump`.
pub(super) const QM_CLOUDINIT_DUMP: &[Param] =
    &[one_of("type", &["user", "network", "meta"]).required()];
