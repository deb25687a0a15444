//! MCP Tasks (SEP-2663) against the emulator, with a client on rmcp's client side: a
//! task-starting tool answers a task for clients that declared the extension, `tasks/get`
//! follows the Proxmox task to `completed`, `tasks/cancel` stops it only with approval,
//! and unknown or expired ids are refused. Also: every row marked `starts_task` answers a
//! UPID from the emulator, and the marked rows are exactly the REST rows whose endpoint
//! returns a worker UPID in the official API schema.

use crate::common;
use crate::mcp_tasks_client;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mcp_tasks_client::{
    ClientSetup, call, call_once, completed_result, connect, emulator_task_status,
    emulator_with_pace, envelope, poll_to_end, server,
};
use nandi_proxmox_mcp::catalog;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, GetTaskParams, RequestMetaObject, TaskStatus,
};
use serde_json::{Value, json};

const TASKS: ClientSetup = ClientSetup {
    tasks: true,
    approve: None,
};

/// Clone arguments with a fresh target id each time. A clone is a change: a client that
/// cannot ask a person approves it with `confirm: true`.
fn clone_args() -> Value {
    static NEXT: AtomicU32 = AtomicU32::new(700);
    let newid = NEXT.fetch_add(1, Ordering::Relaxed);
    json!({"node": "pve01", "vmid": 101, "newid": newid, "full": true, "confirm": true})
}

