//! Cluster-wide read endpoints beyond membership and resources: the cluster log,
//! datacenter options, replication jobs, HA status and the backup-info index.
//!
//! Invariant: answers are shaped like PVE 9.1's (field names, 0/1 flags, Unix times);
//! the cluster log is built from the tasks the emulator really ran, newest first, so a
//! test can see its own actions there.

use serde_json::{Value, json};

use super::super::api::{ApiError, Call};

/// `GET /cluster/log`: newest first, at most `max` (default 50) entries.
pub(in super::super) fn log(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let max = usize::try_from(call.int("max").unwrap_or(50)).unwrap_or(50);
    let st = &*call.st;
    let mut rows: Vec<Value> = st
        .tasks
        .iter()
        .rev()
        .map(|t| {
            json!({
                "uid": t.upid.pid,
                "time": t.upid.starttime,
                "pri": 6,
                "tag": "tasks",
                "pid": t.upid.pid,
                "node": t.upid.node,
                "user": t.upid.user,
                "msg": format!("starting task {}", t.upid_text),
            })
        })
        .collect();
    let started = super::super::stamps::unix_now() - st.started.elapsed().as_secs();
    rows.extend(st.nodes.iter().enumerate().map(|(i, n)| {
        json!({
            "uid": i + 1,
            "time": started,
            "pri": 6,
            "tag": "pmxcfs",
            "pid": 900 + i,
            "node": n.name,
            "user": "root@pam",
            "msg": "node has quorum",
        })
    }));
    rows.truncate(max);
    Ok(Value::Array(rows))
}

/// `GET /cluster/options`.
pub(in super::super) fn options(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(json!({
        "keyboard": "en-us",
        "console": "xtermjs",
        "mac_prefix": "BC:24:11",
        "migration": { "type": "secure" },
        "ha": { "shutdown_policy": "conditional" },
        "next-id": { "lower": "100", "upper": "1000000" },
        "tag-style": { "shape": "circle" },
    }))
}

/// `GET /cluster/replication`: one ZFS job in cluster mode, none standalone.
pub(in super::super) fn replication(call: &mut Call<'_>) -> Result<Value, ApiError> {
    if !call.st.cluster {
        return Ok(json!([]));
    }
    Ok(json!([{
        "id": "102-0",
        "type": "local",
        "guest": 102,
        "jobnum": 0,
        "source": "pve03",
        "target": "pve01",
        "schedule": "*/15",
        "rate": 50,
    }]))
}

/// `GET /cluster/ha/status/current`: quorum, master, and one LRM per node.
pub(in super::super) fn ha_status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let st = &*call.st;
    let Some(first) = st.nodes.first() else {
        return Ok(json!([]));
    };
    let now = super::super::stamps::unix_now();
    let mut rows = vec![
        json!({ "id": "quorum", "type": "quorum", "node": first.name, "status": "OK", "quorate": 1 }),
        json!({
            "id": "master", "type": "master", "node": first.name,
            "status": format!("{} (idle, {now})", first.name), "timestamp": now,
        }),
    ];
    rows.extend(st.nodes.iter().map(|n| {
        json!({
            "id": format!("lrm:{}", n.name), "type": "lrm", "node": n.name,
            "status": format!("{} (idle, {now})", n.name), "timestamp": now,
        })
    }));
    Ok(Value::Array(rows))
}

/// `GET /cluster/backup-info`: only the index of its sub-endpoints.
pub(in super::super) fn backup_info(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(json!([{ "subdir": "not-backed-up" }]))
}
