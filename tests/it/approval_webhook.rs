//! Approval for headless agents: a client that cannot ask a person (stdio, no elicitation)
//! with `PVE_APPROVAL_NOTIFY` set. The built binary posts the notice to a real receiver on
//! loopback, serves the approval page on its own listener, and the gated call waits until a
//! person decides on that page over HTTP — the `confirm` flag plays no part. Checked against the
//! emulator's request log: one request after Approve, none otherwise. A plain-http webhook off
//! loopback is refused at start-up: the notice carries the link, which is the permission.

use crate::approval_common;
use crate::common;
use crate::link_common;

use approval_common::{Person, call, changes, code, connect_stdio, envelope};
use common::{emulator, env_for, with_policy};
use link_common::{Receiver, decide, open, post_form};
use pve_emulator::Emulator;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use std::sync::Arc;

async fn close(client: Arc<RunningService<RoleClient, Person>>) {
    if let Ok(client) = Arc::try_unwrap(client) {
        client.cancel().await.ok();
    }
}

fn env(emu: &Emulator, hook: &str, timeout: &str) -> Vec<(String, String)> {
    with_policy(
        env_for(emu),
        &[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_APPROVAL_NOTIFY", hook),
            ("PVE_APPROVAL_LISTEN", "127.0.0.1:0"),
            ("PVE_APPROVAL_TIMEOUT_SECS", timeout),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_call_runs_once_after_the_person_approves_on_the_linked_page() {
    let emu = emulator().await;
    let receiver = Receiver::start(200).await;
    let hook = format!("http://{}/hook?token=sekrit-hook-token", receiver.addr);
    let (client, home) = connect_stdio(Person::unable(), &env(&emu, &hook, "60")).await;
    let client = Arc::new(client);
    let calling = {
        let client = client.clone();
        tokio::spawn(async move {
            call(
                &client,
                "pve_stop_qemu_vm",
                json!({"node": "pve01", "vmid": 101}),
            )
            .await
        })
    };
    let notice = receiver.nth(1).await;
    assert_eq!(
        notice.headers["content-type"], "application/json",
        "{notice:?}"
    );
    let body: Value = serde_json::from_str(&notice.body).expect("JSON notice");
    assert_eq!(body["tool"], "pve_stop_qemu_vm");
    assert_eq!(body["requested_by"], "stdio");
    let question = body["question"].as_str().expect("question");
    assert!(question.contains("VM 101"), "{question}");
    assert!(
        body["expires_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{body}"
    );
    let link = body["link"].as_str().expect("link").to_owned();
    assert!(link.starts_with("http://127.0.0.1:"), "{link}");
    // Waiting: nothing sent yet.
    assert!(changes(&emu).is_empty());

    // The page shows the question, hardened.
    let page = open(&link).await;
    assert_eq!(page.status, 200);
    assert!(page.html.contains("VM 101"), "{}", page.html);
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(csp.contains("form-action 'self'"), "{csp}");
    assert_eq!(page.headers["x-frame-options"], "DENY");
    // A POST without the anti-forgery token, or with the link id alone, decides nothing.
    let call_digest = page.hidden("call");
    let (status, _) = post_form(
        &link,
        &[("call", &call_digest), ("decision", "approve")],
        &[],
    )
    .await;
    assert_eq!(status, 403);
    assert!(changes(&emu).is_empty());

    let (status, html) = decide(&link, "approve").await;
    assert_eq!(status, 200, "{html}");
    let result = calling.await.expect("call task");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person-link");
    let sent = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].path, "/nodes/pve01/qemu/101/status/stop");

    // The link was single-use.
    assert_eq!(open(&link).await.status, 410);
    let (status, _) = post_form(
        &link,
        &[
            ("token", &page.hidden("token")),
            ("call", &call_digest),
            ("decision", "approve"),
        ],
        &[],
    )
    .await;
    assert_eq!(status, 410);
    assert_eq!(changes(&emu).len(), 1);
    assert_eq!(receiver.notices().len(), 1);
    // The audit trail records who approved: a person, by link.
    let audit = std::fs::read_to_string(
        home.path()
            .join(".local/state/nandi-proxmox-mcp/audit.jsonl"),
    )
    .expect("audit trail");
    let approved: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["approval"] == "person-link")
        .collect();
    assert!(!approved.is_empty(), "{audit}");
    assert!(approved.iter().all(|r| r["tool"] == "pve_stop_qemu_vm"));
    close(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declined_or_unanswered_the_call_sends_nothing_even_with_confirm() {
    let emu = emulator().await;
    let receiver = Receiver::start(200).await;
    // An ntfy topic: the question as text, the link in `Click`.
    let hook = format!("ntfy+http://{}/approvals-topic", receiver.addr);
    let (client, _home) = connect_stdio(Person::unable(), &env(&emu, &hook, "2")).await;
    let client = Arc::new(client);

    // Nobody answers: confirm=true does not approve, the call times out.
    let started = std::time::Instant::now();
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_TIMEOUT");
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
    assert!(changes(&emu).is_empty());
    let notice = receiver.nth(1).await;
    let click = notice.headers["click"].to_str().expect("click").to_owned();
    assert!(click.contains("/approve/"), "{click}");
    assert!(notice.headers.contains_key("title"), "{notice:?}");
    assert!(notice.body.contains("VM 101"), "{}", notice.body);
    // The expired link decides nothing.
    assert_eq!(open(&click).await.status, 410);

    // Declined on the page.
    let calling = {
        let client = client.clone();
        tokio::spawn(async move {
            call(
                &client,
                "pve_stop_qemu_vm",
                json!({"node": "pve01", "vmid": 101, "confirm": true}),
            )
            .await
        })
    };
    let notice = receiver.nth(2).await;
    let click = notice.headers["click"].to_str().expect("click").to_owned();
    let (status, _) = decide(&click, "decline").await;
    assert_eq!(status, 200);
    let result = calling.await.expect("call task");
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");
    assert!(changes(&emu).is_empty());
    close(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeliverable_notice_refuses_without_showing_the_webhook_secret() {
    let emu = emulator().await;
    let receiver = Receiver::start(500).await;
    let hook = format!("http://{}/hook?token=sekrit-hook-token", receiver.addr);
    let (client, _home) = connect_stdio(Person::unable(), &env(&emu, &hook, "60")).await;
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_eq!(code(&result), "APPROVAL_UNAVAILABLE");
    let text = envelope(&result).to_string();
    assert!(text.contains("HTTP 500"), "{text}");
    assert!(!text.contains("sekrit"), "{text}");
    assert!(changes(&emu).is_empty());
    assert_eq!(receiver.notices().len(), 1);
    client.cancel().await.ok();
}

/// A dry run tells a client that cannot ask that a webhook's page decides, and `confirm`
/// does not; without the webhook, the same client is told its `confirm` flag decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_tells_who_decides_when_a_webhook_is_set() {
    let emu = emulator().await;
    let receiver = Receiver::start(200).await;
    let hook = format!("http://{}/hook", receiver.addr);
    let dry_run = json!({"node": "pve01", "vmid": 101, "dry_run": true});
    let (client, _home) = connect_stdio(Person::unable(), &env(&emu, &hook, "60")).await;
    let result = call(&client, "pve_stop_qemu_vm", dry_run.clone()).await;
    assert_eq!(
        envelope(&result)["data"]["decision"]["approval"],
        "person (approval page linked by the PVE_APPROVAL_NOTIFY webhook; confirm=true does not approve)"
    );
    client.cancel().await.ok();

    let no_webhook: Vec<(String, String)> = env(&emu, &hook, "60")
        .into_iter()
        .filter(|(key, _)| key != "PVE_APPROVAL_NOTIFY")
        .collect();
    let (client, _home) = connect_stdio(Person::unable(), &no_webhook).await;
    let result = call(&client, "pve_stop_qemu_vm", dry_run).await;
    assert_eq!(
        envelope(&result)["data"]["decision"]["approval"],
        "confirm-flag (this client cannot ask a person, so confirm=true is set by the model)"
    );
    client.cancel().await.ok();
    assert!(receiver.notices().is_empty(), "a dry run notifies nobody");
    assert!(changes(&emu).is_empty());
}

/// The notice carries the approval link, which is the permission itself: plain http to a host
/// that is not loopback is refused before the server starts, naming the variable and never the
/// URL (its query holds a token). Loopback http is what the tests above run with.
#[test]
fn a_plain_http_webhook_off_loopback_is_refused_at_start_up() {
    for hook in [
        "http://hooks.example.com/approve?token=sekrit-hook-token",
        "ntfy+http://ntfy.example.com/sekrit-topic",
        "http://192.0.2.10:8080/sekrit-hook",
    ] {
        let home = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(common::binary())
            .arg("run")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("PVE_APPROVAL_NOTIFY", hook)
            .current_dir(home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .expect("binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{hook}: {stderr}");
        assert!(
            stderr.contains("PVE_APPROVAL_NOTIFY is not usable (plain http")
                && stderr.contains("loopback")
                && stderr.contains("https"),
            "{hook}: {stderr}"
        );
        assert!(!stderr.contains("sekrit"), "{hook}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing served: {hook}");
    }
}

/// Two projects, two clients, two stdio servers with the same webhook and no
/// `PVE_APPROVAL_LISTEN`: the default page address is taken (held here, or by the first
/// server), so each falls back to an ephemeral loopback port; both start, both send a link that
/// names its own port, and each link decides its own server's call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stdio_servers_with_a_webhook_start_side_by_side_with_working_links() {
    // Hold the default address when it is free, so both servers meet it taken.
    let _held = std::net::TcpListener::bind("127.0.0.1:8788").ok();
    let emu = emulator().await;
    let receiver = Receiver::start(200).await;
    let hook = format!("http://{}/hook", receiver.addr);
    let defaults: Vec<(String, String)> = env(&emu, &hook, "60")
        .into_iter()
        .filter(|(key, _)| key != "PVE_APPROVAL_LISTEN")
        .collect();
    let (first, _home1) = connect_stdio(Person::unable(), &defaults).await;
    let (second, _home2) = connect_stdio(Person::unable(), &defaults).await;
    let first = Arc::new(first);
    let second = Arc::new(second);
    let mut links = Vec::new();
    for (n, client) in [first.clone(), second.clone()].into_iter().enumerate() {
        let calling = tokio::spawn(async move {
            call(
                &client,
                "pve_stop_qemu_vm",
                json!({"node": "pve01", "vmid": 101}),
            )
            .await
        });
        let notice = receiver.nth(n + 1).await;
        let body: Value = serde_json::from_str(&notice.body).expect("JSON notice");
        let link = body["link"].as_str().expect("link").to_owned();
        assert!(link.starts_with("http://127.0.0.1:"), "{link}");
        assert!(!link.starts_with("http://127.0.0.1:8788/"), "{link}");
        let (status, html) = decide(&link, "approve").await;
        assert_eq!(status, 200, "{html}");
        let result = calling.await.expect("call task");
        assert_ne!(result.is_error, Some(true), "{result:?}");
        assert_eq!(envelope(&result)["meta"]["approval"], "person-link");
        links.push(link);
    }
    let port = |link: &str| url::Url::parse(link).ok().and_then(|u| u.port());
    assert_ne!(port(&links[0]), port(&links[1]), "{links:?}");
    assert_eq!(changes(&emu).len(), 2);
    close(first).await;
    close(second).await;
}

/// An address the operator chose stays theirs: `PVE_APPROVAL_LISTEN` that is taken is a clear
/// start-up error naming it, never a silent move to another port.
#[test]
fn an_explicit_approval_listen_address_that_is_taken_fails_at_start_up() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let home = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(common::binary())
        .arg("run")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("PVE_APPROVAL_LISTEN", &addr)
        .current_dir(home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {addr} (PVE_APPROVAL_LISTEN)")),
        "{stderr}"
    );
    drop(taken);
}
