//! Undo, one call (issue 37, point 6): a recorded change is reverted by `pve_undo_change`,
//! through the built binary over stdio with rmcp's client side and the request-logging
//! emulator. Held here: a config update's revert restores every old value (and deletes the
//! keys that did not exist); a change in between makes the record stale, refused before
//! anyone is asked with nothing sent; a snapshot's revert removes it; a revert can itself be
//! reverted; the records survive a restart (beside the audit log); a consequential revert
//! asks the person, and a declining person sends nothing; the store is bounded.

use crate::approval_common;
use crate::common;

use std::path::Path;

use approval_common::{Answer, Person, call, changes, code, connect_stdio, envelope};
use common::{emulator, env_for, with_policy};
use pve_emulator::Emulator;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};

type Client = RunningService<RoleClient, Person>;

fn full_env(emu: &Emulator, audit: &Path) -> Vec<(String, String)> {
    let mut env = with_policy(
        env_for(emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    env.push(("PVE_AUDIT_LOG".into(), audit.display().to_string()));
    env
}

/// The data of a successful call.
async fn ok(client: &Client, tool: &'static str, args: Value) -> Value {
    let result = call(client, tool, args.clone()).await;
    assert_ne!(result.is_error, Some(true), "{tool} {args}: {result:?}");
    envelope(&result)["data"].clone()
}

async fn config(client: &Client, vmid: u32) -> Value {
    let mut data = ok(
        client,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": vmid}),
    )
    .await;
    data.as_object_mut().map(|c| c.remove("digest"));
    data
}

/// The recorded changes, newest first.
async fn recorded(client: &Client) -> Vec<Value> {
    let data = ok(client, "pve_list_changes", json!({})).await;
    data["changes"].as_array().cloned().expect("changes")
}

/// The newest record made by `tool`.
async fn newest(client: &Client, tool: &str) -> Value {
    recorded(client)
        .await
        .into_iter()
        .find(|r| r["tool"] == tool)
        .unwrap_or_else(|| panic!("no record of {tool}"))
}

async fn settle() {
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
}

async fn snapshots(client: &Client, vmid: u32) -> Vec<String> {
    let data = ok(
        client,
        "pve_list_qemu_snapshots",
        json!({"node": "pve01", "vmid": vmid}),
    )
    .await;
    data.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .filter(|name| name != "current")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_revert_restores_every_old_value_and_can_itself_be_reverted() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &audit)).await;
    let before = config(&client, 101).await;
    assert!(before.get("description").is_none(), "{before}");
    let update = json!({"node": "pve01", "vmid": 101, "cores": 6, "memory": 2048, "tags": "lab", "description": "moved"});
    ok(&client, "pve_qemu_update_config", update).await;
    let after = config(&client, 101).await;
    assert_eq!(after["cores"], 6, "{after}");

    let record = newest(&client, "pve_qemu_update_config").await;
    assert_eq!(record["revertible"], true, "{record}");
    assert!(record["auditSeq"].as_u64().is_some(), "{record}");
    let revert = record["revert"][0].as_str().expect("revert request");
    assert!(
        revert.starts_with("PUT /nodes/pve01/qemu/101/config")
            && revert.contains("cores=2")
            && revert.contains("delete=description")
            && revert.contains("digest="),
        "{revert}"
    );
    // The record sits beside the audit log, and its sequence number is a `sending` line's.
    let undo_file = dir.path().join("audit.undo.jsonl");
    assert!(undo_file.exists());
    let seq = record["auditSeq"].as_u64().unwrap();
    let lines = std::fs::read_to_string(&audit).unwrap();
    let sending = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["seq"] == seq)
        .expect("the linked line");
    assert_eq!(sending["decision"], "sending");
    assert_eq!(sending["tool"], "pve_qemu_update_config");

    let asked = person.questions().len();
    emu.clear_requests();
    // A dry run of the revert previews it: nobody is asked, nothing changes.
    let preview = ok(
        &client,
        "pve_undo_change",
        json!({"id": record["id"], "dry_run": true}),
    )
    .await;
    assert_eq!(preview["dryRun"], true, "{preview}");
    assert_eq!(preview["sent"], false, "{preview}");
    assert_eq!(person.questions().len(), asked);
    assert!(changes(&emu).is_empty(), "a dry run sent a change");
    let reverted = ok(&client, "pve_undo_change", json!({"id": record["id"]})).await;
    assert_eq!(reverted["reverted"], record["id"], "{reverted}");
    assert_eq!(person.questions().len(), asked + 1, "a config revert asks");
    let sent: Vec<_> = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].form.iter().any(|(k, _)| k == "digest"), "{sent:?}");
    assert_eq!(
        config(&client, 101).await,
        before,
        "every old value is back"
    );

    // The revert is a recorded change too, and reverting it re-applies the update.
    let records = recorded(&client).await;
    let undo_record = &records[0];
    assert_eq!(undo_record["tool"], "pve_undo_change");
    assert_eq!(undo_record["reverts"], record["id"]);
    let original = records.iter().find(|r| r["id"] == record["id"]).unwrap();
    assert_eq!(original["revertedBy"], undo_record["id"]);
    assert_eq!(original["revertible"], false);
    let again = call(&client, "pve_undo_change", json!({"id": record["id"]})).await;
    assert_eq!(code(&again), "UNDO_NOT_REVERTIBLE");
    ok(&client, "pve_undo_change", json!({"id": undo_record["id"]})).await;
    assert_eq!(config(&client, 101).await, after, "undo of the undo");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_in_between_makes_the_record_stale_and_nothing_is_sent_or_asked() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &audit)).await;
    ok(
        &client,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "cores": 3}),
    )
    .await;
    let record = newest(&client, "pve_qemu_update_config").await;
    // Someone else changes the guest (the config digest moves).
    assert!(emu.set_guest_option(101, "memory", json!(1024)));
    let asked = person.questions().len();
    emu.clear_requests();
    let result = call(&client, "pve_undo_change", json!({"id": record["id"]})).await;
    assert_eq!(code(&result), "UNDO_STALE");
    let error = &envelope(&result)["error"];
    assert!(
        error["message"].as_str().unwrap().contains("changed since"),
        "{error}"
    );
    assert_eq!(person.questions().len(), asked, "nobody is asked");
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    assert_eq!(config(&client, 101).await["cores"], 3);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_revert_sends_nothing_and_the_record_survives_a_restart() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let env = full_env(&emu, &audit);
    let declining = Person::new(Answer::Decline);
    let (client, home) = connect_stdio(declining.clone(), &env).await;
    // Routine: a template's linked clone and a snapshot run without a person.
    ok(
        &client,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 9000, "newid": 150, "name": "web-150"}),
    )
    .await;
    settle().await;
    ok(
        &client,
        "pve_qemu_create_snapshot",
        json!({"node": "pve01", "vmid": 150, "snapname": "first"}),
    )
    .await;
    settle().await;
    assert!(
        declining.questions().is_empty(),
        "{:?}",
        declining.questions()
    );
    let snapshot = newest(&client, "pve_qemu_create_snapshot").await;
    assert_eq!(
        snapshot["revert"],
        json!(["DELETE /nodes/pve01/qemu/150/snapshot/first"])
    );
    emu.clear_requests();
    let declined = call(&client, "pve_undo_change", json!({"id": snapshot["id"]})).await;
    assert_eq!(code(&declined), "CONFIRMATION_DECLINED");
    assert_eq!(declining.questions().len(), 1, "a snapshot's deletion asks");
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    assert_eq!(snapshots(&client, 150).await, ["first"]);
    client.cancel().await.ok();
    drop(home);

    // A new process on the same audit log finds the records and reverts them.
    let accepting = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(accepting.clone(), &env).await;
    let listed = recorded(&client).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    ok(&client, "pve_undo_change", json!({"id": snapshot["id"]})).await;
    settle().await;
    assert!(snapshots(&client, 150).await.is_empty());
    assert_eq!(accepting.questions().len(), 1);
    // A deleted snapshot cannot be re-created: its revert's record says so.
    let undo_record = newest(&client, "pve_undo_change").await;
    assert_eq!(undo_record["revertible"], false);
    assert!(
        undo_record["why"].as_str().unwrap().contains("snapshot"),
        "{undo_record}"
    );
    let again = call(&client, "pve_undo_change", json!({"id": undo_record["id"]})).await;
    assert_eq!(code(&again), "UNDO_NOT_REVERTIBLE");
    // The clone's revert deletes the new guest.
    let clone = newest(&client, "pve_qemu_clone").await;
    assert_eq!(clone["revert"], json!(["DELETE /nodes/pve01/qemu/150"]));
    ok(&client, "pve_undo_change", json!({"id": clone["id"]})).await;
    settle().await;
    let gone = call(
        &client,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(gone.is_error, Some(true), "{gone:?}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_keeps_the_newest_records_only() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let file = dir.path().join("audit.undo.jsonl");
    let bound = nandi_proxmox_mcp::undo::MAX_RECORDS as u64;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person, &full_env(&emu, &audit)).await;
    let update = |cores: u32| json!({"node": "pve01", "vmid": 101, "cores": cores});
    ok(&client, "pve_qemu_update_config", update(5)).await;
    // Fill the store up to its bound, as earlier changes would have (same cluster).
    let mut text = std::fs::read_to_string(&file).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], 1);
    for id in 2..=bound {
        let record = json!({
            "id": id, "auditSeq": null, "time": "2026-01-01T00:00:00.000Z",
            "instance": first["instance"], "tool": "pve_qemu_create_snapshot",
            "parts": [{"kind": "snapshot", "guest": {"node": "pve01", "kind": "qemu", "vmid": "101"}, "snapname": format!("s{id}")}],
        });
        text.push_str(&format!("{record}\n"));
    }
    std::fs::write(&file, text).unwrap();
    assert_eq!(recorded(&client).await.len() as u64, bound);
    ok(&client, "pve_qemu_update_config", update(6)).await;
    let listed = recorded(&client).await;
    assert_eq!(listed.len() as u64, bound);
    assert_eq!(listed[0]["tool"], "pve_qemu_update_config");
    assert_eq!(listed[0]["id"], bound + 1);
    assert_eq!(listed.last().unwrap()["id"], 2, "the oldest was dropped");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_and_a_pool_membership_are_reverted_by_their_opposites() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &audit)).await;
    ok(
        &client,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 9000, "newid": 150, "name": "web-150"}),
    )
    .await;
    settle().await;
    ok(
        &client,
        "pve_start_qemu_vm",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    settle().await;
    let start = newest(&client, "pve_start_qemu_vm").await;
    assert_eq!(
        start["revert"],
        json!(["POST /nodes/pve01/qemu/150/status/shutdown"])
    );
    // The clone cannot be deleted while it runs: stale, said before anyone is asked.
    let clone = newest(&client, "pve_qemu_clone").await;
    let asked = person.questions().len();
    let running = call(&client, "pve_undo_change", json!({"id": clone["id"]})).await;
    assert_eq!(code(&running), "UNDO_STALE");
    assert_eq!(person.questions().len(), asked);
    ok(&client, "pve_undo_change", json!({"id": start["id"]})).await;
    assert_eq!(person.questions().len(), asked + 1, "a shutdown asks");
    settle().await;
    let status = ok(
        &client,
        "pve_get_qemu_status",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(status["status"], "stopped", "{status}");

    ok(
        &client,
        "pve_update_pool",
        json!({"poolid": "emu-pool", "vms": "150"}),
    )
    .await;
    let pool = newest(&client, "pve_update_pool").await;
    assert_eq!(
        pool["revert"],
        json!(["PUT /pools poolid=emu-pool vms=150 delete=1"])
    );
    emu.clear_requests();
    ok(&client, "pve_undo_change", json!({"id": pool["id"]})).await;
    let sent = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        sent[0].form.contains(&("delete".into(), "1".into())),
        "{sent:?}"
    );
    let members = ok(&client, "pve_get_pool", json!({"poolid": "emu-pool"})).await;
    assert!(!members.to_string().contains("qemu/150"), "{members}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_is_listed_as_not_revertible_and_its_revert_sends_nothing() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &audit)).await;
    ok(
        &client,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 9000, "newid": 150, "name": "web-150"}),
    )
    .await;
    settle().await;
    ok(
        &client,
        "pve_run_backup",
        json!({"node": "pve01", "vmid": "150", "storage": "local"}),
    )
    .await;
    settle().await;
    assert!(
        person.questions().is_empty(),
        "a routine backup runs unasked"
    );
    let record = newest(&client, "pve_run_backup").await;
    assert_eq!(record["revertible"], false, "{record}");
    assert!(
        record["why"].as_str().unwrap().contains("pvesm free"),
        "{record}"
    );
    emu.clear_requests();
    let refused = call(&client, "pve_undo_change", json!({"id": record["id"]})).await;
    assert_eq!(code(&refused), "UNDO_NOT_REVERTIBLE");
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    assert!(person.questions().is_empty());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generic_write_is_recorded_and_reverted_like_a_tool_row() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person, &full_env(&emu, &audit)).await;
    let before = config(&client, 101).await;
    ok(
        &client,
        "pve_api_write",
        json!({"method": "PUT", "path": "/nodes/pve01/qemu/101/config", "params": ["cores=7", "onboot=1"]}),
    )
    .await;
    assert_eq!(config(&client, 101).await["cores"], 7);
    let record = newest(&client, "pve_api_write").await;
    let revert = record["revert"][0].as_str().expect("revert request");
    assert!(
        revert.contains("cores=2") && revert.contains("delete=onboot"),
        "{revert}"
    );
    ok(&client, "pve_undo_change", json!({"id": record["id"]})).await;
    assert_eq!(config(&client, 101).await, before);
    client.cancel().await.ok();
}
