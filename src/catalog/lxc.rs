//! LXC container tools: inventory, status, configuration and power.

use super::params::{GUEST, NODE};
use super::types::{Backend, Category, Legs, Param, ParamKind, ToolSpec, get, power_action};

const SHUTDOWN_PARAMS: &[Param] = &[
    GUEST[0],
    GUEST[1],
    Param::body(
        "timeout",
        ParamKind::Integer,
        "Seconds to wait (default 60).",
    )
    .min(0),
    Param::body(
        "forceStop",
        ParamKind::Boolean,
        "Stop hard after `timeout`.",
    ),
];

/// Rows of the `lxc` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_lxc_containers",
        title: "List containers on a node",
        description: "A node's containers: vmid, name, status, cpus, mem/maxmem (bytes), uptime (s), tags. All nodes: pve_list_cluster_resources.",
        category: Category::Lxc,
        params: &[NODE],
        backend: get("/nodes/{node}/lxc"),
        long_list: true,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_lxc_status",
        title: "Get container status",
        description: "A container's runtime status: status, uptime (s), cpu, mem/swap (bytes), disk/net I/O, HA state.",
        category: Category::Lxc,
        aliases: &["getContainerStatus"],
        params: GUEST,
        backend: get("/nodes/{node}/lxc/{vmid}/status/current"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_lxc_config",
        title: "Get container configuration",
        description: "A container's config: hostname, cores, memory/swap (MiB), rootfs, mpN, netN, features, and `digest` for updates.",
        category: Category::Lxc,
        legs: Legs::SENSITIVE_UNTRUSTED,
        params: &[
            NODE,
            GUEST[1],
            Param::query(
                "current",
                ParamKind::Boolean,
                "Running values, not pending ones.",
            ),
            Param::query("snapshot", ParamKind::String, "Config of this snapshot.")
                .matching("^[A-Za-z][A-Za-z0-9_-]{0,39}$"),
        ],
        backend: get("/nodes/{node}/lxc/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "listContainers",
        title: "List containers (legacy)",
        description: "Deprecated: use pve_list_lxc_containers or pve_list_cluster_resources. Lists containers of one node, or all nodes if `node` is omitted.",
        category: Category::Lxc,
        deprecated: true,
        superseded_by: Some("pve_list_lxc_containers"),
        params: &[NODE.optional()],
        backend: Backend::PerNodeList {
            path: "/nodes/{node}/lxc",
        },
        ..ToolSpec::BASE
    },
    power_action(
        Category::Lxc,
        "pve_start_lxc_container",
        "Start container",
        "Start a stopped container. Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/start",
        false,
        &["startContainer"],
        GUEST,
    ),
    power_action(
        Category::Lxc,
        "pve_stop_lxc_container",
        "Stop container (hard)",
        "Stop a container immediately, killing its processes. Prefer pve_shutdown_lxc_container. Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/stop",
        true,
        &["stopContainer"],
        GUEST,
    ),
    power_action(
        Category::Lxc,
        "pve_shutdown_lxc_container",
        "Shut down container",
        "Shut a container down cleanly. Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/shutdown",
        true,
        &[],
        SHUTDOWN_PARAMS,
    ),
    power_action(
        Category::Lxc,
        "pve_reboot_lxc_container",
        "Reboot container",
        "Reboot a container cleanly (applies pending changes). Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/reboot",
        true,
        &[],
        GUEST,
    ),
    power_action(
        Category::Lxc,
        "pve_suspend_lxc_container",
        "Freeze container",
        "Freeze a running container's processes; undo with pve_resume_lxc_container. Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/suspend",
        true,
        &[],
        GUEST,
    ),
    power_action(
        Category::Lxc,
        "pve_resume_lxc_container",
        "Unfreeze container",
        "Resume a frozen container. Returns a task UPID.",
        "/nodes/{node}/lxc/{vmid}/status/resume",
        false,
        &[],
        GUEST,
    ),
];
