//! `pve_backup_health` (issue 42's "backup health" read, through PVE): per guest its newest
//! backup on each backup storage, a Proxmox Backup Server storage's verify state included, and
//! the guests with none — or none verified — within `days`. The oracle is what the test seeds
//! into the emulator (its own guests and archives), not the tool's output; over the built
//! binary with rmcp's client side.

use crate::approval_common;
use crate::common;
use crate::harness::guest_ids;

use approval_common::{Answer, Person, call, connect_stdio, envelope};
use common::{emulator, env_for};
use pve_emulator::{Fault, FaultKind};
use serde_json::Value;

const DAY: u64 = 86_400;

fn ids(value: &Value) -> Vec<i64> {
    let mut ids: Vec<i64> = value
        .as_array()
        .expect("array")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    ids.sort_unstable();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn which_guests_have_no_verified_backup_within_a_week_is_one_read() {
    let emu = emulator().await;
    let now = u64::try_from(chrono::Utc::now().timestamp()).expect("after 1970");
    emu.add_backup_storage("pbs-main", "pbs", true);
    emu.add_backup("pbs-main", 101, now - DAY, Some("ok"));
    emu.add_backup("pbs-main", 102, now - 2 * DAY, None);
    emu.add_backup("pbs-main", 102, now - 20 * DAY, Some("ok"));
    emu.add_backup("pbs-main", 201, now - 10 * DAY, Some("ok"));
    emu.add_backup("pbs-main", 203, now - 3 * DAY, Some("failed"));
    // The guests, without the template; the seeded `local` archives are older than a year.
    let guests: Vec<i64> = guest_ids(&emu)
        .await
        .into_iter()
        .filter(|id| *id != 9000)
        .collect();
    let fresh = [101, 102, 203];
    let fresh_and_verified = [101];
    let expected_stale: Vec<i64> = guests
        .iter()
        .copied()
        .filter(|g| !fresh.contains(g))
        .collect();
    let expected_unverified: Vec<i64> = guests
        .iter()
        .copied()
        .filter(|g| !fresh_and_verified.contains(g))
        .collect();

    let nodes = crate::harness::pve_client(&emu)
        .call(
            nandi_proxmox_mcp::pve::ApiRequest::get("/nodes"),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .result
        .expect("nodes")
        .as_array()
        .map_or(0, Vec::len);
    assert!(nodes > 1, "a cluster of several nodes");
    let (client, _home) = connect_stdio(Person::new(Answer::Decline), &env_for(&emu)).await;
    emu.clear_requests();
    let result = call(&client, "pve_backup_health", serde_json::json!({"days": 7})).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let data = &envelope(&result)["data"];
    assert_eq!(
        ids(&data["without_backup_within_days"]),
        expected_stale,
        "{data:#}"
    );
    assert_eq!(
        ids(&data["without_verified_backup_within_days"]),
        expected_unverified,
        "{data:#}"
    );
    let row = |vmid: i64| {
        data["guests"]
            .as_array()
            .expect("guests")
            .iter()
            .find(|g| g["vmid"] == vmid)
            .cloned()
            .expect("guest row")
    };
    let db = row(102);
    assert_eq!(db["newest"]["verified"], Value::Null, "{db:#}");
    assert_eq!(db["newest_verified"]["age_days"], 20.0, "{db:#}");
    assert_eq!(row(203)["newest"]["verified"], "failed");
    assert!(
        data["guests"]
            .as_array()
            .expect("guests")
            .iter()
            .all(|g| g["vmid"] != 9000)
    );

    // Reads only: the resources once, each backup storage once (the shared one on one node).
    let requests = emu.requests();
    assert!(requests.iter().all(|r| r.method == "GET"), "{requests:?}");
    let contents: Vec<String> = requests
        .iter()
        .filter(|r| r.path.ends_with("/content"))
        .map(|r| r.path.clone())
        .collect();
    let shared_reads = contents.iter().filter(|p| p.contains("/pbs-main/")).count();
    assert_eq!(shared_reads, 1, "{contents:?}");
    assert_eq!(
        contents.len(),
        nodes + 1,
        "local once per node: {contents:?}"
    );
    assert_eq!(requests.len(), contents.len() + 1, "{requests:?}");
    assert_eq!(requests[0].path, "/cluster/resources");

    // A storage that cannot be read is named, and the answer says it may be incomplete.
    emu.arm_fault(Fault::new(FaultKind::Status(500), 5).on_prefix("/nodes/pve01/storage/pbs-main"));
    let result = call(&client, "pve_backup_health", serde_json::json!({})).await;
    let data = &envelope(&result)["data"];
    assert_eq!(data["days"], 7);
    assert_eq!(data["unread"][0]["storage"], "pbs-main", "{data:#}");
    assert!(
        data["note"]
            .as_str()
            .is_some_and(|n| n.contains("could not be read"))
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prune_is_previewed_then_asked_as_destruction_and_removes_only_what_it_marked() {
    let emu = emulator().await;
    let now = u64::try_from(chrono::Utc::now().timestamp()).expect("after 1970");
    emu.add_backup_storage("pbs-main", "pbs", true);
    let volids: Vec<String> = (1..=4)
        .map(|age| emu.add_backup("pbs-main", 101, now - age * DAY, Some("ok")))
        .collect();
    emu.add_backup("pbs-main", 102, now - DAY, None);
    // keep-last=2 per guest: 101's two newest are kept, its two oldest removed; 102 kept.
    let args =
        serde_json::json!({"node": "pve01", "storage": "pbs-main", "prune-backups": "keep-last=2"});
    let declines = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(declines.clone(), &full(&emu)).await;
    let preview = call(&client, "pve_preview_prune_backups", args.clone()).await;
    let marks = envelope(&preview)["data"].clone();
    let marked = |volid: &str| {
        marks
            .as_array()
            .expect("marks")
            .iter()
            .find(|m| m["volid"] == volid)
            .map(|m| m["mark"].clone())
    };
    assert_eq!(marked(&volids[0]), Some("keep".into()), "{marks:#}");
    assert_eq!(marked(&volids[1]), Some("keep".into()));
    assert_eq!(marked(&volids[2]), Some("remove".into()));
    assert_eq!(marked(&volids[3]), Some("remove".into()));
    assert!(declines.questions().is_empty(), "a preview is a read");

    // Declined: asked as destruction, nothing sent.
    let declined = call(&client, "pve_prune_backups", args.clone()).await;
    assert_eq!(approval_common::code(&declined), "CONFIRMATION_DECLINED");
    assert!(
        declines.questions()[0].contains("destroy"),
        "{}",
        declines.questions()[0]
    );
    assert!(emu.requests().iter().all(|r| r.method == "GET"));
    client.cancel().await.ok();

    // Approved: exactly the archives marked remove are gone.
    let (client, _home) = connect_stdio(Person::new(Answer::Accept), &full(&emu)).await;
    let pruned = call(&client, "pve_prune_backups", args).await;
    assert_ne!(pruned.is_error, Some(true), "{pruned:?}");
    let listed = call(
        &client,
        "pve_list_backups",
        serde_json::json!({"node": "pve01", "storage": "pbs-main"}),
    )
    .await;
    let left: Vec<String> = envelope(&listed)["data"]
        .as_array()
        .expect("backups")
        .iter()
        .filter_map(|b| b["volid"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left.contains(&volids[0]) && left.contains(&volids[1]));
    assert!(!left.contains(&volids[2]) && !left.contains(&volids[3]));
    client.cancel().await.ok();
}

fn full(emu: &pve_emulator::Emulator) -> Vec<(String, String)> {
    common::with_policy(
        env_for(emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    )
}
