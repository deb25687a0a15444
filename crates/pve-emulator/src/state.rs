//! The model of the emulated cluster: nodes, guests, storages, pools, jobs
//! and tasks (the seed lives in `seed.rs`).
//!
//! Invariant: the state is only ever touched behind the emulator's mutex,
//! by synchronous code; every guest lives on a node that exists in the
//! current mode (standalone drops guests of absent nodes), and vmids are
//! unique across QEMU and LXC as they are in a real cluster.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::stamps::{digest_of, unix_now};
use super::task::{Task, Upid};

/// A cluster member.
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// Node name (`pve01`).
    pub name: String,
    /// Cluster link address.
    pub ip: String,
    /// corosync node id (0 when standalone).
    pub nodeid: u32,
    /// Logical CPUs.
    pub maxcpu: u32,
    /// Current CPU load (fraction of `maxcpu`).
    pub cpu: f64,
    /// Memory in bytes.
    pub maxmem: u64,
    /// Used memory in bytes.
    pub mem: u64,
    /// Root filesystem size in bytes.
    pub maxdisk: u64,
    /// Used root filesystem in bytes.
    pub disk: u64,
    /// Uptime at emulator start, seconds.
    pub uptime_at_start: u64,
}

/// QEMU VM or LXC container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GuestKind {
    /// A QEMU/KVM virtual machine.
    Qemu,
    /// An LXC container.
    Lxc,
}

impl GuestKind {
    /// The path/type word Proxmox uses (`qemu`, `lxc`).
    pub fn word(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu",
            GuestKind::Lxc => "lxc",
        }
    }

    /// Prefix of messages about a guest ("VM 101", "CT 201").
    pub fn label(self) -> &'static str {
        match self {
            GuestKind::Qemu => "VM",
            GuestKind::Lxc => "CT",
        }
    }

    /// Directory of the guest's config file under `nodes/<node>/`.
    pub fn config_dir(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu-server",
            GuestKind::Lxc => "lxc",
        }
    }
}

/// Power state. A paused VM or frozen container still reports status
/// "running" (its process exists); the pause shows in `qmpstatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Power {
    /// Running normally.
    Running,
    /// Suspended (QEMU paused / LXC frozen).
    Paused,
    /// Not running.
    Stopped,
}

/// A VM or container.
#[derive(Debug, Clone)]
pub(super) struct Guest {
    /// Cluster-wide id.
    pub vmid: u32,
    /// QEMU or LXC.
    pub kind: GuestKind,
    /// Node the guest lives on.
    pub node: String,
    /// Power state.
    pub power: Power,
    /// When the guest (re)started, for uptime; `None` when stopped.
    pub started: Option<Instant>,
    /// Uptime it already had when the emulator started.
    pub uptime_offset: u64,
    /// Root disk size in bytes.
    pub maxdisk: u64,
    /// Pool membership.
    pub pool: Option<String>,
    /// Configuration keys as Proxmox stores them (without `digest`).
    pub config: Map<String, Value>,
    /// Snapshots, oldest first; the live state's parent is `config["parent"]`.
    pub snapshots: Vec<Snapshot>,
}

/// One snapshot of a guest: its name, when, and the configuration it froze.
#[derive(Debug, Clone)]
pub(super) struct Snapshot {
    /// Snapshot name (`pve-configid`).
    pub name: String,
    /// Free-text description.
    pub description: String,
    /// Creation time, Unix seconds.
    pub snaptime: u64,
    /// Whether RAM was saved (QEMU only).
    pub vmstate: bool,
    /// The snapshot it was taken on top of.
    pub parent: Option<String>,
    /// The configuration at that moment (without `parent`).
    pub config: Map<String, Value>,
}

impl Guest {
    /// `name` (QEMU) or `hostname` (LXC).
    pub fn name(&self) -> String {
        let key = match self.kind {
            GuestKind::Qemu => "name",
            GuestKind::Lxc => "hostname",
        };
        self.config.get(key).and_then(Value::as_str).map_or_else(
            || format!("{}{}", self.kind.label(), self.vmid),
            String::from,
        )
    }

