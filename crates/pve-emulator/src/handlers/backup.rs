//! Backup endpoints: scheduled jobs (`/cluster/backup`) and one-off runs (`vzdump`).
//!
//! Invariant: a job created here is what `/cluster/backup` lists next, a deleted one is
//! gone, and a vzdump run is a task whose archives appear on the target storage with
//! `content=backup`, so a caller can follow run → task → archive as on a real node.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::stamps::unix_now;
use super::super::state::GuestKind;
use super::super::state_infra::Volume;

/// Job keys stored as given; booleans are stored as 1/0 like Proxmox does.
const JOB_KEYS: &[&str] = &[
    "schedule",
    "storage",
    "vmid",
    "pool",
    "exclude",
    "node",
    "mode",
    "compress",
    "prune-backups",
    "notes-template",
    "mailto",
    "mailnotification",
    "notification-mode",
    "comment",
    "starttime",
    "dow",
    "bwlimit",
    "zstd",
];
const JOB_FLAGS: &[&str] = &["all", "enabled", "protected", "remove", "repeat-missed"];

fn job_index(call: &Call<'_>) -> Result<usize, ApiError> {
    let id = call.cap("id");
    call.st
        .backup_jobs
        .iter()
        .position(|j| j["id"] == id)
        .ok_or_else(|| ApiError::server(format!("job '{id}' does not exist")))
}

/// `GET /cluster/backup/{id}`.
pub(in super::super) fn get(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let index = job_index(call)?;
    Ok(call.st.backup_jobs[index].clone())
}

/// Proxmox needs to know which guests a backup covers.
fn check_selection(call: &Call<'_>) -> Result<(), ApiError> {
    if call.str("vmid").is_none() && call.str("pool").is_none() && !call.flag("all") {
        return Err(ApiError::param(
            "vmid",
            "please specify 'vmid', 'pool' or 'all'",
        ));
    }
    Ok(())
}

/// `POST /cluster/backup`: stores the job (generated id unless `id` is given).
pub(in super::super) fn create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    check_selection(call)?;
    let id = match call.str("id") {
        Some(id) => id.to_string(),
        None => format!(
            "backup-{:08x}-{:04x}",
            unix_now() as u32,
            call.st.backup_jobs.len()
        ),
    };
    if call.st.backup_jobs.iter().any(|j| j["id"] == id.as_str()) {
        return Err(ApiError::server(format!("Job '{id}' already exists")));
    }
    if let Some(storage) = call.str("storage")
        && !call.st.storages.iter().any(|s| s.id == storage)
    {
        return Err(ApiError::param(
            "storage",
            format!("storage '{storage}' does not exist"),
        ));
    }
    let mut job = Map::new();
    job.insert("id".into(), json!(id));
    job.insert("type".into(), json!("vzdump"));
    job.insert("enabled".into(), json!(1));
    for key in JOB_KEYS {
        if let Some(value) = call.str(key) {
            job.insert((*key).to_string(), json!(value));
        }
    }
    for key in JOB_FLAGS {
        if call.str(key).is_some() {
            job.insert((*key).to_string(), json!(u8::from(call.flag(key))));
        }
    }
    call.st.backup_jobs.push(Value::Object(job));
    Ok(Value::Null)
}

/// `DELETE /cluster/backup/{id}`.
pub(in super::super) fn remove(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let index = job_index(call)?;
    call.st.backup_jobs.remove(index);
    Ok(Value::Null)
}

/// `POST /nodes/{node}/vzdump`: backs up the selected guests of this node into the
/// target storage (default `local`) and returns the task's UPID.
pub(in super::super) fn vzdump(call: &mut Call<'_>) -> Result<Value, ApiError> {
    check_selection(call)?;
    let node = call.cap("node").to_string();
    let storage = call.str("storage").unwrap_or("local").to_string();
    let Some(target) = call.st.storages.iter().find(|s| s.id == storage) else {
        return Err(ApiError::server(format!(
            "storage '{storage}' does not exist"
        )));
    };
    if !target.content.split(',').any(|c| c == "backup") {
        return Err(ApiError::server(format!(
            "storage '{storage}' does not support backups"
        )));
    }
    let listed: Option<Vec<u32>> = call.str("vmid").map(vmid_list);
    let excluded: Vec<u32> = call.str("exclude").map(vmid_list).unwrap_or_default();
    let pool = call.str("pool").map(String::from);
    if let Some(ids) = &listed
        && let Some(missing) = ids
            .iter()
            .find(|id| !call.st.guests.iter().any(|g| g.vmid == **id))
    {
        return Err(ApiError::server(format!("unable to find VM '{missing}'")));
    }
    let selected: Vec<(u32, GuestKind)> = call
        .st
        .guests_on(&node)
        .filter(|g| match (&listed, &pool) {
            (Some(ids), _) => ids.contains(&g.vmid),
            (None, Some(p)) => g.pool.as_deref() == Some(p.as_str()),
            (None, None) => true,
        })
        .filter(|g| !excluded.contains(&g.vmid))
        .map(|g| (g.vmid, g.kind))
        .collect();
    let now = unix_now();
    let stamp = chrono::DateTime::from_timestamp(i64::try_from(now).unwrap_or(0), 0)
        .map(|t| t.format("%Y_%m_%d-%H_%M_%S").to_string())
        .unwrap_or_default();
    let notes = call.str("notes-template").map(String::from);
    for (vmid, kind) in &selected {
        let (word, format) = match kind {
            GuestKind::Qemu => ("qemu", "vma.zst"),
            GuestKind::Lxc => ("lxc", "tar.zst"),
        };
        call.st.infra.volumes.push(Volume {
            storage: storage.clone(),
            volid: format!("{storage}:backup/vzdump-{word}-{vmid}-{stamp}.{format}"),
            content: "backup".into(),
            format: format.into(),
            size: 1_073_741_824,
            vmid: Some(*vmid),
            ctime: now,
            notes: notes.clone(),
            verification: None,
            protected: false,
        });
    }
    let id = match selected.as_slice() {
        [(vmid, _)] => vmid.to_string(),
        _ => String::new(),
    };
    let upid = call
        .st
        .spawn_task(&node, "vzdump", &id, "backup job (vzdump)");
    Ok(json!(upid))
}

/// A `pve-vmid-list` as Proxmox splits it: ids separated by commas, semicolons or whitespace.
fn vmid_list(list: &str) -> Vec<u32> {
    list.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter_map(|v| v.parse().ok())
        .collect()
}
