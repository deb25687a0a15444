//! The Proxmox REST client against the in-process emulator over real HTTPS on 127.0.0.1.
//!
//! Guards the client's contract end to end: the exact token header, `data` unwrapping, Proxmox's
//! error detail kept, each fault mapped to its stable code, the retry rules (reads only, 502-504
//! and never-sent failures only, at most three attempts), every TLS mode, prompt cancellation,
//! and that the token secret never shows up in `Debug` output or error text.

use std::time::{Duration, Instant};

use nandi_proxmox_mcp::effects::{EffectSet, with_clearance};
use nandi_proxmox_mcp::pve::{
    ApiRequest, Client, Connection, Method, Outcome, PveError, RetryPolicy, TlsMode, Upid,
    encode_path_segment,
};
use pve_emulator::{Emulator, EmulatorOptions, Fault, FaultKind};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "emulator-secret-token";

async fn emulator() -> Emulator {
    Emulator::start(EmulatorOptions::default())
        .await
        .expect("the emulator starts")
}

fn connection(emu: &Emulator, tls: TlsMode) -> Connection {
    Connection {
        host: emu.host().to_owned(),
        port: emu.port(),
        user: "svc_mcp".into(),
        realm: "pve".into(),
        token_name: "emu".into(),
        token_secret: SECRET.into(),
        tls,
    }
}

/// A client pinned to the emulator's certificate (the usual Proxmox setup).
fn pinned(emu: &Emulator) -> Client {
    let fingerprint = emu.cert_fingerprint().expect("the emulator serves TLS");
    Client::new(&connection(emu, TlsMode::Fingerprint(fingerprint))).expect("client builds")
}

async fn call(client: &Client, req: ApiRequest) -> Outcome {
    client.call(req, &CancellationToken::new()).await
}

fn err_of(outcome: &Outcome) -> &PveError {
    match &outcome.result {
        Err(e) => e,
        Ok(v) => panic!("expected an error, got {v}"),
    }
}

/// A read that is never retried, so one armed fault gives exactly one answer.
fn single_get(path: &str) -> ApiRequest {
    ApiRequest::get(path).retry(RetryPolicy::Never)
}

#[tokio::test]
async fn get_sends_the_exact_token_and_unwraps_data() {
    let emu = emulator().await;
    let client = pinned(&emu);
    assert_eq!(
        emu.token_header(),
        format!("PVEAPIToken=svc_mcp@pve!emu={SECRET}")
    );
    let outcome = call(&client, ApiRequest::get("/nodes")).await;
    assert_eq!(outcome.attempts, 1);
    let nodes = outcome.result.expect("GET /nodes succeeds");
    let nodes = nodes.as_array().expect("data is the node array");
    assert_eq!(nodes.len(), 3);
    assert!(nodes.iter().all(|n| n.get("node").is_some()), "{nodes:?}");

    let recorded = emu.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].method, "GET");
    assert_eq!(recorded[0].path, "/nodes");
    assert!(
        recorded[0].authorized,
        "the token header must match exactly"
    );
}

#[tokio::test]
async fn query_and_form_parameters_are_encoded() {
    let emu = emulator().await;
    let client = pinned(&emu);
    // A write outside any clearance is refused by the client and never sent.
    let unapproved =
        ApiRequest::new(Method::Post, "/nodes/pve01/qemu/101/status/reboot").param("timeout", "30");
    let outcome = call(&client, unapproved).await;
    assert_eq!(err_of(&outcome).code(), "EFFECT_NOT_APPROVED");
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());

    let read = ApiRequest::get("/nodes/pve01/tasks")
        .param("limit", "5")
        .param("typefilter", "qm start&x=1");
    call(&client, read).await.result.expect("task list");
    let write =
        ApiRequest::new(Method::Post, "/nodes/pve01/qemu/101/status/reboot").param("timeout", "30");
    // The test's direct write runs under the operator's own clearance.
    let upid = with_clearance(EffectSet::ANY, None, call(&client, write))
        .await
        .result
        .expect("reboot starts");

    let recorded = emu.requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        recorded[0].query,
        vec![
            ("limit".to_owned(), "5".to_owned()),
            ("typefilter".to_owned(), "qm start&x=1".to_owned())
        ]
    );
    assert!(recorded[0].form.is_empty());
    assert_eq!(recorded[1].method, "POST");
    assert_eq!(
        recorded[1].form,
        vec![("timeout".to_owned(), "30".to_owned())]
    );
    assert!(recorded[1].query.is_empty());

    // The answer is a UPID; its task is reachable with the UPID as an encoded path segment.
    let upid_text = upid.as_str().expect("a power operation returns a UPID");
    let parsed = Upid::parse(upid_text).expect("a valid UPID");
    assert_eq!(parsed.node, "pve01");
    assert_eq!(parsed.id, "101");
    let status_path = format!(
        "/nodes/pve01/tasks/{}/status",
        encode_path_segment(upid_text)
    );
    assert!(status_path.contains("UPID%3Apve01%3A"));
    let status = call(&client, ApiRequest::get(status_path))
        .await
        .result
        .expect("task status");
    assert_eq!(status["upid"], Value::String(upid_text.to_owned()));
    assert_eq!(
        emu.requests()[2].path,
        format!("/nodes/pve01/tasks/{upid_text}/status")
    );
}

