//! Infrastructure routes: cluster log/options/replication/HA, storage, backup, node
//! network, pools, RRD metrics and node facts (version, DNS, time, syslog, services).
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema accepts for
//! it, so a tool that sends anything else is refused with a 400 like pveproxy does. The
//! parameter lists were transcribed from the PVE 9.1 schema and the test at the end of
//! this file compares every route of this table with it.

use super::api::{Param, bool, int, one_of, s};
use super::dispatch::{Route, delete, get, post, put};
use super::handlers::{backup, cluster_infra, monitoring, network, pools, storage};

const STORAGE_CREATE: &[Param] = &[
    s("authsupported"),
    s("base"),
    s("blocksize"),
    s("bwlimit"),
    s("comstar_hg"),
    s("comstar_tg"),
    s("content"),
    s("content-dirs"),
    bool("create-base-path"),
    bool("create-subdirs"),
    s("data-pool"),
    s("datastore"),
    bool("disable"),
    s("domain"),
    s("encryption-key"),
    s("export"),
    s("fingerprint"),
    one_of("format", &["raw", "qcow2", "subvol", "vmdk"]),
    s("fs-name"),
    bool("fuse"),
    s("is_mountpoint"),
    s("iscsiprovider"),
    s("keyring"),
    bool("krbd"),
    s("lio_tpg"),
    s("master-pubkey"),
    int("max-protected-backups"),
    bool("mkdir"),
    s("monhost"),
    s("mountpoint"),
    s("namespace"),
    bool("nocow"),
    s("nodes"),
    bool("nowritecache"),
    s("options"),
    s("password"),
    s("path"),
    s("pool"),
    int("port"),
    s("portal"),
    one_of("preallocation", &["off", "metadata", "falloc", "full"]),
    s("prune-backups"),
    bool("saferemove"),
    int("saferemove-stepsize"),
    s("saferemove_throughput"),
    s("server"),
    s("share"),
    bool("shared"),
    bool("skip-cert-verification"),
    one_of("smbversion", &["default", "2.0", "2.1", "3", "3.0", "3.11"]),
    bool("snapshot-as-volume-chain"),
    bool("sparse"),
    s("storage").required(),
    s("subdir"),
    bool("tagged_only"),
    s("target"),
    s("thinpool"),
    one_of(
        "type",
        &[
            "btrfs",
            "cephfs",
            "cifs",
            "dir",
            "esxi",
            "iscsi",
            "iscsidirect",
            "lvm",
            "lvmthin",
            "nfs",
            "pbs",
            "rbd",
            "zfs",
            "zfspool",
        ],
    )
    .required(),
    s("username"),
    s("vgname"),
    s("zfs-base-path"),
];
const STORAGE_UPDATE: &[Param] = &[
    s("blocksize"),
    s("bwlimit"),
    s("comstar_hg"),
    s("comstar_tg"),
    s("content"),
    s("content-dirs"),
    bool("create-base-path"),
    bool("create-subdirs"),
    s("data-pool"),
    s("delete"),
    s("digest"),
    bool("disable"),
    s("domain"),
    s("encryption-key"),
    s("fingerprint"),
    one_of("format", &["raw", "qcow2", "subvol", "vmdk"]),
    s("fs-name"),
    bool("fuse"),
    s("is_mountpoint"),
    s("keyring"),
    bool("krbd"),
    s("lio_tpg"),
    s("master-pubkey"),
    int("max-protected-backups"),
    bool("mkdir"),
    s("monhost"),
    s("mountpoint"),
    s("namespace"),
    bool("nocow"),
    s("nodes"),
    bool("nowritecache"),
    s("options"),
    s("password"),
    s("pool"),
    int("port"),
    one_of("preallocation", &["off", "metadata", "falloc", "full"]),
    s("prune-backups"),
    bool("saferemove"),
    int("saferemove-stepsize"),
    s("saferemove_throughput"),
    s("server"),
    bool("shared"),
    bool("skip-cert-verification"),
    one_of("smbversion", &["default", "2.0", "2.1", "3", "3.0", "3.11"]),
    bool("snapshot-as-volume-chain"),
    bool("sparse"),
    s("subdir"),
    bool("tagged_only"),
    s("username"),
    s("zfs-base-path"),
];
const BACKUP_JOB_CREATE: &[Param] = &[
    bool("all"),
    int("bwlimit"),
    s("comment"),
    one_of("compress", &["0", "1", "gzip", "lzo", "zstd"]),
    s("dow"),
    s("dumpdir"),
    bool("enabled"),
    s("exclude"),
    s("exclude-path"),
    s("fleecing"),
    s("id"),
    int("ionice"),
    int("lockwait"),
    one_of("mailnotification", &["always", "failure"]),
    s("mailto"),
    int("maxfiles"),
    one_of("mode", &["snapshot", "suspend", "stop"]),
    s("node"),
    s("notes-template"),
    one_of(
        "notification-mode",
        &["auto", "legacy-sendmail", "notification-system"],
    ),
    one_of("pbs-change-detection-mode", &["legacy", "data", "metadata"]),
    s("performance"),
    int("pigz"),
    s("pool"),
    bool("protected"),
    s("prune-backups"),
    bool("quiet"),
    bool("remove"),
    bool("repeat-missed"),
    s("schedule"),
    s("script"),
    s("starttime"),
    bool("stdexcludes"),
    bool("stop"),
    int("stopwait"),
    s("storage"),
    s("tmpdir"),
    s("vmid"),
    int("zstd"),
];
const VZDUMP: &[Param] = &[
    bool("all"),
    int("bwlimit"),
    one_of("compress", &["0", "1", "gzip", "lzo", "zstd"]),
    s("dumpdir"),
    s("exclude"),
    s("exclude-path"),
    s("fleecing"),
    int("ionice"),
    s("job-id"),
    int("lockwait"),
    one_of("mailnotification", &["always", "failure"]),
    s("mailto"),
    int("maxfiles"),
    one_of("mode", &["snapshot", "suspend", "stop"]),
    s("notes-template"),
    one_of(
        "notification-mode",
        &["auto", "legacy-sendmail", "notification-system"],
    ),
    one_of("pbs-change-detection-mode", &["legacy", "data", "metadata"]),
    s("performance"),
    int("pigz"),
    s("pool"),
    bool("protected"),
    s("prune-backups"),
    bool("quiet"),
    bool("remove"),
    s("script"),
    bool("stdexcludes"),
    bool("stdout"),
    bool("stop"),
    int("stopwait"),
    s("storage"),
    s("tmpdir"),
    s("vmid"),
    int("zstd"),
];
const NETWORK_CREATE: &[Param] = &[
    s("address"),
    s("address6"),
    bool("autostart"),
    s("bond-primary"),
    one_of(
        "bond_mode",
        &[
            "balance-rr",
            "active-backup",
            "balance-xor",
            "broadcast",
            "802.3ad",
            "balance-tlb",
            "balance-alb",
            "balance-slb",
            "lacp-balance-slb",
            "lacp-balance-tcp",
        ],
    ),
    one_of("bond_xmit_hash_policy", &["layer2", "layer2+3", "layer3+4"]),
    s("bridge_ports"),
    s("bridge_vids"),
    bool("bridge_vlan_aware"),
    s("cidr"),
    s("cidr6"),
    s("comments"),
    s("comments6"),
    s("gateway"),
    s("gateway6"),
    s("iface").required(),
    int("mtu"),
    s("netmask"),
    int("netmask6"),
    s("ovs_bonds"),
    s("ovs_bridge"),
    s("ovs_options"),
    s("ovs_ports"),
    int("ovs_tag"),
    s("slaves"),
    one_of(
        "type",
        &[
            "bridge",
            "bond",
            "eth",
            "alias",
            "vlan",
            "fabric",
            "OVSBridge",
            "OVSBond",
            "OVSPort",
            "OVSIntPort",
            "vnet",
            "unknown",
        ],
    )
    .required(),
    int("vlan-id"),
    s("vlan-raw-device"),
];
const NETWORK_UPDATE: &[Param] = &[
    s("address"),
    s("address6"),
    bool("autostart"),
    s("bond-primary"),
    one_of(
        "bond_mode",
        &[
            "balance-rr",
            "active-backup",
            "balance-xor",
            "broadcast",
            "802.3ad",
            "balance-tlb",
            "balance-alb",
            "balance-slb",
            "lacp-balance-slb",
            "lacp-balance-tcp",
        ],
    ),
    one_of("bond_xmit_hash_policy", &["layer2", "layer2+3", "layer3+4"]),
    s("bridge_ports"),
    s("bridge_vids"),
    bool("bridge_vlan_aware"),
    s("cidr"),
    s("cidr6"),
    s("comments"),
    s("comments6"),
    s("delete"),
    s("gateway"),
    s("gateway6"),
    int("mtu"),
    s("netmask"),
    int("netmask6"),
    s("ovs_bonds"),
    s("ovs_bridge"),
    s("ovs_options"),
    s("ovs_ports"),
    int("ovs_tag"),
    s("slaves"),
    one_of(
        "type",
        &[
            "bridge",
            "bond",
            "eth",
            "alias",
            "vlan",
            "fabric",
            "OVSBridge",
            "OVSBond",
            "OVSPort",
            "OVSIntPort",
            "vnet",
            "unknown",
        ],
    )
    .required(),
    int("vlan-id"),
    s("vlan-raw-device"),
];
const POOL_UPDATE: &[Param] = &[
    bool("allow-move"),
    s("comment"),
    bool("delete"),
    s("storage"),
    s("vms"),
];
const SYSLOG: &[Param] = &[
    int("limit"),
    s("service"),
    s("since"),
    int("start"),
    s("until"),
];

