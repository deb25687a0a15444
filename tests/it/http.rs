//! The Streamable HTTP transport on 127.0.0.1:0, driven by a real HTTP client: authentication,
//! the Host/Origin guard, the body limit (413) and the rate limit (429). Sessions, end-to-end
//! calls and readiness: `http_sessions.rs`; the binary: `http_binary.rs`.

use crate::common;
use crate::harness;

use harness::*;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn requests_without_the_right_token_are_refused_and_reach_no_tool() {
    let emu = common::emulator().await;
    let srv = start(&[], Some(pve_client(&emu))).await;

    let missing = srv.post(&initialize()).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    let challenge = missing
        .headers()
        .get("www-authenticate")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert_eq!(
        error_body(missing).await["error"]["message"],
        "Unauthorized"
    );

    let wrong = srv
        .post(&initialize())
        .bearer_auth("test-token-0123456789abcdeX")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(
        wrong.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
    let basic = srv
        .post(&initialize())
        .header("authorization", format!("Basic {TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), StatusCode::UNAUTHORIZED);

    // A valid session does not help a request that lacks the token.
    let id = srv.session().await;
    emu.clear_requests();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "pve_list_nodes", "arguments": {}}});
    for auth in [None, Some("Bearer nope-nope-nope-nope-nope")] {
        let mut request = srv.post(&call).header("mcp-session-id", &id);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        assert_eq!(
            request.send().await.unwrap().status(),
            StatusCode::UNAUTHORIZED
        );
    }
    assert!(
        emu.requests().is_empty(),
        "a refused request reached Proxmox"
    );

    // The right token works.
    let reply = srv.call(&id, 8, "tools/call", call["params"].clone()).await;
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    srv.http.shutdown().await;
}

#[tokio::test]
async fn foreign_host_and_origin_headers_are_refused() {
    let srv = start(&[], None).await;
    let port = srv.addr().port();
    for (host, origin, expected) in [
        ("evil.example".to_owned(), None, StatusCode::FORBIDDEN),
        (format!("evil.example:{port}"), None, StatusCode::FORBIDDEN),
        (format!("0.0.0.0:{port}"), None, StatusCode::FORBIDDEN),
        (
            format!("localhost:{port}"),
            Some("http://evil.example".to_owned()),
            StatusCode::FORBIDDEN,
        ),
        (
            format!("localhost:{port}"),
            Some("http://localhost:5173".to_owned()),
            StatusCode::FORBIDDEN,
        ),
        (
            format!("localhost:{port}"),
            Some("null".to_owned()),
            StatusCode::FORBIDDEN,
        ),
        (format!("127.0.0.1:{port}"), None, StatusCode::OK),
        (format!("localhost:{port}"), None, StatusCode::OK),
        (format!("[::1]:{port}"), None, StatusCode::OK),
        (
            format!("localhost:{port}"),
            Some(format!("http://localhost:{port}")),
            StatusCode::OK,
        ),
        (
            format!("127.0.0.1:{port}"),
            Some(format!("http://127.0.0.1:{port}")),
            StatusCode::OK,
        ),
    ] {
        let mut request = srv.authed(&initialize()).header("host", &host);
        if let Some(origin) = &origin {
            request = request.header("origin", origin);
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.status(),
            expected,
            "Host {host}, Origin {origin:?}"
        );
        if expected == StatusCode::FORBIDDEN {
            let body = error_body(response).await;
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("Forbidden"),
                "{body}"
            );
        }
    }
    // The guard covers every route, not only /mcp.
    let health = srv
        .client
        .get(srv.url("/health"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::FORBIDDEN);
    srv.http.shutdown().await;
}

#[tokio::test]
async fn listed_hosts_and_origins_are_allowed() {
    let srv = start(
        &[
            ("MCP_ALLOWED_HOSTS", "mcp.example.lan:8443"),
            ("MCP_ALLOWED_ORIGINS", "https://console.example.com"),
        ],
        None,
    )
    .await;
    for (host, origin) in [
        ("mcp.example.lan", "https://mcp.example.lan:8443"),
        ("mcp.example.lan:8443", "https://console.example.com"),
    ] {
        let response = srv
            .authed(&initialize())
            .header("host", host)
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{host} {origin}");
    }
    srv.http.shutdown().await;
}

#[tokio::test]
async fn an_oversized_body_is_refused_before_it_is_read() {
    let srv = start(&[("MCP_MAX_BODY_SIZE_BYTES", "1024")], None).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"pad": "x".repeat(2000)}});
    let response = srv.authed(&big).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        error_body(response).await["error"]["message"],
        "Request entity too large"
    );

    // Announce 10 MB and send none of it: the answer must come without waiting for the body.
    let mut socket = tokio::net::TcpStream::connect(srv.addr()).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 10000000\r\n\r\n",
        srv.addr().port()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
        .await
        .expect("answered without the body")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");

    // A chunked body (no Content-Length) is cut off while it is read, also with 413.
    let mut socket = tokio::net::TcpStream::connect(srv.addr()).await.unwrap();
    let chunk = "a".repeat(2000);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf))
        .await
        .expect("answered")
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("Request entity too large"), "{text}");
    srv.http.shutdown().await;
}

#[tokio::test]
async fn the_rate_limit_answers_429_with_headers() {
    let srv = start(&[("MCP_RATE_LIMIT_MAX", "3")], None).await;
    for i in 0..3 {
        let response = srv.authed(&initialize()).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "request {i}");
        assert_eq!(response.headers()["ratelimit-limit"], "3");
        assert_eq!(
            response.headers()["ratelimit-remaining"],
            (2 - i).to_string().as_str()
        );
    }
    let limited = srv.authed(&initialize()).send().await.unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let headers = limited.headers().clone();
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "retry-after {retry}");
    assert_eq!(headers["ratelimit-remaining"], "0");
    assert!(headers.contains_key("ratelimit-reset"));
    assert!(!headers.contains_key("x-ratelimit-limit"));
    let refused = error_body(limited).await;
    assert_eq!(refused["error"]["message"], "Too Many Requests");
    // The request's id is answered (initialize() has id 1), never null.
    assert_eq!(refused["id"], 1, "{refused}");
    // A notification (no id) is answered without an id member.
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let limited = srv.authed(&note).send().await.unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let refused = error_body(limited).await;
    assert!(refused.get("id").is_none(), "{refused}");
    // Health checks are not rate-limited.
    let health = srv.client.get(srv.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    srv.http.shutdown().await;
}
