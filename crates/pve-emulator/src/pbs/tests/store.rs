//! Authentication, errors, permissions and the datastore reads: datastores, namespaces,
//! groups and snapshots with their filters, notes, protection and removal.

use reqwest::Method;
use serde_json::json;

use super::{Harness, seed};
use crate::pbs::PbsOptions;

const NOW: i64 = 1_733_011_200; // 2024-12-01T00:00:00Z

#[tokio::test]
async fn pbs_token_auth_is_exact() {
    let h = Harness::new().await;
    assert_eq!(h.emu.token_id(), "mcp@pbs!mcp");
    assert!(h.emu.base_url().starts_with("https://127.0.0.1:"));
    assert!(
        h.emu
            .cert_pem()
            .unwrap()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    let fp = h.emu.cert_fingerprint().unwrap();
    assert_eq!(fp, fp.to_uppercase());
    let (status, body, content_type) = h
        .send_as(Some(&h.auth()), Method::GET, "/version", &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, "application/json;charset=UTF-8");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(body["data"]["version"].is_string() && body["data"]["repoid"].is_string());

    let secret = h.emu.token_secret();
    let wrong = "PBSAPIToken=mcp@pbs!mcp:wrong-secret".to_owned();
    let pve = format!("PVEAPIToken=mcp@pbs!mcp={secret}");
    let equals = format!("PBSAPIToken=mcp@pbs!mcp={secret}");
    for auth in [&wrong, &pve, &equals] {
        let (status, body, content_type) =
            h.send_as(Some(auth), Method::GET, "/version", &[]).await;
        assert_eq!(
            (status, body.as_str()),
            (401, "authentication failed - invalid token")
        );
        assert_eq!(content_type, "application/json;charset=UTF-8");
    }
    let (status, body, _) = h.send_as(None, Method::GET, "/version", &[]).await;
    assert_eq!(status, 401);
    assert!(body.starts_with("authentication failed - "), "{body}");
    let recorded = h.emu.requests();
    assert_eq!(recorded.len(), 5);
    assert!(recorded[0].authorized && recorded[0].token_id.as_deref() == Some("mcp@pbs!mcp"));
    assert!(recorded[1..].iter().all(|r| !r.authorized));
    h.emu.clear_requests();
    assert!(h.emu.requests().is_empty());
}

#[tokio::test]
async fn plain_http_and_unknown_paths() {
    let h = Harness::start(PbsOptions {
        tls: false,
        ..PbsOptions::default()
    })
    .await;
    assert!(h.emu.base_url().starts_with("http://"));
    assert!(h.emu.cert_fingerprint().is_none());
    let (status, body) = h.send(Method::GET, "/nodes/pbs01/qemu", &[]).await;
    assert_eq!(
        (status, body.as_str()),
        (404, "Path '/api2/json/nodes/pbs01/qemu' not found.")
    );
    let (status, _) = h.send(Method::POST, "/version", &[]).await;
    assert_eq!(status, 404);
    let (status, body) = h.send(Method::GET, "/nodes/other/tasks", &[]).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("'node'"), "{body}");
    let tasks = h
        .ok_envelope(Method::GET, "/nodes/localhost/tasks", &[])
        .await;
    assert_eq!(tasks, json!({"data": [], "total": 0}));
}

