//! Node-level endpoints: version, node list and status, node storage and
//! network.
//!
//! Invariant: numbers are JSON numbers and flags are 0/1 integers exactly
//! where Proxmox uses them (for example `loadavg` is an array of strings),
//! so clients that parse real answers parse these.

use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::{EmuState, Node};

/// `GET /version`.
pub(in super::super) fn version(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(json!({
        "version": "9.1.2",
        "release": "9.1",
        "repoid": "3f2c6a1e9d0b7a54",
        "console": "xtermjs",
    }))
}

/// The node row shared by `/nodes` and `/cluster/resources`.
pub(in super::super) fn node_row(st: &EmuState, node: &Node) -> Value {
    json!({
        "node": node.name,
        "status": "online",
        "cpu": node.cpu,
        "maxcpu": node.maxcpu,
        "mem": node.mem,
        "maxmem": node.maxmem,
        "disk": node.disk,
        "maxdisk": node.maxdisk,
        "uptime": st.node_uptime(node),
        "level": "",
        "id": format!("node/{}", node.name),
        "type": "node",
        "ssl_fingerprint": st.fingerprint,
    })
}

/// `GET /nodes`.
pub(in super::super) fn list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let st = &*call.st;
    Ok(Value::Array(
        st.nodes.iter().map(|n| node_row(st, n)).collect(),
    ))
}

fn this_node<'s>(call: &'s Call<'_>) -> Result<&'s Node, ApiError> {
    // Dispatch already refused unknown nodes; this only guards a route
    // without a {node} capture being wired here by mistake.
    let name = call.cap("node");
    call.st
        .node(name)
        .ok_or_else(|| ApiError::server(format!("no such node '{name}'")))
}

/// `GET /nodes/{node}/status`.
pub(in super::super) fn status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = this_node(call)?;
    let uptime = call.st.node_uptime(node);
    Ok(json!({
        "uptime": uptime,
        "cpu": node.cpu,
        "wait": 0.0012,
        "idle": 0,
        "cpuinfo": {
            "cpus": node.maxcpu,
            "model": "Intel(R) Xeon(R) E-2288G CPU @ 3.70GHz",
            "sockets": 1,
            "cores": node.maxcpu / 2,
            "mhz": "3700.000",
            "hvm": "1",
            "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr vmx",
            "user_hz": 100,
        },
        "memory": {
            "total": node.maxmem,
            "used": node.mem,
            "free": node.maxmem - node.mem,
            "available": node.maxmem - node.mem,
        },
        "swap": { "total": 8_589_930_496_u64, "used": 0, "free": 8_589_930_496_u64 },
        "rootfs": {
            "total": node.maxdisk,
            "used": node.disk,
            "avail": node.maxdisk - node.disk,
            "free": node.maxdisk - node.disk,
        },
        "ksm": { "shared": 0 },
        "loadavg": ["0.42", "0.37", "0.31"],
        "kversion": "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-10-21T11:55Z)",
        "pveversion": "pve-manager/9.1.2/3f2c6a1e9d0b7a54",
        "boot-info": { "mode": "efi", "secureboot": 0 },
        "current-kernel": {
            "sysname": "Linux",
            "release": "6.17.2-1-pve",
            "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 (2025-10-21T11:55Z)",
            "machine": "x86_64",
        },
    }))
}

/// `GET /nodes/{node}/storage`: the stateful handler in `storage.rs` answers it.
pub(in super::super) fn storage(call: &mut Call<'_>) -> Result<Value, ApiError> {
    super::storage::node_list(call)
}

/// `GET /nodes/{node}/network`: the stateful handler in `network.rs` answers it.
pub(in super::super) fn network(call: &mut Call<'_>) -> Result<Value, ApiError> {
    super::network::list(call)
}
