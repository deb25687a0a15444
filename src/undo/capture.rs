//! Capturing what a change's revert needs: read before the change is sent, completed after it
//! succeeded, written as one record linked to the audit sequence number.
//!
//! What is captured is decided from the requests the call sends (method and rendered path),
//! not from tool names: guest config updates (old values of every key set or deleted, then
//! the digest after), start/resume and shutdown/stop/suspend (the power state before), a
//! snapshot's creation, a clone (the new guest), pool membership updates (the members and
//! comment before); a backup is recorded as one the server cannot undo (see [`backup`]).
//! A revert's own requests are captured the same way, so a revert can be reverted; a revert
//! request nothing here can undo is recorded as not revertible, with why.
//!
//! Invariants: capture only reads (plain `GET`s, allowed outside any clearance) and never
//! stops a call — a read that fails makes the record say the change cannot be reverted;
//! a record is written only after the change succeeded; a config value Proxmox masks
//! (`**********`) is never stored as the value to restore.

use std::collections::BTreeMap;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::record::{Guest, GuestKind, Part, describe, wire_text};
use super::store::{NewRecord, Store};
use crate::pve::{self, ApiRequest, Method};

/// Config request parameters that steer the update and are not config keys.
const CONTROL: &[&str] = &[
    "digest",
    "delete",
    "revert",
    "skiplock",
    "force",
    "background_delay",
];

/// What Proxmox shows instead of a secret config value.
const MASKED: &str = "**********";

/// A change being recorded: what was read before it was sent.
#[derive(Debug)]
pub struct Capture {
    store: Store,
    tool: String,
    reverts: Option<u64>,
    pending: Vec<Pending>,
}

#[derive(Debug)]
enum Pending {
    /// Complete already.
    Ready(Part),
    /// A config update: the old values; the new ones and the digest are read after.
    Config {
        guest: Guest,
        old: BTreeMap<String, Option<String>>,
    },
}

impl Capture {
    /// Reads what reverting `requests` needs, before they are sent. `None` when nothing the
    /// call sends is recorded (or there is no Proxmox to read). `reverts`: the record this
    /// call reverts, when it is a revert.
    pub async fn before(
        store: &Store,
        client: Option<&pve::Client>,
        tool: &str,
        requests: &[ApiRequest],
        reverts: Option<u64>,
        cancel: &CancellationToken,
    ) -> Option<Capture> {
        let client = client?;
        let mut pending = Vec::new();
        for request in requests {
            match Box::pin(capture_one(client, request, cancel)).await {
                Some(part) => pending.push(part),
                None if reverts.is_some() && request.method != Method::Get => {
                    pending.push(Pending::Ready(Part::NotRevertible {
                        sent: describe(request),
                        why: cannot_undo(request),
                    }));
                }
                None => {}
            }
        }
        (!pending.is_empty()).then(|| Capture {
            store: store.clone(),
            tool: tool.to_owned(),
            reverts,
            pending,
        })
    }

    /// Completes and writes the record once the change succeeded (`succeeded`), linked to
    /// the audit `sending` line `audit_seq`. A failed change records nothing. A record that
    /// cannot be written is reported on stderr: the change itself already happened. Returns
    /// the record's id when one was written.
    pub async fn commit(
        self,
        client: Option<&pve::Client>,
        audit_seq: Option<u64>,
        succeeded: bool,
        cancel: &CancellationToken,
    ) -> Option<u64> {
        if !succeeded {
            return None;
        }
        let mut parts = Vec::new();
        for pending in self.pending {
            parts.push(match pending {
                Pending::Ready(part) => part,
                Pending::Config { guest, old } => config_after(client, guest, old, cancel).await,
            });
        }
        let new = NewRecord {
            audit_seq,
            tool: self.tool.clone(),
            parts,
            reverts: self.reverts,
        };
        match self.store.add(new).await {
            Ok(record) => Some(record.id),
            Err(e) => {
                tracing::error!(tool = %self.tool, error = %e, "undo record not written");
                None
            }
        }
    }
}

/// Why a revert's request cannot itself be undone, in words.
fn cannot_undo(request: &ApiRequest) -> String {
    let path = &request.path;
    if path.contains("/snapshot/") {
        "a deleted snapshot cannot be re-created".into()
    } else if path.contains("/storage/") {
        "a deleted backup archive cannot be brought back".into()
    } else if request.method == Method::Delete {
        "a deleted guest cannot be brought back".into()
    } else {
        format!("{} cannot be undone by this server", describe(request))
    }
}

