//! `pve_capabilities` opens no SSH connection while changes are frozen: the built binary over
//! stdio, the emulator over HTTPS for Proxmox, and as the SSH entry host a local TCP listener
//! that counts the connections made to it. Unfrozen, the probe connects (the listener sees
//! it, so the count is a real witness); with the freeze file present, the answer says the
//! probe was not run and the listener sees nothing, while the REST reads go on.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{McpProcess, emulator, env_for, envelope};
use serde_json::json;

/// A listener that accepts and drops every connection, counting them.
struct Counter {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Counter {
    async fn start() -> Counter {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(socket);
            }
        });
        Counter { port, hits }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    no_sshd,
    ignore = "needs ssh-keygen for a client key (apt-get install openssh-server)"
)]
async fn capabilities_opens_no_ssh_connection_while_frozen() {
    let emu = emulator().await;
    let entry = Counter::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    // A real key, so an unfrozen probe gets as far as the TCP connection.
    let key = dir.path().join("id_ed25519");
    common::sshd::keygen(&key, "ed25519", "");
    let known_hosts = dir.path().join("known_hosts");
    std::fs::write(&known_hosts, "").expect("known_hosts");
    let freeze_file = dir.path().join("frozen");
    let mut env = env_for(&emu);
    env.extend([
        ("PROXMOX_SSH_HOST".to_owned(), "127.0.0.1".to_owned()),
        ("PROXMOX_SSH_PORT".to_owned(), entry.port.to_string()),
        ("PROXMOX_SSH_KEY_PATH".to_owned(), key.display().to_string()),
        (
            "PROXMOX_SSH_KNOWN_HOSTS".to_owned(),
            known_hosts.display().to_string(),
        ),
        (
            "PVE_FREEZE_FILE".to_owned(),
            freeze_file.display().to_string(),
        ),
    ]);
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;

    // Unfrozen: the probe reaches the entry host (which hangs up: not reachable).
    let env_ok = envelope(&mcp.call("pve_capabilities", json!({})).await);
    let ssh = &env_ok["data"]["ssh"];
    assert_eq!(ssh["configured"], true, "{env_ok}");
    assert_eq!(ssh["probed"], true, "{env_ok}");
    assert_eq!(ssh["reachable"], false, "{env_ok}");
    let seen = entry.hits();
    assert!(seen >= 1, "the unfrozen probe connected: {env_ok}");

    // Frozen: reported without opening SSH; the REST reads still answer.
    std::fs::write(&freeze_file, "incident 7").expect("freeze file");
    let frozen = envelope(&mcp.call("pve_capabilities", json!({})).await);
    assert_eq!(frozen["ok"], true, "{frozen}");
    let ssh = &frozen["data"]["ssh"];
    assert_eq!(ssh["configured"], true, "{frozen}");
    assert_eq!(ssh["host"], "127.0.0.1", "{frozen}");
    assert_eq!(ssh["probed"], false, "{frozen}");
    assert!(ssh["reachable"].is_null(), "{frozen}");
    assert!(
        ssh["not_probed"]
            .as_str()
            .is_some_and(|why| why.contains("frozen")),
        "{frozen}"
    );
    assert_eq!(frozen["data"]["proxmox"]["version"], "9.1.2", "{frozen}");
    // A connection attempt would have been counted by now; give a stray one time to land.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(entry.hits(), seen, "no SSH connection while frozen");

    // Lifted: the probe runs again.
    std::fs::remove_file(&freeze_file).expect("unfreeze");
    let lifted = envelope(&mcp.call("pve_capabilities", json!({})).await);
    assert_eq!(lifted["data"]["ssh"]["probed"], true, "{lifted}");
    assert!(entry.hits() > seen, "{lifted}");
    assert!(mcp.shutdown().await.success());
}
