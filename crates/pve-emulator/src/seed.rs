//! The seed every emulator starts from: three nodes (or one), six guests,
//! two storages, a pool and a backup job.
//!
//! Invariant: the seed is deterministic apart from timestamps, and in
//! standalone mode no guest refers to a node that does not exist. Secret fields the real
//! API returns (VM 101's cloud-init password hash) carry [`SEED_CIPASSWORD`], a unique
//! string the redaction tests count in every output.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::state::{EmuState, Guest, GuestKind, Node, Pool, Power, Storage};
use super::state_infra::{InfraState, NodeNetwork, Volume};

/// The cloud-init password hash of VM 101, as Proxmox returns it in the VM's config. Unique
/// on purpose: no output of the MCP server may contain it (the redaction canary).
pub(crate) const SEED_CIPASSWORD: &str = "$5$seedsalt$CANARYcipw5f2b81d0e7a94c3";

/// Builds the seed state.
pub(super) fn seed(
    cluster: bool,
    fingerprint: String,
    task_duration: Duration,
    user: String,
    token_name: String,
) -> EmuState {
    let names: &[&str] = if cluster {
        &["pve01", "pve02", "pve03"]
    } else {
        &["pve01"]
    };
    let nodes = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let i = i as u64;
            Node {
                name: (*name).to_string(),
                ip: format!("127.0.0.{}", i + 1),
                nodeid: if cluster { i as u32 + 1 } else { 0 },
                maxcpu: 8,
                cpu: 0.03 + 0.02 * i as f64,
                maxmem: 34_359_738_368,
                mem: 9_663_676_416 + i * 1_073_741_824,
                maxdisk: 100_861_726_720,
                disk: 12_884_901_888 + i * 2_147_483_648,
                uptime_at_start: 864_000 + i * 3_600,
            }
        })
        .collect();
    let guests = seed_guests()
        .into_iter()
        .filter(|g| names.contains(&g.node.as_str()))
        .collect();
    EmuState {
        cluster,
        cluster_name: "emu-cluster".into(),
        nodes,
        guests,
        storages: seed_storages(),
        pools: vec![Pool {
            id: "emu-pool".into(),
            comment: "Emulator test pool".into(),
        }],
        backup_jobs: vec![json!({
            "id": "backup-emu-1",
            "type": "vzdump",
            "schedule": "sun 01:00",
            "storage": "local",
            "enabled": 1,
            "vmid": "101,201",
            "mode": "snapshot",
            "compress": "zstd",
            "notes-template": "{{guestname}}",
        })],
        tasks: Vec::new(),
        security: super::seed_security::seed(&user, &token_name),
        fingerprint,
        task_duration,
        progress_pace: Duration::from_millis(super::DEFAULT_PROGRESS_PACE_MS),
        task_failures: Vec::new(),
        caller: format!("{user}!{token_name}"),
        started: Instant::now(),
        last_pid: 0x0001_2340,
        infra: seed_infra(names),
        peer: super::state_peer::PeerState::default(),
        ha_managed: Vec::new(),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn qemu(vmid: u32, node: &str, running: bool, config: Value) -> Guest {
    Guest {
        vmid,
        kind: GuestKind::Qemu,
        node: node.into(),
        power: if running {
            Power::Running
        } else {
            Power::Stopped
        },
        started: running.then(Instant::now),
        uptime_offset: if running { 259_200 } else { 0 },
        maxdisk: 34_359_738_368,
        pool: None,
        config: object(config),
        snapshots: Vec::new(),
    }
}

fn lxc(vmid: u32, node: &str, running: bool, config: Value) -> Guest {
    Guest {
        kind: GuestKind::Lxc,
        maxdisk: 8_589_934_592,
        ..qemu(vmid, node, running, config)
    }
}

fn seed_guests() -> Vec<Guest> {
    let mut web = qemu(
        101,
        "pve01",
        true,
        json!({
            "name": "vm-web", "cores": 2, "sockets": 1, "memory": 4096, "ostype": "l26",
            "scsi0": "local-lvm:vm-101-disk-0,iothread=1,size=32G",
            "scsihw": "virtio-scsi-single",
            "net0": "virtio=BC:24:11:1A:01:01,bridge=vmbr0,firewall=1",
            "boot": "order=scsi0;net0", "agent": "1", "tags": "prod;web",
            "smbios1": "uuid=6b1f3c2e-0101-4c1d-9a01-000000000101", "vmgenid": "0d5f8a4e-0101-4b6e-8f01-000000000101",
            "ciuser": "ops",
            "cipassword": SEED_CIPASSWORD,
        }),
    );
    web.pool = Some("emu-pool".into());
    let db = qemu(
        102,
        "pve03",
        false,
        json!({
            "name": "vm-db", "cores": 4, "sockets": 1, "memory": 8192, "ostype": "l26",
            "scsi0": "local-lvm:vm-102-disk-0,iothread=1,size=64G",
            "scsihw": "virtio-scsi-single",
            "net0": "virtio=BC:24:11:1A:01:02,bridge=vmbr0",
            "boot": "order=scsi0;net0", "agent": "1", "tags": "prod;db",
        }),
    );
    let template = qemu(
        9000,
        "pve01",
        false,
        json!({
            "name": "tmpl-debian", "cores": 1, "sockets": 1, "memory": 2048, "ostype": "l26",
            "scsi0": "local-lvm:base-9000-disk-0,size=8G",
            "scsihw": "virtio-scsi-single",
            "net0": "virtio=BC:24:11:1A:90:00,bridge=vmbr0",
            "boot": "order=scsi0", "agent": "1", "template": 1,
        }),
    );
    let mut docker = lxc(
        201,
        "pve01",
        true,
        json!({
            "hostname": "ct-docker", "cores": 2, "memory": 2048, "swap": 512,
            "rootfs": "local-lvm:vm-201-disk-0,size=8G",
            "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:2A:02:01,ip=dhcp,type=veth",
            "ostype": "debian", "arch": "amd64", "unprivileged": 1, "features": "nesting=1",
        }),
    );
    docker.pool = Some("emu-pool".into());
    let remote = lxc(
        202,
        "pve02",
        true,
        json!({
            "hostname": "ct-remote", "cores": 1, "memory": 1024, "swap": 512,
            "rootfs": "local-lvm:vm-202-disk-0,size=8G",
            "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:2A:02:02,ip=dhcp,type=veth",
            "ostype": "debian", "arch": "amd64", "unprivileged": 1,
        }),
    );
    let unreachable = lxc(
        203,
        "pve03",
        false,
        json!({
            "hostname": "ct-unreachable", "cores": 1, "memory": 512, "swap": 512,
            "rootfs": "local-lvm:vm-203-disk-0,size=4G",
            "net0": "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:2A:02:03,ip=dhcp,type=veth",
            "ostype": "alpine", "arch": "amd64", "unprivileged": 1,
        }),
    );
    let mut guests = vec![web, db, template, docker, remote, unreachable];
    guests.sort_by_key(|g| g.vmid);
    guests
}

fn seed_storages() -> Vec<Storage> {
    vec![
        Storage {
            id: "local".into(),
            kind: "dir".into(),
            content: "iso,vztmpl,backup,snippets".into(),
            extra: object(json!({ "path": "/var/lib/vz", "prune-backups": "keep-all=1" })),
            total: 100_861_726_720,
            used: 12_884_901_888,
        },
        Storage {
            id: "local-lvm".into(),
            kind: "lvmthin".into(),
            content: "images,rootdir".into(),
            extra: object(json!({ "thinpool": "data", "vgname": "pve" })),
            total: 348_160_786_432,
            used: 41_875_931_136,
        },
    ]
}

/// Networks (a bridge on eno1, a bond of eno2+eno3 on every node; the gateway on the
/// first node only), the pool's storage member, and an ISO, a template and two backups
/// on `local`.
fn seed_infra(names: &[&str]) -> InfraState {
    let mut infra = InfraState::default();
    for (i, name) in names.iter().enumerate() {
        let address = format!("192.168.100.{}", i + 11);
        let mut bridge = object(json!({
            "iface": "vmbr0", "type": "bridge", "method": "static", "method6": "manual",
            "families": ["inet"], "autostart": 1, "address": address, "netmask": "24",
            "cidr": format!("{address}/24"), "gateway": "192.168.100.1",
            "bridge_ports": "eno1", "bridge_stp": "off", "bridge_fd": "0", "priority": 5,
        }));
        if i != 0 {
            bridge.remove("gateway");
        }
        let eth = |iface: &str, priority: u32| {
            object(json!({
                "iface": iface, "type": "eth", "method": "manual", "method6": "manual",
                "families": ["inet"], "exists": 1, "priority": priority,
            }))
        };
        let bond = object(json!({
            "iface": "bond0", "type": "bond", "method": "manual", "method6": "manual",
            "families": ["inet"], "autostart": 1, "slaves": "eno2 eno3",
            "bond_mode": "active-backup", "bond-primary": "eno2", "priority": 4,
        }));
        let active = vec![bridge, eth("eno1", 1), eth("eno2", 2), eth("eno3", 3), bond];
        infra.networks.insert(
            (*name).to_string(),
            NodeNetwork {
                active,
                pending: None,
            },
        );
    }
    infra
        .pool_storages
        .insert("emu-pool".into(), vec!["local".into()]);
    // The same volumes the guest tools' tests know (ISOs, templates, two backups).
    let volume = |volid: &str, format: &str, size: u64, ctime: u64, backup: Option<(u32, &str)>| {
        let content = volid
            .split_once(':')
            .and_then(|(_, rest)| rest.split_once('/'))
            .map_or("", |(dir, _)| dir);
        Volume {
            storage: "local".into(),
            volid: volid.into(),
            content: content.into(),
            format: format.into(),
            size,
            vmid: backup.map(|(vmid, _)| vmid),
            ctime,
            notes: backup.map(|(_, notes)| notes.to_string()),
            verification: None,
            protected: false,
        }
    };
    infra.volumes = vec![
        volume(
            "local:iso/debian-12.8.0-amd64-netinst.iso",
            "iso",
            661_651_456,
            1_731_900_000,
            None,
        ),
        volume(
            "local:iso/ubuntu-24.04.1-live-server-amd64.iso",
            "iso",
            2_773_874_688,
            1_731_900_100,
            None,
        ),
        volume(
            "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
            "tzst",
            126_649_856,
            1_731_900_200,
            None,
        ),
        volume(
            "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz",
            "txz",
            3_192_832,
            1_731_900_300,
            None,
        ),
        volume(
            "local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst",
            "vma.zst",
            1_932_735_283,
            1_763_859_603,
            Some((101, "vm-web")),
        ),
        volume(
            "local:backup/vzdump-lxc-201-2025_11_23-01_00_41.tar.zst",
            "tar.zst",
            412_316_860,
            1_763_859_641,
            Some((201, "ct-docker")),
        ),
        volume(
            "local:snippets/user-data.yaml",
            "snippet",
            412,
            1_731_900_400,
            None,
        ),
    ];
    infra
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(cluster: bool) -> EmuState {
        seed(
            cluster,
            "AA".into(),
            Duration::from_millis(10),
            "svc_mcp@pve".into(),
            "emu".into(),
        )
    }

    #[test]
    fn standalone_drops_remote_guests() {
        let st = state(false);
        assert_eq!(st.nodes.len(), 1);
        let ids: Vec<u32> = st.guests.iter().map(|g| g.vmid).collect();
        assert_eq!(ids, vec![101, 201, 9000]);
    }

    #[test]
    fn cluster_seed_and_next_id() {
        let st = state(true);
        assert_eq!(st.nodes.len(), 3);
        assert_eq!(st.guests.len(), 6);
        assert_eq!(st.next_free_vmid(), 100);
        let web = st.guests.iter().find(|g| g.vmid == 101).unwrap();
        assert_eq!(web.name(), "vm-web");
        assert_eq!(web.cpus(), 2);
        assert_eq!(web.digest().len(), 40);
        assert!(st.guests.iter().any(|g| g.vmid == 9000 && g.is_template()));
    }
}
