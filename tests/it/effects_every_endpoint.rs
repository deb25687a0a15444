//! Every endpoint that does more than read, replayed through the built binary over stdio
//! with rmcp's client side — a client that can ask, so no `confirm` — and a person who
//! declines: each is put to the person (or refused below its tier) and none reaches the
//! emulator beyond the schema lookup's reads. The cases come from the schema files carried
//! (`tests/data`: PVE 9.1.3 and the 9.2 operation list), never from the table under test:
//! every method other than GET but the reviewed reads, every GET whose permission check an
//! auditor cannot meet, and every 9.2 operation the embedded schema lacks. The emulator
//! serves no `apidata.js`, so the embedded table alone judges (the generic call then applies
//! structural checks only).

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, call, code, connect_stdio};
use common::{emulator, env_for, schemas, with_policy};
use nandi_proxmox_mcp::effects::derive;
use nandi_proxmox_mcp::effects::reviewed::{self, Verdict};
use pve_emulator::Emulator;
use serde_json::{Value, json};

/// One case: method, path template, and whether an auditor's check would meet it.
struct Case {
    method: String,
    template: String,
    sensitive: bool,
}

/// The cases, from the schema files (see the module docs).
fn cases() -> Vec<Case> {
    let schema = schemas::pve_9_1_3();
    let mut out = Vec::new();
    for (path, entries) in schema.as_object().expect("object") {
        for (method, entry) in entries.as_object().expect("object") {
            let reviewed_read =
                reviewed::reviewed(method, path).is_some_and(|r| r.verdict == Verdict::Read);
            let sensitive = method == "GET" && !derive::facts(method, path, entry).read_satisfies;
            if (method != "GET" && !reviewed_read) || sensitive {
                out.push(Case {
                    method: method.clone(),
                    template: path.clone(),
                    sensitive,
                });
            }
        }
    }
    for (method, path) in schemas::pve_9_2_ops() {
        if schema
            .pointer(&format!("/{}", path.replace('~', "~0").replace('/', "~1")))
            .is_none()
        {
            out.push(Case {
                method,
                template: path,
                sensitive: false,
            });
        }
    }
    out
}

/// Requests beyond the schema lookup's reads (`/version`, `apidata.js`).
fn sent_since(emu: &Emulator, before: usize) -> Vec<String> {
    emu.requests()[before..]
        .iter()
        .filter(|r| {
            !(r.method == "GET" && (r.path == "/version" || r.path.ends_with("apidata.js")))
        })
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// A concrete path for a template: the emulator's node and guest, a plain word elsewhere.
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment {
            "{node}" => "pve01".to_owned(),
            "{vmid}" => "101".to_owned(),
            "{storage}" => "local".to_owned(),
            s if s.starts_with('{') => "probe1".to_owned(),
            s => s.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_and_sensitive_read_is_asked_and_sends_nothing_when_declined() {
    let emu = emulator().await;
    emu.hide_api_schema();
    let env = with_policy(
        env_for(&emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let cases = cases();
    assert!(cases.len() > 370, "{} cases", cases.len());
    let mut asked = 0;
    let mut problems = Vec::new();
    for case in &cases {
        let path = concrete(&case.template);
        let (tool, args): (&str, Value) = if case.method == "GET" {
            ("pve_api_call", json!({"path": path}))
        } else {
            (
                "pve_api_write",
                json!({"method": case.method, "path": path}),
            )
        };
        let before = emu.requests().len();
        let questions = person.questions().len();
        let result = call(&client, tool, args).await;
        let got = code(&result);
        if got != "CONFIRMATION_DECLINED" {
            problems.push(format!("{} {path}: {got}", case.method));
        }
        if person.questions().len() == questions + 1 {
            asked += 1;
        }
        let sent = sent_since(&emu, before);
        if !sent.is_empty() {
            problems.push(format!("{} {path} sent {sent:?}", case.method));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(asked, cases.len(), "every one was put to the person");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_full_a_sensitive_read_is_refused_before_anyone_is_asked() {
    let emu = emulator().await;
    emu.hide_api_schema();
    let env = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "read-only"),
            ("PVE_MODULE_MODE", "advanced"),
        ],
    );
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let sensitive: Vec<Case> = cases().into_iter().filter(|c| c.sensitive).collect();
    assert!(sensitive.len() >= 28, "{}", sensitive.len());
    for case in &sensitive {
        let path = concrete(&case.template);
        let before = emu.requests().len();
        let result = call(&client, "pve_api_call", json!({"path": path})).await;
        assert_eq!(
            code(&result),
            "EFFECT_NOT_APPROVED",
            "GET {path}: {result:?}"
        );
        assert_eq!(
            sent_since(&emu, before),
            Vec::<String>::new(),
            "GET {path} reached Proxmox"
        );
    }
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    client.cancel().await.ok();
}
