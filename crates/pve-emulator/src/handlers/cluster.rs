//! Cluster-wide endpoints: cluster status, resources, next free id, storage
//! definitions, pools and backup jobs.
//!
//! Invariant: filters Proxmox honours (`type` on resources and storage,
//! `poolid` on pools, `vmid` on nextid) are honoured here too, so a client
//! relying on the filter gets the same subset it would get from a real node.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::{EmuState, Guest};
use super::nodes::node_row;

/// `GET /cluster/status`.
pub(in super::super) fn status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let st = &*call.st;
    let mut rows = Vec::new();
    if st.cluster {
        rows.push(json!({
            "type": "cluster",
            "id": "cluster",
            "name": st.cluster_name,
            "version": 3,
            "nodes": st.nodes.len(),
            "quorate": 1,
        }));
    }
    for (i, node) in st.nodes.iter().enumerate() {
        rows.push(json!({
            "type": "node",
            "id": format!("node/{}", node.name),
            "name": node.name,
            "ip": node.ip,
            "online": 1,
            "local": u8::from(i == 0),
            "nodeid": node.nodeid,
            "level": "",
        }));
    }
    Ok(Value::Array(rows))
}

/// A guest as `/cluster/resources` and pool members show it.
pub(in super::super) fn guest_resource(g: &Guest) -> Value {
    let mut row = Map::new();
    row.insert("id".into(), json!(format!("{}/{}", g.kind.word(), g.vmid)));
    row.insert("type".into(), json!(g.kind.word()));
    row.insert("vmid".into(), json!(g.vmid));
    row.insert("name".into(), json!(g.name()));
    row.insert("node".into(), json!(g.node));
    row.insert("status".into(), json!(g.status()));
    row.insert("template".into(), json!(u8::from(g.is_template())));
    row.insert(
        "cpu".into(),
        json!(if g.is_running() { 0.012 } else { 0.0 }),
    );
    row.insert("maxcpu".into(), json!(g.cpus()));
    row.insert("mem".into(), json!(g.mem()));
    row.insert("maxmem".into(), json!(g.maxmem()));
    row.insert("disk".into(), json!(0));
    row.insert("maxdisk".into(), json!(g.maxdisk));
    row.insert("uptime".into(), json!(g.uptime()));
    for key in ["netin", "netout", "diskread", "diskwrite"] {
        row.insert(key.into(), json!(0));
    }
    if !g.tags().is_empty() {
        row.insert("tags".into(), json!(g.tags()));
    }
    if let Some(pool) = &g.pool {
        row.insert("pool".into(), json!(pool));
    }
    Value::Object(row)
}

fn storage_resources(st: &EmuState) -> Vec<Value> {
    let mut rows = Vec::new();
    for node in &st.nodes {
        for s in &st.storages {
            rows.push(json!({
                "id": format!("storage/{}/{}", node.name, s.id),
                "type": "storage",
                "storage": s.id,
                "node": node.name,
                "status": "available",
                "plugintype": s.kind,
                "content": s.content,
                "disk": s.used,
                "maxdisk": s.total,
                "shared": i32::from(s.extra.get("shared").is_some_and(|v| v == 1)),
            }));
        }
    }
    rows
}

fn sdn_resources(st: &EmuState) -> Vec<Value> {
    st.nodes
        .iter()
        .map(|n| {
            json!({
                "id": format!("sdn/{}/localnetwork", n.name),
                "type": "sdn",
                "sdn": "localnetwork",
                "node": n.name,
                "status": "ok",
            })
        })
        .collect()
}

/// `GET /cluster/resources`, honouring `type` (vm, storage, node, sdn).
pub(in super::super) fn resources(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let st = &*call.st;
    let wanted = call.str("type");
    let want = |t: &str| wanted.is_none() || wanted == Some(t);
    let mut rows = Vec::new();
    if want("node") {
        rows.extend(st.nodes.iter().map(|n| {
            let mut row = node_row(st, n);
            if let Some(map) = row.as_object_mut() {
                // The resource view has no fingerprint but a cgroup mode.
                map.remove("ssl_fingerprint");
                map.insert("cgroup-mode".into(), json!(2));
            }
            row
        }));
    }
    if want("vm") {
        rows.extend(st.guests.iter().map(|g| {
            let mut row = guest_resource(g);
            if let (Some(map), Some((_, state))) = (
                row.as_object_mut(),
                st.ha_managed.iter().find(|(vmid, _)| *vmid == g.vmid),
            ) {
                map.insert("hastate".into(), json!(state));
            }
            row
        }));
    }
    if want("storage") {
        rows.extend(storage_resources(st));
    }
    if want("sdn") {
        rows.extend(sdn_resources(st));
    }
    if wanted.is_none() {
        rows.extend(
            st.pools
                .iter()
                .map(|p| json!({ "id": format!("pool/{}", p.id), "type": "pool", "pool": p.id })),
        );
    }
    Ok(Value::Array(rows))
}

/// `GET /cluster/nextid`: a string, as Proxmox returns it.
pub(in super::super) fn nextid(call: &mut Call<'_>) -> Result<Value, ApiError> {
    match call.int("vmid") {
        Some(vmid) => {
            if call.st.guests.iter().any(|g| i64::from(g.vmid) == vmid) {
                Err(ApiError::param("vmid", format!("VM {vmid} already exists")))
            } else {
                Ok(json!(vmid.to_string()))
            }
        }
        None => Ok(json!(call.st.next_free_vmid().to_string())),
    }
}

/// `GET /cluster/backup`.
pub(in super::super) fn backup_jobs(call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(Value::Array(call.st.backup_jobs.clone()))
}

/// `GET /storage`: definitions, filtered by `type`.
pub(in super::super) fn storage(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let digest = call.st.storage_digest();
    let wanted = call.str("type");
    let rows = call
        .st
        .storages
        .iter()
        .filter(|s| wanted.is_none_or(|t| t == s.kind))
        .map(|s| {
            let mut row = Map::new();
            row.insert("storage".into(), json!(s.id));
            row.insert("type".into(), json!(s.kind));
            row.insert("content".into(), json!(s.content));
            for (k, v) in &s.extra {
                row.insert(k.clone(), v.clone());
            }
            row.insert("digest".into(), json!(digest));
            Value::Object(row)
        })
        .collect();
    Ok(Value::Array(rows))
}
