//! Per-person Proxmox identity over real HTTP with a real token issuer (the test's own, on
//! loopback), rmcp's client side and the emulator checking tokens and ACLs: with a people file,
//! alice's calls reach Proxmox with alice's API token and bob's with bob's; a Proxmox ACL that
//! denies bob a guest refuses bob and not alice; Proxmox's task log names each; the audit trail
//! names both the OAuth subject and the Proxmox identity; MCP tasks are followed with the
//! person's token; a caller the file does not name is refused before anything is sent (or,
//! when the operator allows it, acts with the server's token, said so in the audit).

use crate::harness;
use crate::mcp_tasks_client;
use crate::oauth_issuer;

use std::path::Path;
use std::time::Duration;

use harness::{oauth_serve, pve_client};
use mcp_tasks_client::{ClientSetup, TestClient, call_once, emulator_with_pace, envelope};
use nandi_proxmox_mcp::audit::{AuditLog, AuditTarget};
use nandi_proxmox_mcp::pve::ApiRequest;
use nandi_proxmox_mcp::transport::http::HttpServer;
use oauth_issuer::Issuer;
use pve_emulator::{Emulator, EmulatorOptions};
use rmcp::ServiceExt;
use rmcp::model::{CallToolResponse, GetTaskParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const ALICE_TOKEN: &str = "alice@pve!mcp";
const ALICE_SECRET: &str = "a11ce000-5ec2-4e7a-9d3b-0000000000a1";
const BOB_TOKEN: &str = "bob@pve!mcp";
const BOB_SECRET: &str = "b0b00000-5ec2-4e7a-9d3b-0000000000b0";

/// The people file naming alice and bob, 0600, with `unmapped` as given.
fn people_file(dir: &Path, unmapped: &str) -> std::path::PathBuf {
    let path = dir.join("people.json");
    let body = json!({
        "unmapped": unmapped,
        "people": {
            "alice": {"tokenId": ALICE_TOKEN, "secret": ALICE_SECRET},
            "bob": {"tokenId": BOB_TOKEN, "secret": BOB_SECRET},
        }
    });
    std::fs::write(&path, body.to_string()).expect("people file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    path
}

/// The OAuth transport at `full`/advanced (confirmations by `confirm: true`) with the people
/// file and an audit log in `dir`, in front of `emu`.
async fn serve(issuer: &Issuer, emu: &Emulator, dir: &Path, unmapped: &str) -> HttpServer {
    let people = people_file(dir, unmapped).display().to_string();
    let vars = [
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_MODULE_MODE", "advanced"),
        ("PVE_HUMAN_APPROVAL", "confirm"),
        ("PVE_PEOPLE_FILE", people.as_str()),
    ];
    let server = harness::server_audited(
        harness::settings_of(&vars),
        Some(pve_client(emu)),
        AuditLog::new(AuditTarget::File(dir.join("audit.jsonl"))),
    );
    oauth_serve(&issuer.url, server, &[]).await
}

/// An emulator that knows alice's and bob's tokens.
async fn emulator() -> Emulator {
    let emu = emulator_with_pace(Duration::from_millis(50)).await;
    emu.add_token(ALICE_TOKEN, ALICE_SECRET);
    emu.add_token(BOB_TOKEN, BOB_SECRET);
    emu
}

/// rmcp's client side over HTTP as OAuth subject `subject` (admin scope, client `claude`),
/// declaring the tasks extension when `tasks`.
async fn person(
    issuer: &Issuer,
    http: &HttpServer,
    subject: &str,
    tasks: bool,
) -> mcp_tasks_client::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut claims = issuer.claims();
    claims["sub"] = json!(subject);
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://{}/mcp", http.local_addr()))
            .auth_header(issuer.token(&claims));
    TestClient::new(ClientSetup {
        tasks,
        approve: None,
    })
    .serve(StreamableHttpClientTransport::from_config(config))
    .await
    .expect("connects over HTTP")
}

/// The tokens the emulator saw on requests after the first `from`.
fn tokens_since(emu: &Emulator, from: usize) -> Vec<Option<String>> {
    emu.requests()[from..]
        .iter()
        .map(|r| r.token_id.clone())
        .collect()
}

/// Who Proxmox's own cluster task log names (`user@realm!token`), read over HTTPS with the
/// server's token.
async fn task_users(emu: &Emulator) -> Vec<String> {
    let outcome = pve_client(emu)
        .call(ApiRequest::get("/cluster/tasks"), &CancellationToken::new())
        .await;
    let tasks = outcome.result.expect("task log");
    tasks
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| {
            // Proxmox lists a token's task as `user` plus `tokenid`.
            let user = t["user"].as_str()?;
            Some(match t["tokenid"].as_str() {
                Some(token) => format!("{user}!{token}"),
                None => user.to_owned(),
            })
        })
        .collect()
}

