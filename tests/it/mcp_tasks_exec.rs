//! A guest-agent program as an MCP task: for a client with the tasks extension,
//! `pve_exec_qemu_guest_command` answers once the program started, `tasks/get` follows
//! `agent/exec-status` to its output, and `tasks/cancel` says the API cannot stop it. A client
//! without the extension still gets the whole answer in one call.

use crate::mcp_tasks_client;

use std::time::Duration;

use mcp_tasks_client::{
    ClientSetup, call_once, completed_result, connect, emulator_with_pace, poll_to_end, server,
};
use rmcp::model::{CallToolResponse, CancelTaskParams, GetTaskParams, TaskStatus};
use serde_json::json;

const TASKS: ClientSetup = ClientSetup {
    tasks: true,
    approve: None,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_program_is_a_task_that_ends_with_its_output() {
    let emu = emulator_with_pace(Duration::from_millis(100)).await;
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let args = json!({"node": "pve01", "vmid": 101, "command": ["sleep", "1"], "confirm": true});
    let created = match call_once(&client, "pve_exec_qemu_guest_command", args).await {
        CallToolResponse::Task(created) => created,
        other => panic!("expected a task, got {other:?}"),
    };
    let task_id = created.task.task_id.clone();
    assert!(task_id.starts_with("agentexec.pve01.101."), "{task_id}");
    let meta = &created.meta.expect("meta").0;
    assert_eq!(meta["vmid"], 101);
    // Still running right after the start.
    let first = client
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("tasks/get");
    assert_eq!(first.task.status(), TaskStatus::Working, "{first:?}");
    // The API cannot stop a guest program: cancel says so and changes nothing.
    let refused = client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await;
    assert!(refused.is_err(), "{refused:?}");

    let done = poll_to_end(&client, &task_id, Duration::from_secs(10)).await;
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let result = completed_result(&done);
    assert_eq!(result["isError"], false, "{result}");
    let data = &result["structuredContent"]["data"];
    assert_eq!(data["exited"], true, "{data}");
    assert_eq!(data["exitcode"], 0);

    // A failing program ends as an error with its stderr.
    let args = json!({"node": "pve01", "vmid": 101, "command": ["sh", "-c", "echo boom >&2; exit 3"], "confirm": true});
    let CallToolResponse::Task(created) =
        call_once(&client, "pve_exec_qemu_guest_command", args).await
    else {
        panic!("expected a task");
    };
    let done = poll_to_end(&client, &created.task.task_id, Duration::from_secs(10)).await;
    let result = completed_result(&done);
    assert_eq!(result["isError"], true, "{result}");
    let details = &result["structuredContent"]["error"]["details"];
    assert_eq!(details["exitcode"], 3, "{result}");
    assert_eq!(details["stderr"], "boom\n");

    // Ids are checked: a forged node or pid is refused before any request, and so is a
    // well-formed id this server did not seal (unsealed, or another program's pid) — reading a
    // program's output follows a person's approval of that program, never a guess.
    let before = emu.requests().len();
    let (body, _seal) = task_id.rsplit_once('.').expect("sealed id");
    let created_secs = body.rsplit('.').next().expect("created");
    let other_pid = format!("agentexec.pve01.101.1.{created_secs}");
    let resealed_elsewhere = format!("{other_pid}.{}", "0".repeat(64));
    for forged in [
        "agentexec.pve/01.101.1.1",
        "agentexec.pve01.101.x.1",
        body,
        other_pid.as_str(),
        resealed_elsewhere.as_str(),
    ] {
        let got = client.peer().get_task(GetTaskParams::new(forged)).await;
        let err = got.expect_err(forged);
        let rmcp::ServiceError::McpError(data) = &err else {
            panic!("{forged}: {err:?}")
        };
        assert_eq!(data.code.0, -32602, "{forged}: {err:?}");
    }
    assert_eq!(emu.requests().len(), before, "a forged id reached Proxmox");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_tasks_extension_the_call_follows_the_program_itself() {
    let emu = emulator_with_pace(Duration::from_millis(100)).await;
    let plain = ClientSetup {
        tasks: false,
        approve: None,
    };
    let (client, _) = connect(server(&emu, &[]), plain).await;
    let args = json!({"node": "pve01", "vmid": 101, "command": ["echo", "hi"], "confirm": true});
    match call_once(&client, "pve_exec_qemu_guest_command", args).await {
        CallToolResponse::Complete(result) => {
            let env = result.structured_content.expect("structured");
            assert_eq!(env["data"]["stdout"], "hi\n", "{env}");
            assert_eq!(env["data"]["exited"], true);
        }
        other => panic!("expected a complete result, got {other:?}"),
    }
    client.cancel().await.ok();
}