async fn start_clone_task(client: &mcp_tasks_client::Client) -> (String, String) {
    match call_once(client, "pve_qemu_clone", clone_args()).await {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.ttl_ms.is_some());
            let upid = created.meta.as_ref().expect("meta").0["upid"]
                .as_str()
                .expect("upid in _meta")
                .to_owned();
            (created.task.task_id, upid)
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The MCP Inspector (2.12) declares the tasks extension at `initialize` and then makes plain
/// calls it never follows. Only a call that declares the extension itself is answered as a
/// task (SEP-2663); the plain call gets the plain, valid result — here the UPID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_call_that_declares_tasks_itself_is_answered_as_a_task() {
    let emu = emulator_with_pace(Duration::from_millis(20)).await;
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let plain = client
        .peer()
        .call_tool_once(call("pve_qemu_clone", clone_args()))
        .await
        .expect("answered");
    let CallToolResponse::Complete(result) = plain else {
        panic!("a plain call from a session that declared tasks got {plain:?}");
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(
        !result.content.is_empty(),
        "a valid 2025-11-25 result has content"
    );
    let env = result.structured_content.expect("envelope");
    assert!(
        env["data"]
            .as_str()
            .unwrap_or_default()
            .starts_with("UPID:pve01:"),
        "{env}"
    );
    // The same call, declaring the extension on the request: a task.
    let (_, upid) = start_clone_task(&client).await;
    assert!(upid.contains(":qmclone:101:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_becomes_a_task_that_completes_and_outlives_its_session() {
    let emu = emulator_with_pace(Duration::from_millis(150)).await;
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let (task_id, upid) = start_clone_task(&client).await;
    assert!(upid.starts_with("UPID:pve01:") && upid.contains(":qmclone:101:"));

    let first = client
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("tasks/get");
    assert_eq!(first.task.status(), TaskStatus::Working, "{first:?}");
    let done = poll_to_end(&client, &task_id, Duration::from_secs(10)).await;
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let result = completed_result(&done);
    assert_eq!(result["isError"], false, "{result}");
    let data = &result["structuredContent"]["data"];
    assert_eq!(data["exitstatus"], "OK");
    assert_eq!(data["upid"], upid.as_str());
    let tail: Vec<&str> = data["logTail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        tail.contains(&"transferred 32.0 GiB of 32.0 GiB (100.00%)"),
        "{tail:?}"
    );
    assert_eq!(tail.last(), Some(&"TASK OK"));
    assert_eq!(
        result["structuredContent"]["meta"]["tool"],
        "pve_qemu_clone"
    );
    client.cancel().await.unwrap();

    // Another session (another client) reads the same id: no shared store is needed.
    let (other, _) = connect(server(&emu, &[]), TASKS).await;
    let again = other
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("tasks/get from another session");
    assert_eq!(again.task.status(), TaskStatus::Completed);
    assert_eq!(
        completed_result(&again)["structuredContent"]["data"]["exitstatus"],
        "OK"
    );
    other.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_without_the_extension_get_the_upid() {
    let emu = emulator_with_pace(Duration::from_millis(50)).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    let (is_error, env) = envelope(&client, "pve_qemu_clone", clone_args()).await;
    assert!(!is_error, "{env}");
    assert!(env["data"].as_str().unwrap().starts_with("UPID:pve01:"));
    // And tasks/get is refused: the client did not declare the extension.
    let err = client
        .peer()
        .get_task(GetTaskParams::new("x"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("-32021") || err.to_string().to_lowercase().contains("capab"),
        "{err}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_proxmox_task_completes_with_is_error() {
    let emu = emulator_with_pace(Duration::from_millis(50)).await;
    emu.fail_tasks("qmclone", "clone failed: no space left on device");
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let (task_id, _) = start_clone_task(&client).await;
    let done = poll_to_end(&client, &task_id, Duration::from_secs(10)).await;
    assert_eq!(done.task.status(), TaskStatus::Completed);
    let result = completed_result(&done);
    assert_eq!(result["isError"], true, "{result}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["code"], "TASK_FAILED");
    assert_eq!(
        error["details"]["exitstatus"],
        "clone failed: no space left on device"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_proxmox_task_only_with_a_persons_approval() {
    let emu = emulator_with_pace(Duration::from_secs(5)).await;

    // The person declines: refused, the Proxmox task keeps running.
    let declining = ClientSetup {
        tasks: true,
        approve: Some(false),
    };
    // The clone itself is started by a client that cannot ask (approved with confirm); the
    // task id outlives that session.
    let (starter, _) = connect(server(&emu, &[]), TASKS).await;
    let (task_id, upid) = start_clone_task(&starter).await;
    starter.cancel().await.unwrap();
    let (client, handler) = connect(server(&emu, &[]), declining).await;
    let err = client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("declined"), "{err}");
    let question = handler.questions.lock().unwrap().clone();
    assert_eq!(question.len(), 1);
    assert!(
        question[0].contains("qmclone") && question[0].contains("pve01"),
        "{question:?}"
    );
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");
    assert!(
        !emu.requests().iter().any(|r| r.method == "DELETE"),
        "nothing stopped"
    );
    client.cancel().await.unwrap();

    // The person approves: the task is stopped, and tasks/get reports the interruption.
    let approving = ClientSetup {
        tasks: true,
        approve: Some(true),
    };
    let (client, _) = connect(server(&emu, &[]), approving).await;
    client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("approved cancel");
    let status = emulator_task_status(&emu, &upid).await;
    assert_eq!(status["status"], "stopped");
    assert_eq!(status["exitstatus"], "interrupted by signal");
    let done = poll_to_end(&client, &task_id, Duration::from_secs(5)).await;
    // A task stopped by a cancel ends `cancelled`, not `completed` with an error.
    assert_eq!(done.task.status(), TaskStatus::Cancelled);
    // Cancelling a task that already ended is acknowledged, sends nothing and asks nobody.
    let deletes_before = emu
        .requests()
        .iter()
        .filter(|r| r.method == "DELETE")
        .count();
    client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect("a finished task's cancel is acknowledged");
    assert_eq!(
        emu.requests()
            .iter()
            .filter(|r| r.method == "DELETE")
            .count(),
        deletes_before
    );
    // A well-formed id of a task Proxmox does not know: invalid params, not an internal error.
    let unknown = task_id.replacen(&task_id[..4], "VVBJ", 1);
    if let Err(err) = client.peer().get_task(GetTaskParams::new(&unknown)).await {
        assert!(
            !err.to_string().contains("-32603"),
            "an unknown task is the caller's error: {err}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_from_a_client_that_cannot_ask_needs_confirm() {
    let emu = emulator_with_pace(Duration::from_secs(5)).await;
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let (task_id, upid) = start_clone_task(&client).await;
    let err = client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("confirm"), "{err}");
    // A refusal of a well-formed request: a server error with the envelope's code, never
    // -32600 Invalid Request (which told ext-tasks clients their request was malformed).
    match &err {
        rmcp::ServiceError::McpError(error) => {
            assert_eq!(error.code.0, -32000, "{error:?}");
            let data = error.data.as_ref().expect("data");
            assert_eq!(data["code"], "CONFIRMATION_REQUIRED", "{error:?}");
        }
        other => panic!("expected the server's refusal, got {other:?}"),
    }
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");

    let mut meta = RequestMetaObject::default();
    meta.0.0.insert("confirm".into(), json!(true));
    let mut params = CancelTaskParams::new(&task_id);
    params.meta = Some(meta);
    client
        .peer()
        .cancel_task(params)
        .await
        .expect("confirmed cancel");
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "stopped");
    client.cancel().await.unwrap();

    // In elicit mode, confirm alone is not enough. (The clone is started through a server in
    // the default mode; the task id is read by any server.)
    let (starter, _) = connect(server(&emu, &[]), TASKS).await;
    let (task_id, upid) = start_clone_task(&starter).await;
    starter.cancel().await.unwrap();
    let (client, _) = connect(server(&emu, &[("PVE_HUMAN_APPROVAL", "elicit")]), TASKS).await;
    let mut meta = RequestMetaObject::default();
    meta.0.0.insert("confirm".into(), json!(true));
    let mut params = CancelTaskParams::new(&task_id);
    params.meta = Some(meta);
    assert!(client.peer().cancel_task(params).await.is_err());
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_expired_task_ids_are_refused() {
    let emu = emulator_with_pace(Duration::from_secs(5)).await;
    let (client, _) = connect(server(&emu, &[("PVE_TASK_TTL_SECS", "1")]), TASKS).await;
    for bad in ["nope", "VVBJRDpwdmUwMQ.1.pve_qemu_clone", ""] {
        let err = client
            .peer()
            .get_task(GetTaskParams::new(bad))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("unknown task id"), "{bad}: {err}");
    }
    let (task_id, _) = start_clone_task(&client).await;
    client
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .expect("fresh id");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let err = client
        .peer()
        .get_task(GetTaskParams::new(&task_id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
    let err = client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
    client.cancel().await.unwrap();
}

/// Valid arguments for a task-starting row against the seeded emulator (101 and 201 run on
/// pve01; 102 and 203 are stopped on pve03).
fn sample_args(spec: &catalog::ToolSpec) -> Value {
    let name = spec.name;
    let lxc = name.contains("lxc");
    let needs_stopped = name.contains("template")
        || name.contains("delete") && !name.contains("snapshot")
        || name.starts_with("pve_start_");
    let creates = name.starts_with("pve_restore") || name.ends_with("_create");
    let mut args = serde_json::Map::new();
    for p in spec.params.iter().filter(|p| p.required && !p.fixed) {
        let value = match p.name {
            "node" if needs_stopped => json!("pve03"),
            "node" => json!("pve01"),
            "vmid" if creates => json!(888),
            "vmid" if needs_stopped && lxc => json!(203),
            "vmid" if needs_stopped => json!(102),
            "vmid" if lxc => json!(201),
            "vmid" => json!(101),
            "newid" => json!(777),
            "snapname" => json!("snap1"),
            "target" => json!("pve02"),
            "disk" => json!("scsi0"),
            "size" => json!("+1G"),
            "archive" if lxc => json!("local:backup/vzdump-lxc-201-2025_11_23-01_00_41.tar.zst"),
            "archive" => json!("local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst"),
            "ostemplate" => json!("local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"),
            "storage" => json!("local"),
            other => panic!("{name}: no sample for {other}"),
        };
        args.insert(p.name.into(), value);
    }
    match name {
        "pve_run_backup" => {
            args.insert("vmid".into(), json!("101"));
        }
        "pve_qemu_clone" => {
            args.insert("full".into(), json!(true));
        }
        "pve_qemu_migrate" => {
            args.insert("online".into(), json!(true));
        }
        "pve_lxc_migrate" => {
            args.insert("restart".into(), json!(true));
        }
        _ => {}
    }
    if spec.can_be_gated() {
        args.insert("confirm".into(), json!(true));
    }
    Value::Object(args)
}

/// A call a row needs first (the snapshot it deletes or rolls back to); a change, so
/// approved with `confirm: true`.
fn prepare(spec: &catalog::ToolSpec) -> Option<(&'static str, Value)> {
    let snapshot = json!({"node": "pve01", "vmid": 101, "snapname": "snap1", "confirm": true});
    let ct_snapshot = json!({"node": "pve01", "vmid": 201, "snapname": "snap1", "confirm": true});
    match spec.name {
        "pve_qemu_delete_snapshot" | "pve_qemu_rollback_snapshot" => {
            Some(("pve_qemu_create_snapshot", snapshot))
        }
        "pve_lxc_delete_snapshot" | "pve_lxc_rollback_snapshot" => {
            Some(("pve_lxc_create_snapshot", ct_snapshot))
        }
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_starting_row_answers_a_upid_from_the_emulator() {
    let rows: Vec<&catalog::ToolSpec> = catalog::all().filter(|s| s.starts_task).collect();
    assert_eq!(rows.len(), 35, "task-starting rows");
    let mut failures = Vec::new();
    for spec in rows {
        // A fresh cluster per row: deleting or migrating a guest must not affect the next.
        let emu = emulator_with_pace(Duration::from_millis(20)).await;
        let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
        if let Some((tool, args)) = prepare(spec) {
            let (is_error, env) = envelope(&client, tool, args).await;
            assert!(!is_error, "{tool}: {env}");
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        let response = client
            .peer()
            .call_tool_once(call(spec.name, sample_args(spec)))
            .await;
        match response {
            Ok(CallToolResponse::Complete(result)) => {
                let env = result.structured_content.unwrap_or_default();
                let upid = env["data"].as_str().unwrap_or_default();
                if !upid.starts_with("UPID:") {
                    failures.push(format!("{}: {env}", spec.name));
                }
            }
            other => failures.push(format!("{}: {other:?}", spec.name)),
        }
        client.cancel().await.unwrap();
        emu.shutdown().await;
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn starts_task_marks_exactly_the_rest_rows_whose_endpoint_returns_a_upid() {
    let endpoints = common::pve_api_endpoints();
    for spec in catalog::all() {
        let Some((method, path)) = spec.backend.method_and_path() else {
            assert!(
                !spec.starts_task,
                "{}: only REST rows start tasks",
                spec.name
            );
            continue;
        };
        // Worker endpoints answer a plain string: the UPID (GETs answer data).
        let returns_upid = method.as_str() != "GET"
            && endpoints[path][method.as_str()]["returns_type"] == "string";
        assert_eq!(
            spec.starts_task, returns_upid,
            "{} ({method} {path})",
            spec.name
        );
    }
}
