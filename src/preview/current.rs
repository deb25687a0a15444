//! The "before" of a change: current values read from Proxmox for a preview.
//!
//! Each shape of update has its own reader: a guest's config keys, a disk's size for a
//! resize (read from the config key named by `disk`, not from the resize endpoint), a pool's
//! comment and members, and ACL entries (found in the `/access/acl` list). Invariant: only GET
//! requests are sent; a value that could not be read is [`Before::NotRead`], never shown as
//! unset, and a key whose value would not change is listed as unchanged, not as a change.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::pve::{self, ApiRequest};
use crate::redact::{REDACTED, is_secret_field};

/// A key's value before the call.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// The current value, as Proxmox reports it (secrets masked).
    Value(String),
    /// Read, and the key is not set.
    Unset,
    /// Could not be read (no connection, failed read, or an answer of another shape).
    NotRead,
}

/// One key an update would change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Config key (or a few words naming the entry, e.g. `PVEAdmin for user alice@pve on /vms`).
    pub key: String,
    /// Value before the call.
    pub old: Before,
    /// Value after the call (`None` when the key is deleted).
    pub new: Option<String>,
}

/// The changes a request makes, and the keys it names whose value would stay the same.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// Keys whose value changes.
    pub changes: Vec<Change>,
    /// Keys given with the value they already have (or deleted while unset).
    pub unchanged: Vec<String>,
}

/// A JSON value as text: strings as they are, numbers and the rest in JSON form.
pub fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `GET path` (with query `params`); failures become a note.
pub async fn read(
    client: &pve::Client,
    path: &str,
    params: Vec<(String, String)>,
    cancel: &CancellationToken,
    notes: &mut Vec<String>,
) -> Option<Value> {
    let request = ApiRequest {
        params,
        ..ApiRequest::get(path)
    };
    match client.call(request, cancel).await.result {
        Ok(value) => Some(value),
        Err(err) => {
            notes.push(format!("current values of {path} not read: {err}"));
            None
        }
    }
}

fn masked(key: &str, value: String) -> String {
    if is_secret_field(key) {
        REDACTED.to_owned()
    } else {
        value
    }
}

/// Config-style update: each key set or deleted, against `current` (`None` = not read).
/// `delete_is_list`: the `delete` parameter names keys to remove (guest configs), rather
/// than being a flag.
pub fn config_diff(
    params: &[(String, String)],
    current: Option<&Map<String, Value>>,
    delete_is_list: bool,
) -> Diff {
    let old = |key: &str| match current {
        None => Before::NotRead,
        Some(map) => map
            .get(key)
            .map_or(Before::Unset, |v| Before::Value(text(v))),
    };
    let mut diff = Diff::default();
    for (key, value) in params {
        match key.as_str() {
            "digest" => {}
            "delete" if delete_is_list => {
                for k in value.split([',', ';', ' ']).filter(|k| !k.is_empty()) {
                    match old(k) {
                        Before::Unset => diff.unchanged.push(k.to_owned()),
                        before => diff.changes.push(Change {
                            key: k.to_owned(),
                            old: mask_before(k, before),
                            new: None,
                        }),
                    }
                }
            }
            _ => {
                let before = old(key);
                if before == Before::Value(value.clone()) {
                    diff.unchanged.push(key.clone());
                    continue;
                }
                diff.changes.push(Change {
                    key: key.clone(),
                    old: mask_before(key, before),
                    new: Some(masked(key, value.clone())),
                });
            }
        }
    }
    diff
}

fn mask_before(key: &str, before: Before) -> Before {
    match before {
        Before::Value(v) => Before::Value(masked(key, v)),
        other => other,
    }
}

fn param<'a>(params: &'a [(String, String)], key: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn flag(params: &[(String, String)], key: &str) -> bool {
    matches!(param(params, key), Some("1" | "true"))
}

/// `size=` of a disk config string such as `local-lvm:vm-101-disk-0,size=32G`.
fn disk_size(config: &str) -> Option<&str> {
    config
        .split(',')
        .find_map(|part| part.strip_prefix("size="))
}

/// Bytes of a size such as `32G`, `512M`, `1.5T` or `1024` (bytes).
fn bytes(size: &str) -> Option<f64> {
    let (number, unit) = match size.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&size[..i], c.to_ascii_uppercase()),
        _ => (size, 'B'),
    };
    let factor = match unit {
        'B' => 1.0,
        'K' => 1024.0,
        'M' => 1024.0_f64.powi(2),
        'G' => 1024.0_f64.powi(3),
        'T' => 1024.0_f64.powi(4),
        _ => return None,
    };
    number.parse::<f64>().ok().map(|n| n * factor)
}

/// A byte count in the largest unit that keeps two decimals or fewer, e.g. `42G`.
fn human(bytes: f64) -> String {
    for (unit, factor) in [('T', 4), ('G', 3), ('M', 2), ('K', 1)] {
        let scaled = bytes / 1024.0_f64.powi(factor);
        if scaled >= 1.0 {
            let rounded = (scaled * 100.0).round() / 100.0;
            return format!("{rounded}{unit}");
        }
    }
    format!("{bytes}")
}

