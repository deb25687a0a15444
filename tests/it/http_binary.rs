//! The built binary over Streamable HTTP: refuses to start without a token (or with no-auth on a
//! wildcard bind), serves `--demo` with a token file on `MCP_PORT=0` (address read from its log),
//! never logs the token, and stops cleanly on SIGTERM.

use crate::common;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

const TOKEN: &str = "test-token-0123456789abcdef";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http client")
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}})
}

/// The built binary: refuses to start without a token, serves with one, never logs it, and
/// stops cleanly on SIGTERM.
#[tokio::test]
async fn the_binary_serves_http_with_a_token_file_and_stops_on_sigterm() {
    use std::process::Stdio;
    use tokio::io::AsyncBufReadExt;

    let home = tempfile::tempdir().unwrap();
    let base_command = || {
        let mut command = tokio::process::Command::new(common::binary());
        command
            .args(["run", "--demo"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("RUST_LOG", "info")
            .env("MCP_TRANSPORT", "http")
            .env("MCP_PORT", "0")
            .current_dir(home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    };

    let refused = base_command().output().await.unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("MCP_AUTH_TOKEN"));
    let open = base_command()
        .env("MCP_HOST", "0.0.0.0")
        .env("MCP_ALLOW_NO_AUTH", "true")
        .output()
        .await
        .unwrap();
    assert_eq!(
        open.status.code(),
        Some(2),
        "no-auth on a wildcard bind must be refused"
    );

    let token_file = home.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let mut child = base_command()
        .env("MCP_AUTH_TOKEN_FILE", &token_file)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    // One deadline for the whole wait: a chatty process cannot keep the loop alive.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let url = loop {
        let line = tokio::time::timeout_at(deadline, stderr.next_line())
            .await
            .expect("starts within 20 s")
            .unwrap()
            .expect("stderr open");
        log.push_str(&line);
        log.push('\n');
        if let Some(at) = line.find("listening on http://") {
            let rest = &line[at + "listening on ".len()..];
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    let client = client();
    let ok = client
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let wrong = client
        .post(&url)
        .bearer_auth("wrong-token-but-long-enough")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    let pid = child.id().expect("running") as i32;
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("stops after SIGTERM")
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    while let Ok(Some(line)) = stderr.next_line().await {
        log.push_str(&line);
        log.push('\n');
    }
    assert!(
        !log.contains(TOKEN),
        "the token appeared in the log:\n{log}"
    );
    assert!(!log.contains("wrong-token-but-long-enough"));
    assert!(log.contains("refused"), "{log}");
}
