//! Storage endpoints: one definition, create/update/delete of definitions, and a
//! storage's status and content on a node.
//!
//! Invariant: a definition change is visible to every later read (`/storage`,
//! `/nodes/{node}/storage`, pools), type-specific keys Proxmox requires are required
//! here too, and secrets given at creation (`password`) are never returned.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::{EmuState, Storage};

/// Content types a volume can have.
const CONTENT_TYPES: &[&str] = &[
    "images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import",
];

/// Keys of a create/update call that are not stored as-is in the definition.
const NOT_STORED: &[&str] = &["storage", "type", "content", "password", "delete", "digest"];

/// Keys each storage type cannot do without.
fn required_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "dir" | "btrfs" => &["path"],
        "nfs" => &["server", "export"],
        "cifs" => &["server", "share"],
        "lvm" => &["vgname"],
        "lvmthin" => &["vgname", "thinpool"],
        "zfspool" => &["pool"],
        "pbs" => &["server", "datastore", "username"],
        _ => &[],
    }
}

fn find<'s>(st: &'s EmuState, id: &str) -> Result<&'s Storage, ApiError> {
    st.storages
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| ApiError::server(format!("storage '{id}' does not exist")))
}

/// The definition as `GET /storage/{storage}` returns it.
pub(in super::super) fn definition(st: &EmuState, s: &Storage) -> Value {
    let mut row = Map::new();
    row.insert("storage".into(), json!(s.id));
    row.insert("type".into(), json!(s.kind));
    row.insert("content".into(), json!(s.content));
    for (k, v) in &s.extra {
        row.insert(k.clone(), v.clone());
    }
    row.insert("digest".into(), json!(st.storage_digest()));
    Value::Object(row)
}

/// `GET /storage/{storage}`.
pub(in super::super) fn get(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let s = find(call.st, call.cap("storage"))?;
    Ok(definition(call.st, s))
}

/// Copies the given settings into `extra`, as Proxmox stores them (booleans as 1/0).
fn store_settings(call: &Call<'_>, extra: &mut Map<String, Value>, names: &[&str]) {
    for name in names.iter().filter(|n| !NOT_STORED.contains(n)) {
        if let Some(value) = call.str(name) {
            let stored = match *name {
                "shared" | "disable" => json!(u8::from(call.flag(name))),
                _ => json!(value),
            };
            extra.insert((*name).to_string(), stored);
        }
    }
}

/// Every parameter name the request carried.
fn given(call: &Call<'_>, candidates: &[&'static str]) -> Vec<&'static str> {
    candidates
        .iter()
        .copied()
        .filter(|n| call.str(n).is_some())
        .collect()
}

const SETTINGS: &[&str] = &[
    "path",
    "nodes",
    "shared",
    "disable",
    "server",
    "export",
    "share",
    "pool",
    "vgname",
    "thinpool",
    "datastore",
    "username",
    "fingerprint",
    "format",
    "prune-backups",
    "namespace",
    "subdir",
    "mountpoint",
    "options",
    "max-protected-backups",
];

/// `POST /storage`: adds a definition; returns `{storage, type}`.
pub(in super::super) fn create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = call.str("storage").unwrap_or_default().to_string();
    let kind = call.str("type").unwrap_or_default().to_string();
    if call.st.storages.iter().any(|s| s.id == id) {
        return Err(ApiError::server(format!(
            "create storage failed: storage ID '{id}' already defined"
        )));
    }
    for key in required_keys(&kind) {
        if call.str(key).is_none() {
            return Err(ApiError::param(
                key,
                format!("property is missing and it is not optional (storage type '{kind}')"),
            ));
        }
    }
    let content = call.str("content").map_or_else(
        || match kind.as_str() {
            "dir" | "nfs" | "cifs" | "btrfs" | "cephfs" => "images,rootdir".to_string(),
            "pbs" => "backup".to_string(),
            _ => "images,rootdir".to_string(),
        },
        String::from,
    );
    let mut extra = Map::new();
    store_settings(call, &mut extra, &given(call, SETTINGS));
    call.st.storages.push(Storage {
        id: id.clone(),
        kind: kind.clone(),
        content,
        extra,
        total: 536_870_912_000,
        used: 0,
    });
    Ok(json!({ "storage": id, "type": kind }))
}