    /// Whether the guest is a template.
    pub fn is_template(&self) -> bool {
        self.config.get("template").and_then(Value::as_u64) == Some(1)
    }

    fn config_u64(&self, key: &str, default: u64) -> u64 {
        self.config
            .get(key)
            .and_then(Value::as_u64)
            .unwrap_or(default)
    }

    /// Virtual CPUs (cores × sockets).
    pub fn cpus(&self) -> u64 {
        self.config_u64("cores", 1) * self.config_u64("sockets", 1)
    }

    /// Configured memory in bytes.
    pub fn maxmem(&self) -> u64 {
        self.config_u64("memory", 512) * 1024 * 1024
    }

    /// Whether the guest's process exists.
    pub fn is_running(&self) -> bool {
        self.power != Power::Stopped
    }

    /// `running` or `stopped`, as in list and status answers.
    pub fn status(&self) -> &'static str {
        if self.is_running() {
            "running"
        } else {
            "stopped"
        }
    }

    /// Seconds since start; 0 when stopped.
    pub fn uptime(&self) -> u64 {
        self.started
            .map_or(0, |t| self.uptime_offset + t.elapsed().as_secs())
    }

    /// Memory in use, a stable fraction of the configured memory.
    pub fn mem(&self) -> u64 {
        if self.is_running() {
            self.maxmem() / 100 * 37
        } else {
            0
        }
    }

    /// Tags as Proxmox stores them (`;`-separated), empty if none.
    pub fn tags(&self) -> &str {
        self.config
            .get("tags")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The configuration digest.
    pub fn digest(&self) -> String {
        digest_of(&Value::Object(self.config.clone()).to_string())
    }

    /// The configuration including its digest, as `GET .../config` returns it.
    pub fn config_with_digest(&self) -> Map<String, Value> {
        let mut config = self.config.clone();
        config.insert("digest".into(), Value::String(self.digest()));
        config
    }

    /// Marks the guest as running from now on.
    pub fn set_running(&mut self) {
        if self.power == Power::Stopped {
            self.started = Some(Instant::now());
            self.uptime_offset = 0;
        }
        self.power = Power::Running;
    }

    /// Marks the guest as stopped.
    pub fn set_stopped(&mut self) {
        self.power = Power::Stopped;
        self.started = None;
        self.uptime_offset = 0;
    }
}

/// A storage definition (`/etc/pve/storage.cfg` entry).
#[derive(Debug, Clone)]
pub(super) struct Storage {
    /// Storage id.
    pub id: String,
    /// Plugin type (`dir`, `lvmthin`).
    pub kind: String,
    /// Comma-separated content types.
    pub content: String,
    /// Type-specific keys (`path`, `thinpool`, ...).
    pub extra: Map<String, Value>,
    /// Size in bytes on every node.
    pub total: u64,
    /// Used bytes on every node.
    pub used: u64,
}

/// A resource pool.
#[derive(Debug, Clone)]
pub(super) struct Pool {
    /// Pool id.
    pub id: String,
    /// Free-text comment.
    pub comment: String,
}

