//! QEMU virtual machine tools: inventory, status, configuration and power.

use super::params::{GUEST, NODE};
use super::types::{Backend, Category, Legs, Param, ParamKind, ToolSpec, get, power_action};

const SHUTDOWN_PARAMS: &[Param] = &[
    GUEST[0],
    GUEST[1],
    Param::body(
        "timeout",
        ParamKind::Integer,
        "Seconds to wait (default 180).",
    )
    .min(0),
    Param::body(
        "forceStop",
        ParamKind::Boolean,
        "Power off after `timeout`.",
    ),
];

/// Rows of the `qemu` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_qemu_vms",
        title: "List VMs on a node",
        description: "A node's VMs: vmid, name, status, cpus, mem/maxmem (bytes), uptime (s), template, tags. All nodes: pve_list_cluster_resources.",
        category: Category::Qemu,
        params: &[NODE],
        backend: get("/nodes/{node}/qemu"),
        long_list: true,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_qemu_status",
        title: "Get VM status",
        description: "A VM's runtime status: status/qmpstatus, uptime (s), cpu, mem (bytes), disk/net I/O, HA state.",
        category: Category::Qemu,
        aliases: &["getVMStatus"],
        params: GUEST,
        backend: get("/nodes/{node}/qemu/{vmid}/status/current"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_qemu_config",
        title: "Get VM configuration",
        description: "A VM's config: name, cores, sockets, memory (MiB), cpu, ostype, disks, netN, boot, agent, cloud-init keys, and `digest` for updates.",
        category: Category::Qemu,
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
        backend: get("/nodes/{node}/qemu/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "listVMs",
        title: "List VMs (legacy)",
        description: "Deprecated: use pve_list_qemu_vms or pve_list_cluster_resources. Lists VMs of one node, or all nodes if `node` is omitted.",
        category: Category::Qemu,
        deprecated: true,
        superseded_by: Some("pve_list_qemu_vms"),
        params: &[NODE.optional()],
        backend: Backend::PerNodeList {
            path: "/nodes/{node}/qemu",
        },
        ..ToolSpec::BASE
    },
    power_action(
        Category::Qemu,
        "pve_start_qemu_vm",
        "Start VM",
        "Power on (start) a VM. Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/start",
        false,
        &["startVM"],
        GUEST,
    ),
    power_action(
        Category::Qemu,
        "pve_stop_qemu_vm",
        "Stop VM (hard)",
        "Power a VM off immediately, like pulling the plug. Prefer pve_shutdown_qemu_vm. Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/stop",
        true,
        &["stopVM"],
        GUEST,
    ),
    power_action(
        Category::Qemu,
        "pve_shutdown_qemu_vm",
        "Shut down VM",
        "Shut a VM down cleanly (ACPI or agent). Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/shutdown",
        true,
        &[],
        SHUTDOWN_PARAMS,
    ),
    power_action(
        Category::Qemu,
        "pve_reboot_qemu_vm",
        "Reboot VM",
        "Reboot a VM cleanly (applies pending changes). Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/reboot",
        true,
        &[],
        GUEST,
    ),
    power_action(
        Category::Qemu,
        "pve_reset_qemu_vm",
        "Reset VM (hard)",
        "Hard-reset a VM (no flush); only for a hung guest. Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/reset",
        true,
        &[],
        GUEST,
    ),
    power_action(
        Category::Qemu,
        "pve_suspend_qemu_vm",
        "Suspend VM",
        "Pause a running VM in memory; resume with pve_resume_qemu_vm. Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/suspend",
        true,
        &[],
        GUEST,
    ),
    power_action(
        Category::Qemu,
        "pve_resume_qemu_vm",
        "Resume VM",
        "Resume a paused VM. Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/resume",
        false,
        &[],
        GUEST,
    ),
];
