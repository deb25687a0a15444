//! The acting routes over the wire: prune selection (dry run and real), verification with a
//! corrupt snapshot, garbage collection as a task, task logs and lists, aborting, and the
//! sync and verification jobs.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Harness, enc, seed};
use crate::pbs::PbsSnapshotSeed;

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
/// 2024-12-01T00:00:00Z.
const BASE: i64 = 1_733_011_200;

fn times(h: &Harness, id: &str) -> Vec<i64> {
    h.emu
        .snapshots("s")
        .iter()
        .filter(|s| s.backup_id == id)
        .map(|s| s.backup_time)
        .collect()
}

#[tokio::test]
async fn prune_follows_pbs_selection() {
    let h = Harness::new().await;
    h.emu.add_datastore("s", 1 << 40);
    // Dec 1 01:00, Dec 1 20:00, Dec 2 05:00 (protected), Dec 3 03:00, Dec 3 22:00, Dec 4 01:00.
    let t = [
        BASE + HOUR,
        BASE + 20 * HOUR,
        BASE + DAY + 5 * HOUR,
        BASE + 2 * DAY + 3 * HOUR,
        BASE + 2 * DAY + 22 * HOUR,
        BASE + 3 * DAY + HOUR,
    ];
    for (i, time) in t.iter().enumerate() {
        h.emu.add_snapshot(PbsSnapshotSeed {
            protected: i == 2,
            ..seed("s", "", "vm", "300", *time)
        });
    }
    h.emu.add_snapshot(seed("s", "", "vm", "301", BASE));
    let path = "/admin/datastore/s/prune";
    let group = [("backup-type", "vm"), ("backup-id", "300")];

    // keep-daily 3 by hand, newest first: Dec 4 kept (1), Dec 3 22:00 kept (2), Dec 3 03:00
    // removed (its day is taken), Dec 2 protected (kept, does not count), Dec 1 20:00 kept
    // (3), Dec 1 01:00 removed.
    let expected = json!([
        {"backup-type": "vm", "backup-id": "300", "backup-time": t[5], "keep": true, "protected": false},
        {"backup-type": "vm", "backup-id": "300", "backup-time": t[4], "keep": true, "protected": false},
        {"backup-type": "vm", "backup-id": "300", "backup-time": t[3], "keep": false, "protected": false},
        {"backup-type": "vm", "backup-id": "300", "backup-time": t[2], "keep": true, "protected": true},
        {"backup-type": "vm", "backup-id": "300", "backup-time": t[1], "keep": true, "protected": false},
        {"backup-type": "vm", "backup-id": "300", "backup-time": t[0], "keep": false, "protected": false},
    ]);
    let before = h.emu.snapshots("s");
    let dry = h
        .ok(
            Method::POST,
            path,
            &[group[0], group[1], ("keep-daily", "3"), ("dry-run", "1")],
        )
        .await;
    assert_eq!(dry, expected);
    assert_eq!(h.emu.snapshots("s"), before, "a dry run removes nothing");

    // No keep option: PBS keeps everything.
    let all = h.ok(Method::POST, path, &group).await;
    assert!(all.as_array().unwrap().iter().all(|e| e["keep"] == true));
    assert_eq!(h.emu.snapshots("s"), before);

    let real = h
        .ok(
            Method::POST,
            path,
            &[group[0], group[1], ("keep-daily", "3")],
        )
        .await;
    assert_eq!(real, expected);
    assert_eq!(times(&h, "300"), [t[1], t[2], t[4], t[5]]);
    assert_eq!(times(&h, "301"), [BASE], "another group is untouched");

    // keep-last 1 keeps the newest; the protected one stays and does not count.
    let last = h
        .ok(
            Method::POST,
            path,
            &[group[0], group[1], ("keep-last", "1")],
        )
        .await;
    let keeps: Vec<bool> = last
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["keep"] == true)
        .collect();
    assert_eq!(keeps, [true, false, true, false]);
    assert_eq!(times(&h, "300"), [t[2], t[5]]);
}

