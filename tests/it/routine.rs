//! Ask less, ask right (issue 37, first part): routine changes run without a person, the
//! consequential ones ask — through the built binary over stdio with rmcp's client side and
//! the request-logging emulator. The seed's own rule is the oracle: an operator's workflow
//! (clone template 9000, set tags and description, start it, snapshot it, back it up) costs
//! at most the one question the reference asked, and nothing that stops, rolls back, deletes
//! or runs a program reaches Proxmox when the person declines.

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, call, code, connect_stdio};
use common::{emulator, env_for, with_policy};
use pve_emulator::Emulator;
use serde_json::{Value, json};

/// Non-GET requests the emulator received, as `METHOD path`.
fn changes(emu: &Emulator) -> Vec<String> {
    emu.requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn full_env(emu: &Emulator, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut vars = vec![("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];
    vars.extend_from_slice(extra);
    with_policy(env_for(emu), &vars)
}

/// The workflow, in order: (tool, arguments).
fn workflow() -> Vec<(&'static str, Value)> {
    vec![
        (
            "pve_qemu_clone",
            json!({"node": "pve01", "vmid": 9000, "newid": 150, "name": "web-150"}),
        ),
        (
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 150, "tags": "web;lab", "description": "web server"}),
        ),
        ("pve_start_qemu_vm", json!({"node": "pve01", "vmid": 150})),
        (
            "pve_qemu_create_snapshot",
            json!({"node": "pve01", "vmid": 150, "snapname": "first"}),
        ),
        (
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "150", "storage": "local"}),
        ),
    ]
}

