//! Progress notifications for a clone followed with `wait: true`, over real stdio (the
//! built binary) and over Streamable HTTP, received by an rmcp client: at least two
//! notifications with rising percentages, then the task's exit status and log tail. Also
//! the emulator's default pace (the one `run --demo` uses): a clone shows at least three
//! progress steps within one to two seconds.

use crate::common;
use crate::mcp_tasks_client;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mcp_tasks_client::{ClientSetup, TestClient, envelope, percentages, server};
use nandi_proxmox_mcp::transport::http::{self, HttpSettings};
use pve_emulator::{Emulator, EmulatorOptions};
use rmcp::ServiceExt;
use rmcp::model::ProgressNotificationParam;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::json;

const TOKEN: &str = "progress-test-token-0123456789";

fn clone_with_wait() -> serde_json::Value {
    // A clone is a change: the client cannot ask a person, so the model approves it.
    json!({"node": "pve01", "vmid": 101, "newid": 777, "full": true, "wait": true, "wait_timeout": 30, "confirm": true})
}

/// Checks the transcript: at least two rising percentages ending at 100, each message
/// naming the log line it came from.
fn check_transcript(progress: &[ProgressNotificationParam], transport: &str) {
    eprintln!("--- progress over {transport}:");
    for p in progress {
        eprintln!(
            "progress={} total={:?} message={:?}",
            p.progress,
            p.total,
            p.message.as_deref().unwrap_or("")
        );
    }
    let percents = percentages(progress);
    assert!(percents.len() >= 2, "{transport}: {progress:?}");
    assert!(
        percents.windows(2).all(|w| w[0] < w[1]),
        "{transport}: percentages must rise: {percents:?}"
    );
    assert_eq!(percents.last(), Some(&100.0), "{transport}: {percents:?}");
    assert!(
        progress.iter().filter(|p| p.total.is_some()).all(|p| p
            .message
            .as_deref()
            .unwrap_or("")
            .contains("transferred")),
        "{transport}: {progress:?}"
    );
}

/// The client hands notifications to its handler on their own tasks, so the last one may
/// be recorded just after the response: wait for it briefly.
async fn settled(handler: &TestClient) -> Vec<ProgressNotificationParam> {
    for _ in 0..40 {
        if percentages(&handler.progress()).last() == Some(&100.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    handler.progress()
}

fn check_result(is_error: bool, env: &serde_json::Value) {
    assert!(!is_error, "{env}");
    let data = &env["data"];
    assert_eq!(data["exitstatus"], "OK", "{env}");
    assert_eq!(data["status"], "stopped");
    assert_eq!(
        data["logTail"].as_array().unwrap().last(),
        Some(&json!("TASK OK"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_reports_rising_percentages_over_stdio() {
    let emu = Emulator::start(EmulatorOptions::default())
        .await
        .expect("emulator");
    let mut command = tokio::process::Command::new(common::binary());
    command.env_clear();
    command.env("PATH", std::env::var("PATH").unwrap_or_default());
    command.env("RUST_LOG", "warn");
    let home = tempfile::tempdir().unwrap();
    command.env("HOME", home.path()).current_dir(home.path());
    for (k, v) in common::with_policy(common::env_for(&emu), common::FULL_ADVANCED) {
        command.env(k, v);
    }
    let transport = TokioChildProcess::new(command).expect("spawn");
    let handler = TestClient::new(ClientSetup::default());
    let client = handler.clone().serve(transport).await.expect("initialize");
    let started = Instant::now();
    let (is_error, env) = envelope(&client, "pve_qemu_clone", clone_with_wait()).await;
    let took = started.elapsed();
    check_result(is_error, &env);
    check_transcript(&settled(&handler).await, "stdio");
    // The default pace: at least three steps, over one to two seconds.
    assert!(percentages(&handler.progress()).len() >= 3);
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_millis(3000),
        "{took:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clone_reports_rising_percentages_over_http() {
    let emu = Emulator::start(EmulatorOptions {
        progress_pace: Duration::from_millis(250),
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator");
    let vars: HashMap<String, String> = HashMap::from([
        ("MCP_PORT".to_owned(), "0".to_owned()),
        ("MCP_AUTH_TOKEN".to_owned(), TOKEN.to_owned()),
    ]);
    let settings = HttpSettings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    let running = http::start(server(&emu, &[]), settings)
        .await
        .expect("http");
    let url = format!("http://{}/mcp", running.local_addr());
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).auth_header(TOKEN),
    );
    let handler = TestClient::new(ClientSetup::default());
    let client = handler.clone().serve(transport).await.expect("initialize");
    let (is_error, env) = envelope(&client, "pve_qemu_clone", clone_with_wait()).await;
    check_result(is_error, &env);
    check_transcript(&settled(&handler).await, "http");
    client.cancel().await.unwrap();
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_answered_as_an_mcp_task_still_sends_progress() {
    let emu = mcp_tasks_client::emulator_with_pace(Duration::from_millis(150)).await;
    let setup = ClientSetup {
        tasks: true,
        approve: None,
    };
    let (client, handler) = mcp_tasks_client::connect(server(&emu, &[]), setup).await;
    let response = mcp_tasks_client::call_once(
        &client,
        "pve_run_backup",
        json!({"node": "pve01", "vmid": "101", "confirm": true}),
    )
    .await;
    let rmcp::model::CallToolResponse::Task(created) = response else {
        panic!("expected a task: {response:?}");
    };
    let done =
        mcp_tasks_client::poll_to_end(&client, &created.task.task_id, Duration::from_secs(10))
            .await;
    assert_eq!(
        mcp_tasks_client::completed_result(&done)["structuredContent"]["data"]["exitstatus"],
        "OK"
    );
    // The follower may still be sending its last notification.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let percents = percentages(&handler.progress());
    assert!(percents.len() >= 2, "{:?}", handler.progress());
    assert!(percents.windows(2).all(|w| w[0] < w[1]), "{percents:?}");
    client.cancel().await.unwrap();
}