fn audit_lines(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_person_reaches_proxmox_with_their_own_token_and_rights() {
    let issuer = Issuer::start().await;
    let emu = emulator().await;
    emu.deny(BOB_TOKEN, "/vms/101");
    let dir = tempfile::tempdir().expect("dir");
    let http = serve(&issuer, &emu, dir.path(), "refuse").await;
    let alice = person(&issuer, &http, "alice", true).await;
    let bob = person(&issuer, &http, "bob", false).await;
    let status = json!({"node": "pve01", "vmid": 101});

    // A read: alice's with alice's token, allowed; bob's with bob's, refused by Proxmox.
    let before = emu.requests().len();
    let (failed, answer) = envelope(&alice, "pve_get_qemu_status", status.clone()).await;
    assert!(!failed, "{answer}");
    let seen = tokens_since(&emu, before);
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|t| t.as_deref() == Some(ALICE_TOKEN)),
        "{seen:?}"
    );
    let before = emu.requests().len();
    let (failed, answer) = envelope(&bob, "pve_get_qemu_status", status).await;
    assert!(failed, "{answer}");
    assert_eq!(answer["error"]["code"], "PROXMOX_ACL_FORBIDDEN", "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("/vms/101") && message.contains("VM.Audit"),
        "{message}"
    );
    assert!(message.contains(BOB_TOKEN), "{message}");
    let seen = tokens_since(&emu, before);
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|t| t.as_deref() == Some(BOB_TOKEN)),
        "{seen:?}"
    );

    // Changes: each person's clone runs as them, and Proxmox's task log names each.
    let clone =
        |newid: u32| json!({"node": "pve01", "vmid": 9000, "newid": newid, "confirm": true});
    let CallToolResponse::Task(started) = call_once(&alice, "pve_qemu_clone", clone(741)).await
    else {
        panic!("alice's clone answers as an MCP task");
    };
    let (failed, answer) = envelope(&bob, "pve_qemu_clone", clone(742)).await;
    assert!(!failed, "{answer}");
    let users = task_users(&emu).await;
    assert!(users.iter().any(|u| u == ALICE_TOKEN), "{users:?}");
    assert!(users.iter().any(|u| u == BOB_TOKEN), "{users:?}");

    // Alice's MCP task is followed with her token, not the server's.
    let before = emu.requests().len();
    alice
        .peer()
        .get_task(GetTaskParams::new(&started.task.task_id))
        .await
        .expect("alice reads her task");
    let seen = tokens_since(&emu, before);
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|t| t.as_deref() == Some(ALICE_TOKEN)),
        "{seen:?}"
    );

    // The audit names both the OAuth subject and the Proxmox identity; no secret anywhere.
    let lines = audit_lines(dir.path());
    let callers: Vec<&str> = lines.iter().filter_map(|l| l["caller"].as_str()).collect();
    for (subject, token) in [("oauth:alice", ALICE_TOKEN), ("oauth:bob", BOB_TOKEN)] {
        assert!(
            callers
                .iter()
                .any(|c| c.starts_with(subject) && c.ends_with(&format!("as pve:{token}"))),
            "{callers:?}"
        );
    }
    let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("audit");
    assert!(!text.contains(ALICE_SECRET) && !text.contains(BOB_SECRET));
    assert!(!answer.to_string().contains(BOB_SECRET));

    for c in [alice, bob] {
        c.cancel().await.ok();
    }
    http.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_the_people_file_does_not_name_is_refused_or_acts_as_the_server_if_allowed() {
    let issuer = Issuer::start().await;
    let emu = emulator().await;
    let status = json!({"node": "pve01", "vmid": 101});

    let dir = tempfile::tempdir().expect("dir");
    let http = serve(&issuer, &emu, dir.path(), "refuse").await;
    let carol = person(&issuer, &http, "carol", false).await;
    let before = emu.requests().len();
    let (failed, answer) = envelope(&carol, "pve_get_qemu_status", status.clone()).await;
    assert!(failed, "{answer}");
    assert_eq!(answer["error"]["code"], "PERSON_NOT_MAPPED", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("oauth:carol")
    );
    assert_eq!(emu.requests().len(), before, "carol reached Proxmox");
    let refused = audit_lines(dir.path());
    assert!(
        refused
            .iter()
            .any(|l| l["error"]["code"] == "PERSON_NOT_MAPPED"
                || l.to_string().contains("PERSON_NOT_MAPPED")),
        "{refused:?}"
    );
    carol.cancel().await.ok();
    http.shutdown().await;

    let dir = tempfile::tempdir().expect("dir");
    let http = serve(&issuer, &emu, dir.path(), "shared").await;
    let carol = person(&issuer, &http, "carol", false).await;
    let before = emu.requests().len();
    let (failed, answer) = envelope(&carol, "pve_get_qemu_status", status).await;
    assert!(!failed, "{answer}");
    let server_token = EmulatorOptions::default();
    let server_token = format!(
        "{}@{}!{}",
        server_token.user, server_token.realm, server_token.token_name
    );
    let seen = tokens_since(&emu, before);
    assert!(
        seen.iter()
            .all(|t| t.as_deref() == Some(server_token.as_str())),
        "{seen:?}"
    );
    // A start is a change: recorded, naming that it ran with the server's token.
    let (failed, answer) = envelope(
        &carol,
        "pve_start_qemu_vm",
        json!({"node": "pve03", "vmid": 102, "confirm": true}),
    )
    .await;
    assert!(!failed, "{answer}");
    let callers: Vec<String> = audit_lines(dir.path())
        .iter()
        .filter_map(|l| l["caller"].as_str().map(str::to_owned))
        .collect();
    assert!(
        callers
            .iter()
            .any(|c| c.starts_with("oauth:carol") && c.contains("as the server's token")),
        "{callers:?}"
    );
    carol.cancel().await.ok();
    http.shutdown().await;
}
