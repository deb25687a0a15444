//! LXC container tools: inventory, status, configuration and power.

use super::params::{GUEST, NODE};
use super::types::{Backend, Category, Effect, Param, ParamKind, Tier, ToolSpec, get, post};

/// Power actions change a running system: never retried, tier read-execute.
const POWER: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

/// An LXC power action row: `POST /nodes/{node}/lxc/{vmid}/status/<action>`.
const fn power(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    path: &'static str,
    confirm: bool,
    aliases: &'static [&'static str],
    params: &'static [Param],
) -> ToolSpec {
    ToolSpec {
        name,
        title,
        description,
        category: Category::Lxc,
        tier: Tier::ReadExecute,
        effect: POWER,
        confirm,
        aliases,
        params,
        backend: post(path),
        ..ToolSpec::BASE
    }
}

const SHUTDOWN_PARAMS: &[Param] = &[
    GUEST[0],
    GUEST[1],
    Param::body(
        "timeout",
        ParamKind::Integer,
        "Seconds to wait for the container to stop cleanly (Proxmox default 60).",
    )
    .min(0),
    Param::body(
        "forceStop",
        ParamKind::Boolean,
        "If the container is still running when `timeout` expires, stop it hard.",
    ),
];

/// Rows of the `lxc` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_lxc_containers",
        title: "List containers on a node",
        description: "List the LXC containers on one node: vmid, name, status (running/stopped), cpus, maxmem and mem (bytes), maxswap, uptime (seconds) and tags. For every node at once use pve_list_cluster_resources with type \"vm\".",
        category: Category::Lxc,
        params: &[NODE],
        backend: get("/nodes/{node}/lxc"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_lxc_status",
        title: "Get container status",
        description: "Read one container's current runtime status: status (running/stopped), uptime (s), CPU use (fraction), memory and swap in use and allocated (bytes), disk and network counters, HA state. Use it after a power action to confirm the result.",
        category: Category::Lxc,
        aliases: &["getContainerStatus"],
        params: GUEST,
        backend: get("/nodes/{node}/lxc/{vmid}/status/current"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_lxc_config",
        title: "Get container configuration",
        description: "Read one container's configuration: hostname, cores, memory and swap (MiB), rootfs and mount points (mp0, …) as property strings like \"local-lvm:vm-201-disk-0,size=8G\", NICs (net0 = \"name=eth0,bridge=vmbr0,ip=dhcp\"), ostype, unprivileged, features, and `digest` (pass it back on updates). Set `current` to see running values instead of pending ones.",
        category: Category::Lxc,
        params: &[
            NODE,
            GUEST[1],
            Param::query(
                "current",
                ParamKind::Boolean,
                "Return the values in effect now, ignoring pending changes.",
            ),
            Param::query(
                "snapshot",
                ParamKind::String,
                "Return the configuration stored in this snapshot instead of the live one.",
            )
            .pattern("^[A-Za-z][A-Za-z0-9_-]{0,39}$", 40),
        ],
        backend: get("/nodes/{node}/lxc/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "listContainers",
        title: "List containers (legacy)",
        description: "Deprecated: use pve_list_lxc_containers (one node) or pve_list_cluster_resources with type \"vm\" (all nodes). Lists the LXC containers of one node, or of every node when `node` is omitted (results concatenated, each entry with its node).",
        category: Category::Lxc,
        deprecated: true,
        params: &[NODE.optional()],
        backend: Backend::PerNodeList {
            path: "/nodes/{node}/lxc",
        },
        ..ToolSpec::BASE
    },
    power(
        "pve_start_lxc_container",
        "Start container",
        "Start a stopped container. Returns a task UPID string; follow it with pve_get_task_status, then pve_get_lxc_status shows \"running\".",
        "/nodes/{node}/lxc/{vmid}/status/start",
        false,
        &["startContainer"],
        GUEST,
    ),
    power(
        "pve_stop_lxc_container",
        "Stop container (hard)",
        "Immediately stop a container, killing its processes without a clean shutdown. Prefer pve_shutdown_lxc_container. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/lxc/{vmid}/status/stop",
        true,
        &["stopContainer"],
        GUEST,
    ),
    power(
        "pve_shutdown_lxc_container",
        "Shut down container",
        "Shut a container down cleanly (its init system stops services); set `forceStop` to stop it hard after `timeout`. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/lxc/{vmid}/status/shutdown",
        true,
        &[],
        SHUTDOWN_PARAMS,
    ),
    power(
        "pve_reboot_lxc_container",
        "Reboot container",
        "Reboot a container cleanly (shutdown, then start; pending changes are applied). Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/lxc/{vmid}/status/reboot",
        true,
        &[],
        GUEST,
    ),
    power(
        "pve_suspend_lxc_container",
        "Freeze container",
        "Freeze all processes of a running container (cgroup freezer); resume with pve_resume_lxc_container. Requires confirm=true. Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/suspend",
        true,
        &[],
        GUEST,
    ),
    power(
        "pve_resume_lxc_container",
        "Unfreeze container",
        "Resume a container frozen by pve_suspend_lxc_container. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/lxc/{vmid}/status/resume",
        false,
        &[],
        GUEST,
    ),
];
