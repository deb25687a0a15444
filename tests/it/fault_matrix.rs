//! The fault matrix: every emulator fault × (read, write), through the whole server, checked
//! for the error code, `isError`, a hint, the attempts made, and that the next call works;
//! plus Proxmox going away mid-session and coming back.
//!
//! Invariant guarded: a failure always reaches the caller as a flagged envelope with a stable
//! code and a hint, a write is never sent twice, and the server recovers once Proxmox does.
//!
//! Rows marked `RETRY_POLICY` encode the intended retry policy (retry only failures whose
//! request was never sent, and 502/503/504; report the attempts): on the policy in force when
//! the matrix was written, reads are retried after any transient failure, so those rows fail
//! there. The policy has landed, so they run with the rest.
//! SSH is not in the matrix: the faults are the REST emulator's, and an SSH call's REST part
//! (node address lookup) is the read row.

use crate::fuzz_harness;

use std::sync::Arc;
use std::time::Duration;

use pve_emulator::{Fault, FaultKind};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

/// Which kind of call a row makes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    /// `pve_list_nodes`: `GET /nodes`, retried by the client when the policy allows.
    Read,
    /// `pve_qemu_update_config`: `PUT /nodes/pve01/qemu/101/config`, never retried.
    Write,
}

impl Op {
    fn tool(self) -> (&'static str, Value) {
        match self {
            Op::Read => ("pve_list_nodes", json!({})),
            Op::Write => (
                "pve_qemu_update_config",
                json!({"node": "pve01", "vmid": 101, "description": "fault matrix", "confirm": true}),
            ),
        }
    }
}

/// One row: the fault, the call, and what the caller must see.
struct Row {
    fault: FaultKind,
    op: Op,
    /// `None`: the call succeeds despite the fault (slow, empty 200).
    code: Option<&'static str>,
    attempts: u32,
}

const fn row(fault: FaultKind, op: Op, code: Option<&'static str>, attempts: u32) -> Row {
    Row {
        fault,
        op,
        code,
        attempts,
    }
}

/// Rows that hold on the retry policy in force and the intended one alike.
fn stable_rows() -> Vec<Row> {
    use FaultKind::*;
    use Op::*;
    let mut rows = Vec::new();
    for op in [Read, Write] {
        rows.push(row(Status(401), op, Some("PROXMOX_AUTH_FAILED"), 1));
        rows.push(row(Status(403), op, Some("PROXMOX_ACL_FORBIDDEN"), 1));
        rows.push(row(Status(404), op, Some("PROXMOX_NOT_FOUND"), 1));
        rows.push(row(Status(400), op, Some("PROXMOX_REQUEST_REJECTED"), 1));
        rows.push(row(Status(501), op, Some("PROXMOX_REQUEST_REJECTED"), 1));
        rows.push(row(BadJson, op, Some("PROXMOX_INVALID_RESPONSE"), 1));
        rows.push(row(Slow(Duration::from_millis(300)), op, None, 1));
        rows.push(row(EmptyBody(200), op, None, 1));
    }
    // Gateway failures: a read is retried to the limit, a write never.
    for status in [502, 503, 504] {
        rows.push(row(Status(status), Read, Some("PROXMOX_SERVER_ERROR"), 3));
        rows.push(row(Status(status), Write, Some("PROXMOX_SERVER_ERROR"), 1));
        rows.push(row(
            EmptyBody(status),
            Read,
            Some("PROXMOX_SERVER_ERROR"),
            3,
        ));
        rows.push(row(
            EmptyBody(status),
            Write,
            Some("PROXMOX_SERVER_ERROR"),
            1,
        ));
    }
    rows.push(row(HtmlProxy, Read, Some("PROXMOX_SERVER_ERROR"), 3));
    rows.push(row(HtmlProxy, Write, Some("PROXMOX_SERVER_ERROR"), 1));
    rows.push(row(Status(500), Write, Some("PROXMOX_SERVER_ERROR"), 1));
    rows.push(row(Reset, Write, Some("CONNECTION_RESET"), 1));
    rows
}

/// RETRY_POLICY: rows whose expected attempts follow the intended policy — the request was
/// sent and the answer is not 502/503/504, so a read is not repeated.
fn retry_policy_rows() -> Vec<Row> {
    vec![
        row(
            FaultKind::Status(500),
            Op::Read,
            Some("PROXMOX_SERVER_ERROR"),
            1,
        ),
        row(FaultKind::Reset, Op::Read, Some("CONNECTION_RESET"), 1),
    ]
}

