//! The Proxmox client's limits toward one cluster, against the emulator over real HTTPS: a burst of
//! calls is queued behind `max_inflight` slots, a call that cannot get a slot before its deadline
//! is refused unsent, a hang is not repeated, and retries stop at the call's deadline.

use std::time::{Duration, Instant};

use futures::future::join_all;
use nandi_proxmox_mcp::pve::{
    ApiRequest, Client, ClientLimits, Connection, DEFAULT_MAX_INFLIGHT, Outcome, PveError, TlsMode,
};
use pve_emulator::{Emulator, EmulatorOptions, Fault, FaultKind};
use tokio_util::sync::CancellationToken;

async fn emulator() -> Emulator {
    Emulator::start(EmulatorOptions::default())
        .await
        .expect("the emulator starts")
}

fn connection(emu: &Emulator) -> Connection {
    let opts = EmulatorOptions::default();
    Connection {
        host: emu.host().to_owned(),
        port: emu.port(),
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: TlsMode::Fingerprint(emu.cert_fingerprint().expect("the emulator serves TLS")),
    }
}

fn client(emu: &Emulator, max_inflight: usize, call_deadline: Duration) -> Client {
    Client::with_limits(
        &connection(emu),
        ClientLimits {
            max_inflight,
            call_deadline,
        },
    )
    .expect("client builds")
}

async fn call(client: &Client, req: ApiRequest) -> Outcome {
    client.call(req, &CancellationToken::new()).await
}

#[tokio::test]
async fn default_limits_bound_a_cluster_to_sixteen_requests() {
    let emu = emulator().await;
    let client = Client::new(&connection(&emu)).expect("client builds");
    assert_eq!(client.limits().max_inflight, DEFAULT_MAX_INFLIGHT);
    assert_eq!(DEFAULT_MAX_INFLIGHT, 16);
    assert_eq!(client.limits().call_deadline, Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_calls_is_queued_behind_the_in_flight_bound() {
    let emu = emulator().await;
    // Warm one connection so the timing below measures queueing, not TLS handshakes.
    let client = client(&emu, 4, Duration::from_secs(30));
    call(&client, ApiRequest::get("/version"))
        .await
        .result
        .expect("warm-up call");
    const CALLS: usize = 24;
    const DELAY: Duration = Duration::from_millis(250);
    emu.arm_fault(Fault::new(FaultKind::Slow(DELAY), CALLS as u32));
    emu.clear_requests();
    let started = Instant::now();
    let outcomes = join_all((0..CALLS).map(|_| call(&client, ApiRequest::get("/version")))).await;
    let elapsed = started.elapsed();
    for outcome in &outcomes {
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert_eq!(outcome.attempts, 1);
    }
    assert_eq!(
        emu.requests().len(),
        CALLS,
        "every queued call was sent once"
    );
    // Four at a time: six rounds of 250 ms at the very least. Unbounded, all 24 would be
    // answered together after one delay.
    let rounds = u32::try_from(CALLS / 4).expect("small");
    assert!(
        elapsed >= DELAY * rounds - Duration::from_millis(50),
        "24 calls of 250 ms finished in {elapsed:?}: more than 4 were in flight"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_gets_no_slot_before_its_deadline_is_not_sent() {
    let emu = emulator().await;
    let client = client(&emu, 1, Duration::from_millis(500));
    emu.arm_fault(Fault::new(FaultKind::Hang, 1));
    let hanging = call(
        &client,
        ApiRequest::get("/version").timeout(Duration::from_millis(1500)),
    );
    let queued = async {
        // Let the hanging call take the only slot first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        let outcome = call(
            &client,
            ApiRequest::get("/nodes").timeout(Duration::from_millis(200)),
        )
        .await;
        (outcome, started.elapsed())
    };
    let (hung, (outcome, waited)) = tokio::join!(hanging, queued);
    assert_eq!(hung.attempts, 1);
    let err = outcome.result.expect_err("no slot was free");
    assert!(
        matches!(err, PveError::Saturated { max_inflight: 1 }),
        "{err:?}"
    );
    assert_eq!(err.code(), "TIMEOUT");
    assert!(err.hint().expect("hint").contains("PVE_MAX_INFLIGHT"));
    assert_eq!(outcome.attempts, 0, "nothing was sent");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    let sent: Vec<String> = emu.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(sent, ["/version"], "the queued call never reached Proxmox");
}

#[tokio::test]
async fn a_hang_is_not_repeated() {
    let emu = emulator().await;
    let client = client(&emu, 16, Duration::from_secs(30));
    emu.arm_fault(Fault::new(FaultKind::Hang, 3));
    let started = Instant::now();
    let outcome = call(
        &client,
        ApiRequest::get("/version").timeout(Duration::from_millis(300)),
    )
    .await;
    assert_eq!(outcome.result.expect_err("hangs").code(), "TIMEOUT");
    assert_eq!(
        outcome.attempts, 1,
        "a read that timed out after sending is final"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(emu.requests().len(), 1);
}

#[tokio::test]
async fn retries_stop_at_the_call_deadline() {
    let emu = emulator().await;
    // The first backoff alone (at least 125 ms) would pass a 100 ms deadline.
    let client = client(&emu, 16, Duration::from_millis(100));
    emu.arm_fault(Fault::new(FaultKind::Status(503), 5));
    let started = Instant::now();
    let outcome = call(
        &client,
        ApiRequest::get("/nodes").timeout(Duration::from_millis(50)),
    )
    .await;
    assert_eq!(
        outcome.result.expect_err("503").code(),
        "PROXMOX_SERVER_ERROR"
    );
    assert_eq!(outcome.attempts, 1, "no retry fits in the deadline");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    emu.clear_faults();

    // A tool's own longer timeout extends the deadline: the same 503s are retried.
    emu.arm_fault(Fault::new(FaultKind::Status(503), 2));
    let outcome = call(
        &client,
        ApiRequest::get("/nodes").timeout(Duration::from_secs(10)),
    )
    .await;
    assert_eq!(outcome.attempts, 3);
    outcome.result.expect("third attempt succeeds");
}

#[tokio::test]
async fn a_refused_connection_is_retried_because_nothing_was_sent() {
    let port = {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let opts = EmulatorOptions::default();
    let conn = Connection {
        host: "127.0.0.1".into(),
        port,
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: TlsMode::Insecure,
    };
    let generous = Client::with_limits(
        &conn,
        ClientLimits {
            max_inflight: 2,
            call_deadline: Duration::from_secs(10),
        },
    )
    .expect("client builds");
    let outcome = call(&generous, ApiRequest::get("/version")).await;
    assert_eq!(
        outcome.result.expect_err("refused").code(),
        "CONNECTION_REFUSED"
    );
    assert_eq!(outcome.attempts, 3);
}
