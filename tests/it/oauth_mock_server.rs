//! OAuth mode against a third-party authorization server: the npm `oauth2-mock-server`
//! (started here with `npx`, pinned) issues RS256 tokens with the client-credentials grant;
//! the transport discovers its JWKS through OpenID Connect metadata and accepts a token for
//! this resource, refuses one for another audience (401) and one without its scopes (403).
//! Without `npx` the test is reported as ignored (outside CI; under CI it runs and fails).

use crate::harness;

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use harness::{client, initialize, mcp_server, rpc_reply};
use nandi_proxmox_mcp::transport::http::{self, HttpSettings};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const PACKAGE: &str = "oauth2-mock-server@9.3.0";
const RESOURCE: &str = "https://mcp.example.test/mcp";

/// The mock server, in its own process group so the whole `npx` tree can be stopped.
struct MockServer {
    child: Child,
    issuer: String,
}

impl MockServer {
    async fn start() -> Option<MockServer> {
        let mut child = Command::new("npx")
            .args(["--yes", PACKAGE, "-a", "127.0.0.1", "-p", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .ok()?;
        let stdout = child.stdout.take()?;
        let mut lines = BufReader::new(stdout).lines();
        let issuer = tokio::time::timeout(Duration::from_secs(180), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(issuer) = line.strip_prefix("OAuth 2 issuer is ") {
                    return Some(issuer.trim().to_owned());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()?;
        Some(MockServer { child, issuer })
    }

    async fn token(&self, scope: &str, aud: &str) -> String {
        let response = client()
            .post(format!("{}/token", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!(
                "grant_type=client_credentials&scope={}&aud={}",
                urlencode(scope),
                urlencode(aud)
            ))
            .send()
            .await
            .expect("token request");
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("token JSON");
        body["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // Only the process group this test started.
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", "--", &format!("-{pid}")])
                .status();
        }
    }
}

fn urlencode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_npx, ignore = "needs npx (Node.js) for oauth2-mock-server")]
async fn tokens_of_a_third_party_issuer_are_checked_like_our_own() {
    let mock = MockServer::start()
        .await
        .expect("oauth2-mock-server starts");
    let vars: HashMap<&str, String> = HashMap::from([
        ("MCP_PORT", "0".to_owned()),
        ("MCP_AUTH_MODE", "oauth".to_owned()),
        ("MCP_OAUTH_ISSUER", mock.issuer.clone()),
        ("MCP_OAUTH_RESOURCE", RESOURCE.to_owned()),
    ]);
    let settings = HttpSettings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    let server = http::start(mcp_server(None), settings)
        .await
        .expect("starts");
    let url = format!("http://{}/mcp", server.local_addr());
    let post = |token: String| {
        client()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(token)
            .body(initialize().to_string())
            .send()
    };

    let good = post(mock.token("openid proxmox:read", RESOURCE).await)
        .await
        .unwrap();
    assert_eq!(good.status(), StatusCode::OK);
    assert_eq!(
        rpc_reply(good, 1).await["result"]["serverInfo"]["name"],
        json!("nandi-proxmox-mcp")
    );

    let elsewhere = post(
        mock.token("proxmox:read", "https://other.example.test")
            .await,
    )
    .await
    .unwrap();
    assert_eq!(elsewhere.status(), StatusCode::UNAUTHORIZED);
    let challenge = elsewhere.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );

    let unscoped = post(mock.token("openid profile", RESOURCE).await)
        .await
        .unwrap();
    assert_eq!(unscoped.status(), StatusCode::FORBIDDEN);
    server.shutdown().await;
}
