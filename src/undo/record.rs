//! One undo record: what a recorded change altered and what reverting it needs, and the
//! requests a revert sends, built from the record alone.
//!
//! Invariant: a record holds only what the server read from Proxmox before and after the
//! change (old config values with the digest after the change, the power state, the snapshot
//! or guest the change created, pool members); a part the
//! server cannot undo says why ([`Part::NotRevertible`]), and the revert of a record is the
//! reverse of its parts, last part first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::pve::{self, ApiRequest, Method};

/// The kind of guest a record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestKind {
    /// A virtual machine.
    Qemu,
    /// A container.
    Lxc,
}

impl GuestKind {
    /// The path word (`qemu`, `lxc`).
    pub const fn as_str(self) -> &'static str {
        match self {
            GuestKind::Qemu => "qemu",
            GuestKind::Lxc => "lxc",
        }
    }

    /// The kind a path word names.
    pub fn parse(word: &str) -> Option<GuestKind> {
        match word {
            "qemu" => Some(GuestKind::Qemu),
            "lxc" => Some(GuestKind::Lxc),
            _ => None,
        }
    }
}

/// One guest on one node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guest {
    /// The node it lives on.
    pub node: String,
    /// VM or container.
    pub kind: GuestKind,
    /// Its id.
    pub vmid: String,
}

impl Guest {
    /// `/nodes/<node>/<kind>/<vmid>`, each segment encoded.
    pub fn path(&self) -> String {
        format!(
            "/nodes/{}/{}/{}",
            pve::encode_path_segment(&self.node),
            self.kind.as_str(),
            pve::encode_path_segment(&self.vmid)
        )
    }

    /// `qemu 101 on pve01`.
    pub fn label(&self) -> String {
        format!("{} {} on {}", self.kind.as_str(), self.vmid, self.node)
    }
}

/// One thing a change did, with what reverting it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Part {
    /// Config keys set or deleted: their values before (`None`: the key did not exist), their
    /// values after, and the config digest read after the change.
    Config {
        /// The guest.
        guest: Guest,
        /// Each changed key's value before the change (`None`: absent).
        old: BTreeMap<String, Option<String>>,
        /// Each changed key's value after the change (`None`: absent).
        new: BTreeMap<String, Option<String>>,
        /// The config digest after the change (`None`: it could not be read).
        digest_after: Option<String>,
    },
    /// A guest was started or resumed from `was` (`stopped` or `paused`).
    PowerOn {
        /// The guest.
        guest: Guest,
        /// Its state before.
        was: String,
    },
    /// A running guest was shut down, stopped or suspended (`now`: the state it went to).
    PowerOff {
        /// The guest.
        guest: Guest,
        /// `stopped` or `paused`.
        now: String,
    },
    /// A snapshot was created.
    Snapshot {
        /// The guest.
        guest: Guest,
        /// Its name.
        snapname: String,
    },
    /// A new guest was made by cloning.
    Clone {
        /// The new guest.
        guest: Guest,
        /// The guest it was cloned from, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
        /// Whether that source was a template (`None`: it could not be read). A copy of a
        /// guest that is not one carries its addresses and services: starting it stays
        /// consequential (`preview::risk`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source_template: Option<bool>,
    },
    /// Pool members were added or removed, or the comment changed.
    Pool {
        /// The pool.
        poolid: String,
        /// Guests and storages that became members.
        #[serde(default)]
        added_vms: Vec<String>,
        /// Storages that became members.
        #[serde(default)]
        added_storage: Vec<String>,
        /// Guests that stopped being members.
        #[serde(default)]
        removed_vms: Vec<String>,
        /// Storages that stopped being members.
        #[serde(default)]
        removed_storage: Vec<String>,
        /// Guests taken from another pool (`allow-move`), with the pool they left.
        #[serde(default)]
        moved_from: BTreeMap<String, String>,
        /// The comment before, when the change set a new one.
        #[serde(default)]
        old_comment: Option<String>,
    },
    /// A request the server cannot undo, and why.
    NotRevertible {
        /// The request, as `METHOD path`.
        sent: String,
        /// Why it cannot be undone.
        why: String,
    },
}

impl Part {
    /// Why this part cannot be undone, if it cannot.
    pub fn not_revertible(&self) -> Option<&str> {
        match self {
            Part::NotRevertible { why, .. } => Some(why),
            _ => None,
        }
    }

    /// What the part is about, for the listing.
    pub fn target(&self) -> String {
        match self {
            Part::Config { guest, .. }
            | Part::PowerOn { guest, .. }
            | Part::PowerOff { guest, .. }
            | Part::Snapshot { guest, .. }
            | Part::Clone { guest, .. } => guest.label(),
            Part::Pool { poolid, .. } => format!("pool {poolid}"),
            Part::NotRevertible { sent, .. } => sent.clone(),
        }
    }

