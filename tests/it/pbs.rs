//! The Proxmox Backup Server backend (issue 42) over the built binary and rmcp's client side,
//! against the in-process PBS emulator over HTTPS: every PBS row's request is one the pinned
//! PBS schema declares; reads run unasked and return what the emulator was seeded with;
//! prune and garbage collection are asked with `destroy` named, a decline sends nothing, an
//! accepted prune removes exactly what its preview marked; a read-only tier lists no PBS
//! write tool, and a server without a PBS lists no PBS tool at all; the PBS token's secret
//! is in no output, error, log line or audit line.

use std::collections::BTreeSet;

use nandi_proxmox_mcp::catalog::{self, HttpMethod, Location, ParamKind};
use pve_emulator::{Emulator, PbsEmulator, PbsOptions, PbsSnapshotSeed};
use serde_json::{Value, json};

use crate::approval_common::{Answer, Person, call, connect_stdio, envelope};
use crate::common::{emulator, env_for, schemas};

/// The PBS token secret, planted so any leak is found.
const PBS_CANARY: &str = "PBSCANARY-7d41e0c2-secret";

const DAY: i64 = 86_400;

async fn pbs() -> PbsEmulator {
    let emu = PbsEmulator::start(PbsOptions {
        token_secret: PBS_CANARY.to_owned(),
        ..PbsOptions::default()
    })
    .await
    .expect("PBS emulator");
    emu.add_datastore("store1", 1 << 40);
    let now = chrono::Utc::now().timestamp();
    for (id, age, verified, protected) in [
        ("101", 1, Some(true), false),
        ("101", 2, None, false),
        ("101", 3, Some(false), false),
        ("101", 4, None, true),
        ("101", 5, None, false),
        ("102", 9, Some(true), false),
    ] {
        emu.add_snapshot(PbsSnapshotSeed {
            store: "store1".into(),
            ns: String::new(),
            backup_type: "vm".into(),
            backup_id: id.into(),
            backup_time: now - age * DAY,
            size: 1 << 30,
            verified,
            protected,
            corrupt: false,
            comment: None,
        });
    }
    emu
}

fn env(pve: &Emulator, pbs: &PbsEmulator, tier: &str) -> Vec<(String, String)> {
    let mut env = env_for(pve);
    env.extend([
        ("PBS_HOST".to_owned(), pbs.host().to_owned()),
        ("PBS_PORT".to_owned(), pbs.port().to_string()),
        ("PBS_USER".to_owned(), "mcp".to_owned()),
        ("PBS_TOKEN_NAME".to_owned(), "mcp".to_owned()),
        ("PBS_TOKEN_SECRET".to_owned(), PBS_CANARY.to_owned()),
        (
            "PBS_TLS_FINGERPRINT".to_owned(),
            pbs.cert_fingerprint().expect("https"),
        ),
        ("PVE_ACCESS_TIER".to_owned(), tier.to_owned()),
        ("PVE_MODULE_MODE".to_owned(), "advanced".to_owned()),
    ]);
    env
}

/// The schema's `{METHOD: entry}` for a row's path (a literal segment such as `localhost`
/// matches the schema's `{node}`).
fn schema_entry<'a>(schema: &'a Value, method: &str, path: &str) -> Option<&'a Value> {
    let want: Vec<&str> = path.trim_matches('/').split('/').collect();
    schema.as_object()?.iter().find_map(|(p, methods)| {
        let have: Vec<&str> = p.trim_matches('/').split('/').collect();
        let same = have.len() == want.len()
            && have
                .iter()
                .zip(&want)
                .all(|(h, w)| h == w || (h.starts_with('{') && !w.starts_with('{')));
        if same { methods.get(method) } else { None }
    })
}