#[tokio::test]
async fn undeclared_and_mistyped_parameters_are_400_naming_them() {
    let h = Harness::new().await;
    h.emu.seed_demo(&[("vm", 101)], NOW);
    let path = "/admin/datastore/store1/snapshots";
    let (status, body) = h.send(Method::GET, path, &[("vmid", "101")]).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        "parameter verification failed - 'vmid': schema does not allow additional properties"
    );
    let (status, body) = h.send(Method::GET, path, &[("backup-type", "qemu")]).await;
    assert_eq!(status, 400);
    assert!(body.contains("'backup-type'"), "{body}");
    let prune = "/admin/datastore/store1/prune";
    let group = [("backup-type", "vm"), ("backup-id", "101")];
    let (status, body) = h
        .send(
            Method::POST,
            prune,
            &[group[0], group[1], ("keep-last", "two")],
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body.starts_with("parameter verification failed - 'keep-last': "),
        "{body}"
    );
    let (status, body) = h
        .send(
            Method::POST,
            prune,
            &[group[0], group[1], ("dry-run", "maybe")],
        )
        .await;
    assert_eq!(status, 400);
    assert!(body.contains("'dry-run'"), "{body}");
    for truthy in ["1", "true", "0", "false"] {
        let (status, body) = h
            .send(
                Method::POST,
                prune,
                &[group[0], group[1], ("dry-run", truthy)],
            )
            .await;
        assert_eq!(status, 200, "{truthy}: {body}");
    }
    let (status, body) = h
        .send(
            Method::POST,
            prune,
            &[group[0], group[1], ("keep-last", "0")],
        )
        .await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            "parameter verification failed - 'keep-last': value must have a minimum value of 1 (got 0)"
        )
    );
    let (status, body) = h.send(Method::POST, prune, &[group[0]]).await;
    assert_eq!(
        (status, body.as_str()),
        (
            400,
            "parameter verification failed - 'backup-id': property is missing and it is not optional"
        )
    );
    let (status, body) = h
        .send(Method::GET, "/admin/datastore/nope/snapshots", &[])
        .await;
    assert_eq!(
        (status, body.as_str()),
        (400, "datastore 'nope' does not exist")
    );
}