#[tokio::test]
async fn verify_of_a_group_with_a_corrupt_snapshot_fails_it() {
    let h = Harness::new().await;
    h.emu.add_datastore("s", 1 << 40);
    for (i, time) in [BASE, BASE + DAY, BASE + 2 * DAY].iter().enumerate() {
        h.emu.add_snapshot(PbsSnapshotSeed {
            corrupt: i == 1,
            ..seed("s", "", "ct", "400", *time)
        });
    }
    h.emu.add_snapshot(seed("s", "", "ct", "401", BASE));
    let upid = h
        .ok(
            Method::POST,
            "/admin/datastore/s/verify",
            &[("backup-type", "ct"), ("backup-id", "400")],
        )
        .await;
    let upid = upid.as_str().unwrap().to_owned();
    assert!(upid.starts_with("UPID:pbs01:"), "{upid}");
    assert!(
        upid.ends_with(":verify:s\\x3act-400:mcp@pbs!mcp:"),
        "{upid}"
    );
    let running = h
        .ok(
            Method::GET,
            &format!("/nodes/pbs01/tasks/{}/status", enc(&upid)),
            &[],
        )
        .await;
    assert_eq!(running["status"], "running");
    assert!(running.get("exitstatus").is_none());
    assert!(h.emu.snapshots("s").iter().all(|s| s.verified.is_none()));

    let done = h.wait(&upid).await;
    let exit = done["exitstatus"].as_str().unwrap();
    assert_ne!(exit, "OK");
    assert!(exit.contains("verification failed"), "{exit}");
    assert_eq!(
        (done["type"].as_str(), done["id"].as_str()),
        (Some("verify"), Some("s:ct/400"))
    );
    let states: Vec<Option<bool>> = h.emu.snapshots("s").iter().map(|s| s.verified).collect();
    assert_eq!(states, [Some(true), Some(false), Some(true), None]);
    let list = h
        .ok(
            Method::GET,
            "/admin/datastore/s/snapshots",
            &[("backup-id", "400")],
        )
        .await;
    assert_eq!(
        list[1]["verification"],
        json!({"state": "failed", "upid": upid})
    );
    let log = h
        .ok_envelope(
            Method::GET,
            &format!("/nodes/pbs01/tasks/{}/log", enc(&upid)),
            &[],
        )
        .await;
    let last = log["data"].as_array().unwrap().last().unwrap()["t"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(last.ends_with(&format!("TASK ERROR: {exit}")), "{last}");

    // Already verified snapshots are skipped by default; a clean group verifies OK.
    let again = h
        .ok(
            Method::POST,
            "/admin/datastore/s/verify",
            &[("backup-type", "ct"), ("backup-id", "401")],
        )
        .await;
    assert_eq!(h.wait(again.as_str().unwrap()).await["exitstatus"], "OK");
    assert_eq!(h.emu.snapshots("s")[3].verified, Some(true));
}

#[tokio::test]
async fn gc_runs_as_a_task_with_a_log() {
    let h = Harness::new().await;
    h.emu
        .seed_demo(&[("vm", 101)], chrono::Utc::now().timestamp());
    let upid = h.ok(Method::POST, "/admin/datastore/store1/gc", &[]).await;
    let upid = upid.as_str().unwrap().to_owned();
    let fields: Vec<&str> = upid.split(':').collect();
    assert_eq!(fields.len(), 10, "{upid}");
    assert_eq!(fields[0..2], ["UPID", "pbs01"]);
    assert!(
        fields[2..6]
            .iter()
            .all(|f| f.len() == 8 && u32::from_str_radix(f, 16).is_ok())
    );
    assert_eq!(
        fields[6..9],
        ["garbage_collection", "store1", "mcp@pbs!mcp"]
    );
    let status_path = format!("/nodes/pbs01/tasks/{}/status", enc(&upid));
    let running = h.ok(Method::GET, &status_path, &[]).await;
    assert_eq!(running["status"], "running");
    assert_eq!(h.emu.gc_runs("store1"), 0);
    let (status, body) = h
        .send(Method::POST, "/admin/datastore/store1/gc", &[])
        .await;
    assert_eq!(
        (status, body.as_str()),
        (400, "garbage collection already running")
    );

    let done = h.wait(&upid).await;
    assert_eq!(done["exitstatus"], "OK");
    assert_eq!(
        (done["user"].as_str(), done["tokenid"].as_str()),
        (Some("mcp@pbs"), Some("mcp"))
    );
    assert!(done["endtime"].as_i64().unwrap() >= done["starttime"].as_i64().unwrap());
    assert_eq!(h.emu.gc_runs("store1"), 1);
    let gc = h.ok(Method::GET, "/admin/datastore/store1/gc", &[]).await;
    assert_eq!(
        (gc["upid"].as_str(), gc["last-run-state"].as_str()),
        (Some(upid.as_str()), Some("ok"))
    );

    let log_path = format!("/nodes/pbs01/tasks/{}/log", enc(&upid));
    let log = h.ok_envelope(Method::GET, &log_path, &[]).await;
    let lines = log["data"].as_array().unwrap();
    assert!(lines.len() > 3);
    assert_eq!(log["total"], lines.len());
    assert_eq!(lines[0]["n"], 1);
    assert!(
        lines.last().unwrap()["t"]
            .as_str()
            .unwrap()
            .ends_with(": TASK OK")
    );
    let page = h
        .ok_envelope(Method::GET, &log_path, &[("start", "1"), ("limit", "2")])
        .await;
    let ns: Vec<&Value> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["n"])
        .collect();
    assert_eq!(ns, [&json!(2), &json!(3)]);
    assert_eq!(page["total"], lines.len());

    let tasks = h
        .ok_envelope(
            Method::GET,
            "/nodes/pbs01/tasks",
            &[("typefilter", "garbage")],
        )
        .await;
    assert_eq!(tasks["total"], 1);
    let entry = &tasks["data"][0];
    assert_eq!(
        (entry["upid"].as_str(), entry["worker_type"].as_str()),
        (Some(upid.as_str()), Some("garbage_collection"))
    );
    assert_eq!(
        (entry["worker_id"].as_str(), entry["status"].as_str()),
        (Some("store1"), Some("OK"))
    );
    assert_eq!(entry["user"], "mcp@pbs!mcp");
}