/// Runs `rows` against one server; returns a description of each row that failed.
async fn run_rows(rows: &[Row]) -> Vec<String> {
    let server =
        fuzz_harness::serve(fuzz_harness::emulator().await, fuzz_harness::EVERYTHING).await;
    let mut failures = Vec::new();
    for row in rows {
        let label = format!("{:?} × {:?}", row.fault, row.op);
        server.emulator.clear_faults();
        server
            .emulator
            .arm_fault(Fault::new(row.fault.clone(), 100));
        server.emulator.clear_requests();
        let (tool, args) = row.op.tool();
        let result =
            fuzz_harness::call(&server.client, tool, args.clone(), Duration::from_secs(90))
                .await
                .unwrap_or_else(|e| panic!("{label}: {e}"));
        // A write is counted by its non-GET requests: the undo record's plain reads of the
        // config go with it, and a failed one only makes the record say it cannot revert.
        let sent = server
            .emulator
            .requests()
            .iter()
            .filter(|r| row.op == Op::Read || r.method != "GET")
            .count() as u32;
        server.emulator.clear_faults();
        let envelope = fuzz_harness::envelope(&result);
        let attempts = envelope["meta"]["retries"].as_u64().unwrap_or(99) as u32 + 1;
        let mut problems = Vec::new();
        match row.code {
            Some(code) => {
                if result.is_error != Some(true) {
                    problems.push("isError is not true".to_owned());
                }
                if envelope["error"]["code"] != code {
                    problems.push(format!("code {} (want {code})", envelope["error"]["code"]));
                }
                if envelope["error"]["hint"].as_str().is_none_or(str::is_empty) {
                    problems.push("no hint".to_owned());
                }
            }
            None if result.is_error != Some(false) => {
                problems.push(format!("expected success: {envelope}"));
            }
            None => {}
        }
        if attempts != row.attempts || sent != row.attempts {
            problems.push(format!(
                "{attempts} attempts reported, {sent} requests received (want {})",
                row.attempts
            ));
        }
        if row.fault == FaultKind::Status(400)
            && envelope["error"]["details"]["errors"]["vmid"].is_null()
        {
            problems.push(format!("400 without details.errors.vmid: {envelope}"));
        }
        // The next call works.
        let next = fuzz_harness::call(&server.client, tool, args, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("{label}, next call: {e}"));
        if next.is_error != Some(false) {
            let env = fuzz_harness::envelope(&next);
            problems.push(format!("next call failed: {}", env["error"]));
        }
        if !problems.is_empty() {
            failures.push(format!("{label}: {}", problems.join("; ")));
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_by_read_and_write() {
    let rows = stable_rows();
    let failures = run_rows(&rows).await;
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_policy_rows_follow_the_intended_policy() {
    let rows = retry_policy_rows();
    let failures = run_rows(&rows).await;
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// A hung Proxmox: the call ends with TIMEOUT after the 15 s attempt limit; a write is sent
/// once. The read row is RETRY_POLICY (a sent request is not repeated): it is its own test,
/// `a_hung_read_is_not_repeated`, run with the rest like the other policy rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_proxmox_times_out_and_a_write_is_sent_once() {
    let failures = run_rows(&[row(FaultKind::Hang, Op::Write, Some("TIMEOUT"), 1)]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_read_is_not_repeated() {
    let failures = run_rows(&[row(FaultKind::Hang, Op::Read, Some("TIMEOUT"), 1)]).await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A TCP forwarder in front of the emulator that can be taken down and brought back on the
/// same port, as pveproxy restarting looks from the client.
struct Switch {
    port: u16,
    upstream: u16,
    running: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Switch {
    async fn new(upstream: u16) -> Arc<Switch> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let switch = Arc::new(Switch {
            port,
            upstream,
            running: Mutex::new(None),
        });
        switch.serve(listener).await;
        switch
    }

    async fn serve(&self, listener: TcpListener) {
        let upstream = self.upstream;
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", upstream)).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        *self.running.lock().await = Some(task);
    }

    /// Closes the listener and every forwarded connection.
    async fn down(&self) {
        if let Some(task) = self.running.lock().await.take() {
            task.abort();
            let _ = task.await;
        }
    }

    async fn up(&self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .expect("rebind the same port");
        self.serve(listener).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxmox_going_away_mid_session_and_coming_back() {
    let emulator = fuzz_harness::emulator().await;
    let switch = Switch::new(emulator.port()).await;
    let mut connection = fuzz_harness::connection_for(&emulator);
    connection.port = switch.port;
    let pve = nandi_proxmox_mcp::pve::Client::new(&connection).expect("client");
    let client = fuzz_harness::serve_with(Some(pve), fuzz_harness::EVERYTHING).await;
    let call = |tool: &'static str, args: Value| {
        let client = &client;
        async move {
            let result = fuzz_harness::call(client, tool, args, Duration::from_secs(60))
                .await
                .expect("a result");
            (result.is_error, fuzz_harness::envelope(&result))
        }
    };
    let write = json!({"node": "pve01", "vmid": 101, "description": "back", "confirm": true});
    assert_eq!(call("pve_list_nodes", json!({})).await.0, Some(false));

    switch.down().await;
    // A pooled keep-alive connection can be cut under the first request (reset: it was sent,
    // so it is not repeated); a fresh connection is refused (never sent: retried).
    let (is_error, read) = call("pve_list_nodes", json!({})).await;
    assert_eq!(is_error, Some(true), "{read}");
    assert!(read["error"]["hint"].is_string());
    match read["error"]["code"].as_str() {
        Some("CONNECTION_REFUSED") => {
            assert_eq!(
                read["meta"]["retries"], 2,
                "a refused read is retried: {read}"
            )
        }
        Some("CONNECTION_RESET") => {
            assert_eq!(
                read["meta"]["retries"], 0,
                "a sent read is not repeated: {read}"
            )
        }
        other => panic!("unexpected code {other:?}: {read}"),
    }
    emulator.clear_requests();
    let (is_error, written) = call("pve_qemu_update_config", write.clone()).await;
    assert_eq!(is_error, Some(true), "{written}");
    let code = written["error"]["code"].as_str().unwrap_or("");
    assert!(
        code == "CONNECTION_REFUSED" || code == "CONNECTION_RESET",
        "{written}"
    );
    assert_eq!(
        written["meta"]["retries"], 0,
        "a write is tried once: {written}"
    );
    assert!(emulator.requests().is_empty(), "nothing reached Proxmox");

    switch.up().await;
    let (is_error, read) = call("pve_list_nodes", json!({})).await;
    assert_eq!(is_error, Some(false), "back: {read}");
    let (is_error, written) = call("pve_qemu_update_config", write).await;
    assert_eq!(is_error, Some(false), "back: {written}");
    assert_eq!(
        emulator
            .requests()
            .iter()
            .filter(|r| r.method == "PUT")
            .count(),
        1
    );
}