/// Waits for the tasks a call started to end (the clone must finish before the next step).
async fn settle() {
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_workflow_asks_once_when_the_person_accepts() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &[])).await;
    for (tool, args) in workflow() {
        let result = call(&client, tool, args.clone()).await;
        assert_ne!(result.is_error, Some(true), "{tool} {args}: {result:?}");
        settle().await;
    }
    let questions = person.questions();
    assert!(
        questions.len() <= 1,
        "{} questions: {questions:#?}",
        questions.len()
    );
    // The one question is the configuration update, as the reference asked it.
    assert!(
        questions[0].contains("pve_qemu_update_config"),
        "{}",
        questions[0]
    );
    let sent = changes(&emu);
    for part in [
        "/qemu/9000/clone",
        "/qemu/150/config",
        "/qemu/150/status/start",
        "/qemu/150/snapshot",
        "/vzdump",
    ] {
        assert!(
            sent.iter().any(|s| s.contains(part)),
            "{part} not sent: {sent:?}"
        );
    }
    // The backup pruned nothing: remove=0 went with it.
    let backup = emu
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/vzdump"))
        .expect("vzdump sent");
    assert!(
        backup.form.iter().any(|(k, v)| k == "remove" && v == "0"),
        "{:?}",
        backup.form
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_declining_person_routine_steps_run_and_nothing_consequential_is_sent() {
    let emu = emulator().await;
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &[])).await;
    for (tool, args) in workflow() {
        let result = call(&client, tool, args.clone()).await;
        if tool == "pve_qemu_update_config" {
            assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
        } else {
            assert_ne!(result.is_error, Some(true), "{tool} {args}: {result:?}");
        }
        settle().await;
    }
    let before = changes(&emu).len();
    let consequential = [
        ("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 150})),
        (
            "pve_qemu_rollback_snapshot",
            json!({"node": "pve01", "vmid": 150, "snapname": "first"}),
        ),
        ("pve_qemu_delete", json!({"node": "pve01", "vmid": 150})),
        (
            "pve_exec_qemu_guest_command",
            json!({"node": "pve01", "vmid": 150, "command": ["id"]}),
        ),
        (
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "150", "remove": true}),
        ),
        (
            "pve_qemu_clone",
            json!({"node": "pve01", "vmid": 150, "newid": 151}),
        ),
    ];
    for (tool, args) in consequential {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(
            code(&result),
            "CONFIRMATION_DECLINED",
            "{tool} {args}: {result:?}"
        );
    }
    assert_eq!(
        changes(&emu)[before..],
        [] as [String; 0],
        "a declined change was sent"
    );
    // The config update and the six consequential calls were asked; no routine step was.
    assert_eq!(person.questions().len(), 7, "{:#?}", person.questions());
    let clone_of_a_guest = &person.questions()[6];
    assert!(
        clone_of_a_guest.contains("not a template"),
        "{clone_of_a_guest}"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protected_target_makes_a_routine_change_ask_with_the_fact_named() {
    let emu = emulator().await;
    // 101 is tagged prod in the seed; 201 gets protection=1; 9000's clone source stays plain.
    assert!(emu.set_guest_option(201, "protection", json!(1)));
    emu.manage_by_ha(102, "started");
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu, &[])).await;
    let cases = [
        (
            "pve_start_qemu_vm",
            json!({"node": "pve01", "vmid": 101}),
            "guest 101 is tagged prod",
        ),
        (
            "pve_start_lxc_container",
            json!({"node": "pve01", "vmid": 201}),
            "guest 201 has protection=1",
        ),
        (
            "pve_qemu_create_snapshot",
            json!({"node": "pve03", "vmid": 102, "snapname": "s"}),
            "guest 102 is HA-managed",
        ),
    ];
    for (tool, args, fact) in cases {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(
            code(&result),
            "CONFIRMATION_DECLINED",
            "{tool} {args}: {result:?}"
        );
        let q = person.questions().last().cloned().unwrap_or_default();
        assert!(q.contains(fact), "{tool}: {q}");
        assert!(q.contains("target facts:"), "{tool}: {q}");
        // The refusal owns up to the fact reads it made.
        let text = format!("{result:?}");
        assert!(text.contains("GET /cluster/resources"), "{tool}: {text}");
    }
    assert_eq!(changes(&emu), Vec::<String>::new());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_can_ask_for_every_change_or_protect_more() {
    let emu = emulator().await;
    let person = Person::new(Answer::Decline);
    let (client, _home) =
        connect_stdio(person.clone(), &full_env(&emu, &[("PVE_ROUTINE", "ask")])).await;
    let result = call(
        &client,
        "pve_start_qemu_vm",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
    client.cancel().await.ok();

    let person = Person::new(Answer::Decline);
    let env = full_env(&emu, &[("PVE_PROTECTED_TAGS", "lab")]);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    // 101 (tags prod;web) is no longer protected by its tag; a snapshot of it runs unasked.
    let result = call(
        &client,
        "pve_qemu_create_snapshot",
        json!({"node": "pve01", "vmid": 101, "snapname": "unasked"}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routine_change_is_audited_as_routine_and_refused_while_frozen() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp");
    let audit = dir.path().join("audit.jsonl");
    let freeze = dir.path().join("frozen");
    let env = full_env(
        &emu,
        &[
            ("PVE_AUDIT_LOG", audit.to_str().expect("utf-8")),
            ("PVE_FREEZE_FILE", freeze.to_str().expect("utf-8")),
        ],
    );
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    // 203 is a stopped container without tags: its start is routine, as its dry run says.
    let start = json!({"node": "pve03", "vmid": 203});
    let mut dry = start.clone();
    dry["dry_run"] = json!(true);
    let preview = call(&client, "pve_start_lxc_container", dry).await;
    let text = format!("{preview:?}");
    assert!(
        text.contains("routine (power-on): starts or resumes the guest"),
        "{text}"
    );
    assert!(text.contains("runs without a person"), "{text}");
    let result = call(&client, "pve_start_lxc_container", start.clone()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let trail = std::fs::read_to_string(&audit).expect("audit written");
    assert!(trail.contains("\"approval\":\"routine\""), "{trail}");
    std::fs::write(&freeze, "incident").expect("freeze");
    let result = call(&client, "pve_start_lxc_container", start).await;
    assert_eq!(code(&result), "FROZEN", "{result:?}");
    assert!(person.questions().is_empty());
    client.cancel().await.ok();
}

/// A chain of calls cannot launder a consequential change: starting a full copy of a live
/// guest (a clone the person approved as cross-guest) is asked about again, with why, while a
/// copy of a template starts unasked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_a_copy_of_a_live_guest_stays_consequential() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp");
    let audit = dir.path().join("audit.jsonl");
    let env = full_env(&emu, &[("PVE_AUDIT_LOG", audit.to_str().expect("utf-8"))]);
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    // 203: a stopped container without tags, not a template. Its clone is asked (cross-guest).
    let clone = call(
        &client,
        "pve_lxc_clone",
        json!({"node": "pve03", "vmid": 203, "newid": 260}),
    )
    .await;
    assert_ne!(clone.is_error, Some(true), "{clone:?}");
    assert_eq!(person.questions().len(), 1);
    settle().await;
    let start = call(
        &client,
        "pve_start_lxc_container",
        json!({"node": "pve03", "vmid": 260}),
    )
    .await;
    assert_ne!(start.is_error, Some(true), "{start:?}");
    assert_eq!(person.questions().len(), 2, "the copy's start ran unasked");
    let asked = person.questions()[1].clone();
    assert!(asked.contains("full copy of guest 203"), "{asked}");
    // A linked clone of the template starts unasked.
    call(
        &client,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 9000, "newid": 161}),
    )
    .await;
    settle().await;
    let start = call(
        &client,
        "pve_start_qemu_vm",
        json!({"node": "pve01", "vmid": 161}),
    )
    .await;
    assert_ne!(start.is_error, Some(true), "{start:?}");
    assert_eq!(person.questions().len(), 2, "{:#?}", person.questions());
    client.cancel().await.ok();
}
