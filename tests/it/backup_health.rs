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