/// A disk resize: the disk's current size from the guest config (`None` = not read).
pub fn resize_diff(params: &[(String, String)], config: Option<&Map<String, Value>>) -> Diff {
    let disk = param(params, "disk").unwrap_or_default();
    let size = param(params, "size").unwrap_or_default();
    let key = format!("{disk} size");
    let old = match config {
        None => Before::NotRead,
        Some(map) => match map.get(disk).map(text) {
            None => Before::Unset,
            Some(entry) => disk_size(&entry).map_or(Before::NotRead, |s| Before::Value(s.into())),
        },
    };
    let new = match (&old, size.strip_prefix('+')) {
        (Before::Value(current), Some(delta)) => match (bytes(current), bytes(delta)) {
            (Some(a), Some(b)) => format!("{} (grown by {delta})", human(a + b)),
            _ => format!("{current} grown by {delta}"),
        },
        (_, Some(delta)) => format!("grown by {delta}"),
        (_, None) => size.to_owned(),
    };
    let same = matches!(&old, Before::Value(current)
        if !size.starts_with('+') && bytes(current).is_some() && bytes(current) == bytes(size));
    let mut diff = Diff::default();
    if same {
        diff.unchanged.push(key);
    } else {
        diff.changes.push(Change {
            key,
            old,
            new: Some(new),
        });
    }
    diff
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A set-valued key (pool members): the set before, and after adding or removing `given`.
fn set_change(
    key: &str,
    before: Option<&BTreeSet<String>>,
    given: &str,
    remove: bool,
    diff: &mut Diff,
) {
    let given = split_list(given);
    let Some(before) = before else {
        let verb = if remove { "remove" } else { "add" };
        diff.changes.push(Change {
            key: key.to_owned(),
            old: Before::NotRead,
            new: Some(format!("{verb} {}", given.join(","))),
        });
        return;
    };
    let mut after = before.clone();
    for item in given {
        if remove {
            after.remove(&item);
        } else {
            after.insert(item);
        }
    }
    let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
    if after == *before {
        diff.unchanged.push(key.to_owned());
    } else {
        diff.changes.push(Change {
            key: key.to_owned(),
            old: if before.is_empty() {
                Before::Unset
            } else {
                Before::Value(list(before))
            },
            new: (!after.is_empty()).then(|| list(&after)),
        });
    }
}

/// The entry of pool `poolid` in an answer of `GET /pools?poolid=…` (a list) or of the older
/// `GET /pools/{poolid}` (an object).
pub fn pool_entry<'a>(answer: &'a Value, poolid: &str) -> Option<&'a Map<String, Value>> {
    match answer {
        Value::Object(map) => Some(map),
        Value::Array(rows) => rows
            .iter()
            .filter_map(Value::as_object)
            .find(|row| row.get("poolid").map(text).as_deref() == Some(poolid))
            .or_else(|| match rows.as_slice() {
                [Value::Object(only)] if !only.contains_key("poolid") => Some(only),
                _ => None,
            }),
        _ => None,
    }
}

/// A pool update (`PUT /pools`): comment, guest members (`vms`), storage members.
pub fn pool_diff(params: &[(String, String)], pool: Option<&Map<String, Value>>) -> Diff {
    let remove = flag(params, "delete");
    let members = |kinds: &[&str], field: &str| {
        pool.map(|p| {
            p.get("members")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|m| kinds.contains(&m.get("type").map(text).unwrap_or_default().as_str()))
                .filter_map(|m| m.get(field).map(text))
                .collect::<BTreeSet<String>>()
        })
    };
    let mut diff = Diff::default();
    for (key, value) in params {
        match key.as_str() {
            "vms" => set_change(
                key,
                members(&["qemu", "lxc"], "vmid").as_ref(),
                value,
                remove,
                &mut diff,
            ),
            "storage" => set_change(
                key,
                members(&["storage"], "storage").as_ref(),
                value,
                remove,
                &mut diff,
            ),
            "comment" => {
                let current = pool.map(|p| p.get("comment").map(text).unwrap_or_default());
                diff.extend(config_diff(
                    std::slice::from_ref(&(key.clone(), value.clone())),
                    current
                        .map(|c| Map::from_iter([("comment".to_owned(), Value::String(c))]))
                        .as_ref(),
                    false,
                ));
            }
            _ => {}
        }
    }
    diff
}

/// An ACL update (`PUT /access/acl`): one entry per role and principal, found in the
/// `/access/acl` list (`None` = not read).
pub fn acl_diff(params: &[(String, String)], entries: Option<&[Value]>) -> Diff {
    let raw_path = param(params, "path").unwrap_or_default();
    let path = if raw_path.len() > 1 {
        raw_path.trim_end_matches('/')
    } else {
        raw_path
    };
    let revoke = flag(params, "delete");
    let propagate = param(params, "propagate").unwrap_or("1");
    let roles = split_list(param(params, "roles").unwrap_or_default());
    let mut diff = Diff::default();
    for (kind, list) in [("user", "users"), ("group", "groups"), ("token", "tokens")] {
        for ugid in split_list(param(params, list).unwrap_or_default()) {
            for role in &roles {
                let key = format!("{role} for {kind} {ugid} on {path}");
                let old = match entries {
                    None => Before::NotRead,
                    Some(rows) => rows
                        .iter()
                        .find(|e| {
                            e.get("path").map(text).as_deref() == Some(path)
                                && e.get("type").map(text).as_deref() == Some(kind)
                                && e.get("ugid").map(text) == Some(ugid.clone())
                                && e.get("roleid").map(text).as_deref() == Some(role.as_str())
                        })
                        .map_or(Before::Value("not granted".into()), |e| {
                            let p = e.get("propagate").map(text).unwrap_or_else(|| "1".into());
                            Before::Value(format!("granted, propagate={p}"))
                        }),
                };
                let new = if revoke {
                    "not granted".to_owned()
                } else {
                    format!("granted, propagate={propagate}")
                };
                if old == Before::Value(new.clone()) {
                    diff.unchanged.push(key);
                } else {
                    diff.changes.push(Change {
                        key,
                        old,
                        new: Some(new),
                    });
                }
            }
        }
    }
    diff
}

impl Diff {
    fn extend(&mut self, other: Diff) {
        self.changes.extend(other.changes);
        self.unchanged.extend(other.unchanged);
    }
}

#[cfg(test)]
mod tests;
