//! Handlers of the read-mostly routes: version, permissions, datastores and their usage,
//! namespaces, groups, snapshots, and a snapshot's notes, protection and removal.
//!
//! Invariant: listings show exactly the snapshots of the requested store and namespace
//! (no recursion), so a group's `backup-count` always equals the number of its snapshots
//! the snapshot list shows; a protected snapshot is never removed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::api::{Call, PbsError};
use super::state::{ALL_PRIVILEGES, PbsState, Snapshot};
use super::task::SnapRef;

/// The archives of a snapshot of `backup_type`.
fn archives(backup_type: &str) -> &'static [&'static str] {
    match backup_type {
        "vm" => &[
            "qemu-server.conf.blob",
            "drive-scsi0.img.fidx",
            "index.json.blob",
        ],
        "ct" => &[
            "pct.conf.blob",
            "root.pxar.didx",
            "catalog.pcat1.didx",
            "index.json.blob",
        ],
        _ => &["root.pxar.didx", "catalog.pcat1.didx", "index.json.blob"],
    }
}

/// `GET /version`.
pub(super) fn version(_: &mut Call<'_>) -> Result<Value, PbsError> {
    Ok(json!({"version": "4.0", "release": "14", "repoid": "b1f6c5a9e3d2"}))
}

/// `GET /access/permissions`: the token's privileges on `/` (or the asked path), each
/// with its propagate bit.
pub(super) fn permissions(call: &mut Call<'_>) -> Result<Value, PbsError> {
    if let Some(other) = call.str("auth-id")
        && other != call.caller
        && !call.st.has("Sys.Audit")
    {
        return Err(PbsError::forbidden());
    }
    let path = call.str("path").unwrap_or("/").to_owned();
    let privs: Vec<String> = match &call.st.privileges {
        None => ALL_PRIVILEGES.iter().map(|p| (*p).to_owned()).collect(),
        Some(list) => list.clone(),
    };
    let map: Map<String, Value> = privs.into_iter().map(|p| (p, json!(1))).collect();
    Ok(json!({ path: map }))
}

fn may_see_stores(st: &PbsState) -> bool {
    st.has("Datastore.Audit") || st.has("Datastore.Backup")
}

/// `GET /admin/datastore`.
pub(super) fn datastores(call: &mut Call<'_>) -> Result<Value, PbsError> {
    if !may_see_stores(call.st) {
        return Ok(json!([]));
    }
    Ok(Value::Array(
        call.st
            .stores
            .iter()
            .map(|s| json!({"store": s.name, "backend-type": "filesystem", "mount-status": "nonremovable"}))
            .collect(),
    ))
}

/// (total, used, avail) of a store: used is the sum of its snapshots' sizes.
fn usage(st: &PbsState, store: &str) -> Result<(u64, u64, u64), PbsError> {
    let total = st.store(store)?.total;
    let used: u64 = st
        .snapshots
        .iter()
        .filter(|s| s.store == store)
        .map(|s| s.size)
        .sum::<u64>()
        .min(total);
    Ok((total, used, total - used))
}

/// `GET /admin/datastore/{store}/gc` (also the `gc-status` of the status routes).
pub(super) fn gc_status_of(st: &PbsState, store: &str) -> Result<Value, PbsError> {
    let ds = st.store(store)?;
    let (_, used, _) = usage(st, store)?;
    let chunks = used / (4 << 20);
    let mut map = Map::new();
    map.insert("store".into(), json!(store));
    for (key, value) in [
        (
            "index-file-count",
            st.snapshots.iter().filter(|s| s.store == store).count() as u64,
        ),
        ("index-data-bytes", used),
        ("disk-bytes", used / 2),
        ("disk-chunks", chunks),
        ("removed-bytes", 0),
        ("removed-chunks", 0),
        ("pending-bytes", 0),
        ("pending-chunks", 0),
        ("removed-bad", 0),
        ("still-bad", 0),
    ] {
        map.insert(key.into(), json!(value));
    }
    map.insert("schedule".into(), json!("daily"));
    if let Some(task) = ds.gc_last.as_deref().and_then(|u| st.task(u).ok()) {
        map.insert("upid".into(), json!(task.text));
        match (task.exitstatus(), task.endtime()) {
            (Some(status), Some(end)) => {
                let state = if status == "OK" { "ok" } else { "error" };
                map.insert("last-run-state".into(), json!(state));
                map.insert("last-run-endtime".into(), json!(end));
                map.insert("duration".into(), json!(end - task.upid.starttime));
            }
            _ => {
                map.insert("last-run-state".into(), json!("running"));
            }
        }
    }
    Ok(Value::Object(map))
}

