//! The PBS side of the CLI over the built binary: `doctor --check pbs` against the PBS
//! emulator (its version with the token; the token's real permissions against what the
//! served tier's PBS tools need, red naming the tools when a role is missing; a wrong secret
//! red and never shown), and `bootstrap --pbs` (PBS's own commands, per tier).

use pve_emulator::{PbsEmulator, PbsOptions};
use serde_json::Value;

use crate::common::{self, CliDirs, text_of};

const SECRET: &str = "PBSDOCTOR-5e1f-secret-value";

async fn pbs(privileges: Option<Vec<String>>) -> PbsEmulator {
    PbsEmulator::start(PbsOptions {
        token_secret: SECRET.to_owned(),
        privileges,
        ..PbsOptions::default()
    })
    .await
    .expect("PBS emulator")
}

fn env(pbs: &PbsEmulator, secret: &str, tier: &str) -> Vec<(String, String)> {
    vec![
        ("PBS_HOST".into(), pbs.host().into()),
        ("PBS_PORT".into(), pbs.port().to_string()),
        ("PBS_USER".into(), "mcp".into()),
        ("PBS_TOKEN_NAME".into(), "mcp".into()),
        ("PBS_TOKEN_SECRET".into(), secret.into()),
        (
            "PBS_TLS_FINGERPRINT".into(),
            pbs.cert_fingerprint().expect("https"),
        ),
        ("PVE_ACCESS_TIER".into(), tier.into()),
    ]
}

async fn doctor(
    pve: &pve_emulator::Emulator,
    env: Vec<(String, String)>,
) -> (Option<i32>, Value, String) {
    let d = CliDirs::new();
    let mut all = common::env_for(pve);
    all.extend(env);
    let pairs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = d
        .run(&["doctor", "--check", "pbs", "--json"], &pairs, None)
        .await;
    let text = text_of(&out);
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        text,
    )
}

fn item<'a>(report: &'a Value, check: &str) -> Option<&'a Value> {
    report["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|i| i["check"] == check)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_checks_the_pbs_token_and_its_rights_for_the_tier() {
    let pve = common::emulator().await;
    let server = pbs(None).await;
    let (code, report, text) = doctor(&pve, env(&server, SECRET, "full")).await;
    assert_eq!(code, Some(0), "{text}");
    let answer = item(&report, "pbs pbs").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(answer["status"], "GREEN", "{answer}");
    assert!(
        answer["detail"]
            .as_str()
            .unwrap_or("")
            .contains("mcp@pbs!mcp"),
        "{answer}"
    );
    let rights = item(&report, "pbs pbs permissions").expect("permissions item");
    assert_eq!(rights["status"], "GREEN", "{rights}");

    // An auditor's token: fine for read-only, short for full (the prune and GC named).
    let auditor = pbs(Some(vec!["Datastore.Audit".into(), "Remote.Audit".into()])).await;
    let (code, report, _) = doctor(&pve, env(&auditor, SECRET, "read-only")).await;
    assert_eq!(code, Some(0), "{report:#}");
    // Its own tasks and the prune preview: reads PBS checks in code, said, not failed.
    let rights = item(&report, "pbs pbs permissions").expect("item");
    assert_eq!(rights["status"], "YELLOW", "{rights}");
    let detail = rights["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("pbs_preview_prune") && detail.contains("pbs_list_tasks"),
        "{detail}"
    );
    let (code, report, text) = doctor(&pve, env(&auditor, SECRET, "full")).await;
    assert_eq!(code, Some(1), "{text}");
    let rights = item(&report, "pbs pbs permissions").expect("item");
    assert_eq!(rights["status"], "RED");
    let detail = rights["detail"].as_str().unwrap_or("");
    assert!(
        detail.contains("pbs_prune") && detail.contains("pbs_start_gc"),
        "{detail}"
    );
    assert!(!detail.contains("pbs_list_snapshots"), "{detail}");

    // A wrong secret: red, saying how to fix it, never showing either secret.
    let (code, report, text) = doctor(&pve, env(&server, "not-the-secret-0000", "full")).await;
    assert_eq!(code, Some(1));
    let answer = item(&report, "pbs pbs").expect("item");
    assert_eq!(answer["status"], "RED", "{answer}");
    assert!(text.contains("bootstrap --pbs"), "{text}");
    assert!(
        !text.contains(SECRET) && !text.contains("not-the-secret-0000"),
        "{text}"
    );
}

#[tokio::test]
async fn bootstrap_prints_pbs_commands_per_tier() {
    let d = CliDirs::new();
    let read = text_of(&d.run(&["bootstrap", "--pbs"], &[], None).await);
    assert!(
        read.contains("proxmox-backup-manager user create mcp@pbs"),
        "{read}"
    );
    assert!(
        read.contains("acl update /datastore DatastoreAudit --auth-id 'mcp@pbs!nandi'"),
        "{read}"
    );
    assert!(!read.contains("pveum"), "{read}");
    let full = text_of(
        &d.run(&["bootstrap", "--pbs", "--tier", "full"], &[], None)
            .await,
    );
    assert!(
        full.contains("DatastoreAdmin") && !full.contains("DatastoreAudit --auth-id"),
        "{full}"
    );
}