#[tokio::test]
async fn jobs_run_and_a_task_can_be_aborted() {
    let h = Harness::new().await;
    h.emu
        .seed_demo(&[("vm", 101), ("ct", 201)], chrono::Utc::now().timestamp());
    let sync = h.ok(Method::GET, "/admin/sync", &[]).await;
    assert_eq!(sync[0]["id"], "offsite-pull");
    assert_eq!(
        (sync[0]["store"].as_str(), sync[0]["remote-store"].as_str()),
        (Some("offsite"), Some("store1"))
    );
    let upid = h
        .ok(Method::POST, "/admin/sync/offsite-pull/run", &[])
        .await;
    let upid = upid.as_str().unwrap().to_owned();
    // The worker id is systemd-escaped inside a UPID, as PBS writes it.
    assert!(upid.contains(":syncjob:offsite\\x2dpull:"), "{upid}");
    h.ok(
        Method::DELETE,
        &format!("/nodes/pbs01/tasks/{}", enc(&upid)),
        &[],
    )
    .await;
    let stopped = h.wait(&upid).await;
    assert_eq!(stopped["exitstatus"], "abort requested - aborting task");
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(
        h.emu.sync_runs("offsite-pull"),
        0,
        "an aborted run does not count"
    );
    let again = h
        .ok(Method::POST, "/admin/sync/offsite-pull/run", &[])
        .await;
    assert_eq!(h.wait(again.as_str().unwrap()).await["exitstatus"], "OK");
    assert_eq!(h.emu.sync_runs("offsite-pull"), 1);
    let sync = h
        .ok(Method::GET, "/admin/sync", &[("store", "offsite")])
        .await;
    assert_eq!(sync[0]["last-run-state"], "OK");

    let jobs = h.ok(Method::GET, "/admin/verify", &[]).await;
    assert_eq!(
        (jobs[0]["id"].as_str(), jobs[0]["store"].as_str()),
        (Some("weekly-verify"), Some("store1"))
    );
    let upid = h
        .ok(Method::POST, "/admin/verify/weekly-verify/run", &[])
        .await;
    let upid = upid.as_str().unwrap().to_owned();
    assert!(
        upid.contains(":verificationjob:weekly\\x2dverify:"),
        "{upid}"
    );
    assert_eq!(h.wait(&upid).await["exitstatus"], "OK");
    assert_eq!(h.emu.verify_job_runs("weekly-verify"), 1);
    // The never-verified newest snapshots were verified by the job.
    assert!(
        h.emu
            .snapshots("store1")
            .iter()
            .all(|s| s.verified.is_some())
    );

    let (status, _) = h.send(Method::POST, "/admin/verify/nope/run", &[]).await;
    assert_eq!(status, 404);
    let running = h
        .ok_envelope(Method::GET, "/nodes/pbs01/tasks", &[("running", "1")])
        .await;
    assert_eq!(running["total"], 0);
    let all = h
        .ok_envelope(Method::GET, "/nodes/pbs01/tasks", &[("limit", "2")])
        .await;
    assert_eq!(
        (all["total"].as_u64(), all["data"].as_array().unwrap().len()),
        (Some(3), 2)
    );
    assert_eq!(all["data"][0]["upid"], upid.as_str(), "newest first");
    let of_store1 = h
        .ok_envelope(Method::GET, "/nodes/pbs01/tasks", &[("store", "store1")])
        .await;
    assert_eq!(of_store1["total"], 1, "the verification job's run");
    let of_offsite = h
        .ok_envelope(Method::GET, "/nodes/pbs01/tasks", &[("store", "offsite")])
        .await;
    assert_eq!(of_offsite["total"], 2, "the sync job's runs");
    let errors = h
        .ok_envelope(Method::GET, "/nodes/pbs01/tasks", &[("errors", "true")])
        .await;
    assert_eq!(errors["total"], 1);
}