#[tokio::test]
async fn deny_and_missing_privileges_are_403() {
    let h = Harness::new().await;
    h.emu.seed_demo(&[("vm", 101)], NOW);
    h.emu.deny("/admin/datastore/offsite");
    let (status, body) = h
        .send(Method::GET, "/admin/datastore/offsite/snapshots", &[])
        .await;
    assert_eq!((status, body.as_str()), (403, "permission check failed"));
    let (status, _) = h
        .send(Method::POST, "/admin/datastore/offsite/gc", &[])
        .await;
    assert_eq!(status, 403);
    assert_eq!(h.emu.gc_runs("offsite"), 0);
    h.ok(Method::GET, "/admin/datastore/store1/snapshots", &[])
        .await;

    let perms = h.ok(Method::GET, "/access/permissions", &[]).await;
    assert_eq!(perms["/"]["Datastore.Prune"], 1);
    assert_eq!(perms["/"]["Sys.Audit"], 1);

    let r = Harness::start(PbsOptions {
        privileges: Some(vec!["Datastore.Audit".into()]),
        ..PbsOptions::default()
    })
    .await;
    r.emu.seed_demo(&[("vm", 101)], NOW);
    let perms = r.ok(Method::GET, "/access/permissions", &[]).await;
    assert_eq!(perms, json!({"/": {"Datastore.Audit": 1}}));
    r.ok(Method::GET, "/admin/datastore/store1/snapshots", &[])
        .await;
    let (status, _) = r
        .send(
            Method::POST,
            "/admin/datastore/store1/prune",
            &[
                ("backup-type", "vm"),
                ("backup-id", "101"),
                ("keep-last", "1"),
            ],
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(r.emu.snapshots("store1").len(), 7);
}

#[tokio::test]
async fn snapshots_filter_and_groups_agree_with_them() {
    let h = Harness::new().await;
    h.emu
        .seed_demo(&[("vm", 101), ("vm", 102), ("ct", 201)], NOW);
    let stores = h.ok(Method::GET, "/admin/datastore", &[]).await;
    let names: Vec<&str> = stores
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["store"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["store1", "offsite"]);
    let ns = h
        .ok(Method::GET, "/admin/datastore/store1/namespace", &[])
        .await;
    assert_eq!(ns, json!([{"ns": ""}, {"ns": "prod"}]));

    let path = "/admin/datastore/store1/snapshots";
    let all = h.ok(Method::GET, path, &[]).await;
    assert_eq!(all.as_array().unwrap().len(), 15);
    let vms = h.ok(Method::GET, path, &[("backup-type", "vm")]).await;
    assert_eq!(vms.as_array().unwrap().len(), 10);
    let one = h
        .ok(
            Method::GET,
            path,
            &[("backup-type", "vm"), ("backup-id", "102")],
        )
        .await;
    let one = one.as_array().unwrap();
    assert_eq!(one.len(), 5);
    assert!(
        one.iter()
            .all(|s| s["backup-id"] == "102" && s["owner"] == "mcp@pbs!mcp")
    );
    let states: Vec<_> = one
        .iter()
        .map(|s| s["verification"]["state"].clone())
        .collect();
    assert_eq!(
        states,
        [
            json!("ok"),
            json!("ok"),
            json!("failed"),
            json!("ok"),
            json!(null)
        ]
    );
    let prod = h.ok(Method::GET, path, &[("ns", "prod")]).await;
    assert_eq!(prod.as_array().unwrap().len(), 2);
    assert!(
        prod.as_array()
            .unwrap()
            .iter()
            .all(|s| s["backup-id"] == "101")
    );
    let protected: Vec<_> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["protected"] == true)
        .collect();
    assert_eq!(protected.len(), 1);

    for ns in ["", "prod"] {
        let groups = h
            .ok(Method::GET, "/admin/datastore/store1/groups", &[("ns", ns)])
            .await;
        for group in groups.as_array().unwrap() {
            let (t, id) = (
                group["backup-type"].as_str().unwrap(),
                group["backup-id"].as_str().unwrap(),
            );
            let snaps = h
                .ok(
                    Method::GET,
                    path,
                    &[("ns", ns), ("backup-type", t), ("backup-id", id)],
                )
                .await;
            let snaps = snaps.as_array().unwrap();
            assert_eq!(group["backup-count"], snaps.len(), "{ns} {t}/{id}");
            let newest = snaps
                .iter()
                .map(|s| s["backup-time"].as_i64().unwrap())
                .max();
            assert_eq!(group["last-backup"].as_i64(), newest);
        }
    }
    let status = h
        .ok(Method::GET, "/admin/datastore/store1/status", &[])
        .await;
    assert_eq!(
        status["counts"]["vm"],
        json!({"groups": 3, "snapshots": 12})
    );
    assert_eq!(
        status["total"].as_u64().unwrap(),
        status["used"].as_u64().unwrap() + status["avail"].as_u64().unwrap()
    );
    let usage = h.ok(Method::GET, "/status/datastore-usage", &[]).await;
    assert_eq!(usage.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn notes_protection_and_removal() {
    let h = Harness::new().await;
    h.emu.add_datastore("store1", 1 << 40);
    h.emu
        .add_snapshot(seed("store1", "a/b", "host", "web", NOW));
    let time = NOW.to_string();
    let snap = [
        ("ns", "a/b"),
        ("backup-type", "host"),
        ("backup-id", "web"),
        ("backup-time", time.as_str()),
    ];
    let ns = h
        .ok(
            Method::GET,
            "/admin/datastore/store1/namespace",
            &[("parent", "a"), ("max-depth", "0")],
        )
        .await;
    assert_eq!(ns, json!([{"ns": "a"}]));

    let notes_path = "/admin/datastore/store1/notes";
    assert_eq!(h.ok(Method::GET, notes_path, &snap).await, json!(""));
    let mut with_notes = snap.to_vec();
    with_notes.push(("notes", "before the upgrade\nsecond line"));
    assert_eq!(
        h.ok(Method::PUT, notes_path, &with_notes).await,
        json!(null)
    );
    assert_eq!(
        h.ok(Method::GET, notes_path, &snap).await,
        json!("before the upgrade\nsecond line")
    );
    let list = h
        .ok(
            Method::GET,
            "/admin/datastore/store1/snapshots",
            &[("ns", "a/b")],
        )
        .await;
    assert_eq!(list[0]["comment"], "before the upgrade");

    let mut protect = snap.to_vec();
    protect.push(("protected", "1"));
    h.ok(Method::PUT, "/admin/datastore/store1/protected", &protect)
        .await;
    assert!(h.emu.snapshots("store1")[0].protected);
    let (status, body) = h
        .send(Method::DELETE, "/admin/datastore/store1/snapshots", &snap)
        .await;
    assert_eq!(
        (status, body.as_str()),
        (400, "cannot remove protected snapshot")
    );
    protect[4] = ("protected", "false");
    h.ok(Method::PUT, "/admin/datastore/store1/protected", &protect)
        .await;
    h.ok(Method::DELETE, "/admin/datastore/store1/snapshots", &snap)
        .await;
    assert!(h.emu.snapshots("store1").is_empty());
    let (status, body) = h
        .send(Method::DELETE, "/admin/datastore/store1/snapshots", &snap)
        .await;
    assert_eq!(status, 400, "{body}");
}
