//! Storage content listing (`GET /nodes/{node}/storage/{storage}/content`): ISO images,
//! container templates and backups from the seed, and guest disk images from the
//! guests' configurations.
//!
//! Invariant: the `content` filter is honoured exactly (an ISO list never shows a
//! template), an unknown storage fails like Proxmox, and a storage only lists the
//! content types it is configured for.

use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::seed;

const CONTENT_TYPES: &[&str] = &[
    "images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import",
];

/// `GET /nodes/{node}/storage/{storage}/content`.
pub(in super::super) fn list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let storage_id = call.cap("storage").to_string();
    let node = call.cap("node").to_string();
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
    let vmid = call.int("vmid");
    let Some(storage) = call.st.storages.iter().find(|s| s.id == storage_id) else {
        return Err(ApiError::server(format!(
            "storage '{storage_id}' does not exist"
        )));
    };
    let enabled: Vec<&str> = storage.content.split(',').collect();
    let mut items: Vec<Value> = seed::storage_volumes()
        .into_iter()
        .filter(|v| v["storage"] == storage_id.as_str())
        .collect();
    if enabled.contains(&"images") || enabled.contains(&"rootdir") {
        for g in call.st.guests_on(&node) {
            for (key, value) in &g.config {
                let Some(text) = value.as_str() else { continue };
                let first = text.split(',').next().unwrap_or("");
                let Some(volume) = first.strip_prefix(&format!("{storage_id}:")) else {
                    continue;
                };
                if key == "parent" || !volume.contains("-disk-") {
                    continue;
                }
                let size = text
                    .split(',')
                    .find_map(|o| o.strip_prefix("size="))
                    .and_then(|s| s.strip_suffix('G'))
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(0);
                let content = if key == "rootfs" || key.starts_with("mp") {
                    "rootdir"
                } else {
                    "images"
                };
                items.push(json!({
                    "volid": first, "content": content, "format": "raw",
                    "size": size * 1024 * 1024 * 1024, "vmid": g.vmid, "ctime": 1_732_000_000,
                }));
            }
        }
    }
    let items = items
        .into_iter()
        .filter(|v| enabled.iter().any(|c| v["content"] == *c))
        .filter(|v| wanted.is_empty() || wanted.iter().any(|c| v["content"] == c.as_str()))
        .filter(|v| vmid.is_none_or(|id| v["vmid"].as_i64() == Some(id)))
        .map(|mut v| {
            if let Some(obj) = v.as_object_mut() {
                obj.remove("storage");
            }
            v
        })
        .collect();
    Ok(Value::Array(items))
}