#[tokio::test]
async fn bad_request_keeps_per_parameter_errors_and_is_not_retried() {
    let emu = emulator().await;
    let client = pinned(&emu);
    // A parameter the schema does not declare cannot be placed: outside an approval the
    // client refuses it unsent; approved, Proxmox's 400 comes back whole.
    let refused = call(&client, ApiRequest::get("/nodes").param("bogus", "1")).await;
    assert_eq!(
        refused.attempts, 0,
        "an undeclared parameter left unapproved"
    );
    assert!(emu.requests().is_empty());
    let approved =
        nandi_proxmox_mcp::effects::EffectSet::of(nandi_proxmox_mcp::effects::Effect::Unplaced);
    let outcome = nandi_proxmox_mcp::effects::with_clearance(
        approved,
        None,
        call(&client, ApiRequest::get("/nodes").param("bogus", "1")),
    )
    .await;
    assert_eq!(outcome.attempts, 1, "a 400 is never retried");
    assert_eq!(emu.requests().len(), 1);
    let err = err_of(&outcome);
    assert_eq!(err.code(), "PROXMOX_REQUEST_REJECTED");
    let PveError::Http {
        status,
        message,
        errors,
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 400);
    assert_eq!(message, "Parameter verification failed.");
    let errors = errors
        .as_ref()
        .expect("Proxmox's per-parameter errors are kept");
    assert!(errors.contains_key("bogus"), "{errors:?}");
    let details = err.details().expect("details");
    assert_eq!(details["status"], 400);
    assert!(details["errors"]["bogus"].is_string());
    assert!(err.hint().expect("hint").contains("details.errors"));
    assert!(err.to_string().contains("bogus"), "{err}");
}

#[tokio::test]
async fn faults_map_to_their_codes() {
    let emu = emulator().await;
    let client = pinned(&emu);
    let cases = [
        (FaultKind::Status(401), "PROXMOX_AUTH_FAILED"),
        (FaultKind::Status(403), "PROXMOX_ACL_FORBIDDEN"),
        (FaultKind::Status(500), "PROXMOX_SERVER_ERROR"),
        (FaultKind::Status(596), "PROXMOX_SERVER_ERROR"),
        (FaultKind::Status(501), "PROXMOX_REQUEST_REJECTED"),
        (FaultKind::HtmlProxy, "PROXMOX_SERVER_ERROR"),
        (FaultKind::BadJson, "PROXMOX_INVALID_RESPONSE"),
        (FaultKind::Reset, "CONNECTION_RESET"),
    ];
    for (kind, code) in cases {
        emu.arm_fault(Fault::new(kind.clone(), 1));
        let outcome = call(&client, single_get("/nodes/pve01/status")).await;
        let err = err_of(&outcome);
        assert_eq!(err.code(), code, "{kind:?}: {err:?}");
        assert_eq!(outcome.attempts, 1);
        match kind {
            FaultKind::Status(403) => {
                assert!(err.to_string().contains("Permission check failed"), "{err}");
                assert!(err.hint().unwrap().contains("pveum acl modify"));
            }
            FaultKind::Status(596) => assert!(err.hint().unwrap().contains("unreachable")),
            FaultKind::HtmlProxy => {
                let PveError::Http {
                    status, message, ..
                } = err
                else {
                    panic!("{err:?}")
                };
                assert_eq!(*status, 502);
                assert!(message.contains("502 Bad Gateway"), "{message}");
                assert!(!message.contains('\n') && message.chars().count() <= 200);
            }
            FaultKind::BadJson => {
                let PveError::InvalidResponse { status, snippet } = err else {
                    panic!("{err:?}")
                };
                assert_eq!(*status, 200);
                assert!(snippet.starts_with("<!DOCTYPE html>"), "{snippet}");
            }
            _ => {}
        }
    }
    // Nothing left armed: the next call succeeds.
    call(&client, single_get("/nodes/pve01/status"))
        .await
        .result
        .expect("faults are used up");
}

