//! Emulator state of the peer-surface endpoints: guest-agent processes and files, PCI
//! mappings, node power requests.
//!
//! Invariant: what a write stores is what a later read returns (a written guest file is
//! read back and `cat` by an exec; a created mapping is listed).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A guest-agent process started by `agent/exec`.
#[derive(Debug, Clone)]
pub(super) struct AgentProcess {
    /// Guest it runs in.
    pub vmid: u32,
    /// When it started.
    pub started: Instant,
    /// How long it runs.
    pub runtime: Duration,
    /// Exit code once exited.
    pub exitcode: i64,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Peer-surface state (see the module doc).
#[derive(Debug, Clone, Default)]
pub(super) struct PeerState {
    /// Agent processes by pid.
    pub processes: BTreeMap<u32, AgentProcess>,
    /// Guest files by (vmid, path).
    pub files: BTreeMap<(u32, String), String>,
    /// PCI mappings by id, each as `/cluster/mapping/pci/{id}` returns it.
    pub pci_mappings: BTreeMap<String, Value>,
    /// Node power commands received, as (node, command).
    pub power_requests: Vec<(String, String)>,
}
