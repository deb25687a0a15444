//! Every endpoint the classifier places as more than a plain read, replayed through the
//! built binary over stdio with rmcp's client side — a client that can ask, so no `confirm` —
//! and a person who declines: each is put to the person (or refused below its tier) and none
//! reaches the emulator. The cases are generated from `src/effects/endpoints.tsv` (the PVE 9.1
//! schema's own privileges and parameter kinds), so a new row or a changed effect is covered
//! without a hand-written case.

mod approval_common;
mod common;

use approval_common::{Answer, Person, call, code, connect_stdio};
use common::{emulator, env_for, with_policy};
use serde_json::json;

const TABLE: &str = include_str!("../src/effects/endpoints.tsv");

/// One row of the table: method, path template and the classifier's kind.
struct Row<'a> {
    method: &'a str,
    template: &'a str,
    kind: &'a str,
}

fn rows() -> Vec<Row<'static>> {
    TABLE
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let mut fields = line.split('\t');
            Some(Row {
                method: fields.next()?,
                template: fields.next()?,
                kind: fields.next()?,
            })
        })
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
    let env = with_policy(
        env_for(&emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let rows = rows();
    assert!(rows.len() > 600, "the table has {} rows", rows.len());
    let mut asked = 0;
    let mut problems = Vec::new();
    for row in rows.iter().filter(|r| r.kind != "read") {
        let path = concrete(row.template);
        let (tool, args) = if row.method == "GET" {
            ("pve_api_call", json!({"path": path}))
        } else {
            ("pve_api_write", json!({"method": row.method, "path": path}))
        };
        let before = emu.requests().len();
        let questions = person.questions().len();
        let result = call(&client, tool, args).await;
        let got = code(&result);
        if got != "CONFIRMATION_DECLINED" {
            problems.push(format!("{} {path}: {got}", row.method));
        }
        if person.questions().len() == questions + 1 {
            asked += 1;
        }
        let sent: Vec<String> = emu.requests()[before..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        if !sent.is_empty() {
            problems.push(format!("{} {path} sent {sent:?}", row.method));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    let expected = rows.iter().filter(|r| r.kind != "read").count();
    assert_eq!(asked, expected, "every one was put to the person");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_full_a_sensitive_read_is_refused_before_anyone_is_asked() {
    let emu = emulator().await;
    let env = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "read-only"),
            ("PVE_MODULE_MODE", "advanced"),
        ],
    );
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let sensitive: Vec<Row<'static>> = rows()
        .into_iter()
        .filter(|r| r.kind == "sensitive")
        .collect();
    assert!(sensitive.len() >= 28, "{}", sensitive.len());
    for row in &sensitive {
        let path = concrete(row.template);
        let before = emu.requests().len();
        let result = call(&client, "pve_api_call", json!({"path": path})).await;
        assert_eq!(
            code(&result),
            "EFFECT_NOT_APPROVED",
            "GET {path}: {result:?}"
        );
        assert_eq!(emu.requests().len(), before, "GET {path} reached Proxmox");
    }
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    client.cancel().await.ok();
}