/// `PUT /storage/{storage}`: sets the given keys, removes those in `delete`.
pub(in super::super) fn update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = call.cap("storage").to_string();
    find(call.st, &id)?;
    if let Some(digest) = call.str("digest")
        && digest != call.st.storage_digest()
    {
        return Err(ApiError::server(
            "detected modified configuration - file changed by other user? Try again.",
        ));
    }
    let deletions: Vec<String> = call
        .str("delete")
        .map(|d| {
            d.split([',', ';', ' '])
                .filter(|k| !k.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let names = given(call, SETTINGS);
    let content = call.str("content").map(String::from);
    let mut extra = Map::new();
    store_settings(call, &mut extra, &names);
    let Some(storage) = call.st.storages.iter_mut().find(|s| s.id == id) else {
        return Err(ApiError::server(format!("storage '{id}' does not exist")));
    };
    for key in &deletions {
        if key == "content" || key == "type" {
            return Err(ApiError::param("delete", format!("cannot delete '{key}'")));
        }
        storage.extra.remove(key);
    }
    if let Some(content) = content {
        storage.content = content;
    }
    storage.extra.extend(extra);
    Ok(json!({ "storage": id, "type": storage.kind }))
}

/// `DELETE /storage/{storage}`: also drops it from pools.
pub(in super::super) fn remove(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = call.cap("storage").to_string();
    let before = call.st.storages.len();
    call.st.storages.retain(|s| s.id != id);
    if call.st.storages.len() == before {
        return Err(ApiError::server(format!(
            "delete storage failed: storage '{id}' does not exist"
        )));
    }
    for members in call.st.infra.pool_storages.values_mut() {
        members.retain(|m| *m != id);
    }
    Ok(Value::Null)
}

/// The storage of the path, checked to be usable on the node of the path.
fn on_node<'s>(call: &'s Call<'_>) -> Result<&'s Storage, ApiError> {
    let node = call.cap("node");
    let s = find(call.st, call.cap("storage"))?;
    if !usable_on(s, node) {
        return Err(ApiError::server(format!(
            "storage '{}' is not available on node '{node}'",
            s.id
        )));
    }
    Ok(s)
}

/// Whether the definition lets `node` use the storage (`nodes` unset: every node).
fn usable_on(s: &Storage, node: &str) -> bool {
    s.extra
        .get("nodes")
        .and_then(Value::as_str)
        .is_none_or(|list| list.split(',').any(|n| n.trim() == node))
}

/// A storage's state as a node reports it (list rows and `.../status`).
fn node_view(s: &Storage) -> Map<String, Value> {
    let enabled = s.extra.get("disable") != Some(&json!(1));
    let mut row = Map::new();
    row.insert("storage".into(), json!(s.id));
    row.insert("type".into(), json!(s.kind));
    row.insert("content".into(), json!(s.content));
    row.insert("active".into(), json!(u8::from(enabled)));
    row.insert("enabled".into(), json!(u8::from(enabled)));
    row.insert(
        "shared".into(),
        s.extra.get("shared").cloned().unwrap_or(json!(0)),
    );
    if enabled {
        row.insert("total".into(), json!(s.total));
        row.insert("used".into(), json!(s.used));
        row.insert("avail".into(), json!(s.total - s.used));
        row.insert(
            "used_fraction".into(),
            json!(s.used as f64 / s.total as f64),
        );
    }
    row
}

/// `GET /nodes/{node}/storage`: storages this node may use, filtered by `content` (any
/// of a comma list), `storage` and `enabled`; `target` and `format` are accepted and
/// ignored (no storage is node-local here).
pub(in super::super) fn node_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node");
    let wanted_content: Vec<&str> = call
        .str("content")
        .map(|c| c.split(',').filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let wanted_id = call.str("storage");
    let only_enabled = call.flag("enabled");
    let rows = call
        .st
        .storages
        .iter()
        .filter(|s| usable_on(s, node))
        .filter(|s| wanted_id.is_none_or(|id| id == s.id))
        .filter(|s| {
            wanted_content.is_empty() || s.content.split(',').any(|c| wanted_content.contains(&c))
        })
        .map(node_view)
        .filter(|row| !only_enabled || row["enabled"] == 1)
        .map(Value::Object)
        .collect();
    Ok(Value::Array(rows))
}

/// `GET /nodes/{node}/storage/{storage}/status`.
pub(in super::super) fn status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let s = on_node(call)?;
    let mut row = node_view(s);
    row.remove("storage");
    row.remove("used_fraction");
    Ok(Value::Object(row))
}

/// `size=32G` → bytes.
fn parse_size(text: &str) -> u64 {
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = digits.parse().unwrap_or(0);
    let shift = match unit {
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => 0,
    };
    n << shift
}

/// Disks of the guests on `node` that live on `storage`, from their configurations.
fn disk_entries(st: &EmuState, node: &str, storage: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    for g in st.guests_on(node) {
        for (key, value) in &g.config {
            let disk_key = key == "rootfs"
                || [
                    "scsi", "virtio", "sata", "ide", "efidisk", "tpmstate", "mp", "unused",
                ]
                .iter()
                .any(|p| {
                    key.strip_prefix(p)
                        .is_some_and(|n| n.parse::<u32>().is_ok())
                });
            let Some(text) = value.as_str().filter(|_| disk_key) else {
                continue;
            };
            let volume = text.split(',').next().unwrap_or_default();
            let Some((store, name)) = volume.split_once(':') else {
                continue;
            };
            if store != storage || text.contains("media=cdrom") {
                continue;
            }
            let size = text
                .split(',')
                .find_map(|p| p.strip_prefix("size="))
                .map_or(0, parse_size);
            let content = if key == "rootfs" || key.starts_with("mp") {
                "rootdir"
            } else {
                "images"
            };
            rows.push(json!({
                "volid": volume,
                "content": content,
                "format": if name.ends_with(".qcow2") { "qcow2" } else { "raw" },
                "size": size,
                "used": size / 4,
                "vmid": g.vmid,
                "ctime": 1_732_000_000,
            }));
        }
    }
    rows
}

/// `GET /nodes/{node}/storage/{storage}/content`: guest disks of this node, then ISOs,
/// templates and backups; only content types the storage is configured for, filtered
/// by `content` (one type or a comma list) and `vmid`.
pub(in super::super) fn content(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let wanted: Vec<String> = call
        .str("content")
        .map(|c| c.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(bad) = wanted.iter().find(|c| !CONTENT_TYPES.contains(&c.as_str())) {
        return Err(ApiError::param(
            "content",
            format!("invalid format - invalid content type '{bad}'"),
        ));
    }
    let s = on_node(call)?;
    let (id, enabled) = (s.id.clone(), s.content.clone());
    let vmid = call.int("vmid");
    let mut rows = disk_entries(call.st, call.cap("node"), &id);
    rows.extend(
        call.st
            .infra
            .volumes
            .iter()
            .filter(|v| v.storage == id)
            .map(|v| v.content_entry()),
    );
    rows.retain(|row| {
        enabled.split(',').any(|c| row["content"] == c)
            && (wanted.is_empty() || wanted.iter().any(|c| row["content"] == c.as_str()))
            && vmid.is_none_or(|v| row.get("vmid").and_then(Value::as_i64) == Some(v))
    });
    Ok(Value::Array(rows))
}
