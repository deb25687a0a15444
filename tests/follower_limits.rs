//! Task followers and waiters are bounded: waits beyond a session's cap are refused with
//! `TOO_MANY_WAITS` before any request, sessions together stay under the process cap, MCP
//! tasks beyond the cap still get their id and are read only on `tasks/get`, and once the
//! client is gone the emulator sees no more task polls.
//!
//! Counts, not timings, are asserted, with generous waits (the test machine is shared).
//! The `#[ignore]`d `bench_*` tests are the load measurement behind docs/PERFORMANCE.md
//! (`scripts/bench-followers` runs them); they use only what main's code also has, so the
//! same file measures the code before and after.

// Its own crate, not a module of tests/it: the follower caps are process-wide and these
// tests assert exact counts against them, which another test's followers in the same
// process would change (docs/TESTING.md).
#[path = "it/common/mod.rs"]
mod common;
#[path = "it/mcp_tasks_client/mod.rs"]
mod mcp_tasks_client;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use mcp_tasks_client::{Client, ClientSetup, as_task, call, call_for, connect, pve_client, server};
use nandi_proxmox_mcp::pve;
use pve_emulator::{Emulator, EmulatorOptions};
use rmcp::model::{CallToolResponse, GetTaskParams, TaskStatus};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The caps under test (tests cannot read the crate's private numbers through a client).
const SESSION_CAP: usize = 16;
const PROCESS_CAP: usize = 64;

/// Serializes the tests of this file: the process cap is shared by every in-process server.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const TASKS: ClientSetup = ClientSetup {
    tasks: true,
    approve: None,
};

/// An emulator whose tasks keep running for an hour, so followers keep polling.
async fn long_task_emulator() -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_secs(3_600),
        progress_pace: Duration::from_secs(900),
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator starts")
}

/// Starts `n` clones straight on the emulator (not through MCP) and returns their UPIDs.
async fn start_tasks(emu: &Emulator, n: u32, first_newid: u32) -> Vec<String> {
    let client = pve_client(emu);
    let cancel = CancellationToken::new();
    let mut upids = Vec::new();
    for newid in first_newid..first_newid + n {
        let request =
            pve::ApiRequest::post("/nodes/pve01/qemu/101/clone").param("newid", newid.to_string());
        // The test's own setup, as an operator would: cleared for anything.
        let data = nandi_proxmox_mcp::effects::with_clearance(
            nandi_proxmox_mcp::effects::EffectSet::ANY,
            None,
            client.call(request, &cancel),
        )
        .await
        .result
        .expect("clone starts");
        upids.push(data.as_str().expect("a UPID").to_owned());
    }
    upids
}

/// Requests the emulator received during `window`, read in slices short enough that its
/// log (the newest 4096) never overflows: (all, task status reads, task log reads, distinct
/// tasks whose status was read).
async fn count_requests(emu: &Emulator, window: Duration) -> (usize, usize, usize, usize) {
    const SLICE: Duration = Duration::from_millis(250);
    emu.clear_requests();
    let (mut all, mut status, mut log) = (0, 0, 0);
    let mut tasks = HashSet::new();
    let end = Instant::now() + window;
    while Instant::now() < end {
        tokio::time::sleep(SLICE).await;
        let seen = emu.requests();
        emu.clear_requests();
        all += seen.len();
        for request in seen.iter().filter(|r| r.path.contains("/tasks/")) {
            if request.path.ends_with("/status") {
                status += 1;
                tasks.insert(request.path.clone());
            } else if request.path.ends_with("/log") {
                log += 1;
            }
        }
    }
    (all, status, log, tasks.len())
}

/// Runs `pve_wait_task` on every UPID at once from one client; the answers come back
/// through the returned set (refusals at once, running waits at their timeout).
async fn spawn_waits(
    client: &Client,
    upids: &[String],
    timeout: u64,
) -> tokio::task::JoinSet<(bool, Value)> {
    let mut set = tokio::task::JoinSet::new();
    for upid in upids {
        let peer = client.peer().clone();
        let args = json!({"node": "pve01", "upid": upid, "timeout": timeout});
        set.spawn(async move {
            match peer.call_tool_once(call("pve_wait_task", args)).await {
                Ok(CallToolResponse::Complete(result)) => (
                    result.is_error.unwrap_or(false),
                    result.structured_content.unwrap_or(Value::Null),
                ),
                other => (true, json!({"transport": format!("{other:?}")})),
            }
        });
    }
    set
}

/// Collects the answers that arrive within `within` (refusals come at once; running waits
/// do not answer before their timeout).
async fn answered(
    set: &mut tokio::task::JoinSet<(bool, Value)>,
    within: Duration,
) -> Vec<(bool, Value)> {
    let mut answers = Vec::new();
    let end = tokio::time::Instant::now() + within;
    while let Ok(Some(Ok(answer))) = tokio::time::timeout_at(end, set.join_next()).await {
        answers.push(answer);
    }
    answers
}

