//! A plan as an MCP task (issue 41): for a call that declares the tasks extension, the plan
//! is asked once, then answered with a task; `tasks/get` shows the step it is at and then the
//! plan's answer; `tasks/cancel` stops it midway and the steps that ran are rolled back. The
//! emulator's own state is the oracle; rmcp's client side drives the protocol.

use crate::common;
use crate::harness::guest_ids as guests;
use crate::mcp_tasks_client;

use std::time::Duration;

use mcp_tasks_client::{Client, ClientSetup, call_once, connect, server};
use rmcp::model::{CallToolResponse, CancelTaskParams, GetTaskParams, TaskPayload, TaskStatus};
use serde_json::{Value, json};

const PERSON_WITH_TASKS: ClientSetup = ClientSetup {
    tasks: true,
    approve: Some(true),
};

/// Clone template 9000, tag the clone, start it.
fn plan(newid: u32) -> Value {
    json!({"steps": [
        {"tool": "pve_qemu_clone", "arguments": {"node": "pve01", "vmid": 9000, "newid": newid, "name": "task-plan"}},
        {"tool": "pve_qemu_update_config", "arguments": {"node": "pve01", "vmid": "$1.newid", "tags": "planned"}},
        {"tool": "pve_start_qemu_vm", "arguments": {"node": "pve01", "vmid": "$1.newid"}},
    ]})
}

/// Starts the plan as a task: its id.
async fn started(client: &Client, newid: u32) -> String {
    match call_once(client, "pve_apply_plan", plan(newid)).await {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working, "{created:?}");
            let meta = &created.meta.expect("meta").0;
            assert_eq!(meta["steps"], 3, "{meta:?}");
            created.task.task_id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Polls `tasks/get` to the end, collecting the status messages seen on the way.
async fn to_the_end(client: &Client, task_id: &str) -> (Vec<String>, TaskPayload) {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got = client
            .peer()
            .get_task(GetTaskParams::new(task_id))
            .await
            .expect("tasks/get");
        if let Some(message) = got.task.task.status_message.clone()
            && seen.last() != Some(&message)
        {
            seen.push(message);
        }
        if got.task.status().is_terminal() {
            return (seen, got.task.payload);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still working: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_plan_runs_as_a_task_that_shows_its_steps_and_ends_with_its_answer() {
    let emu = common::emulator().await;
    let (client, person) = connect(server(&emu, &[]), PERSON_WITH_TASKS).await;
    let task_id = started(&client, 781).await;
    assert_eq!(person.questions.lock().expect("lock").len(), 1);
    let (seen, payload) = to_the_end(&client, &task_id).await;
    let TaskPayload::Completed { result } = payload else {
        panic!("expected completed, got {payload:?} after {seen:?}");
    };
    assert_eq!(result["isError"], false, "{result:?}");
    let data = &result["structuredContent"]["data"];
    assert_eq!(data["steps"].as_array().map(Vec::len), Some(3), "{data}");
    // The steps were seen in order while it ran (each lasts a Proxmox task or more).
    let steps: Vec<&String> = seen.iter().filter(|m| m.starts_with("Step ")).collect();
    assert!(!steps.is_empty(), "{seen:?}");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(guests(&emu).await.contains(&781));
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_plan_task_rolls_back_the_steps_that_ran() {
    let emu = common::emulator().await;
    let before = guests(&emu).await;
    let (client, _person) = connect(server(&emu, &[]), PERSON_WITH_TASKS).await;
    let task_id = started(&client, 782).await;
    // Cancel once the clone went out.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !emu
        .requests()
        .iter()
        .any(|r| r.method == "POST" && r.path.ends_with("/9000/clone"))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the clone never went out"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("tasks/cancel");
    let (seen, payload) = to_the_end(&client, &task_id).await;
    assert_eq!(payload, TaskPayload::Cancelled, "{seen:?}");
    assert!(
        seen.last()
            .is_some_and(|m| m.contains("were undone, last first")),
        "the rollback's summary is the last word: {seen:?}"
    );
    // The clone's deletion is a Proxmox task of its own: it ends shortly after.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while guests(&emu).await != before {
        assert!(tokio::time::Instant::now() < deadline, "not rolled back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !emu.requests()
            .iter()
            .any(|r| r.path.ends_with("/782/status/start")),
        "the start never went out"
    );
    // An id this server never handed out is unknown, as any unknown id is.
    let last = if task_id.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &task_id[..task_id.len() - 1]);
    let unknown = client.peer().get_task(GetTaskParams::new(&forged)).await;
    assert!(unknown.is_err(), "{unknown:?}");
    client.cancel().await.ok();
}
