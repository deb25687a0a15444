//! The two doors every request leaves through — `pve::Client::call` (REST) and
//! `ssh::ops::execute` (SSH) — each refuse, on their own, a request beyond a plain read outside
//! any clearance (`effects::with_clearance`): the pipeline's approval is not the only guard.
//! Against the emulator over HTTPS and a real `sshd` on loopback: outside a clearance the failure
//! is `EFFECT_NOT_APPROVED`, no attempt is made, the emulator's log stays empty and nothing runs
//! on the host (the command's marker file never appears, the `pct` stub is never called); the
//! same calls under a clearance do run, so the setup reaches the host and the refusal is the
//! door's. Removing the `admit` / `admit_ssh` call at either door fails these tests.
//!
//! The SSH cases are reported as ignored ("needs sshd") when `sshd` is not installed, except
//! under `CI=true` where they fail (build.rs decides; see the README's Tests section).

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::sshd::Sshd;
use nandi_proxmox_mcp::catalog::{self, Backend};
use nandi_proxmox_mcp::config::{SshConfig, SshStrategy};
use nandi_proxmox_mcp::effects::{EffectSet, with_clearance};
use nandi_proxmox_mcp::pve::{ApiRequest, Client, Connection, Method, TlsMode};
use nandi_proxmox_mcp::ssh::{Router, RusshExecutor, ops};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The emulator, with pve02 (CT 202's node) answering SSH at `localhost`: the test sshd.
async fn emulator() -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_millis(100),
        node_addresses: [("pve02".to_owned(), "localhost".to_owned())].into(),
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator starts")
}

fn client(emu: &Emulator) -> Client {
    let opts = EmulatorOptions::default();
    Client::new(&Connection {
        host: emu.host().into(),
        port: emu.port(),
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: TlsMode::Fingerprint(emu.cert_fingerprint().expect("tls")),
    })
    .expect("client")
}

/// A router to the test sshd as the entry host, trusting its key as `127.0.0.1` and
/// `localhost`.
fn router(sshd: &Sshd) -> Router {
    let line = sshd.known_hosts_line();
    let known_hosts = sshd.dir().join("known_hosts_choke_points");
    std::fs::write(
        &known_hosts,
        format!("{line}{}", line.replace("127.0.0.1", "localhost")),
    )
    .expect("known_hosts");
    let config = SshConfig {
        host: "127.0.0.1".into(),
        port: sshd.port,
        user: sshd.user.clone(),
        key_path: sshd.client_key(),
        strategy: SshStrategy::Auto,
        node_name: None,
        nodes: BTreeMap::new(),
        known_hosts: None,
        host_key_fingerprint: None,
    };
    let executor = Arc::new(RusshExecutor::new(
        sshd.settings(config.key_path.clone(), known_hosts),
    ));
    Router::new(executor, &config)
}

/// The SSH-backed tools that do more than read, each with arguments that leave its marker
/// file (in `dir`) behind on the host if it runs.
fn ssh_calls(dir: &Path) -> Vec<(&'static str, Value, PathBuf)> {
    let touch = |name: &str| {
        let marker = dir.join(name);
        (format!("touch {}", marker.display()), marker)
    };
    let (exec, exec_marker) = touch("ran-in-container");
    let (shell, shell_marker) = touch("ran-on-node");
    let written = dir.join("written-on-node");
    vec![
        (
            "pve_exec_in_container",
            json!({"ctid": 202, "command": exec}),
            exec_marker,
        ),
        (
            "pve_node_shell_run",
            json!({"node": "pve02", "command": shell}),
            shell_marker,
        ),
        (
            "pve_node_file_write",
            json!({"node": "pve02", "path": written.display().to_string(), "content": "x"}),
            written,
        ),
    ]
}

/// Runs `tool` with `arguments` straight through the SSH door; the error code (`None` on
/// success) and the attempts made.
async fn through_ssh_door(
    tool: &str,
    arguments: &Value,
    router: &Router,
    pve: &Client,
) -> (Option<String>, u32) {
    let spec = catalog::find(tool).expect("a catalog row");
    let Backend::Ssh(op) = spec.backend else {
        panic!("{tool} is not SSH-backed");
    };
    let args = nandi_proxmox_mcp::schema::validate(spec, arguments.as_object())
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"));
    let (outcome, attempts) = ops::execute(
        op,
        spec,
        Some(router),
        Some(pve),
        &args,
        &CancellationToken::new(),
    )
    .await;
    (outcome.err().map(|f| f.code.to_string()), attempts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn outside_a_clearance_the_ssh_door_runs_nothing_beyond_a_read() {
    let sshd = Sshd::start();
    let emu = emulator().await;
    let (pve, router) = (client(&emu), router(&sshd));
    for (tool, arguments, marker) in ssh_calls(sshd.dir()) {
        let (code, attempts) = through_ssh_door(tool, &arguments, &router, &pve).await;
        assert_eq!(code.as_deref(), Some("EFFECT_NOT_APPROVED"), "{tool}");
        assert_eq!(attempts, 0, "{tool}");
        assert!(!marker.exists(), "{tool} ran on the host");
    }
    assert!(sshd.calls("pct").is_empty(), "{:?}", sshd.calls("pct"));
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());

    // The same calls cleared for their effects do run: the refusal above was the door's.
    for (tool, arguments, marker) in ssh_calls(sshd.dir()) {
        let (code, attempts) = with_clearance(
            EffectSet::ANY,
            None,
            through_ssh_door(tool, &arguments, &router, &pve),
        )
        .await;
        assert_eq!((code, attempts), (None, 1), "{tool}");
        assert!(marker.exists(), "{tool} did not run under its clearance");
    }
    assert_eq!(sshd.calls("pct").len(), 1);
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_clearance_the_rest_door_sends_nothing_beyond_a_read() {
    let emu = common::emulator().await;
    let pve = client(&emu);
    let call = |req: ApiRequest| {
        let pve = pve.clone();
        async move { pve.call(req, &CancellationToken::new()).await }
    };
    let beyond_a_read = || {
        [
            ApiRequest::new(Method::Post, "/nodes/pve01/qemu/101/status/stop"),
            ApiRequest::new(Method::Put, "/nodes/pve01/qemu/101/config").param("memory", "4096"),
            ApiRequest::new(Method::Delete, "/nodes/pve01/qemu/101"),
            // A sensitive read (a guest's file) is beyond a plain read too.
            ApiRequest::get("/nodes/pve01/qemu/101/agent/file-read").param("file", "/etc/shadow"),
        ]
    };
    for req in beyond_a_read() {
        let what = format!("{} {}", req.method, req.path);
        let outcome = call(req).await;
        let code = outcome.result.as_ref().err().map(|e| e.code());
        assert_eq!(code, Some("EFFECT_NOT_APPROVED"), "{what}");
        assert_eq!(outcome.attempts, 0, "{what}");
    }
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());

    // A plain read passes outside any clearance; the stop passes under one.
    call(ApiRequest::get("/nodes")).await.result.expect("reads");
    let stop = ApiRequest::new(Method::Post, "/nodes/pve01/qemu/101/status/stop");
    with_clearance(EffectSet::ANY, None, call(stop))
        .await
        .result
        .expect("the stop starts under its clearance");
    let sent: Vec<_> = emu
        .requests()
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect();
    assert_eq!(
        sent,
        [
            ("GET".to_owned(), "/nodes".to_owned()),
            (
                "POST".to_owned(),
                "/nodes/pve01/qemu/101/status/stop".to_owned()
            ),
        ]
    );
    emu.shutdown().await;
}
