//! `wait: true` on a task-starting tool and `pve_wait_task`, for clients without the tasks
//! extension: success (exit status and log tail), a failed task (`isError`, `TASK_FAILED`),
//! a timeout (`TASK_WAIT_TIMEOUT`, the task keeps running), and MCP cancellation (the wait
//! stops, the Proxmox task keeps running and nothing is stopped). `wait`/`wait_timeout`
//! never reach Proxmox.

use crate::mcp_tasks_client;

use std::time::Duration;

use mcp_tasks_client::{
    ClientSetup, call, connect, emulator_task_status, emulator_with_pace, envelope, server,
};
use rmcp::model::{CallToolRequest, ClientRequest, ServerResult};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

/// Clone arguments plus `extra`. A clone is a change: these clients cannot ask a person,
/// so the model approves it with `confirm: true`.
fn clone(newid: u32, extra: Value) -> Value {
    let mut args =
        json!({"node": "pve01", "vmid": 101, "newid": newid, "full": true, "confirm": true});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_true_returns_the_end_of_the_task_and_sends_no_control_argument() {
    let emu = emulator_with_pace(Duration::from_millis(100)).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    let (is_error, env) = envelope(
        &client,
        "pve_qemu_clone",
        clone(701, json!({"wait": true, "wait_timeout": 20})),
    )
    .await;
    assert!(!is_error, "{env}");
    assert_eq!(env["data"]["exitstatus"], "OK");
    assert_eq!(env["data"]["succeeded"], true);
    assert_eq!(env["data"]["type"], "qmclone");
    let post = emu
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path.ends_with("/clone"))
        .expect("clone request");
    assert!(
        post.form
            .iter()
            .all(|(k, _)| k != "wait" && k != "wait_timeout"),
        "{:?}",
        post.form
    );
    // Bad control values are refused before any request.
    emu.clear_requests();
    for bad in [
        json!({"wait": "yes"}),
        json!({"wait": true, "wait_timeout": 0}),
    ] {
        let (is_error, env) = envelope(&client, "pve_qemu_clone", clone(702, bad)).await;
        assert!(is_error);
        assert_eq!(env["error"]["code"], "TOOL_INPUT_REJECTED", "{env}");
    }
    assert!(emu.requests().is_empty());
    // Tools that start no task do not take `wait`.
    let (is_error, env) = envelope(&client, "pve_list_nodes", json!({"wait": true})).await;
    assert!(is_error, "{env}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_task_follows_a_started_task_to_its_end() {
    let emu = emulator_with_pace(Duration::from_millis(100)).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    let (_, env) = envelope(&client, "pve_qemu_clone", clone(703, json!({}))).await;
    let upid = env["data"].as_str().unwrap().to_owned();
    let (is_error, env) = envelope(
        &client,
        "pve_wait_task",
        json!({"node": "pve01", "upid": upid, "timeout": 20}),
    )
    .await;
    assert!(!is_error, "{env}");
    assert_eq!(env["data"]["exitstatus"], "OK");
    assert_eq!(env["data"]["upid"], upid.as_str());
    let tail = env["data"]["logTail"].as_array().unwrap();
    assert_eq!(tail.last(), Some(&json!("TASK OK")));
    assert!(tail.contains(&json!("transferred 32.0 GiB of 32.0 GiB (100.00%)")));
    // The log was read page by page from its start: the header is in the tail too.
    assert!(
        tail.iter()
            .any(|l| l.as_str().unwrap().starts_with("create full clone"))
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_is_an_error_with_its_exit_status_and_log() {
    let emu = emulator_with_pace(Duration::from_millis(50)).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    emu.fail_tasks("qmclone", "clone failed: no space left on device");
    let (is_error, env) =
        envelope(&client, "pve_qemu_clone", clone(704, json!({"wait": true}))).await;
    assert!(is_error, "{env}");
    assert_eq!(env["error"]["code"], "TASK_FAILED");
    assert_eq!(
        env["error"]["details"]["exitstatus"],
        "clone failed: no space left on device"
    );
    assert_eq!(
        env["error"]["details"]["logTail"]
            .as_array()
            .unwrap()
            .last(),
        Some(&json!("TASK ERROR: clone failed: no space left on device"))
    );

    emu.fail_tasks("qmclone", "clone failed: storage 'local-lvm' is locked");
    let (_, started) = envelope(&client, "pve_qemu_clone", clone(705, json!({}))).await;
    let upid = started["data"].as_str().unwrap();
    let (is_error, env) = envelope(
        &client,
        "pve_wait_task",
        json!({"node": "pve01", "upid": upid}),
    )
    .await;
    assert!(is_error, "{env}");
    assert_eq!(env["error"]["code"], "TASK_FAILED");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_times_out_leaves_the_task_running() {
    let emu = emulator_with_pace(Duration::from_secs(3)).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    let (is_error, env) = envelope(
        &client,
        "pve_qemu_clone",
        clone(706, json!({"wait": true, "wait_timeout": 1})),
    )
    .await;
    assert!(is_error, "{env}");
    assert_eq!(env["error"]["code"], "TASK_WAIT_TIMEOUT");
    let upid = env["error"]["details"]["upid"].as_str().unwrap().to_owned();
    assert_eq!(env["error"]["details"]["status"], "running");
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");

    let (is_error, env) = envelope(
        &client,
        "pve_wait_task",
        json!({"node": "pve01", "upid": upid, "timeout": 1}),
    )
    .await;
    assert!(is_error, "{env}");
    assert_eq!(env["error"]["code"], "TASK_WAIT_TIMEOUT");
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");
    assert!(!emu.requests().iter().any(|r| r.method == "DELETE"));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_mcp_request_stops_the_wait_not_the_task() {
    let emu = emulator_with_pace(Duration::from_secs(3)).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(call(
        "pve_qemu_clone",
        clone(707, json!({"wait": true, "wait_timeout": 60})),
    )));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    // Let the clone start and the wait begin (bounded: a refused call must fail, not hang).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let upid = loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the clone never started: {:?}",
            emu.requests()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = emu
            .requests()
            .into_iter()
            .any(|r| r.method == "POST" && r.path.ends_with("/clone"));
        let polled = emu.requests().into_iter().find(|r| {
            r.method == "GET" && r.path.ends_with("/status") && r.path.contains("qmclone")
        });
        if let (true, Some(poll)) = (started, polled) {
            let upid = poll
                .path
                .trim_end_matches("/status")
                .rsplit_once("/tasks/")
                .unwrap()
                .1
                .to_owned();
            break upid;
        }
    };
    handle
        .cancel(Some("user pressed stop".into()))
        .await
        .expect("cancel sent");
    tokio::time::sleep(Duration::from_millis(600)).await;
    emu.clear_requests();
    tokio::time::sleep(Duration::from_millis(600)).await;
    // The follower stopped polling, and the Proxmox task is still running.
    assert!(
        !emu.requests().iter().any(|r| r.path.contains("/tasks/")),
        "{:?}",
        emu.requests()
    );
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");
    // And the session still works.
    let result = client
        .peer()
        .send_request(ClientRequest::CallToolRequest(CallToolRequest::new(call(
            "pve_list_nodes",
            json!({}),
        ))))
        .await
        .expect("session alive");
    assert!(matches!(result, ServerResult::CallToolResult(_)));
    client.cancel().await.unwrap();
}
