//! Fault injection as a client sees it over the wire.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Harness, PinnedVerifier, client_config, client_with, data, message};
use crate::{Fault, FaultKind};

#[tokio::test]
async fn status_faults_honour_prefix_and_count() {
    let h = Harness::plain().await;
    h.emu
        .arm_fault(Fault::new(FaultKind::Status(403), 2).on_prefix("/nodes/pve01"));
    // Outside the prefix: unaffected.
    let (status, _) = h.get("/version").await;
    assert_eq!(status, 200);
    let (status, body) = h.get("/nodes/pve01/qemu/101/status/current").await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/vms/101, VM.Audit)\n"
    );
    let (status, body) = h.get("/nodes/pve01/status").await;
    assert_eq!(status, 403);
    assert_eq!(
        message(&body),
        "Permission check failed (/nodes/pve01, Sys.Audit)\n"
    );
    // Count used up.
    let (status, _) = h.get("/nodes/pve01/status").await;
    assert_eq!(status, 200);

    for (code, text) in [
        (401, "authentication failure\n"),
        (500, "internal error\n"),
        (
            595,
            "Errors during connection establishment, proxy handshake: No route to host\n",
        ),
        (596, "Connection timed out (no route to host)\n"),
        (503, "emulated failure (HTTP 503)\n"),
    ] {
        h.emu.arm_fault(Fault::new(FaultKind::Status(code), 1));
        let (status, body) = h.get("/nodes").await;
        assert_eq!(status, code);
        assert_eq!(message(&body), text);
    }
    // Faults come before auth: the request is refused by the fault even
    // without a token, and recorded as unauthorized.
    h.emu.arm_fault(Fault::new(FaultKind::Status(500), 1));
    let resp = h.get_with_auth("/nodes", None).await;
    assert_eq!(resp.status().as_u16(), 500);
    assert!(!h.emu.requests().last().unwrap().authorized);
}

#[tokio::test]
async fn first_armed_matching_fault_wins_and_clear_disarms() {
    let h = Harness::plain().await;
    h.emu
        .arm_fault(Fault::new(FaultKind::Status(500), 1).on_prefix("/cluster"));
    h.emu.arm_fault(Fault::new(FaultKind::Status(596), 1));
    let (status, _) = h.get("/version").await;
    assert_eq!(status, 596);
    let (status, _) = h.get("/cluster/status").await;
    assert_eq!(status, 500);
    h.emu.arm_fault(Fault::new(FaultKind::Status(500), 5));
    h.emu.clear_faults();
    let (status, _) = h.get("/cluster/status").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn html_and_bad_json_faults() {
    let h = Harness::plain().await;
    h.emu.arm_fault(Fault::new(FaultKind::HtmlProxy, 1));
    let resp = h.get_with_auth("/nodes", Some(&h.emu.token_header())).await;
    assert_eq!(resp.status().as_u16(), 502);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(resp.text().await.unwrap().contains("502 Bad Gateway"));

    h.emu.arm_fault(Fault::new(FaultKind::BadJson, 1));
    let resp = h.get_with_auth("/nodes", Some(&h.emu.token_header())).await;
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_err());
    assert!(text.contains("<html>"));
}

#[tokio::test]
async fn hang_fault_outlasts_the_client_timeout() {
    let h = Harness::plain().await;
    let client = client_with(
        client_config(Arc::new(PinnedVerifier::new(""))),
        Some(Duration::from_millis(300)),
    );
    h.emu.arm_fault(Fault::new(FaultKind::Hang, 1));
    let started = Instant::now();
    let err = client
        .get(h.url("/nodes"))
        .header("Authorization", h.emu.token_header())
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(h.emu.requests().len(), 1);
    // The fault was used up: the next request is answered.
    let (status, _) = h.get("/nodes").await;
    assert_eq!(status, 200);
    // Shutting down with a hung connection still open must not block.
    tokio::time::timeout(Duration::from_secs(5), h.emu.shutdown())
        .await
        .expect("shutdown must not wait for the hung request");
}

#[tokio::test]
async fn reset_fault_is_a_transport_error() {
    let h = Harness::plain().await;
    h.emu.arm_fault(Fault::new(FaultKind::Reset, 1));
    let err = h
        .client
        .get(h.url("/nodes"))
        .header("Authorization", h.emu.token_header())
        .send()
        .await
        .expect_err("a reset must not produce a response");
    // hyper reports the aborted message (IncompleteMessage): a request
    // error without any status.
    assert!(err.is_request() && err.status().is_none(), "{err:?}");
    let (status, body) = h.get("/nodes").await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn slow_fault_delays_a_normal_answer() {
    let h = Harness::plain().await;
    h.emu.arm_fault(
        Fault::new(FaultKind::Slow(Duration::from_millis(400)), 1).on_prefix("/version"),
    );
    let started = Instant::now();
    let (status, body) = h.get("/version").await;
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(data(status, &body)["version"], "9.1.2");
    let started = Instant::now();
    let (status, _) = h.get("/version").await;
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_millis(400));
}
