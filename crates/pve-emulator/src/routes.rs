//! The route table: every implemented endpoint with its declared
//! parameters and handler.
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema
//! accepts for it (path captures are implicit), so undeclared parameters are
//! refused like pveproxy refuses them. Adding a route is one entry:
//! `get("/nodes/{node}/foo", &[s("bar"), int("limit")], module::handler)`.

use super::api::{Param, bool, int, one_of, s};
use super::handlers::{cluster, guests, nodes, tasks};
use super::route::{NETWORK_TYPES, Route, STORAGE_TYPES, delete, get, post};

const CONFIG: &[Param] = &[bool("current"), s("snapshot")];
const QM_START: &[Param] = &[
    bool("skiplock"),
    int("timeout"),
    s("migratedfrom"),
    s("machine"),
    s("stateuri"),
    s("targetstorage"),
    s("force-cpu"),
    s("migration_network"),
    one_of("migration_type", &["secure", "insecure"]),
    s("nets-host-mtu"),
    bool("with-conntrack-state"),
];
const QM_STOP: &[Param] = &[
    bool("skiplock"),
    int("timeout"),
    bool("keepActive"),
    s("migratedfrom"),
    bool("overrule-shutdown"),
];
const QM_SHUTDOWN: &[Param] = &[
    bool("forceStop"),
    bool("keepActive"),
    bool("skiplock"),
    int("timeout"),
];
const QM_SUSPEND: &[Param] = &[bool("skiplock"), s("statestorage"), bool("todisk")];
const QM_RESUME: &[Param] = &[bool("skiplock"), bool("nocheck")];
const TASK_LIST: &[Param] = &[
    int("start"),
    int("limit"),
    int("vmid"),
    s("typefilter"),
    s("userfilter"),
    bool("errors"),
    one_of("source", &["archive", "active", "all"]),
    int("since"),
    int("until"),
    s("statusfilter"),
];

/// Every route table, in precedence order for ties: the base slice, then the guest
/// lifecycle routes (`routes_guests.rs`) and the infrastructure routes
/// (`routes_infra.rs`), then access control and firewall (`routes_security.rs`). Splitting the table keeps each file reviewable.
pub(super) static TABLES: &[&[Route]] = &[
    BASE,
    super::routes_guests::ROUTES,
    super::routes_infra::ROUTES,
    super::routes_security::ROUTES,
    super::routes_peer::ROUTES,
];

/// Every implemented route, in table order.
pub(super) fn all() -> impl Iterator<Item = &'static Route> {
    TABLES.iter().flat_map(|table| table.iter())
}

/// The walking-skeleton routes: inventory, status, power and tasks.
static BASE: &[Route] = &[
    get("/version", &[], nodes::version),
    get("/nodes", &[], nodes::list),
    get("/nodes/{node}/status", &[], nodes::status),
    get(
        "/nodes/{node}/storage",
        &[
            s("content"),
            bool("enabled"),
            bool("format"),
            s("storage"),
            s("target"),
        ],
        nodes::storage,
    ),
    get(
        "/nodes/{node}/network",
        &[one_of("type", NETWORK_TYPES)],
        nodes::network,
    ),
    get("/nodes/{node}/qemu", &[bool("full")], guests::qemu_list),
    get("/nodes/{node}/lxc", &[], guests::lxc_list),
    get(
        "/nodes/{node}/qemu/{vmid}/status/current",
        &[],
        guests::qemu_current,
    ),
    get(
        "/nodes/{node}/lxc/{vmid}/status/current",
        &[],
        guests::lxc_current,
    ),
    get(
        "/nodes/{node}/qemu/{vmid}/config",
        CONFIG,
        guests::qemu_config,
    ),
    get(
        "/nodes/{node}/lxc/{vmid}/config",
        CONFIG,
        guests::lxc_config,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/start",
        QM_START,
        guests::qemu_start,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/stop",
        QM_STOP,
        guests::qemu_stop,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/shutdown",
        QM_SHUTDOWN,
        guests::qemu_shutdown,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/reboot",
        &[int("timeout")],
        guests::qemu_reboot,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/reset",
        &[bool("skiplock")],
        guests::qemu_reset,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/suspend",
        QM_SUSPEND,
        guests::qemu_suspend,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/status/resume",
        QM_RESUME,
        guests::qemu_resume,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/status/start",
        &[bool("skiplock"), bool("debug")],
        guests::lxc_start,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/status/stop",
        &[bool("skiplock"), bool("overrule-shutdown")],
        guests::lxc_stop,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/status/shutdown",
        &[bool("forceStop"), int("timeout")],
        guests::lxc_shutdown,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/status/reboot",
        &[int("timeout")],
        guests::lxc_reboot,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/status/suspend",
        &[],
        guests::lxc_suspend,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/status/resume",
        &[],
        guests::lxc_resume,
    ),
    get("/nodes/{node}/tasks", TASK_LIST, tasks::list),
    get("/nodes/{node}/tasks/{upid}/status", &[], tasks::status),
    get(
        "/nodes/{node}/tasks/{upid}/log",
        &[int("start"), int("limit"), bool("download")],
        tasks::log,
    ),
    delete("/nodes/{node}/tasks/{upid}", &[], tasks::stop),
    get("/cluster/tasks", &[], tasks::cluster_list),
    get("/cluster/status", &[], cluster::status),
    get(
        "/cluster/resources",
        &[one_of("type", &["vm", "storage", "node", "sdn"])],
        cluster::resources,
    ),
    get("/cluster/nextid", &[int("vmid")], cluster::nextid),
    get("/cluster/backup", &[], cluster::backup_jobs),
    get(
        "/storage",
        &[one_of("type", STORAGE_TYPES)],
        cluster::storage,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_is_unique_per_method() {
        let routes: Vec<&Route> = all().collect();
        for (i, a) in routes.iter().enumerate() {
            for b in &routes[i + 1..] {
                assert!(
                    !(a.method == b.method && a.pattern == b.pattern),
                    "duplicate route {}",
                    a.pattern
                );
            }
        }
    }
}
