//! Plans (issue 41): "a VM like X" is one approved call — `pve_provision_qemu_guest` — through
//! the built binary over stdio with rmcp's client side and the request-logging emulator. The
//! emulator's own state is the oracle: a provision asks one question and ends in a running
//! guest whose agent reports an address; a fault at a later step undoes the earlier ones until
//! the emulator's guests equal the start; a declined plan sends nothing; a step the tier does
//! not allow refuses the whole plan before anything is sent.

use crate::approval_common;
use crate::common;
use crate::harness::{change_lines as changes, guest_ids as guests};

use approval_common::{Answer, Person, call, code, connect_stdio};
use common::{emulator, env_for, with_policy};
use pve_emulator::{Emulator, Fault, FaultKind};
use serde_json::{Value, json};

fn full_env(emu: &Emulator) -> Vec<(String, String)> {
    with_policy(
        env_for(emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    )
}

/// A provision of template 9000 as VM 760 with every step.
fn provision() -> Value {
    json!({
        "node": "pve01", "vmid": 9000, "newid": 760, "name": "web-760",
        "grow": "+2G", "cores": 2, "memory": 2048, "ciuser": "ops",
        "ipconfig0": "ip=dhcp", "tags": "web;lab"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provision_asks_once_and_ends_in_a_reachable_guest() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let result = call(&client, "pve_provision_qemu_guest", provision()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let questions = person.questions();
    assert_eq!(questions.len(), 1, "{questions:#?}");
    for step in [
        "pve_qemu_clone",
        "pve_qemu_resize_disk",
        "pve_qemu_update_config",
        "pve_start_qemu_vm",
    ] {
        assert!(questions[0].contains(step), "{}", questions[0]);
    }
    // Every step reached Proxmox once, in order.
    let sent = changes(&emu);
    let order = [
        "POST /nodes/pve01/qemu/9000/clone",
        "PUT /nodes/pve01/qemu/760/resize",
        "PUT /nodes/pve01/qemu/760/config",
        "POST /nodes/pve01/qemu/760/status/start",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|want| {
            let found: Vec<usize> = sent
                .iter()
                .enumerate()
                .filter(|(_, s)| s == want)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(
                found.len(),
                1,
                "{want} sent {} times: {sent:?}",
                found.len()
            );
            found[0]
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{sent:?}");
    let data = &result.structured_content.as_ref().expect("envelope")["data"];
    assert_eq!(data["vmid"], 760, "{data}");
    let addresses = data["addresses"].as_array().expect("addresses");
    assert!(
        addresses.iter().any(|a| a["address"]
            .as_str()
            .is_some_and(|ip| ip.starts_with("192.168."))),
        "{data}"
    );
    assert!(guests(&emu).await.contains(&760));
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_step_undoes_the_ones_before_it() {
    let emu = emulator().await;
    let before = guests(&emu).await;
    // The start (the last step) fails: the clone, its growth and its config are undone.
    emu.arm_fault(
        Fault::new(FaultKind::Status(500), 1).on_prefix("/nodes/pve01/qemu/760/status/start"),
    );
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let result = call(&client, "pve_provision_qemu_guest", provision()).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(code(&result), "PLAN_FAILED", "{result:?}");
    let error = &result.structured_content.as_ref().expect("envelope")["error"];
    let rollback = error["details"]["rollback"]
        .as_array()
        .expect("rollback report");
    assert!(
        rollback
            .iter()
            .any(|s| s["tool"] == "pve_qemu_clone" && s["undone"] == true),
        "{error}"
    );
    assert_eq!(
        guests(&emu).await,
        before,
        "the emulator's guests equal the start: {error}"
    );
    assert_eq!(person.questions().len(), 1);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_or_forbidden_plan_sends_nothing() {
    let emu = emulator().await;
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    // Bad input for a step is refused with the step named, before anyone is asked.
    let mut bad = provision();
    bad["grow"] = json!("ten gigabytes");
    let result = call(&client, "pve_provision_qemu_guest", bad).await;
    assert_eq!(code(&result), "TOOL_INPUT_REJECTED", "{result:?}");
    let text = format!("{:?}", result.structured_content);
    assert!(text.contains("step 2 (pve_qemu_resize_disk)"), "{text}");
    assert!(person.questions().is_empty());
    let result = call(&client, "pve_provision_qemu_guest", provision()).await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
    assert_eq!(changes(&emu), Vec::<String>::new());
    client.cancel().await.ok();

    // A step the policy does not expose refuses the whole plan, naming the step.
    let emu = emulator().await;
    let env = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_MODULE_MODE", "advanced"),
            ("PVE_TOOL_BLACKLIST", "pve_qemu_resize_disk"),
        ],
    );
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let result = call(&client, "pve_provision_qemu_guest", provision()).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = format!("{:?}", result.structured_content);
    assert!(
        text.contains("step 2") && text.contains("pve_qemu_resize_disk"),
        "{text}"
    );
    assert!(person.questions().is_empty());
    assert_eq!(changes(&emu), Vec::<String>::new());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_shows_every_step_and_sends_nothing() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let mut args = provision();
    args["dry_run"] = json!(true);
    let result = call(&client, "pve_provision_qemu_guest", args).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let data = &result.structured_content.as_ref().expect("envelope")["data"];
    assert_eq!(data["dryRun"], true);
    assert_eq!(data["decision"]["needsApproval"], true, "{data}");
    let tools: Vec<&str> = data["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["tool"].as_str())
        .collect();
    assert_eq!(
        tools,
        [
            "pve_qemu_clone",
            "pve_qemu_resize_disk",
            "pve_qemu_update_config",
            "pve_start_qemu_vm"
        ]
    );
    assert!(person.questions().is_empty());
    assert_eq!(changes(&emu), Vec::<String>::new());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_plan_midway_rolls_it_back() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let emu = crate::mcp_tasks_client::emulator_with_pace(std::time::Duration::from_secs(2)).await;
    let before = guests(&emu).await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        crate::mcp_tasks_client::call("pve_provision_qemu_guest", provision()),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    // Cancel while the second step (the disk's growth) runs.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !changes(&emu)
        .iter()
        .any(|c| c == "PUT /nodes/pve01/qemu/760/resize")
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "step 2 never started: {:?}",
            changes(&emu)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    handle
        .cancel(Some("stop".into()))
        .await
        .expect("cancel sent");
    // The rollback runs on: the clone is deleted, the start never sent.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while guests(&emu).await != before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "not rolled back: {:?}",
            changes(&emu)
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let sent = changes(&emu);
    assert!(
        sent.iter().any(|c| c == "DELETE /nodes/pve01/qemu/760"),
        "{sent:?}"
    );
    assert!(
        !sent.iter().any(|c| c.ends_with("/760/status/start")),
        "{sent:?}"
    );
    client.cancel().await.ok();
}

/// A plan of the caller's own steps: clone, tag, start — `$1.newid` is step 1's `newid`.
fn callers_plan() -> Value {
    json!({"steps": [
        {"tool": "pve_qemu_clone", "arguments": {"node": "pve01", "vmid": 9000, "newid": 771, "name": "db-771"}},
        {"tool": "pve_qemu_update_config", "arguments": {"node": "pve01", "vmid": "$1.newid", "tags": "db"}},
        {"tool": "pve_start_qemu_vm", "arguments": {"node": "pve01", "vmid": "$1.newid"}},
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_of_the_callers_steps_asks_once_and_runs_them_in_order() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let result = call(&client, "pve_apply_plan", callers_plan()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(person.questions().len(), 1, "{:#?}", person.questions());
    assert_eq!(
        changes(&emu),
        [
            "POST /nodes/pve01/qemu/9000/clone",
            "PUT /nodes/pve01/qemu/771/config",
            "POST /nodes/pve01/qemu/771/status/start",
        ]
    );
    let data = &result.structured_content.as_ref().expect("envelope")["data"];
    let steps = data["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3, "{data}");
    assert!(
        steps.iter().all(|s| s["change"].is_u64()),
        "every change has its undo record: {data}"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_cannot_smuggle_what_its_steps_could_not_do() {
    // At read-execute the plan is listed, but a clone (full) is not the caller's to make.
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), &[("PVE_ACCESS_TIER", "read-execute")]);
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let result = call(&client, "pve_apply_plan", callers_plan()).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = format!("{:?}", result.structured_content);
    assert!(text.contains("step 1 (pve_qemu_clone)"), "{text}");
    client.cancel().await.ok();

    let emu = emulator().await;
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let bad = [
        (
            json!({"steps": [{"tool": "pve_apply_plan", "arguments": {"steps": [{}]}}]}),
            "cannot hold a plan",
        ),
        (
            json!({"steps": [{"tool": "pve_start_qemu_vm", "args": {}}]}),
            "unknown key",
        ),
        (
            json!({"steps": [{"tool": "pve_start_qemu_vm", "arguments": {"node": "pve03", "vmid": 102, "confirm": true}}]}),
            "belongs to the plan",
        ),
        (
            json!({"steps": [{"tool": "pve_start_qemu_vm", "arguments": {"node": "pve03", "vmid": "$2.newid"}}]}),
            "names no earlier step",
        ),
        (json!({"steps": [{"tool": "no_such_tool"}]}), "not a tool"),
        (json!({"steps": []}), "must not be empty"),
    ];
    for (args, said) in bad {
        let result = call(&client, "pve_apply_plan", args.clone()).await;
        assert_eq!(code(&result), "TOOL_INPUT_REJECTED", "{args}: {result:?}");
        let text = format!("{:?}", result.structured_content);
        assert!(text.contains(said), "{args}: {text}");
    }
    assert!(person.questions().is_empty());
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_reports_its_progress_names_itself_in_the_audit_and_reverts_in_one_call() {
    use crate::mcp_tasks_client::{ClientSetup, TestClient, envelope};
    use rmcp::ServiceExt;
    let emu = emulator().await;
    let before = guests(&emu).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.jsonl");
    let mut env = full_env(&emu);
    env.push(("PVE_AUDIT_LOG".into(), log.display().to_string()));
    let (command, _home) = approval_common::run_command(&env);
    let person = TestClient::new(ClientSetup {
        tasks: false,
        approve: Some(true),
    });
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("spawn");
    let client = person.clone().serve(transport).await.expect("initialize");

    let (is_error, answer) = envelope(&client, "pve_apply_plan", callers_plan()).await;
    assert!(!is_error, "{answer}");
    assert_eq!(person.questions.lock().expect("lock").len(), 1);
    // One notification per step and one at the end, rising, out of the plan's three steps.
    let progress = person.progress();
    let values: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert_eq!(values, [0.0, 1.0, 2.0, 3.0], "{progress:?}");
    assert!(
        progress.iter().all(|p| p.total == Some(3.0)),
        "{progress:?}"
    );
    let messages: Vec<&str> = progress
        .iter()
        .filter_map(|p| p.message.as_deref())
        .collect();
    assert_eq!(messages[1], "Step 2 of 3: pve_qemu_update_config");

    // Every line of the plan — the plan call's and each step's — names the plan's id.
    let plan = answer["data"]["plan"].as_str().expect("plan id").to_owned();
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let of_plan: Vec<&str> = lines
        .iter()
        .filter(|l| l["plan"] == plan.as_str())
        .filter_map(|l| l["tool"].as_str())
        .collect();
    for tool in [
        "pve_qemu_clone",
        "pve_qemu_update_config",
        "pve_start_qemu_vm",
        "pve_apply_plan",
    ] {
        assert!(of_plan.contains(&tool), "{tool} not linked: {lines:#?}");
    }
    assert!(
        lines
            .iter()
            .filter(|l| l["tool"] != "pve_apply_plan")
            .all(|l| l["plan"] == plan.as_str() && l["approval"] == "plan"),
        "{lines:#?}"
    );

    // The answer carries the one call that reverts the plan: the guests equal the start.
    let revert = &answer["data"]["revert"];
    assert_eq!(revert["tool"], "pve_apply_plan", "{answer}");
    let (is_error, reverted) =
        envelope(&client, "pve_apply_plan", revert["arguments"].clone()).await;
    assert!(!is_error, "{reverted}");
    assert_eq!(person.questions.lock().expect("lock").len(), 2);
    assert_eq!(guests(&emu).await, before, "{:?}", changes(&emu));
    assert!(
        changes(&emu).contains(&"DELETE /nodes/pve01/qemu/771".to_owned()),
        "{:?}",
        changes(&emu)
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plans_question_shows_each_targets_current_values() {
    let emu = emulator().await;
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &full_env(&emu)).await;
    let plan = json!({"steps": [
        // Detaching the boot disk: shown as the removal it is, with the value it had.
        {"tool": "pve_qemu_update_config", "arguments": {"node": "pve01", "vmid": 101, "memory": 6144, "delete": "scsi0"}},
        {"tool": "pve_qemu_clone", "arguments": {"node": "pve01", "vmid": 9000, "newid": 790}},
        {"tool": "pve_start_qemu_vm", "arguments": {"node": "pve01", "vmid": "$2.newid"}},
    ]});
    let result = call(&client, "pve_apply_plan", plan).await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    let question = &person.questions()[0];
    let step = |n: usize| {
        let from = question.find(&format!("\n{n}. ")).expect("step listed");
        let to = question[from + 1..]
            .find(&format!("\n{}. ", n + 1))
            .map_or(question.len(), |i| from + 1 + i);
        &question[from..to]
    };
    // Step 1: its target as Proxmox has it now and each value that changes, current → new.
    let first = step(1);
    assert!(
        first.contains("Target: VM 101 \"vm-web\" on node pve01"),
        "{first}"
    );
    assert!(first.contains("memory: 4096 → 6144"), "{first}");
    assert!(
        first.contains("scsi0: local-lvm:vm-101-disk-0,iothread=1,size=32G → (removed)"),
        "{first}"
    );
    // Step 2 acts on the template; step 3 on the guest step 2 creates (nothing to read yet).
    assert!(step(2).contains("\"tmpl-debian\""), "{}", step(2));
    assert!(
        step(3).contains("the guest an earlier step creates"),
        "{}",
        step(3)
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_secret_is_masked_in_the_question_the_dry_run_and_the_audit() {
    const CANARY: &str = "Canary-Plan-Secret-7781";
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("audit.jsonl");
    let mut env = full_env(&emu);
    env.push(("PVE_AUDIT_LOG".into(), log.display().to_string()));
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let step =
        json!({"tool": "pve_create_user", "arguments": {"userid": "ops@pve", "password": CANARY}});
    let preview = call(
        &client,
        "pve_apply_plan",
        json!({"steps": [step.clone()], "dry_run": true}),
    )
    .await;
    let shown = format!("{preview:?}");
    assert!(
        shown.contains("pve_create_user") && !shown.contains(CANARY),
        "{shown}"
    );
    let declined = call(&client, "pve_apply_plan", json!({"steps": [step]})).await;
    assert_eq!(code(&declined), "CONFIRMATION_DECLINED");
    let question = &person.questions()[0];
    assert!(
        question.contains("password=") && !question.contains(CANARY),
        "{question}"
    );
    let audit = std::fs::read_to_string(&log).expect("audit log");
    assert!(
        audit.contains("pve_apply_plan") && !audit.contains(CANARY),
        "{audit}"
    );
    assert!(changes(&emu).is_empty());
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_refused_while_frozen_before_anyone_is_asked() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let frozen = dir.path().join("frozen");
    std::fs::write(&frozen, "maintenance").expect("freeze file");
    let mut env = full_env(&emu);
    env.push(("PVE_FREEZE_FILE".into(), frozen.display().to_string()));
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let result = call(&client, "pve_apply_plan", callers_plan()).await;
    assert_eq!(code(&result), "FROZEN", "{result:?}");
    let text = format!("{:?}", result.structured_content);
    assert!(text.contains("step 1 (pve_qemu_clone)"), "{text}");
    assert!(person.questions().is_empty(), "{:#?}", person.questions());
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    client.cancel().await.ok();
}