    /// The requests that undo this part; empty for a part that cannot be undone.
    pub fn revert_requests(&self) -> Vec<ApiRequest> {
        match self {
            Part::Config {
                guest,
                old,
                digest_after,
                ..
            } => {
                let mut request = ApiRequest::new(Method::Put, format!("{}/config", guest.path()));
                let mut deleted = Vec::new();
                for (key, value) in old {
                    match value {
                        Some(value) => request.params.push((key.clone(), value.clone())),
                        None => deleted.push(key.as_str()),
                    }
                }
                if !deleted.is_empty() {
                    request.params.push(("delete".into(), deleted.join(",")));
                }
                if let Some(digest) = digest_after {
                    request.params.push(("digest".into(), digest.clone()));
                }
                vec![request]
            }
            Part::PowerOn { guest, was } => {
                let action = if was == "paused" {
                    "suspend"
                } else {
                    "shutdown"
                };
                vec![ApiRequest::post(format!(
                    "{}/status/{action}",
                    guest.path()
                ))]
            }
            Part::PowerOff { guest, now } => {
                let action = if now == "paused" { "resume" } else { "start" };
                vec![ApiRequest::post(format!(
                    "{}/status/{action}",
                    guest.path()
                ))]
            }
            Part::Snapshot { guest, snapname } => vec![ApiRequest::new(
                Method::Delete,
                format!(
                    "{}/snapshot/{}",
                    guest.path(),
                    pve::encode_path_segment(snapname)
                ),
            )],
            Part::Clone { guest, .. } => vec![ApiRequest::new(Method::Delete, guest.path())],
            Part::Pool {
                poolid,
                added_vms,
                added_storage,
                removed_vms,
                removed_storage,
                moved_from,
                old_comment,
            } => pool_revert(
                poolid,
                (added_vms, added_storage),
                (removed_vms, removed_storage),
                moved_from,
                old_comment.as_deref(),
            ),
            Part::NotRevertible { .. } => Vec::new(),
        }
    }
}

/// Undoing a pool change: take the added members out, put the removed ones back, return the
/// guests that were moved to their old pool, and restore the comment.
fn pool_revert(
    poolid: &str,
    (added_vms, added_storage): (&[String], &[String]),
    (removed_vms, removed_storage): (&[String], &[String]),
    moved_from: &BTreeMap<String, String>,
    old_comment: Option<&str>,
) -> Vec<ApiRequest> {
    let update = || ApiRequest::new(Method::Put, "/pools").param("poolid", poolid);
    let mut requests = Vec::new();
    if !added_vms.is_empty() || !added_storage.is_empty() {
        let mut take_out = update();
        if !added_vms.is_empty() {
            take_out = take_out.param("vms", added_vms.join(","));
        }
        if !added_storage.is_empty() {
            take_out = take_out.param("storage", added_storage.join(","));
        }
        requests.push(take_out.param("delete", "1"));
    }
    let mut put_back = update();
    if !removed_vms.is_empty() {
        put_back = put_back.param("vms", removed_vms.join(","));
    }
    if !removed_storage.is_empty() {
        put_back = put_back.param("storage", removed_storage.join(","));
    }
    if let Some(comment) = old_comment {
        put_back = put_back.param("comment", comment);
    }
    if put_back.params.len() > 1 {
        requests.push(put_back);
    }
    let mut by_pool: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (vmid, pool) in moved_from {
        by_pool.entry(pool).or_default().push(vmid);
    }
    for (pool, vmids) in by_pool {
        requests.push(
            ApiRequest::new(Method::Put, "/pools")
                .param("poolid", pool)
                .param("vms", vmids.join(",")),
        );
    }
    requests
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Its id (counts from 1 in a store).
    pub id: u64,
    /// The sequence number of the change's `sending` line in the audit log, when audited.
    pub audit_seq: Option<u64>,
    /// When it was recorded (RFC 3339, UTC).
    pub time: String,
    /// The cluster it is about (the audit log's `instance`), when known.
    pub instance: Option<String>,
    /// The tool that made the change.
    pub tool: String,
    /// What the change did, in order.
    pub parts: Vec<Part>,
    /// The record this change reverted, when it was a revert.
    #[serde(default)]
    pub reverts: Option<u64>,
    /// The record of the revert that undid this change, once reverted.
    #[serde(default)]
    pub reverted_by: Option<u64>,
}

impl Record {
    /// What the record is about: its parts' targets, deduplicated.
    pub fn target(&self) -> String {
        let mut targets: Vec<String> = Vec::new();
        for part in &self.parts {
            let target = part.target();
            if !targets.contains(&target) {
                targets.push(target);
            }
        }
        targets.join("; ")
    }

    /// Why the record cannot be reverted now, from the record alone (Proxmox's current
    /// state is checked at revert time).
    pub fn blocked(&self) -> Option<String> {
        if let Some(by) = self.reverted_by {
            return Some(format!("already reverted by change {by}"));
        }
        let why: Vec<&str> = self.parts.iter().filter_map(Part::not_revertible).collect();
        if !why.is_empty() {
            return Some(why.join("; "));
        }
        if self.parts.is_empty() {
            return Some("the change recorded nothing to revert".into());
        }
        None
    }

