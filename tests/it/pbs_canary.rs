//! The PBS token canary: the secret of the configured Proxmox Backup Server's token is
//! planted and counted in every output of every PBS tool (success and error paths, an
//! accepted destructive call included), in the server's own debug log and in its audit
//! trail — over the built binary at tier `full`, once with the right secret (the emulator
//! proves it was sent) and once with a wrong one (every call fails with PBS's 401). The goal
//! is zero.

use std::collections::BTreeMap;

use nandi_proxmox_mcp::catalog;
use pve_emulator::{PbsEmulator, PbsOptions, PbsSnapshotSeed};
use serde_json::{Value, json};

use crate::common::{McpProcess, emulator, env_for};

const CANARY: &str = "PBSCANARY-c0ffee42-4b1d";

fn arguments(tool: &str, backup_time: i64) -> Value {
    let group = json!({"store": "store1", "backup-type": "vm", "backup-id": "101"});
    let mut args = match tool {
        "pbs_list_datastores"
        | "pbs_datastore_usage"
        | "pbs_list_sync_jobs"
        | "pbs_list_verify_jobs"
        | "pbs_list_tasks" => json!({}),
        "pbs_run_sync_job" | "pbs_run_verify_job" => json!({"id": "job1"}),
        "pbs_task_status" | "pbs_task_log" => json!({
            "upid": "UPID:pbs01:00001234:00012345:00000001:6750A1B2:garbage_collection:store1:mcp@pbs!mcp:"
        }),
        "pbs_prune" | "pbs_preview_prune" => {
            let mut g = group.clone();
            g["keep-last"] = json!(1);
            g
        }
        "pbs_set_snapshot_protected" => {
            let mut g = group.clone();
            g["backup-time"] = json!(backup_time);
            g["protected"] = json!(true);
            g
        }
        "pbs_list_snapshots" | "pbs_verify" => group.clone(),
        _ => json!({"store": "store1"}),
    };
    // Every write is approved: the canary must not leak from an accepted call either.
    if catalog::find(tool).is_some_and(|s| !s.effect.is_read()) {
        args["confirm"] = json!(true);
    }
    args
}

async fn run_every_pbs_tool(emulator_secret: &str) -> (Vec<(String, String)>, PbsEmulator) {
    let pve = emulator().await;
    let pbs = PbsEmulator::start(PbsOptions {
        token_secret: emulator_secret.to_owned(),
        ..PbsOptions::default()
    })
    .await
    .expect("PBS emulator");
    pbs.add_datastore("store1", 1 << 40);
    let backup_time = chrono::Utc::now().timestamp() - 86_400;
    for age in [0, 3_600] {
        pbs.add_snapshot(PbsSnapshotSeed {
            store: "store1".into(),
            ns: String::new(),
            backup_type: "vm".into(),
            backup_id: "101".into(),
            backup_time: backup_time - age,
            size: 1 << 20,
            verified: None,
            protected: false,
            corrupt: false,
            comment: None,
        });
    }
    pbs.add_sync_job("job1", "store1", "remote1", "store9");
    pbs.add_verify_job("job1", "store1");
    let dir = tempfile::tempdir().expect("temp dir");
    let (log_path, audit_path) = (
        dir.path().join("server.log"),
        dir.path().join("audit.jsonl"),
    );
    let mut env = env_for(&pve);
    env.extend(
        [
            ("PBS_HOST", pbs.host().to_owned()),
            ("PBS_PORT", pbs.port().to_string()),
            ("PBS_USER", "mcp".to_owned()),
            ("PBS_TOKEN_NAME", "mcp".to_owned()),
            ("PBS_TOKEN_SECRET", CANARY.to_owned()),
            (
                "PBS_TLS_FINGERPRINT",
                pbs.cert_fingerprint().expect("https"),
            ),
            ("PVE_ACCESS_TIER", "full".to_owned()),
            ("PVE_MODULE_MODE", "advanced".to_owned()),
            ("PVE_AUDIT_LOG", audit_path.display().to_string()),
            ("RUST_LOG", "debug".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &env, &log_path);
    mcp.initialize().await;
    let listed: Vec<String> = mcp
        .list_tools()
        .await
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let mut outputs = Vec::new();
    for spec in catalog::all().filter(|s| s.backend.is_pbs()) {
        assert!(
            listed.iter().any(|n| n == spec.name),
            "{} listed",
            spec.name
        );
        let result = mcp.call(spec.name, arguments(spec.name, backup_time)).await;
        outputs.push((format!("{} (plausible)", spec.name), result.to_string()));
        let result = mcp
            .call(
                spec.name,
                json!({"store": "no such/store", "pbs": "Not-A-Name"}),
            )
            .await;
        outputs.push((format!("{} (invalid)", spec.name), result.to_string()));
    }
    assert!(mcp.shutdown().await.success());
    outputs.push((
        "server log".into(),
        std::fs::read_to_string(&log_path).unwrap_or_default(),
    ));
    let audit = std::fs::read_to_string(&audit_path).unwrap_or_default();
    assert!(audit.lines().count() > 5, "the PBS writes were audited");
    outputs.push(("audit log".into(), audit));
    (outputs, pbs)
}

fn leaks(outputs: &[(String, String)]) -> BTreeMap<String, usize> {
    outputs
        .iter()
        .map(|(what, text)| (what.clone(), text.matches(CANARY).count()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pbs_token_is_in_no_output_log_or_audit_line() {
    let (outputs, pbs) = run_every_pbs_tool(CANARY).await;
    let sent = pbs.requests();
    assert!(
        sent.iter().filter(|r| r.authorized).count() >= 10,
        "the secret really went to PBS: {sent:?}"
    );
    let hits = leaks(&outputs);
    assert!(hits.is_empty(), "the PBS token leaked: {hits:?}");
    assert!(outputs.len() > 30, "{}", outputs.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_pbs_token_is_named_but_never_shown() {
    let (outputs, pbs) = run_every_pbs_tool("another-secret-entirely").await;
    assert!(
        pbs.requests().iter().all(|r| !r.authorized),
        "PBS refused the token"
    );
    let refusals = outputs
        .iter()
        .filter(|(what, text)| {
            what.ends_with("(plausible)")
                && text.contains("PROXMOX_AUTH_FAILED")
                && text.contains(r#"Proxmox Backup Server \"pbs\""#)
                && text.contains("bootstrap --pbs")
        })
        .count();
    assert!(refusals >= 10, "{outputs:?}");
    let hits = leaks(&outputs);
    assert!(hits.is_empty(), "the PBS token leaked: {hits:?}");
}