#[tokio::test]
async fn hang_times_out_and_slow_answers_within_the_timeout_succeed() {
    let emu = emulator().await;
    let client = pinned(&emu);
    emu.arm_fault(Fault::new(FaultKind::Hang, 1));
    let started = Instant::now();
    let outcome = call(
        &client,
        single_get("/version").timeout(Duration::from_millis(300)),
    )
    .await;
    assert_eq!(err_of(&outcome).code(), "TIMEOUT");
    assert!(started.elapsed() < Duration::from_secs(5));

    emu.arm_fault(Fault::new(FaultKind::Slow(Duration::from_millis(150)), 1));
    let outcome = call(
        &client,
        single_get("/version").timeout(Duration::from_secs(10)),
    )
    .await;
    outcome.result.expect("a slow answer inside the timeout");

    emu.arm_fault(Fault::new(FaultKind::Slow(Duration::from_secs(3)), 1));
    let outcome = call(
        &client,
        single_get("/version").timeout(Duration::from_millis(200)),
    )
    .await;
    assert_eq!(err_of(&outcome).code(), "TIMEOUT");
}

#[tokio::test]
async fn refused_port_is_connection_refused_and_retried_for_reads() {
    let port = {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let conn = Connection {
        host: "127.0.0.1".into(),
        port,
        user: "svc_mcp".into(),
        realm: "pve".into(),
        token_name: "emu".into(),
        token_secret: SECRET.into(),
        tls: TlsMode::Insecure,
    };
    let client = Client::new(&conn).expect("client builds");
    let once = call(&client, single_get("/version")).await;
    assert_eq!(err_of(&once).code(), "CONNECTION_REFUSED");
    assert_eq!(once.attempts, 1);
    let retried = call(&client, ApiRequest::get("/version")).await;
    assert_eq!(err_of(&retried).code(), "CONNECTION_REFUSED");
    assert_eq!(retried.attempts, 3, "a refused read is retried");
}

#[tokio::test]
async fn reads_retry_gateway_errors_but_not_500s() {
    let emu = emulator().await;
    let client = pinned(&emu);
    emu.arm_fault(Fault::new(FaultKind::Status(503), 2));
    let outcome = call(&client, ApiRequest::get("/nodes")).await;
    assert_eq!(outcome.attempts, 3);
    assert_eq!(outcome.retries(), 2);
    assert_eq!(
        outcome
            .result
            .expect("third attempt succeeds")
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    assert_eq!(emu.requests().len(), 3);

    // Three failures exhaust the attempts.
    emu.clear_requests();
    emu.arm_fault(Fault::new(FaultKind::Status(504), 5));
    let outcome = call(&client, ApiRequest::get("/nodes")).await;
    assert_eq!(err_of(&outcome).code(), "PROXMOX_SERVER_ERROR");
    assert_eq!(outcome.attempts, 3);
    assert_eq!(emu.requests().len(), 3);
    emu.clear_faults();

    // Proxmox answers 500 for permanent errors (wrong node, unknown UPID): never repeated.
    emu.clear_requests();
    emu.arm_fault(Fault::new(FaultKind::Status(500), 5));
    let outcome = call(&client, ApiRequest::get("/nodes")).await;
    assert_eq!(err_of(&outcome).code(), "PROXMOX_SERVER_ERROR");
    assert_eq!(outcome.attempts, 1, "a 500 is final");
    assert_eq!(emu.requests().len(), 1);
    emu.clear_faults();
}

#[tokio::test]
async fn client_errors_and_writes_are_tried_once() {
    let emu = emulator().await;
    let client = pinned(&emu);

    emu.arm_fault(Fault::new(FaultKind::Status(403), 3));
    let outcome = call(&client, ApiRequest::get("/nodes")).await;
    assert_eq!(err_of(&outcome).code(), "PROXMOX_ACL_FORBIDDEN");
    assert_eq!(outcome.attempts, 1);
    assert_eq!(emu.requests().len(), 1);
    emu.clear_faults();
    emu.clear_requests();

    // A write asking for retries still gets exactly one attempt.
    emu.arm_fault(Fault::new(FaultKind::Status(500), 3).on_prefix("/nodes/pve01/qemu/101"));
    let write = ApiRequest::new(Method::Post, "/nodes/pve01/qemu/101/status/reboot")
        .retry(RetryPolicy::Reads);
    // The test's direct write runs under the operator's own clearance.
    let outcome = with_clearance(EffectSet::ANY, None, call(&client, write)).await;
    assert_eq!(err_of(&outcome).code(), "PROXMOX_SERVER_ERROR");
    assert_eq!(outcome.attempts, 1);
    let recorded = emu.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].method, "POST");
    emu.clear_faults();
}