/// The whole emulated cluster.
#[derive(Debug)]
pub(super) struct EmuState {
    /// Cluster mode (false: a standalone node).
    pub cluster: bool,
    /// Name of the cluster in cluster mode.
    pub cluster_name: String,
    /// Nodes, in name order.
    pub nodes: Vec<Node>,
    /// Guests, in vmid order.
    pub guests: Vec<Guest>,
    /// Storage definitions.
    pub storages: Vec<Storage>,
    /// Resource pools.
    pub pools: Vec<Pool>,
    /// Backup jobs, as `/cluster/backup` returns them.
    pub backup_jobs: Vec<Value>,
    /// Tasks, oldest first.
    pub tasks: Vec<Task>,
    /// Users, tokens, ACLs and firewalls (`state_security.rs`).
    pub security: super::state_security::SecurityState,
    /// Fingerprint reported as the nodes' `ssl_fingerprint`.
    pub fingerprint: String,
    /// How long a task stays running.
    pub task_duration: Duration,
    /// Time between two progress lines of a task that prints progress (clone, backup, …).
    pub progress_pace: Duration,
    /// Worker types whose next tasks end with this exit status instead of `OK`.
    pub task_failures: Vec<(String, String)>,
    /// Id of the token whose request is being handled (`user@realm!name`, the configured
    /// `svc_mcp@pve!emu` until a request comes), recorded in the UPIDs it starts; set by
    /// the dispatcher for every request.
    pub caller: String,
    /// When the emulator started (node uptime grows from here).
    pub started: Instant,
    /// Last pid handed to a task worker.
    pub last_pid: u32,
    /// Networks, pool storages and non-disk volumes (`state_infra.rs`).
    pub infra: super::state_infra::InfraState,
    /// Guest-agent processes and files, PCI mappings (`state_peer.rs`).
    pub peer: super::state_peer::PeerState,
    /// Guests HA manages, with their HA state (`/cluster/resources` shows it as `hastate`).
    pub ha_managed: Vec<(u32, String)>,
}

impl EmuState {
    /// Looks a node up by name.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Node uptime in seconds.
    pub fn node_uptime(&self, node: &Node) -> u64 {
        node.uptime_at_start + self.started.elapsed().as_secs()
    }

    /// The guest `vmid` of that kind on that node, if it is there.
    pub fn guest_mut(&mut self, node: &str, kind: GuestKind, vmid: u32) -> Option<&mut Guest> {
        self.guests
            .iter_mut()
            .find(|g| g.vmid == vmid && g.kind == kind && g.node == node)
    }

    /// Guests of one node, in vmid order.
    pub fn guests_on<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a Guest> + 'a {
        self.guests.iter().filter(move |g| g.node == node)
    }

    /// Lowest vmid ≥ 100 not used by any guest.
    pub fn next_free_vmid(&self) -> u32 {
        (100..)
            .find(|id| !self.guests.iter().any(|g| g.vmid == *id))
            .unwrap_or(100)
    }

    /// Digest of the storage configuration, shared by all its entries.
    pub fn storage_digest(&self) -> String {
        let ids: Vec<&str> = self.storages.iter().map(|s| s.id.as_str()).collect();
        digest_of(&ids.join(","))
    }
}

impl EmuState {
    /// Starts a task on `node` and returns its UPID string.
    pub fn spawn_task(&mut self, node: &str, kind: &str, id: &str, description: &str) -> String {
        self.last_pid = self
            .last_pid
            .wrapping_add(1 + u32::from(rand::random::<u8>() % 16));
        let starttime = u32::try_from(unix_now()).unwrap_or(u32::MAX);
        let uptime = self
            .node(node)
            .map_or(0, |n| n.uptime_at_start + self.started.elapsed().as_secs());
        let upid = Upid {
            node: node.to_string(),
            pid: self.last_pid,
            // Clock ticks (100 Hz) since boot, as /proc/<pid>/stat reports.
            pstart: u32::try_from(uptime.saturating_mul(100)).unwrap_or(u32::MAX),
            starttime,
            kind: kind.to_string(),
            id: id.to_string(),
            user: self.caller.clone(),
        };
        let upid_text = upid.render();
        tracing::debug!(upid = %upid_text, "emulator task started");
        let final_status = match self.task_failures.iter().position(|(k, _)| k == kind) {
            Some(index) => self.task_failures.remove(index).1,
            None => "OK".to_string(),
        };
        self.tasks.push(Task::started(
            upid,
            description,
            self.task_duration,
            self.progress_pace,
            final_status,
        ));
        upid_text
    }

    /// The task with that UPID on that node.
    pub fn task_mut(&mut self, node: &str, upid: &str) -> Option<&mut Task> {
        self.tasks
            .iter_mut()
            .find(|t| t.upid_text == upid && t.upid.node == node)
    }
}
