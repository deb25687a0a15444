//! Reverting one record: the requests it sends, checked against Proxmox's current state
//! first, and the listing of what is recorded.
//!
//! Invariants: a revert is planned only from a record of this cluster; it is refused before
//! anyone is asked when the record cannot be reverted (`UNDO_NOT_REVERTIBLE`) or the target
//! changed since (`UNDO_STALE`: another config digest or values, a snapshot or clone gone, a
//! guest in another power state, a pool member gone); a config revert also carries the digest recorded after the
//! change, so Proxmox refuses it too if the config changed in between; the requests sent are
//! exactly the planned ones, classified here with the same classifier the REST client's
//! clearance check uses.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::capture::power_state;
use super::record::{Part, Record, describe, wire_text};
use super::store::{MAX_RECORDS, Store};
use crate::effects::{self, Classified};
use crate::envelope::{ToolFailure, codes, failure_from};
use crate::pve::{self, ApiRequest};

/// A revert ready to send: the record and its requests, with what they do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The record being reverted.
    pub record: Record,
    /// The requests, in order.
    pub requests: Vec<ApiRequest>,
    /// What they do, for the gate.
    pub classified: Classified,
}

/// Loads record `id` and plans its revert, checking Proxmox's current state (reads only).
pub async fn prepare(
    store: &Store,
    client: &pve::Client,
    id: u64,
    cancel: &CancellationToken,
) -> Result<Plan, ToolFailure> {
    let record = revertible(store, id).await?;
    let mut requests = Vec::new();
    for part in record.parts.iter().rev() {
        match check(client, part, cancel).await {
            Ok(mut more) => requests.append(&mut more),
            Err(why) => return Err(stale(&record, &why)),
        }
    }
    Ok(planned_as(record, requests))
}

/// Plans record `id`'s revert from the record alone, reading nothing: the requests are the
/// ones [`prepare`] would plan, which depend on the record only. For a step of a plan, judged
/// before the steps ahead of it ran (one of them may be what makes it possible: a clone is
/// stopped before it is deleted); [`prepare`] checks it against Proxmox when its turn comes.
pub async fn planned(store: &Store, id: u64) -> Result<Plan, ToolFailure> {
    let record = revertible(store, id).await?;
    let requests = record.revert_requests();
    Ok(planned_as(record, requests))
}

/// Record `id`, when it can be reverted at all.
async fn revertible(store: &Store, id: u64) -> Result<Record, ToolFailure> {
    let record = store
        .get(id)
        .await
        .map_err(|e| ToolFailure::new(codes::UNDO_NOT_REVERTIBLE, e.to_string()))?
        .ok_or_else(|| {
            ToolFailure::new(
                codes::TOOL_INPUT_REJECTED,
                format!("No recorded change {id} (the store keeps the newest {MAX_RECORDS})."),
            )
            .with_hint("List the recorded changes with pve_list_changes. Nothing was sent.")
        })?;
    if let Some(why) = record.blocked() {
        return Err(ToolFailure::new(
            codes::UNDO_NOT_REVERTIBLE,
            format!("Change {id} ({}) cannot be reverted: {why}.", record.tool),
        )
        .with_hint("Nothing was sent to Proxmox."));
    }
    Ok(record)
}

/// A revert of `record` sending `requests`, classified.
fn planned_as(record: Record, requests: Vec<ApiRequest>) -> Plan {
    let mut classified = Classified::read();
    for request in &requests {
        classified.merge(effects::classify_rest(
            request.method.as_str(),
            &request.path,
            &request.params,
        ));
    }
    Plan {
        record,
        requests,
        classified,
    }
}

fn stale(record: &Record, why: &str) -> ToolFailure {
    ToolFailure::new(
        codes::UNDO_STALE,
        format!(
            "Change {} ({}) is stale and was not reverted: {why}.",
            record.id, record.tool
        ),
    )
    .with_hint("Something changed the target since; read its current state and change it directly. Only reads were sent to Proxmox.")
    .with_details(json!({"id": record.id, "target": record.target(), "why": why}))
}

/// Checks one part against Proxmox now; its revert requests, or why it is stale.
async fn check(
    client: &pve::Client,
    part: &Part,
    cancel: &CancellationToken,
) -> Result<Vec<ApiRequest>, String> {
    let get = |path: String| async move {
        client
            .call(ApiRequest::get(path), cancel)
            .await
            .result
            .map_err(|e| e.to_string())
    };
    match part {
        Part::Config {
            guest,
            new,
            digest_after,
            ..
        } => {
            let config = get(format!("{}/config", guest.path())).await?;
            let digest = config.get("digest").and_then(Value::as_str);
            if let (Some(recorded), Some(now)) = (digest_after, digest)
                && recorded != now
            {
                return Err(format!(
                    "the config of {} changed since (digest {now}, recorded {recorded})",
                    guest.label()
                ));
            }
            let changed: Vec<&str> = new
                .iter()
                .filter(|(key, value)| config.get(key.as_str()).and_then(wire_text) != **value)
                .map(|(key, _)| key.as_str())
                .collect();
            if !changed.is_empty() {
                return Err(format!(
                    "{} changed since on {}",
                    changed.join(", "),
                    guest.label()
                ));
            }
        }
        Part::PowerOn { guest, .. } => {
            let now = power_state(client, guest, cancel)
                .await
                .map_err(|e| e.to_string())?;
            if now != "running" {
                return Err(format!("{} is {now} already", guest.label()));
            }
        }
        Part::PowerOff { guest, now } => {
            let state = power_state(client, guest, cancel)
                .await
                .map_err(|e| e.to_string())?;
            if state != *now {
                return Err(format!("{} is {state} now", guest.label()));
            }
        }
        Part::Snapshot { guest, snapname } => {
            let list = get(format!("{}/snapshot", guest.path())).await?;
            let exists = list
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s.get("name").and_then(Value::as_str) == Some(snapname));
            if !exists {
                return Err(format!(
                    "the snapshot {snapname} of {} no longer exists",
                    guest.label()
                ));
            }
        }
        Part::Clone { guest, .. } => {
            get(format!("{}/config", guest.path()))
                .await
                .map_err(|e| format!("the clone {} cannot be read: {e}", guest.label()))?;
            if power_state(client, guest, cancel)
                .await
                .map_err(|e| e.to_string())?
                != "stopped"
            {
                return Err(format!(
                    "the clone {} is running; stop it first",
                    guest.label()
                ));
            }
        }
        Part::Pool {
            poolid, added_vms, ..
        } => {
            let read = ApiRequest::get("/pools").param("poolid", poolid.as_str());
            let pool = client
                .call(read, cancel)
                .await
                .result
                .map_err(|e| e.to_string())?;
            let pool = pool.get(0).unwrap_or(&pool);
            let members: Vec<String> = pool
                .get("members")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| m.get("vmid").and_then(wire_text))
                .collect();
            let gone: Vec<&str> = added_vms
                .iter()
                .filter(|vm| !members.contains(vm))
                .map(String::as_str)
                .collect();
            if !gone.is_empty() {
                return Err(format!("{} left pool {poolid} since", gone.join(", ")));
            }
        }
        Part::NotRevertible { why, .. } => return Err(why.clone()),
    }
    Ok(part.revert_requests())
}