/// `GET /admin/datastore/{store}/gc`.
pub(super) fn gc_status(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    gc_status_of(call.st, &store)
}

/// The groups (namespace, id) and the snapshot count of one backup type.
type TypeCount<'a> = (BTreeSet<(&'a str, &'a str)>, u64);

/// `GET /admin/datastore/{store}/status`.
pub(super) fn status(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    let (total, used, avail) = usage(call.st, &store)?;
    let mut counts: BTreeMap<&str, TypeCount<'_>> = BTreeMap::new();
    for snap in call.st.snapshots.iter().filter(|s| s.store == store) {
        let entry = counts.entry(snap.backup_type.as_str()).or_default();
        entry.0.insert((snap.ns.as_str(), snap.backup_id.as_str()));
        entry.1 += 1;
    }
    let counts: Map<String, Value> = counts
        .into_iter()
        .map(|(k, (groups, n))| {
            (
                k.to_owned(),
                json!({"groups": groups.len(), "snapshots": n}),
            )
        })
        .collect();
    let mut out = json!({
        "total": total, "used": used, "avail": avail,
        "backend-type": "filesystem", "counts": counts,
    });
    if call.opt_flag("verbose") == Some(true) {
        out["gc-status"] = gc_status_of(call.st, &store)?;
    }
    Ok(out)
}

/// `GET /status/datastore-usage`.
pub(super) fn datastore_usage(call: &mut Call<'_>) -> Result<Value, PbsError> {
    if !may_see_stores(call.st) {
        return Ok(json!([]));
    }
    let mut list = Vec::new();
    for ds in &call.st.stores {
        let (total, used, avail) = usage(call.st, &ds.name)?;
        list.push(json!({
            "store": ds.name, "total": total, "used": used, "avail": avail,
            "backend-type": "filesystem", "mount-status": "nonremovable",
            "history": [], "history-start": chrono::Utc::now().timestamp() - 30 * 86_400,
            "history-delta": 86_400,
            "gc-status": gc_status_of(call.st, &ds.name)?,
        }));
    }
    Ok(Value::Array(list))
}

/// `GET /admin/datastore/{store}/namespace`: the parent and its descendants up to
/// `max-depth` levels below it.
pub(super) fn namespaces(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    let parent = call
        .str("parent")
        .unwrap_or("")
        .trim_matches('/')
        .to_owned();
    call.st.check_ns(&store, &parent)?;
    let max_depth = call.int("max-depth").unwrap_or(7);
    let depth = |ns: &str| ns.split('/').filter(|p| !p.is_empty()).count() as i64;
    let base = depth(&parent);
    let list: Vec<Value> = call
        .st
        .store(&store)?
        .namespaces
        .iter()
        .filter(|ns| {
            (parent.is_empty() || *ns == &parent || ns.starts_with(&format!("{parent}/")))
                && depth(ns) - base <= max_depth
        })
        .map(|ns| json!({"ns": ns}))
        .collect();
    Ok(Value::Array(list))
}

/// Snapshots of `store` in namespace `ns`, optionally one type and id.
fn matching<'s>(
    st: &'s PbsState,
    store: &str,
    ns: &str,
    backup_type: Option<&str>,
    backup_id: Option<&str>,
) -> Vec<&'s Snapshot> {
    let mut list: Vec<&Snapshot> = st
        .snapshots
        .iter()
        .filter(|s| s.store == store && s.ns == ns)
        .filter(|s| backup_type.is_none_or(|t| s.backup_type == t))
        .filter(|s| backup_id.is_none_or(|i| s.backup_id == i))
        .collect();
    list.sort_by(|a, b| {
        (&a.backup_type, &a.backup_id, a.backup_time).cmp(&(
            &b.backup_type,
            &b.backup_id,
            b.backup_time,
        ))
    });
    list
}