/// Waits until the emulator sees no task status read for 3 s in a row (at most `limit`);
/// returns how long that took.
async fn quiet_after(emu: &Emulator, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let (_, status, _, _) = count_requests(emu, Duration::from_secs(3)).await;
        if status == 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "task status still polled {status} times in 3 s, {:?} after the client left",
            started.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_beyond_the_session_cap_are_refused_and_end_with_the_client() {
    let _serial = SERIAL.lock().await;
    let emu = long_task_emulator().await;
    let upids = start_tasks(&emu, 100, 3000).await;
    // The tier where an outside caller first reaches this: read-only.
    let (client, _) = connect(
        server(&emu, &[("PVE_ACCESS_TIER", "read-only")]),
        ClientSetup::default(),
    )
    .await;
    let mut waits = spawn_waits(&client, &upids, 600).await;
    let refusals = answered(&mut waits, Duration::from_secs(20)).await;
    assert_eq!(refusals.len(), 100 - SESSION_CAP, "{refusals:?}");
    for (is_error, env) in &refusals {
        assert!(is_error, "{env}");
        assert_eq!(env["error"]["code"], "TOO_MANY_WAITS", "{env}");
        assert_eq!(env["error"]["details"]["scope"], "session", "{env}");
        assert_eq!(env["error"]["details"]["started"], false, "{env}");
        let hint = env["error"]["hint"].as_str().unwrap_or_default();
        assert!(hint.contains("pve_get_task_status"), "{env}");
    }
    // Only the waits that run poll, and they back off.
    let (_, status, _, tasks) = count_requests(&emu, Duration::from_secs(3)).await;
    assert!(tasks <= SESSION_CAP, "{tasks} tasks polled");
    assert!(status <= SESSION_CAP * 12, "{status} status reads in 3 s");

    // The client goes away: its waits stop polling.
    client.cancel().await.expect("client closes");
    let took = quiet_after(&emu, Duration::from_secs(30)).await;
    eprintln!("waits stopped polling {took:?} after the client left");
    waits.abort_all();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_true_beyond_the_cap_says_the_task_started_and_is_not_waited_for() {
    let _serial = SERIAL.lock().await;
    let emu = long_task_emulator().await;
    let upids = start_tasks(&emu, SESSION_CAP as u32, 3500).await;
    let (client, _) = connect(server(&emu, &[]), ClientSetup::default()).await;
    let mut waits = spawn_waits(&client, &upids, 600).await;
    assert!(
        answered(&mut waits, Duration::from_secs(3))
            .await
            .is_empty()
    );
    let args = json!({"node": "pve01", "vmid": 101, "newid": 3600, "full": true, "wait": true, "confirm": true});
    let response = client
        .peer()
        .call_tool_once(call_for(&client, "pve_qemu_clone", args))
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(result) = response else {
        panic!("expected a complete result: {response:?}");
    };
    let env = result.structured_content.expect("structured content");
    assert_eq!(result.is_error, Some(true), "{env}");
    assert_eq!(env["error"]["code"], "TOO_MANY_WAITS", "{env}");
    assert_eq!(env["error"]["details"]["started"], true, "{env}");
    let upid = env["error"]["details"]["upid"].as_str().unwrap_or_default();
    assert!(upid.contains(":qmclone:101:"), "{env}");
    let message = env["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Do not start it again"), "{env}");
    client.cancel().await.expect("client closes");
    quiet_after(&emu, Duration::from_secs(30)).await;
    waits.abort_all();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_together_stay_under_the_process_cap() {
    let _serial = SERIAL.lock().await;
    let emu = long_task_emulator().await;
    let sessions = 5;
    let upids = start_tasks(&emu, (sessions * SESSION_CAP) as u32, 4000).await;
    let shared = server(&emu, &[("PVE_ACCESS_TIER", "read-only")]);
    let mut clients = Vec::new();
    let mut sets = Vec::new();
    for chunk in upids.chunks(SESSION_CAP) {
        let (client, _) = connect(shared.clone(), ClientSetup::default()).await;
        sets.push(spawn_waits(&client, chunk, 600).await);
        clients.push(client);
    }
    let mut refusals = Vec::new();
    for set in &mut sets {
        refusals.extend(answered(set, Duration::from_secs(5)).await);
    }
    assert_eq!(
        refusals.len(),
        sessions * SESSION_CAP - PROCESS_CAP,
        "{refusals:?}"
    );
    for (_, env) in &refusals {
        assert_eq!(env["error"]["code"], "TOO_MANY_WAITS", "{env}");
        assert_eq!(env["error"]["details"]["scope"], "server", "{env}");
    }
    let (_, _, _, tasks) = count_requests(&emu, Duration::from_secs(4)).await;
    assert!(tasks <= PROCESS_CAP, "{tasks} tasks polled");
    for client in clients {
        client.cancel().await.expect("client closes");
    }
    quiet_after(&emu, Duration::from_secs(30)).await;
    for set in &mut sets {
        set.abort_all();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tasks_beyond_the_cap_keep_their_id_and_are_read_on_tasks_get() {
    let _serial = SERIAL.lock().await;
    let emu = long_task_emulator().await;
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let mut task_ids = Vec::new();
    for newid in 5000..5040 {
        let args =
            json!({"node": "pve01", "vmid": 101, "newid": newid, "full": true, "confirm": true});
        match client
            .peer()
            .call_tool_once(call_for(&client, "pve_qemu_clone", args))
            .await
        {
            Ok(CallToolResponse::Task(created)) => {
                assert_eq!(created.task.status, TaskStatus::Working);
                task_ids.push(created.task.task_id);
            }
            other => panic!("expected a task: {other:?}"),
        }
    }
    assert_eq!(task_ids.len(), 40);
    let (_, status, log, tasks) = count_requests(&emu, Duration::from_secs(3)).await;
    assert!(
        tasks <= SESSION_CAP,
        "{tasks} tasks followed in the background"
    );
    assert!(
        status + log <= SESSION_CAP * 24,
        "{status} + {log} reads in 3 s"
    );
    // The last task has no follower; tasks/get still reads it.
    let last = task_ids.last().expect("a task");
    let got = client
        .peer()
        .get_task(GetTaskParams::new(last))
        .await
        .expect("tasks/get");
    assert_eq!(got.task.status(), TaskStatus::Working);

    client.cancel().await.expect("client closes");
    quiet_after(&emu, Duration::from_secs(30)).await;
}

// ---- Load measurement (scripts/bench-followers; docs/PERFORMANCE.md) ----

/// Prints the request rate of one 10 s window.
fn print_window(
    label: &str,
    window: &str,
    (all, status, log, tasks): (usize, usize, usize, usize),
) {
    println!(
        "BENCH {label} {window}: {:.1} requests/s (status {:.1}/s, log {:.1}/s), {tasks} tasks polled",
        all as f64 / 10.0,
        status as f64 / 10.0,
        log as f64 / 10.0,
    );
}

/// Measures while `load` starts (0-10 s from its start), the two next 10 s windows, then
/// the 10 s after `client` left.
async fn measure<F: std::future::Future<Output = String>>(
    emu: &Emulator,
    client: Client,
    label: &str,
    load: F,
) {
    let ten = Duration::from_secs(10);
    let (note, first) = tokio::join!(load, count_requests(emu, ten));
    println!("BENCH {label}: {note}");
    print_window(label, "0-10 s", first);
    print_window(label, "10-20 s", count_requests(emu, ten).await);
    print_window(label, "20-30 s", count_requests(emu, ten).await);
    client.cancel().await.expect("client closes");
    let (_, status, _, _) = count_requests(emu, ten).await;
    println!("BENCH {label}, client gone: {status} status reads in the 10 s after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load measurement; run by scripts/bench-followers"]
async fn bench_300_task_starts() {
    let _serial = SERIAL.lock().await;
    let emu = long_task_emulator().await;
    let (client, _) = connect(server(&emu, &[]), TASKS).await;
    let peer = client.peer().clone();
    let load = async move {
        let started = Instant::now();
        let mut tasks = 0;
        for newid in 6000..6300 {
            let args = json!({"node": "pve01", "vmid": 101, "newid": newid, "full": true, "confirm": true});
            if let Ok(CallToolResponse::Task(_)) = peer
                .call_tool_once(as_task(call("pve_qemu_clone", args)))
                .await
            {
                tasks += 1;
            }
        }
        format!(
            "{tasks} of 300 answered as MCP tasks in {:?}",
            started.elapsed()
        )
    };
    measure(&emu, client, "300 task starts", load).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load measurement; run by scripts/bench-followers"]
async fn bench_100_concurrent_waits() {
    let _serial = SERIAL.lock().await;
    let emu = long_task_emulator().await;
    let upids = start_tasks(&emu, 100, 7000).await;
    let (client, _) = connect(
        server(&emu, &[("PVE_ACCESS_TIER", "read-only")]),
        ClientSetup::default(),
    )
    .await;
    let mut waits = spawn_waits(&client, &upids, 86_400).await;
    let load = async {
        let refused = answered(&mut waits, Duration::from_secs(2)).await.len();
        format!("{refused} of 100 answered at once (refused)")
    };
    measure(&emu, client, "100 concurrent waits", load).await;
    waits.abort_all();
}
