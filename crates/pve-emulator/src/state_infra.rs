//! The infrastructure part of the emulated cluster that outlives one request: each
//! node's network configuration (active and staged), pool storage members, and the
//! volumes that are not guest disks (ISOs, templates, backups).
//!
//! Invariant: a node's staged network (`pending`) is either absent or a complete
//! interface list — what `/etc/network/interfaces.new` would hold — so applying it is a
//! plain swap and reverting it a plain drop.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// One interface definition, keyed like Proxmox's network API answers (`iface`,
/// `type`, `cidr`, `bridge_ports`, …).
pub(super) type Iface = Map<String, Value>;

/// A node's `/etc/network/interfaces` and its staged successor.
#[derive(Debug, Clone, Default)]
pub(super) struct NodeNetwork {
    /// The running configuration.
    pub active: Vec<Iface>,
    /// The staged configuration (`interfaces.new`), if any change is pending.
    pub pending: Option<Vec<Iface>>,
}

impl NodeNetwork {
    /// The configuration the API shows: the staged one when there is one.
    pub fn current(&self) -> &[Iface] {
        self.pending.as_deref().unwrap_or(&self.active)
    }

    /// The staged configuration, created from the running one on first change.
    pub fn staged(&mut self) -> &mut Vec<Iface> {
        self.pending.get_or_insert_with(|| self.active.clone())
    }
}

/// A volume on a storage that is not a guest disk.
#[derive(Debug, Clone)]
pub(super) struct Volume {
    /// Storage id.
    pub storage: String,
    /// Full volume id (`local:iso/debian.iso`).
    pub volid: String,
    /// Content type (`iso`, `vztmpl`, `backup`).
    pub content: String,
    /// Format (`iso`, `tzst`, `vma.zst`, `tar.zst`).
    pub format: String,
    /// Size in bytes.
    pub size: u64,
    /// Owning guest (backups).
    pub vmid: Option<u32>,
    /// Creation time, Unix seconds.
    pub ctime: u64,
    /// Backup notes.
    pub notes: Option<String>,
    /// A Proxmox Backup Server's verify state of a backup (`ok`, `failed`), when verified.
    pub verification: Option<String>,
    /// Protected from pruning and removal.
    pub protected: bool,
}

impl Volume {
    /// The guest kind a backup archive holds (`qemu` or `lxc`), from vzdump's file name.
    pub fn backup_subtype(&self) -> &'static str {
        if self.volid.contains("-qemu-") {
            "qemu"
        } else {
            "lxc"
        }
    }

    /// The entry `GET /nodes/{node}/storage/{storage}/content` returns.
    pub fn content_entry(&self) -> Value {
        let mut row = Map::new();
        row.insert("volid".into(), json!(self.volid));
        row.insert("content".into(), json!(self.content));
        row.insert("format".into(), json!(self.format));
        row.insert("size".into(), json!(self.size));
        row.insert("ctime".into(), json!(self.ctime));
        if let Some(vmid) = self.vmid {
            row.insert("vmid".into(), json!(vmid));
        }
        if self.content == "backup" {
            row.insert("subtype".into(), json!(self.backup_subtype()));
            row.insert("protected".into(), json!(i32::from(self.protected)));
            if let Some(notes) = &self.notes {
                row.insert("notes".into(), json!(notes));
            }
            if let Some(state) = &self.verification {
                row.insert("verification".into(), json!({"state": state}));
            }
        }
        Value::Object(row)
    }
}

/// Infrastructure state (see the module doc).
#[derive(Debug, Clone, Default)]
pub(super) struct InfraState {
    /// Network configuration per node name.
    pub networks: BTreeMap<String, NodeNetwork>,
    /// Storage ids that belong to each pool.
    pub pool_storages: BTreeMap<String, Vec<String>>,
    /// ISOs, container templates and backups.
    pub volumes: Vec<Volume>,
}