/// `GET /admin/datastore/{store}/groups`.
pub(super) fn groups(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    let ns = call.ns();
    call.st.check_ns(&store, &ns)?;
    let mut groups: BTreeMap<(String, String), Vec<&Snapshot>> = BTreeMap::new();
    for snap in matching(call.st, &store, &ns, None, None) {
        groups
            .entry((snap.backup_type.clone(), snap.backup_id.clone()))
            .or_default()
            .push(snap);
    }
    let list: Vec<Value> = groups
        .into_iter()
        .filter_map(|((t, id), snaps)| {
            let last = snaps.last()?;
            Some(json!({
                "backup-type": t, "backup-id": id, "last-backup": last.backup_time,
                "backup-count": snaps.len(), "owner": last.owner,
                "files": archives(&t),
            }))
        })
        .collect();
    Ok(Value::Array(list))
}

/// One entry of the snapshot list.
fn snapshot_entry(snap: &Snapshot) -> Value {
    let per_file = snap.size / archives(&snap.backup_type).len().max(1) as u64;
    let files: Vec<Value> = archives(&snap.backup_type)
        .iter()
        .map(|f| json!({"filename": f, "crypt-mode": "none", "size": per_file}))
        .collect();
    let mut entry = json!({
        "backup-type": snap.backup_type, "backup-id": snap.backup_id,
        "backup-time": snap.backup_time, "size": snap.size,
        "protected": snap.protected, "owner": snap.owner, "files": files,
    });
    if let Some(comment) = snap.notes.lines().next().filter(|l| !l.is_empty()) {
        entry["comment"] = json!(comment);
    }
    if let Some((ok, upid)) = &snap.verify {
        entry["verification"] = json!({"state": if *ok { "ok" } else { "failed" }, "upid": upid});
    }
    entry
}

/// `GET /admin/datastore/{store}/snapshots`.
pub(super) fn snapshots(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let store = call.cap("store").to_owned();
    let ns = call.ns();
    call.st.check_ns(&store, &ns)?;
    let list = matching(
        call.st,
        &store,
        &ns,
        call.str("backup-type"),
        call.str("backup-id"),
    );
    Ok(Value::Array(list.into_iter().map(snapshot_entry).collect()))
}

/// The index of the snapshot the request's ns/type/id/time name, or PBS's refusal.
fn addressed(call: &Call<'_>) -> Result<usize, PbsError> {
    let store = call.cap("store");
    let ns = call.ns();
    call.st.check_ns(store, &ns)?;
    let key: SnapRef = (
        ns,
        call.str("backup-type").unwrap_or("").to_owned(),
        call.str("backup-id").unwrap_or("").to_owned(),
        call.int("backup-time").unwrap_or(0),
    );
    call.st.find_snapshot(store, &key).ok_or_else(|| {
        let time = chrono::DateTime::from_timestamp(key.3, 0)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        PbsError::bad(format!(
            "backup snapshot '{}/{}/{time}' does not exist",
            key.1, key.2
        ))
    })
}

/// `DELETE /admin/datastore/{store}/snapshots`.
pub(super) fn delete_snapshot(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let i = addressed(call)?;
    if call.st.snapshots[i].protected {
        return Err(PbsError::bad("cannot remove protected snapshot"));
    }
    let snap = call.st.snapshots.remove(i);
    tracing::debug!(store = %snap.store, snapshot = %snap.name(), "PBS emulator removed a snapshot");
    Ok(Value::Null)
}

/// `GET /admin/datastore/{store}/protected`.
pub(super) fn get_protected(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let i = addressed(call)?;
    Ok(json!(call.st.snapshots[i].protected))
}

/// `PUT /admin/datastore/{store}/protected`.
pub(super) fn set_protected(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let i = addressed(call)?;
    call.st.snapshots[i].protected = call.opt_flag("protected").unwrap_or(false);
    Ok(Value::Null)
}

/// `GET /admin/datastore/{store}/notes`.
pub(super) fn get_notes(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let i = addressed(call)?;
    Ok(json!(call.st.snapshots[i].notes))
}

/// `PUT /admin/datastore/{store}/notes`.
pub(super) fn set_notes(call: &mut Call<'_>) -> Result<Value, PbsError> {
    let i = addressed(call)?;
    call.st.snapshots[i].notes = call.str("notes").unwrap_or("").to_owned();
    Ok(Value::Null)
}
