//! `GET/DELETE /nodes/{node}/storage/{storage}/prunebackups`: which backups a prune keeps and
//! removes, and the prune itself (a task), per backup group (guest type and VMID).
//!
//! Invariant: the marks follow Proxmox's for the options emulated — `keep-last=N` (the N
//! newest of each group are kept) and `keep-all=1` (everything is kept) — and a protected
//! archive is never removed; any other retention option is refused with a 400 naming it, so a
//! test never passes on a retention the emulator does not model. The DELETE removes exactly
//! the archives the GET marks `remove`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::state_infra::Volume;

/// The marks for the path's storage: `(volid, mark)` in listing order, newest first per group.
fn marks(call: &Call<'_>) -> Result<Vec<(Volume, &'static str)>, ApiError> {
    let storage = call.cap("storage").to_owned();
    let Some(defined) = call.st.storages.iter().find(|s| s.id == storage) else {
        return Err(ApiError::server(format!(
            "storage '{storage}' does not exist"
        )));
    };
    let configured = defined
        .extra
        .get("prune-backups")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let options = call
        .str("prune-backups")
        .map(str::to_owned)
        .or(configured)
        .unwrap_or_else(|| "keep-all=1".to_owned());
    let mut keep_last: Option<usize> = None;
    let mut keep_all = false;
    for option in options.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match option.split_once('=') {
            Some(("keep-last", n)) => {
                keep_last = Some(n.parse().map_err(|_| {
                    ApiError::param("prune-backups", format!("invalid keep-last value '{n}'"))
                })?);
            }
            Some(("keep-all", "1")) => keep_all = true,
            _ => {
                return Err(ApiError::param(
                    "prune-backups",
                    format!("'{option}' is not emulated (keep-last and keep-all are)"),
                ));
            }
        }
    }
    let vmid = call.int("vmid");
    let kind = call.str("type").map(str::to_owned);
    let mut groups: BTreeMap<(String, u32), Vec<Volume>> = BTreeMap::new();
    for volume in call.st.infra.volumes.iter().filter(|v| {
        v.storage == storage
            && v.content == "backup"
            && vmid.is_none_or(|id| v.vmid.map(i64::from) == Some(id))
            && kind.as_deref().is_none_or(|k| k == v.backup_subtype())
    }) {
        let Some(id) = volume.vmid else { continue };
        groups
            .entry((volume.backup_subtype().to_owned(), id))
            .or_default()
            .push(volume.clone());
    }
    let mut out = Vec::new();
    for (_, mut archives) in groups {
        archives.sort_by_key(|v| std::cmp::Reverse(v.ctime));
        for (i, volume) in archives.into_iter().enumerate() {
            let mark = if volume.protected {
                "protected"
            } else if keep_all || keep_last.is_none_or(|n| i < n) {
                "keep"
            } else {
                "remove"
            };
            out.push((volume, mark));
        }
    }
    Ok(out)
}

/// `GET …/prunebackups`: every backup of the storage with its mark.
pub(in super::super) fn preview(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let rows: Vec<Value> = marks(call)?
        .into_iter()
        .map(|(v, mark)| {
            json!({"volid": v.volid, "ctime": v.ctime, "mark": mark,
                   "type": v.backup_subtype(), "vmid": v.vmid})
        })
        .collect();
    Ok(Value::Array(rows))
}

/// `DELETE …/prunebackups`: removes the archives marked `remove`; a task.
pub(in super::super) fn prune(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let doomed: Vec<String> = marks(call)?
        .into_iter()
        .filter(|(_, mark)| *mark == "remove")
        .map(|(v, _)| v.volid)
        .collect();
    call.st.infra.volumes.retain(|v| !doomed.contains(&v.volid));
    let node = call.cap("node").to_owned();
    let storage = call.cap("storage").to_owned();
    let upid = call
        .st
        .spawn_task(&node, "prunebackups", &storage, "prune backups");
    Ok(json!(upid))
}
