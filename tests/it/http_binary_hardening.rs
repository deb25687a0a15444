//! The built binary: a flood of wrong tokens leaves a bounded log and the right token still
//! works; a weak token is refused off loopback; and over real stdio, a `tools/call` that
//! repeats a JSON key is answered with -32602 naming the key.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

/// A strong token, as `openssl rand -hex 32` prints one.
const TOKEN: &str = "9c1f4e7a2b8d03f65a1c9e7d2b4f8a06c3e5d7f91b2a4c6e8d0f1a3b5c7e9d2f";

fn http_command(home: &std::path::Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(common::binary());
    command
        .args(["run", "--demo"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("RUST_LOG", "info")
        .env("MCP_TRANSPORT", "http")
        .env("MCP_PORT", "0")
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refusals_is_logged_in_a_few_lines() {
    let home = tempfile::tempdir().unwrap();
    let mut child = http_command(home.path())
        .env("MCP_AUTH_TOKEN", TOKEN)
        .env("MCP_RATE_LIMIT_MAX", "20")
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    // One deadline for the whole wait: a chatty process cannot keep the loop alive.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let url = loop {
        let line = tokio::time::timeout_at(deadline, stderr.next_line())
            .await
            .expect("starts within 20 s")
            .unwrap()
            .expect("stderr open");
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on ".len()..];
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Drain the log while the flood runs: a per-request log would otherwise fill the pipe.
    let drain = tokio::spawn(async move {
        let mut log = String::new();
        while let Ok(Some(line)) = stderr.next_line().await {
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let flood = 600;
    for _ in 0..flood {
        let response = client
            .post(&url)
            .bearer_auth("wrong-token-0123456789abcdef")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert!(matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::TOO_MANY_REQUESTS
        ));
    }
    let ok = client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        ok.status(),
        StatusCode::OK,
        "the right token is not locked out"
    );

    let pid = child.id().expect("running").to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let log = tokio::time::timeout(Duration::from_secs(15), drain)
        .await
        .expect("the server stops after SIGTERM")
        .unwrap();
    let _ = child.wait().await;
    let refusal_lines = log.lines().filter(|l| l.contains("refused")).count();
    eprintln!("{refusal_lines} refusal log lines for {flood} refused requests");
    assert!(
        (1..=3).contains(&refusal_lines),
        "{refusal_lines} refusal lines for {flood} refused requests:\n{log}"
    );
    assert!(!log.contains("wrong-token-0123456789abcdef"));
}

#[tokio::test]
async fn a_weak_token_is_refused_off_loopback() {
    let home = tempfile::tempdir().unwrap();
    let run = http_command(home.path())
        .env("MCP_HOST", "0.0.0.0")
        .env("MCP_AUTH_TOKEN", "aaaaaaaaaaaaaaaa")
        .output();
    let out = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("refuses to start instead of serving")
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("too weak"), "{stderr}");
    assert!(stderr.contains("openssl rand -hex 32"), "{stderr}");
    assert!(!stderr.contains("aaaaaaaaaaaaaaaa"), "{stderr}");
}

#[tokio::test]
async fn over_stdio_a_repeated_key_is_answered_with_invalid_params() {
    use tokio::io::AsyncWriteExt;

    let emu = common::emulator().await;
    let home = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(common::binary())
        .arg("run")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("RUST_LOG", "warn")
        .envs(common::env_for(&emu))
        .current_dir(home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut reply_to = async |id: u64| -> serde_json::Value {
        // One deadline for the whole wait: a chatty process cannot keep the loop alive.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let line = tokio::time::timeout_at(deadline, lines.next_line())
                .await
                .expect("answered within 30 s")
                .unwrap()
                .expect("stdout open");
            let value: serde_json::Value = serde_json::from_str(&line).expect("JSON line");
            if value["id"] == json!(id) {
                return value;
            }
        }
    };
    // Written by hand: a JSON value cannot hold the same key twice.
    let script = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ];
    for line in script {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    assert!(reply_to(1).await["result"].is_object());
    emu.clear_requests();
    let doubled = r#"{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"pve_get_node_status","arguments":{"node":"pve01","node":"pve02"}}}"#;
    stdin
        .write_all(format!("{doubled}\n").as_bytes())
        .await
        .unwrap();
    let reply = reply_to(77).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"node\"") && message.contains("params.arguments.node"),
        "{message}"
    );
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    // The server goes on serving.
    let single = json!({"jsonrpc": "2.0", "id": 78, "method": "tools/call",
        "params": {"name": "pve_get_node_status", "arguments": {"node": "pve01"}}});
    stdin
        .write_all(format!("{single}\n").as_bytes())
        .await
        .unwrap();
    let ok = reply_to(78).await;
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits after stdin closes")
        .unwrap();
    assert!(status.success());
}