    /// The revert's requests in the order they are sent: the parts' reverts, last part first.
    pub fn revert_requests(&self) -> Vec<ApiRequest> {
        self.parts
            .iter()
            .rev()
            .flat_map(Part::revert_requests)
            .collect()
    }
}

/// A config value as Proxmox takes it back: strings as they are, numbers in decimal,
/// booleans as 0/1.
pub fn wire_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(if *b { "1" } else { "0" }.to_owned()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `METHOD path` of a request, for listings and refusals.
pub fn describe(request: &ApiRequest) -> String {
    format!("{} {}", request.method.as_str(), request.path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vm() -> Guest {
        Guest {
            node: "pve01".into(),
            kind: GuestKind::Qemu,
            vmid: "101".into(),
        }
    }

    #[test]
    fn a_config_revert_sends_old_values_deletes_new_keys_and_pins_the_digest() {
        let part = Part::Config {
            guest: vm(),
            old: BTreeMap::from([("cores".into(), Some("2".into())), ("tags".into(), None)]),
            new: BTreeMap::from([
                ("cores".into(), Some("4".into())),
                ("tags".into(), Some("web".into())),
            ]),
            digest_after: Some("abc".into()),
        };
        let [request] = part.revert_requests().try_into().unwrap();
        assert_eq!(request.method, Method::Put);
        assert_eq!(request.path, "/nodes/pve01/qemu/101/config");
        assert_eq!(
            request.params,
            vec![
                ("cores".to_owned(), "2".to_owned()),
                ("delete".to_owned(), "tags".to_owned()),
                ("digest".to_owned(), "abc".to_owned()),
            ]
        );
    }

    #[test]
    fn each_part_reverts_to_its_opposite() {
        let start = Part::PowerOn {
            guest: vm(),
            was: "stopped".into(),
        };
        assert_eq!(
            describe(&start.revert_requests()[0]),
            "POST /nodes/pve01/qemu/101/status/shutdown"
        );
        let resume = Part::PowerOn {
            guest: vm(),
            was: "paused".into(),
        };
        assert!(
            resume.revert_requests()[0]
                .path
                .ends_with("/status/suspend")
        );
        let off = Part::PowerOff {
            guest: vm(),
            now: "stopped".into(),
        };
        assert!(off.revert_requests()[0].path.ends_with("/status/start"));
        let snap = Part::Snapshot {
            guest: vm(),
            snapname: "before".into(),
        };
        assert_eq!(
            describe(&snap.revert_requests()[0]),
            "DELETE /nodes/pve01/qemu/101/snapshot/before"
        );
        let clone = Part::Clone {
            guest: vm(),
            source: Some("9000".into()),
            source_template: Some(true),
        };
        assert_eq!(
            describe(&clone.revert_requests()[0]),
            "DELETE /nodes/pve01/qemu/101"
        );
        let pool = Part::Pool {
            poolid: "lab".into(),
            added_vms: vec!["101".into()],
            added_storage: vec![],
            removed_vms: vec!["102".into()],
            removed_storage: vec![],
            moved_from: BTreeMap::from([("101".into(), "old".into())]),
            old_comment: None,
        };
        let requests = pool.revert_requests();
        assert_eq!(requests.len(), 3);
        assert!(requests[0].params.contains(&("delete".into(), "1".into())));
        assert!(requests[1].params.contains(&("vms".into(), "102".into())));
        assert!(
            requests[2]
                .params
                .contains(&("poolid".into(), "old".into()))
        );
    }

    #[test]
    fn records_parse_back_and_say_why_they_are_blocked() {
        let record = Record {
            id: 3,
            audit_seq: Some(7),
            time: "2026-01-01T00:00:00.000Z".into(),
            instance: None,
            tool: "pve_qemu_create_snapshot".into(),
            parts: vec![Part::Snapshot {
                guest: vm(),
                snapname: "s".into(),
            }],
            reverts: None,
            reverted_by: None,
        };
        let text = serde_json::to_string(&record).unwrap();
        assert!(text.contains("\"kind\":\"snapshot\""), "{text}");
        assert_eq!(serde_json::from_str::<Record>(&text).unwrap(), record);
        assert_eq!(record.blocked(), None);
        let reverted = Record {
            reverted_by: Some(4),
            ..record.clone()
        };
        assert!(reverted.blocked().unwrap().contains("already reverted"));
        let stuck = Record {
            parts: vec![Part::NotRevertible {
                sent: "DELETE x".into(),
                why: "gone for good".into(),
            }],
            ..record
        };
        assert_eq!(stuck.blocked().as_deref(), Some("gone for good"));
        assert!(serde_json::from_str::<Record>("{\"id\":1}").is_err());
    }

    #[test]
    fn config_values_go_back_as_proxmox_takes_them() {
        assert_eq!(wire_text(&json!(4)).as_deref(), Some("4"));
        assert_eq!(wire_text(&json!("a,b")).as_deref(), Some("a,b"));
        assert_eq!(wire_text(&json!(true)).as_deref(), Some("1"));
        assert_eq!(wire_text(&json!(null)), None);
    }
}