#[tokio::test]
async fn missing_guest_is_not_found_and_not_retried() {
    let emu = emulator().await;
    let client = pinned(&emu);
    let outcome = call(
        &client,
        ApiRequest::get("/nodes/pve01/qemu/999/status/current"),
    )
    .await;
    let err = err_of(&outcome);
    assert_eq!(err.code(), "PROXMOX_NOT_FOUND");
    assert_eq!(err.status(), Some(500));
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert_eq!(outcome.attempts, 1);
    assert_eq!(emu.requests().len(), 1);
}

#[tokio::test]
async fn tls_pin_accepts_the_served_certificate_in_any_spelling() {
    let emu = emulator().await;
    let fingerprint = emu.cert_fingerprint().expect("tls");
    let compact = fingerprint.replace(':', "").to_lowercase();
    for pin in [fingerprint, compact] {
        let client = Client::new(&connection(&emu, TlsMode::Fingerprint(pin))).expect("client");
        call(&client, ApiRequest::get("/version"))
            .await
            .result
            .expect("a pinned certificate is accepted");
    }
}

#[tokio::test]
async fn tls_wrong_pin_is_refused_and_names_the_presented_fingerprint() {
    let emu = emulator().await;
    let presented = emu.cert_fingerprint().expect("tls");
    let wrong = vec!["00"; 32].join(":");
    let client =
        Client::new(&connection(&emu, TlsMode::Fingerprint(wrong.clone()))).expect("client");
    let outcome = call(&client, ApiRequest::get("/version")).await;
    let err = err_of(&outcome);
    assert_eq!(err.code(), "TLS_ERROR");
    assert_eq!(outcome.attempts, 1, "TLS failures are not retried");
    let text = err.to_string();
    assert!(
        text.contains(&format!("expected fingerprint {wrong}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("server presented {presented}")),
        "{text}"
    );
    assert!(err.hint().unwrap().contains("PROXMOX_TLS_FINGERPRINT"));
    assert!(
        emu.requests().is_empty(),
        "no request passes a failed handshake"
    );
}

#[tokio::test]
async fn tls_ca_file_verify_and_insecure_modes() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("pve-root-ca.pem");
    std::fs::write(&ca, emu.cert_pem().expect("tls")).expect("write CA file");
    let client = Client::new(&connection(&emu, TlsMode::CaFile(ca))).expect("client");
    call(&client, ApiRequest::get("/version"))
        .await
        .result
        .expect("the CA file makes the certificate trusted");

    let client = Client::new(&connection(&emu, TlsMode::Verify)).expect("client");
    let outcome = call(&client, ApiRequest::get("/version")).await;
    let err = err_of(&outcome);
    assert_eq!(err.code(), "TLS_ERROR", "{err:?}");
    let presented = emu.cert_fingerprint().expect("tls");
    assert!(err.to_string().contains(&presented), "{err}");

    let client = Client::new(&connection(&emu, TlsMode::Insecure)).expect("client");
    call(&client, ApiRequest::get("/version"))
        .await
        .result
        .expect("insecure mode accepts the self-signed certificate");
}

#[tokio::test]
async fn ipv6_hosts_are_bracketed() {
    let emu = emulator().await;
    for host in ["::1", "[::1]"] {
        let mut conn = connection(&emu, TlsMode::Insecure);
        conn.host = host.to_owned();
        let client = Client::new(&conn).expect("client");
        assert_eq!(
            client.base_url(),
            format!("https://[::1]:{}/api2/json", emu.port())
        );
    }
    assert_eq!(
        pinned(&emu).base_url(),
        format!("https://127.0.0.1:{}/api2/json", emu.port())
    );
}

#[tokio::test]
async fn cancellation_is_prompt_during_a_hang_and_a_backoff() {
    let emu = emulator().await;
    let client = pinned(&emu);

    emu.arm_fault(Fault::new(FaultKind::Hang, 1));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let outcome = client
        .call(
            ApiRequest::get("/version").timeout(Duration::from_secs(30)),
            &cancel,
        )
        .await;
    assert_eq!(err_of(&outcome), &PveError::Cancelled);
    assert_eq!(err_of(&outcome).code(), "CANCELLED");
    assert_eq!(outcome.attempts, 1);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // Cancelled while waiting between attempts.
    emu.clear_faults();
    emu.arm_fault(Fault::new(FaultKind::Status(503), 10));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let started = Instant::now();
    let (outcome, ()) = tokio::join!(client.call(ApiRequest::get("/version"), &cancel), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    assert_eq!(err_of(&outcome), &PveError::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    emu.clear_faults();

    // Already cancelled: nothing is sent.
    emu.clear_requests();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = client.call(ApiRequest::get("/version"), &cancel).await;
    assert_eq!(err_of(&outcome), &PveError::Cancelled);
    assert_eq!(outcome.attempts, 0);
    assert!(emu.requests().is_empty());
}

#[tokio::test]
async fn the_secret_never_leaks() {
    let emu = emulator().await;
    let conn = connection(
        &emu,
        TlsMode::Fingerprint(emu.cert_fingerprint().expect("tls")),
    );
    let shown = format!("{conn:?} {conn:#?}");
    assert!(!shown.contains(SECRET), "{shown}");
    let client = Client::new(&conn).expect("client");
    assert!(!format!("{client:?}").contains(SECRET));

    let mut texts = Vec::new();
    let mut record = |outcome: Outcome| {
        if let Err(e) = outcome.result {
            texts.push(format!("{e} {e:?} {:?} {:?}", e.hint(), e.details()));
        }
    };
    // A wrong secret: Proxmox answers 401 and must not see it echoed back to the user either.
    let mut wrong = conn.clone();
    wrong.token_secret = "wrong-secret-0000".into();
    let wrong_client = Client::new(&wrong).expect("client");
    let outcome = call(&wrong_client, ApiRequest::get("/nodes")).await;
    assert_eq!(err_of(&outcome).code(), "PROXMOX_AUTH_FAILED");
    assert!(!emu.requests()[0].authorized);
    record(outcome);
    for kind in [
        FaultKind::Status(401),
        FaultKind::Status(403),
        FaultKind::HtmlProxy,
        FaultKind::BadJson,
        FaultKind::Reset,
    ] {
        emu.arm_fault(Fault::new(kind, 1));
        record(call(&client, single_get("/nodes")).await);
    }
    record(call(&client, ApiRequest::get("/nodes").param("bogus", "1")).await);
    let mut bad_pin = conn.clone();
    bad_pin.tls = TlsMode::Fingerprint("ab".repeat(32));
    record(
        call(
            &Client::new(&bad_pin).expect("client"),
            ApiRequest::get("/nodes"),
        )
        .await,
    );
    let mut bad = conn.clone();
    bad.token_secret = format!("{SECRET}\n");
    if let Err(e) = Client::new(&bad) {
        texts.push(format!("{e} {e:?}"));
    }

    assert_eq!(texts.len(), 9, "{texts:#?}");
    for text in &texts {
        assert!(!text.contains(SECRET), "secret in {text}");
        assert!(!text.contains("wrong-secret-0000"), "secret in {text}");
        assert!(!text.contains("PVEAPIToken"), "token header in {text}");
    }
}