/// The path's segments, decoded.
fn segments(path: &str) -> Vec<String> {
    path.trim_matches('/')
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

fn param<'a>(request: &'a ApiRequest, name: &str) -> Option<&'a str> {
    request
        .params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn list(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn truthy(value: Option<&str>) -> bool {
    matches!(value, Some("1" | "true"))
}

async fn capture_one(
    client: &pve::Client,
    request: &ApiRequest,
    cancel: &CancellationToken,
) -> Option<Pending> {
    let segments = segments(&request.path);
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    let guest = |node: &str, kind: &str, vmid: &str| {
        GuestKind::parse(kind).map(|kind| Guest {
            node: node.to_owned(),
            kind,
            vmid: vmid.to_owned(),
        })
    };
    let ready = |part| Some(Pending::Ready(part));
    match (request.method, parts.as_slice()) {
        (Method::Put | Method::Post, ["nodes", node, kind, vmid, "config"]) => {
            let guest = guest(node, kind, vmid)?;
            Some(config_before(client, guest, request, cancel).await)
        }
        (Method::Post, ["nodes", node, kind, vmid, "status", action]) => {
            let guest = guest(node, kind, vmid)?;
            power(client, guest, action, cancel)
                .await
                .map(Pending::Ready)
        }
        (Method::Post, ["nodes", node, kind, vmid, "snapshot"]) => ready(Part::Snapshot {
            guest: guest(node, kind, vmid)?,
            snapname: param(request, "snapname")?.to_owned(),
        }),
        (Method::Post, ["nodes", node, kind, source, "clone"]) => {
            let source_template = is_template(client, node, kind, source, cancel).await;
            let node = param(request, "target").unwrap_or(node);
            ready(Part::Clone {
                guest: guest(node, kind, param(request, "newid")?)?,
                source: Some((*source).to_owned()),
                source_template,
            })
        }
        (Method::Put, ["pools"]) | (Method::Put, ["pools", _]) => {
            let poolid = param(request, "poolid")
                .map(str::to_owned)
                .or_else(|| parts.get(1).map(|s| (*s).to_owned()))?;
            Some(Pending::Ready(pool(client, &poolid, request, cancel).await))
        }
        (Method::Post, ["nodes", _, "vzdump"]) => ready(backup(request)),
        _ => None,
    }
}

/// Whether the clone's source is a template (`None`: its config could not be read).
async fn is_template(
    client: &pve::Client,
    node: &str,
    kind: &str,
    vmid: &str,
    cancel: &CancellationToken,
) -> Option<bool> {
    let path = format!(
        "/nodes/{}/{}/{}/config",
        pve::encode_path_segment(node),
        pve::encode_path_segment(kind),
        pve::encode_path_segment(vmid)
    );
    let config = client
        .call(ApiRequest::get(path), cancel)
        .await
        .result
        .ok()?;
    let flag = config.get("template").map(|v| v.to_string());
    Some(matches!(flag.as_deref(), Some("1" | "\"1\"" | "true")))
}

async fn config_before(
    client: &pve::Client,
    guest: Guest,
    request: &ApiRequest,
    cancel: &CancellationToken,
) -> Pending {
    let mut keys: Vec<String> = request
        .params
        .iter()
        .map(|(k, _)| k.clone())
        .filter(|k| !CONTROL.contains(&k.as_str()))
        .collect();
    keys.extend(list(param(request, "delete")));
    let config = client
        .call(ApiRequest::get(format!("{}/config", guest.path())), cancel)
        .await
        .result;
    let config = match config {
        Ok(config) => config,
        Err(e) => {
            return Pending::Ready(Part::NotRevertible {
                sent: describe(request),
                why: format!("the config could not be read before the change: {e}"),
            });
        }
    };
    let mut old = BTreeMap::new();
    for key in keys {
        let value = config.get(&key).and_then(wire_text);
        if value.as_deref() == Some(MASKED) {
            return Pending::Ready(Part::NotRevertible {
                sent: describe(request),
                why: format!("Proxmox does not show the old value of {key}"),
            });
        }
        old.insert(key, value);
    }
    Pending::Config { guest, old }
}

async fn config_after(
    client: Option<&pve::Client>,
    guest: Guest,
    old: BTreeMap<String, Option<String>>,
    cancel: &CancellationToken,
) -> Part {
    let read = match client {
        Some(client) => {
            client
                .call(ApiRequest::get(format!("{}/config", guest.path())), cancel)
                .await
                .result
        }
        None => Ok(Value::Null),
    };
    let config = read.unwrap_or(Value::Null);
    let new = old
        .keys()
        .map(|key| (key.clone(), config.get(key).and_then(wire_text)))
        .collect();
    let digest_after = config
        .get("digest")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Part::Config {
        guest,
        old,
        new,
        digest_after,
    }
}

/// The guest's power state: `running`, `paused` or `stopped`.
pub(super) async fn power_state(
    client: &pve::Client,
    guest: &Guest,
    cancel: &CancellationToken,
) -> Result<String, pve::PveError> {
    let status = client
        .call(
            ApiRequest::get(format!("{}/status/current", guest.path())),
            cancel,
        )
        .await
        .result?;
    let text = |key: &str| status.get(key).and_then(Value::as_str).unwrap_or_default();
    Ok(
        if text("qmpstatus") == "paused" || text("status") == "paused" {
            "paused".to_owned()
        } else if text("status") == "running" {
            "running".to_owned()
        } else {
            "stopped".to_owned()
        },
    )
}

async fn power(
    client: &pve::Client,
    guest: Guest,
    action: &str,
    cancel: &CancellationToken,
) -> Option<Part> {
    let on = matches!(action, "start" | "resume");
    let off = matches!(action, "shutdown" | "stop" | "suspend");
    if !on && !off {
        return None;
    }
    let sent = format!("POST {}/status/{action}", guest.path());
    let was = match power_state(client, &guest, cancel).await {
        Ok(was) => was,
        Err(e) => {
            return Some(Part::NotRevertible {
                sent,
                why: format!("the power state could not be read before: {e}"),
            });
        }
    };
    Some(match (on, was.as_str()) {
        (true, "stopped" | "paused") => Part::PowerOn { guest, was },
        (false, "running") => Part::PowerOff {
            guest,
            now: if action == "suspend" {
                "paused".into()
            } else {
                "stopped".into()
            },
        },
        _ => Part::NotRevertible {
            sent,
            why: format!("the guest was already {was}: the request changed nothing"),
        },
    })
}

async fn pool(
    client: &pve::Client,
    poolid: &str,
    request: &ApiRequest,
    cancel: &CancellationToken,
) -> Part {
    let sent = describe(request);
    let read = ApiRequest::get("/pools").param("poolid", poolid);
    let before = match client.call(read, cancel).await.result {
        Ok(answer) => answer,
        Err(e) => {
            return Part::NotRevertible {
                sent,
                why: format!("the pool could not be read before the change: {e}"),
            };
        }
    };
    let pool = before.get(0).unwrap_or(&before);
    let members = pool.get("members").and_then(Value::as_array);
    let mut vms: Vec<String> = Vec::new();
    let mut storages: Vec<String> = Vec::new();
    for member in members.into_iter().flatten() {
        if let Some(vmid) = member.get("vmid").and_then(wire_text) {
            vms.push(vmid);
        } else if let Some(storage) = member.get("storage").and_then(Value::as_str) {
            storages.push(storage.to_owned());
        }
    }
    let removing = truthy(param(request, "delete"));
    let named_vms = list(param(request, "vms"));
    let named_storage = list(param(request, "storage"));
    let (mut added_vms, mut added_storage, mut removed_vms, mut removed_storage) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for vm in named_vms {
        match (removing, vms.contains(&vm)) {
            (false, false) => added_vms.push(vm),
            (true, true) => removed_vms.push(vm),
            _ => {}
        }
    }
    for storage in named_storage {
        match (removing, storages.contains(&storage)) {
            (false, false) => added_storage.push(storage),
            (true, true) => removed_storage.push(storage),
            _ => {}
        }
    }
    let mut moved_from = BTreeMap::new();
    if !added_vms.is_empty() && truthy(param(request, "allow-move")) {
        let resources = ApiRequest::get("/cluster/resources").param("type", "vm");
        match client.call(resources, cancel).await.result {
            Ok(Value::Array(rows)) => {
                for row in rows {
                    let vmid = row.get("vmid").and_then(wire_text);
                    let pool = row.get("pool").and_then(Value::as_str);
                    if let (Some(vmid), Some(pool)) = (vmid, pool)
                        && added_vms.contains(&vmid)
                        && pool != poolid
                    {
                        moved_from.insert(vmid, pool.to_owned());
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                return Part::NotRevertible {
                    sent,
                    why: format!("the guests' pools could not be read before the move: {e}"),
                };
            }
        }
    }
    let old_comment = param(request, "comment").map(|_| {
        pool.get("comment")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    });
    Part::Pool {
        poolid: poolid.to_owned(),
        added_vms,
        added_storage,
        removed_vms,
        removed_storage,
        moved_from,
        old_comment,
    }
}

/// A backup is recorded as one that cannot be undone: its archive is deleted through
/// `…/content/{volume}`, and a backup's volume id holds a `/`, which the REST client never
/// sends inside a path segment (Proxmox would decode it and route the request elsewhere).
fn backup(request: &ApiRequest) -> Part {
    Part::NotRevertible {
        sent: describe(request),
        why: "a backup archive's volume id holds a '/', which this server never sends inside a path; remove the archive on the node (pvesm free <volid>; pve_list_backups names it)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_back_decoded_and_lists_split() {
        assert_eq!(
            segments("/nodes/pve%2D01/qemu/101/config"),
            ["nodes", "pve-01", "qemu", "101", "config"]
        );
        assert_eq!(list(Some("tags,net1;x")), ["tags", "net1", "x"]);
        assert!(truthy(Some("1")) && !truthy(Some("0")) && !truthy(None));
    }

    #[test]
    fn a_revert_that_cannot_be_undone_says_why() {
        let snap = ApiRequest::new(Method::Delete, "/nodes/pve01/qemu/101/snapshot/s");
        assert!(cannot_undo(&snap).contains("snapshot"));
        let guest = ApiRequest::new(Method::Delete, "/nodes/pve01/qemu/150");
        assert!(cannot_undo(&guest).contains("guest"));
        let archive = ApiRequest::new(
            Method::Delete,
            "/nodes/pve01/storage/local/content/local%3Abackup%2Fx",
        );
        assert!(cannot_undo(&archive).contains("archive"));
    }
}
