//! `pve_backup_health`: per guest, its newest backup on each storage that holds backups
//! (Proxmox Backup Server storages included), how old it is and whether it was verified; and
//! the guests with none — or none verified — newer than `days`.
//!
//! Invariants: one `/cluster/resources` read, then one content read per backup storage (a
//! shared storage once, not once per node) — never a request per guest; only reads; a storage
//! that could not be read is named in `unread` and never counted as "no backups" silently (the
//! guests' verdicts then say they may be incomplete); templates are not guests to back up; an
//! archive (a volid) is counted once.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::calls::Calls;
use crate::envelope::ToolFailure;
use crate::pve::ApiRequest;
use crate::pve::encode_path_segment;
use crate::schema::{ArgValue, ValidArgs};

/// Default age limit, in days.
const DEFAULT_DAYS: i64 = 7;
const DAY_SECS: i64 = 86_400;

/// One backup archive as the storage lists it.
struct Archive {
    storage: String,
    volid: String,
    ctime: i64,
    /// `ok`, `failed`, or `None` (never verified; only PBS storages verify).
    verified: Option<String>,
    protected: bool,
}

/// `pve_backup_health`.
pub(super) async fn run(calls: &mut Calls<'_>, args: &ValidArgs) -> Result<Value, ToolFailure> {
    let days = match args.values.get("days") {
        Some(ArgValue::Int(days)) => *days,
        _ => DEFAULT_DAYS,
    };
    let resources = calls.get("/cluster/resources".into()).await?;
    let items = resources.as_array().cloned().unwrap_or_default();
    let now = chrono::Utc::now().timestamp();
    let mut guests: BTreeMap<i64, Map<String, Value>> = BTreeMap::new();
    for item in &items {
        let is_guest = matches!(item["type"].as_str(), Some("qemu" | "lxc"));
        let template = item.get("template").is_some_and(|t| t == 1);
        if let (true, false, Some(vmid)) = (is_guest, template, item["vmid"].as_i64()) {
            let mut guest = Map::new();
            for key in ["vmid", "name", "type", "node", "status"] {
                guest.insert(key.into(), item.get(key).cloned().unwrap_or(Value::Null));
            }
            guests.insert(vmid, guest);
        }
    }
    let mut archives = Vec::new();
    // One archive per volid of a storage: a storage that is not marked shared but is listed
    // alike on several nodes is not counted twice.
    let mut volids = BTreeSet::new();
    let mut read = Vec::new();
    let mut unread = Vec::new();
    for (node, storage, plugin) in backup_storages(&items) {
        let path = format!(
            "/nodes/{}/storage/{}/content",
            encode_path_segment(&node),
            encode_path_segment(&storage)
        );
        let request = ApiRequest::get(path).param("content", "backup");
        match calls.send(request).await {
            Ok(listing) => {
                read.push(json!({"storage": storage, "node": node, "type": plugin}));
                for entry in listing.as_array().into_iter().flatten() {
                    if let Some(archive) = archive_of(&storage, entry)
                        && volids.insert(archive.volid.clone())
                    {
                        archives.push((entry["vmid"].as_i64(), archive));
                    }
                }
            }
            Err(e) => {
                unread.push(json!({"storage": storage, "node": node, "error": e.to_string()}))
            }
        }
    }
    let limit = now - days * DAY_SECS;
    let mut per_guest: BTreeMap<i64, Vec<Archive>> = BTreeMap::new();
    for (vmid, archive) in archives {
        if let Some(vmid) = vmid {
            per_guest.entry(vmid).or_default().push(archive);
        }
    }
    let (mut stale, mut unverified) = (Vec::new(), Vec::new());
    let mut rows = Vec::new();
    for (vmid, mut guest) in guests {
        let found = per_guest.remove(&vmid).unwrap_or_default();
        let newest = found.iter().max_by_key(|a| a.ctime);
        let newest_verified = found
            .iter()
            .filter(|a| a.verified.as_deref() == Some("ok"))
            .max_by_key(|a| a.ctime);
        if newest.is_none_or(|a| a.ctime < limit) {
            stale.push(vmid);
        }
        if newest_verified.is_none_or(|a| a.ctime < limit) {
            unverified.push(vmid);
        }
        let mut storages: BTreeMap<&str, &Archive> = BTreeMap::new();
        for archive in &found {
            let slot = storages.entry(archive.storage.as_str()).or_insert(archive);
            if archive.ctime > slot.ctime {
                *slot = archive;
            }
        }
        guest.insert("backups".into(), found.len().into());
        guest.insert(
            "newest".into(),
            newest.map_or(Value::Null, |a| shown(a, now)),
        );
        guest.insert(
            "newest_verified".into(),
            newest_verified.map_or(Value::Null, |a| shown(a, now)),
        );
        let by_storage: Vec<Value> = storages.values().map(|a| shown(a, now)).collect();
        guest.insert("by_storage".into(), by_storage.into());
        rows.push(Value::Object(guest));
    }
    let mut answer = json!({
        "days": days,
        "guests": rows,
        "without_backup_within_days": stale,
        "without_verified_backup_within_days": unverified,
        "storages_read": read,
    });
    if !unread.is_empty() {
        answer["unread"] = Value::Array(unread);
        answer["note"] = "Some backup storages could not be read: a guest listed as without a backup may have one there.".into();
    }
    Ok(answer)
}

/// The storages that hold backups, each once: `(node to read it on, storage, plugin type)`.
/// A shared storage is read on the first node that has it available.
fn backup_storages(items: &[Value]) -> Vec<(String, String, String)> {
    let mut seen_shared = BTreeSet::new();
    let mut out = Vec::new();
    for item in items {
        if item["type"] != "storage" || item["status"].as_str().is_some_and(|s| s != "available") {
            continue;
        }
        let holds_backups = item["content"]
            .as_str()
            .is_some_and(|c| c.split(',').any(|kind| kind.trim() == "backup"));
        let (Some(node), Some(storage)) = (item["node"].as_str(), item["storage"].as_str()) else {
            continue;
        };
        if !holds_backups {
            continue;
        }
        let shared = item.get("shared").is_some_and(|s| s == 1);
        if shared && !seen_shared.insert(storage.to_owned()) {
            continue;
        }
        let plugin = item["plugintype"].as_str().unwrap_or("unknown");
        out.push((node.to_owned(), storage.to_owned(), plugin.to_owned()));
    }
    out
}

/// A listing entry as an archive (`None` when it has no creation time).
fn archive_of(storage: &str, entry: &Value) -> Option<Archive> {
    Some(Archive {
        storage: storage.to_owned(),
        volid: entry["volid"].as_str()?.to_owned(),
        ctime: entry["ctime"].as_i64()?,
        verified: entry
            .pointer("/verification/state")
            .and_then(Value::as_str)
            .map(str::to_owned),
        protected: entry.get("protected").is_some_and(|p| p == 1 || p == true),
    })
}

/// An archive as the answer shows it: where, when (RFC 3339 and age in days), verified.
fn shown(archive: &Archive, now: i64) -> Value {
    let when = chrono::DateTime::from_timestamp(archive.ctime, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    #[allow(clippy::cast_precision_loss)] // ages in days, shown to a tenth
    let age_days = ((now - archive.ctime) as f64 / DAY_SECS as f64 * 10.0).round() / 10.0;
    json!({
        "storage": archive.storage,
        "volid": archive.volid,
        "created": when,
        "age_days": age_days,
        "verified": archive.verified,
        "protected": archive.protected,
    })
}