/// Sends a planned revert's requests in order, stopping at the first failure. Returns what
/// was sent and Proxmox's answers, and the attempts made.
pub async fn send(
    client: &pve::Client,
    plan: &Plan,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let mut attempts = 0;
    let mut sent = Vec::new();
    for request in &plan.requests {
        let outcome = client.call(request.clone(), cancel).await;
        attempts += outcome.attempts;
        match outcome.result {
            Ok(answer) => sent.push(json!({"request": shown(request), "answer": answer})),
            Err(e) => {
                let failure = failure_from(e);
                let message = format!(
                    "Reverting change {}: {} failed: {}",
                    plan.record.id,
                    describe(request),
                    failure.message
                );
                return (
                    Err(ToolFailure { message, ..failure }
                        .with_details(json!({"id": plan.record.id, "sentBefore": sent}))),
                    attempts,
                );
            }
        }
    }
    let result = json!({
        "reverted": plan.record.id,
        "tool": plan.record.tool,
        "target": plan.record.target(),
        "sent": sent,
    });
    (Ok(result), attempts)
}

/// A request as the listing and results show it: `METHOD path k=v …`.
fn shown(request: &ApiRequest) -> String {
    let mut text = describe(request);
    for (key, value) in &request.params {
        text.push_str(&format!(" {key}={value}"));
    }
    text
}

/// The listing of the recorded changes, newest first.
pub async fn listing(store: &Store) -> Result<Value, ToolFailure> {
    let records = store
        .list()
        .await
        .map_err(|e| ToolFailure::new(codes::UNDO_NOT_REVERTIBLE, e.to_string()))?;
    let rows: Vec<Value> = records.iter().rev().map(row).collect();
    let kept = match store.path() {
        Some(path) => format!(
            "in {} (beside the audit log; survives restarts)",
            path.display()
        ),
        None => "in memory only (the audit log is off): lost when the server stops".to_owned(),
    };
    Ok(json!({
        "changes": rows,
        "kept": kept,
        "bound": format!("the newest {MAX_RECORDS} records; older ones are dropped"),
        "note": "revertible: nothing in the record blocks a revert; pve_undo_change checks Proxmox's current state (digest, snapshot, power state) before anyone is asked",
    }))
}

fn row(record: &Record) -> Value {
    let revert: Vec<String> = record.revert_requests().iter().map(shown).collect();
    let blocked = record.blocked();
    json!({
        "id": record.id,
        "auditSeq": record.audit_seq,
        "time": record.time,
        "tool": record.tool,
        "target": record.target(),
        "revert": revert,
        "revertible": blocked.is_none(),
        "why": blocked,
        "reverts": record.reverts,
        "revertedBy": record.reverted_by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::undo::record::{Guest, GuestKind};
    use crate::undo::store::NewRecord;

    fn snapshot() -> NewRecord {
        NewRecord {
            audit_seq: Some(4),
            tool: "pve_qemu_create_snapshot".into(),
            parts: vec![Part::Snapshot {
                guest: Guest {
                    node: "pve01".into(),
                    kind: GuestKind::Qemu,
                    vmid: "101".into(),
                },
                snapname: "before".into(),
            }],
            reverts: None,
        }
    }

    #[tokio::test]
    async fn the_listing_says_where_records_are_kept_and_what_a_revert_sends() {
        let memory = Store::memory();
        memory.add(snapshot()).await.unwrap();
        let listed = listing(&memory).await.unwrap();
        assert!(listed["kept"].as_str().unwrap().contains("in memory only"));
        let row = &listed["changes"][0];
        assert_eq!(row["auditSeq"], 4);
        assert_eq!(row["revertible"], true);
        assert_eq!(
            row["revert"],
            json!(["DELETE /nodes/pve01/qemu/101/snapshot/before"])
        );
        let dir = tempfile::tempdir().unwrap();
        let file = Store::beside(&dir.path().join("audit.jsonl"));
        let listed = listing(&file).await.unwrap();
        assert!(
            listed["kept"]
                .as_str()
                .unwrap()
                .contains("audit.undo.jsonl")
        );
        assert_eq!(listed["changes"], json!([]));
    }
}