#[test]
fn every_pbs_row_is_a_request_the_pinned_schema_declares() {
    let schema = schemas::pbs_4();
    let rows: Vec<_> = catalog::all().filter(|s| s.backend.is_pbs()).collect();
    assert!(rows.len() >= 18, "{}", rows.len());
    for spec in rows {
        let (method, path) = spec.backend.pbs_method_and_path().expect("a PBS row");
        let entry = schema_entry(&schema, method.as_str(), path)
            .unwrap_or_else(|| panic!("{}: {method} {path} is not in the PBS schema", spec.name));
        let declared = &entry["parameters"];
        for param in spec
            .params
            .iter()
            .filter(|p| p.location != Location::Argument)
        {
            let name = param.api_name();
            let decl = declared.get(name).unwrap_or_else(|| {
                panic!(
                    "{}: {name} is not a parameter of {method} {path}",
                    spec.name
                )
            });
            let want = match param.kind {
                ParamKind::Integer => "integer",
                ParamKind::Boolean => "boolean",
                _ => "string",
            };
            assert_eq!(decl["type"], want, "{}: {name}", spec.name);
            let optional = decl["optional"] == json!(1);
            if !optional && param.location != Location::Path && !param.fixed {
                assert!(param.required, "{}: PBS requires {name}", spec.name);
            }
            if param.location == Location::Path {
                assert!(
                    path.contains(&format!("{{{name}}}")),
                    "{}: {name}",
                    spec.name
                );
            }
        }
        // What PBS requires, the row asks for (path captures other than the node included).
        for (name, decl) in declared.as_object().into_iter().flatten() {
            if decl["optional"] != json!(1) && name != "node" {
                assert!(
                    spec.param(name).is_some(),
                    "{}: misses required {name}",
                    spec.name
                );
            }
        }
        // A read row is a read by the schema, a write row is not.
        let effects = catalog::effects::of(spec);
        assert_eq!(
            spec.effect.is_read(),
            effects.always.is_read(),
            "{}: {:?}",
            spec.name,
            effects.always
        );
        if method != HttpMethod::Get && spec.effect.is_read() {
            assert!(spec.params.iter().any(|p| p.fixed), "{}", spec.name);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pbs_reads_run_unasked_and_answer_what_pbs_holds() {
    let pve = emulator().await;
    let pbs = pbs().await;
    let person = Person::new(Answer::Decline);
    let asked = person.asked.clone();
    let (client, _home) = connect_stdio(person, &env(&pve, &pbs, "full")).await;
    pbs.clear_requests();
    let result = call(
        &client,
        "pbs_list_snapshots",
        json!({"store": "store1", "backup-type": "vm", "backup-id": "101"}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let data = &envelope(&result)["data"];
    let got: BTreeSet<i64> = data
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|s| s["backup-time"].as_i64())
        .collect();
    let seeded: BTreeSet<i64> = pbs
        .snapshots("store1")
        .into_iter()
        .filter(|s| s.backup_id == "101")
        .map(|s| s.backup_time)
        .collect();
    assert_eq!(got, seeded);
    let requests = pbs.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(requests[0].authorized, "sent with the PBS token");
    assert_eq!(requests[0].path, "/admin/datastore/store1/snapshots");
    assert!(asked.lock().expect("lock").is_empty(), "a read asks nobody");

    // A preview of a prune is a read too: PBS's dry run.
    let preview = call(
        &client,
        "pbs_preview_prune",
        json!({"store": "store1", "backup-type": "vm", "backup-id": "101", "keep-last": 2}),
    )
    .await;
    assert_ne!(preview.is_error, Some(true), "{preview:?}");
    assert!(
        asked.lock().expect("lock").is_empty(),
        "a preview asks nobody"
    );
    assert_eq!(
        pbs.snapshots("store1").len(),
        6,
        "the preview removed nothing"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_and_gc_are_asked_as_destruction_and_a_decline_sends_nothing() {
    let pve = emulator().await;
    let pbs = pbs().await;
    let person = Person::new(Answer::Decline);
    let asked = person.asked.clone();
    let (client, _home) = connect_stdio(person, &env(&pve, &pbs, "full")).await;
    let prune = json!({"store": "store1", "backup-type": "vm", "backup-id": "101", "keep-last": 2});
    for (tool, args) in [
        ("pbs_prune", prune.clone()),
        ("pbs_start_gc", json!({"store": "store1"})),
    ] {
        pbs.clear_requests();
        asked.lock().expect("lock").clear();
        let result = call(&client, tool, args).await;
        assert_eq!(result.is_error, Some(true), "{tool}: {result:?}");
        assert_eq!(
            envelope(&result)["error"]["code"],
            "CONFIRMATION_DECLINED",
            "{tool}"
        );
        let questions = asked.lock().expect("lock").clone();
        assert_eq!(questions.len(), 1, "{tool}: {questions:?}");
        assert!(questions[0].contains("destroy"), "{tool}: {}", questions[0]);
        assert!(
            pbs.requests().is_empty(),
            "{tool}: nothing sent on a decline"
        );
    }
    assert_eq!(pbs.gc_runs("store1"), 0);
    client.cancel().await.ok();

    // Accepted: the prune removes exactly what the preview marked.
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person, &env(&pve, &pbs, "full")).await;
    let mut preview_args = prune.clone();
    preview_args["keep-last"] = json!(2);
    let preview = call(&client, "pbs_preview_prune", preview_args).await;
    let marked: BTreeSet<i64> = envelope(&preview)["data"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|s| s["keep"] == json!(false))
        .filter_map(|s| s["backup-time"].as_i64())
        .collect();
    assert!(!marked.is_empty());
    let before: BTreeSet<i64> = pbs
        .snapshots("store1")
        .iter()
        .map(|s| s.backup_time)
        .collect();
    let result = call(&client, "pbs_prune", prune).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let after: BTreeSet<i64> = pbs
        .snapshots("store1")
        .iter()
        .map(|s| s.backup_time)
        .collect();
    let removed: BTreeSet<i64> = before.difference(&after).copied().collect();
    assert_eq!(removed, marked);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_tier_lists_no_pbs_write_and_no_pbs_lists_no_pbs_tool() {
    let pve = emulator().await;
    let pbs = pbs().await;
    let (client, _home) =
        connect_stdio(Person::new(Answer::Decline), &env(&pve, &pbs, "read-only")).await;
    let listed: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let writes: BTreeSet<&str> = catalog::all()
        .filter(|s| s.backend.is_pbs() && !s.effect.is_read())
        .map(|s| s.name)
        .collect();
    assert!(
        listed.iter().any(|n| n == "pbs_list_snapshots"),
        "{listed:?}"
    );
    assert!(
        listed.iter().all(|n| !writes.contains(n.as_str())),
        "{listed:?}"
    );
    client.cancel().await.ok();
    let mut no_pbs = env_for(&pve);
    no_pbs.push(("PVE_ACCESS_TIER".into(), "full".into()));
    no_pbs.push(("PVE_MODULE_MODE".into(), "advanced".into()));
    let (client, _home) = connect_stdio(Person::new(Answer::Decline), &no_pbs).await;
    let listed = client.list_all_tools().await.expect("tools");
    assert!(
        listed.iter().all(|t| !t.name.starts_with("pbs_")),
        "no PBS, no PBS tool"
    );
    client.cancel().await.ok();
}

/// The REST client's choke point classifies a PBS request by PBS's schema: outside a call's
/// clearance a garbage collection never leaves, whatever sent it (no gate in between here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pbs_client_refuses_what_its_call_was_not_cleared_for() {
    use nandi_proxmox_mcp::pve;
    let server = pbs().await;
    let client = pve::Client::pbs(
        &pve::Connection {
            host: server.host().to_owned(),
            port: server.port(),
            user: "mcp".into(),
            realm: "pbs".into(),
            token_name: "mcp".into(),
            token_secret: PBS_CANARY.into(),
            tls: pve::TlsMode::Fingerprint(server.cert_fingerprint().expect("https")),
        },
        pve::ClientLimits::default(),
    )
    .expect("client");
    let cancel = tokio_util::sync::CancellationToken::new();
    server.clear_requests();
    let read = client
        .call(pve::ApiRequest::get("/admin/datastore"), &cancel)
        .await;
    assert!(read.result.is_ok(), "{:?}", read.result);
    let gc = pve::ApiRequest {
        method: pve::Method::Post,
        path: "/admin/datastore/store1/gc".into(),
        params: Vec::new(),
        timeout: std::time::Duration::from_secs(5),
        retry: pve::RetryPolicy::Never,
    };
    let refused = client.call(gc, &cancel).await;
    assert_eq!(refused.attempts, 0, "{:?}", refused.result);
    assert!(refused.result.is_err());
    assert_eq!(server.requests().len(), 1, "only the read left");
    assert_eq!(server.gc_runs("store1"), 0);
}
