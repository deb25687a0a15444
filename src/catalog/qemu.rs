//! QEMU virtual machine tools: inventory, status, configuration and power.

use super::params::{GUEST, NODE};
use super::types::{Backend, Category, Effect, Param, ParamKind, Tier, ToolSpec, get, post};

/// Power actions change a running system: never retried, tier read-execute.
const POWER: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

/// A QEMU power action row: `POST /nodes/{node}/qemu/{vmid}/status/<action>`.
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
        category: Category::Qemu,
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
        "Seconds to wait for the guest OS to power off before giving up (Proxmox default 180).",
    )
    .min(0),
    Param::body(
        "forceStop",
        ParamKind::Boolean,
        "If the guest has not shut down when `timeout` expires, power it off hard.",
    ),
];

/// Rows of the `qemu` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_list_qemu_vms",
        title: "List VMs on a node",
        description: "List the QEMU virtual machines on one node: vmid, name, status (running/stopped/paused), cpus, maxmem and mem (bytes), uptime (seconds), template flag and tags. For every node at once use pve_list_cluster_resources with type \"vm\".",
        category: Category::Qemu,
        params: &[NODE],
        backend: get("/nodes/{node}/qemu"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_qemu_status",
        title: "Get VM status",
        description: "Read one VM's current runtime status: status and qmpstatus (running, stopped, paused, …), uptime (s), CPU use (fraction), memory in use and allocated (bytes), disk and network I/O counters, HA state. Use it after a power action to confirm the result.",
        category: Category::Qemu,
        aliases: &["getVMStatus"],
        params: GUEST,
        backend: get("/nodes/{node}/qemu/{vmid}/status/current"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_qemu_config",
        title: "Get VM configuration",
        description: "Read one VM's configuration as Proxmox stores it: name, cores, sockets, memory (MiB), cpu type, ostype, disks (scsi0, virtio0, …) as property strings like \"local-lvm:vm-101-disk-0,size=32G\", NICs (net0 = \"virtio=BC:24:11:…,bridge=vmbr0\"), boot order, agent, cloud-init keys and `digest` (pass it back on updates to avoid overwriting concurrent changes). Set `current` to see the running values instead of pending ones.",
        category: Category::Qemu,
        params: &[
            NODE,
            GUEST[1],
            Param::query(
                "current",
                ParamKind::Boolean,
                "Return the values in effect now, ignoring pending changes that apply at the next restart.",
            ),
            Param::query(
                "snapshot",
                ParamKind::String,
                "Return the configuration stored in this snapshot instead of the live one.",
            )
            .pattern("^[A-Za-z][A-Za-z0-9_-]{0,39}$", 40),
        ],
        backend: get("/nodes/{node}/qemu/{vmid}/config"),
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "listVMs",
        title: "List VMs (legacy)",
        description: "Deprecated: use pve_list_qemu_vms (one node) or pve_list_cluster_resources with type \"vm\" (all nodes). Lists the QEMU VMs of one node, or of every node when `node` is omitted (results concatenated, each entry with its node).",
        category: Category::Qemu,
        deprecated: true,
        params: &[NODE.optional()],
        backend: Backend::PerNodeList {
            path: "/nodes/{node}/qemu",
        },
        ..ToolSpec::BASE
    },
    power(
        "pve_start_qemu_vm",
        "Start VM",
        "Power on a stopped VM. Returns a task UPID string; follow it with pve_get_task_status until status is \"stopped\" and exitstatus \"OK\", then pve_get_qemu_status shows \"running\".",
        "/nodes/{node}/qemu/{vmid}/status/start",
        false,
        &["startVM"],
        GUEST,
    ),
    power(
        "pve_stop_qemu_vm",
        "Stop VM (hard)",
        "Immediately power off a VM, like pulling the plug: unsaved data in the guest is lost. Prefer pve_shutdown_qemu_vm for a clean shutdown. Requires confirm=true after asking the user. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/qemu/{vmid}/status/stop",
        true,
        &["stopVM"],
        GUEST,
    ),
    power(
        "pve_shutdown_qemu_vm",
        "Shut down VM",
        "Ask the guest OS to shut down cleanly (ACPI, or the guest agent when enabled). The guest may ignore it; set `forceStop` to power off after `timeout`. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/qemu/{vmid}/status/shutdown",
        true,
        &[],
        SHUTDOWN_PARAMS,
    ),
    power(
        "pve_reboot_qemu_vm",
        "Reboot VM",
        "Reboot a VM cleanly: shut the guest OS down and start it again (pending configuration changes are applied). Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/qemu/{vmid}/status/reboot",
        true,
        &[],
        GUEST,
    ),
    power(
        "pve_reset_qemu_vm",
        "Reset VM (hard)",
        "Hard-reset a VM like pressing the reset button: the guest OS gets no chance to flush data. Only for a hung guest. Requires confirm=true. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/qemu/{vmid}/status/reset",
        true,
        &[],
        GUEST,
    ),
    power(
        "pve_suspend_qemu_vm",
        "Suspend VM",
        "Pause a running VM in memory (status becomes \"paused\"); it keeps its RAM and resumes where it stopped with pve_resume_qemu_vm. Requires confirm=true. Returns a task UPID.",
        "/nodes/{node}/qemu/{vmid}/status/suspend",
        true,
        &[],
        GUEST,
    ),
    power(
        "pve_resume_qemu_vm",
        "Resume VM",
        "Resume a VM paused by pve_suspend_qemu_vm. Returns a task UPID; follow it with pve_get_task_status.",
        "/nodes/{node}/qemu/{vmid}/status/resume",
        false,
        &[],
        GUEST,
    ),
];