/// Routes of this table (see `routes::TABLES`).
pub(super) static ROUTES: &[Route] = &[
    get("/cluster/log", &[int("max")], cluster_infra::log),
    get("/cluster/options", &[], cluster_infra::options),
    get("/cluster/replication", &[], cluster_infra::replication),
    get("/cluster/ha/status/current", &[], cluster_infra::ha_status),
    get("/cluster/backup-info", &[], cluster_infra::backup_info),
    get("/storage/{storage}", &[], storage::get),
    post("/storage", STORAGE_CREATE, storage::create),
    put("/storage/{storage}", STORAGE_UPDATE, storage::update),
    delete("/storage/{storage}", &[], storage::remove),
    get(
        "/nodes/{node}/storage/{storage}/status",
        &[],
        storage::status,
    ),
    get(
        "/nodes/{node}/storage/{storage}/content",
        &[s("content"), int("vmid")],
        storage::content,
    ),
    get("/cluster/backup/{id}", &[], backup::get),
    post("/cluster/backup", BACKUP_JOB_CREATE, backup::create),
    delete("/cluster/backup/{id}", &[], backup::remove),
    post("/nodes/{node}/vzdump", VZDUMP, backup::vzdump),
    get("/nodes/{node}/network/{iface}", &[], network::get),
    post("/nodes/{node}/network", NETWORK_CREATE, network::create),
    put(
        "/nodes/{node}/network/{iface}",
        NETWORK_UPDATE,
        network::update,
    ),
    delete("/nodes/{node}/network/{iface}", &[], network::remove),
    put(
        "/nodes/{node}/network",
        &[bool("regenerate-frr")],
        network::apply,
    ),
    delete("/nodes/{node}/network", &[], network::revert),
    get(
        "/pools/{poolid}",
        &[one_of("type", &["qemu", "lxc", "storage"])],
        pools::get,
    ),
    post(
        "/pools",
        &[s("comment"), s("poolid").required()],
        pools::create,
    ),
    put("/pools/{poolid}", POOL_UPDATE, pools::update),
    delete("/pools/{poolid}", &[], pools::remove),
    get(
        "/nodes/{node}/rrddata",
        &[
            one_of("cf", &["AVERAGE", "MAX"]),
            one_of(
                "timeframe",
                &["hour", "day", "week", "month", "year", "decade"],
            )
            .required(),
        ],
        monitoring::node_rrd,
    ),
    get(
        "/nodes/{node}/qemu/{vmid}/rrddata",
        &[
            one_of("cf", &["AVERAGE", "MAX"]),
            one_of("timeframe", &["hour", "day", "week", "month", "year"]).required(),
        ],
        monitoring::qemu_rrd,
    ),
    get(
        "/nodes/{node}/lxc/{vmid}/rrddata",
        &[
            one_of("cf", &["AVERAGE", "MAX"]),
            one_of("timeframe", &["hour", "day", "week", "month", "year"]).required(),
        ],
        monitoring::lxc_rrd,
    ),
    get("/nodes/{node}/version", &[], monitoring::version),
    get("/nodes/{node}/dns", &[], monitoring::dns),
    get("/nodes/{node}/time", &[], monitoring::time),
    get("/nodes/{node}/syslog", SYSLOG, monitoring::syslog),
    get("/nodes/{node}/services", &[], monitoring::services),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read;

    use super::super::api::Kind;
    use super::ROUTES;

    /// Every route of this table against `endpoints-pve-9.1.json.gz`: same method and
    /// path, the same parameter names (path captures aside), the same optionality, and
    /// enum values equal to the schema's.
    #[test]
    fn routes_match_the_pve_schema() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/pve-api/endpoints-pve-9.1.json.gz");
        let Ok(file) = std::fs::File::open(&path) else {
            assert!(
                std::env::var("CI").is_err(),
                "{} missing under CI",
                path.display()
            );
            eprintln!("SKIP: {} not found", path.display());
            return;
        };
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .expect("gzip");
        let endpoints: serde_json::Value = serde_json::from_str(&text).expect("json");
        let mut failures = Vec::new();
        // The skeleton's table answers some infrastructure reads too; they are held to
        // the same rule.
        let base_infra = super::super::routes::all().filter(|r| {
            [
                "/storage",
                "/pools",
                "/cluster/backup",
                "/nodes/{node}/network",
                "/nodes/{node}/storage",
            ]
            .contains(&r.pattern)
        });
        for route in ROUTES.iter().chain(base_infra) {
            let method = format!("{:?}", route.method).to_uppercase();
            let Some(schema) = endpoints[route.pattern][&method]["parameters"].as_object() else {
                failures.push(format!("{method} {} not in the API", route.pattern));
                continue;
            };
            let captures: Vec<&str> = route
                .pattern
                .split('/')
                .filter_map(|p| p.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
                .collect();
            let expected: BTreeMap<&str, &serde_json::Value> = schema
                .iter()
                .filter(|(k, _)| !captures.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v))
                .collect();
            let ours: BTreeMap<&str, _> = route.params.iter().map(|p| (p.name, p)).collect();
            let (a, b): (Vec<_>, Vec<_>) = (expected.keys().collect(), ours.keys().collect());
            if a != b {
                failures.push(format!(
                    "{method} {}: params {b:?} vs API {a:?}",
                    route.pattern
                ));
                continue;
            }
            for (name, api) in expected {
                let p = ours[name];
                let optional = api["optional"].as_i64() == Some(1);
                if p.required == optional {
                    failures.push(format!("{method} {}: {name} optionality", route.pattern));
                }
                if let (Kind::Enum(values), Some(api_values)) = (p.kind, api["enum"].as_array()) {
                    let api_values: Vec<&str> =
                        api_values.iter().filter_map(|v| v.as_str()).collect();
                    if values != api_values.as_slice() {
                        failures.push(format!("{method} {}: {name} enum", route.pattern));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
