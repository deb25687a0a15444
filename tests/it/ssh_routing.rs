//! Node routing and the five SSH tools against a real `sshd` and the emulator: direct and
//! hop routes, no re-run on exit 255, hostile node addresses refused, and the tools end to
//! end through the built binary over stdio.
//!
//! Reported as ignored ("needs sshd") when `sshd` is not installed, except under `CI=true`
//! where it fails (build.rs decides; see the README's Tests section).

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::sshd::Sshd;
use common::{McpProcess, env_for, envelope};
use nandi_proxmox_mcp::config::{SshConfig, SshNodeOverride, SshStrategy};
use nandi_proxmox_mcp::pve::{Client, Connection, TlsMode};
use nandi_proxmox_mcp::ssh::router::RouteError;
use nandi_proxmox_mcp::ssh::{Route, Router, RunOptions, RusshExecutor, SshError};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn emulator_with(addresses: &[(&str, &str)]) -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_millis(100),
        node_addresses: addresses
            .iter()
            .map(|(n, a)| ((*n).to_owned(), (*a).to_owned()))
            .collect(),
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

fn ssh_config(sshd: &Sshd, strategy: SshStrategy) -> SshConfig {
    SshConfig {
        host: "127.0.0.1".into(),
        port: sshd.port,
        user: sshd.user.clone(),
        key_path: sshd.client_key(),
        strategy,
        node_name: None,
        nodes: BTreeMap::new(),
        known_hosts: None,
        host_key_fingerprint: None,
    }
}

/// known_hosts trusting the test sshd as `127.0.0.1` and as `localhost`.
fn known_hosts(sshd: &Sshd) -> PathBuf {
    let line = sshd.known_hosts_line();
    let path = sshd.dir().join("known_hosts_routing");
    std::fs::write(
        &path,
        format!("{line}{}", line.replace("127.0.0.1", "localhost")),
    )
    .unwrap();
    path
}

fn router(sshd: &Sshd, config: &SshConfig) -> Router {
    let executor = Arc::new(RusshExecutor::new(
        sshd.settings(config.key_path.clone(), known_hosts(sshd)),
    ));
    Router::new(executor, config)
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn options() -> RunOptions {
    RunOptions::with_timeout(Duration::from_secs(15))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn exit_255_on_a_direct_route_is_never_re_run() {
    let sshd = Sshd::start();
    // pve02 (CT 202) answers directly at `localhost`; a hop would also be possible.
    let emu = emulator_with(&[("pve02", "localhost")]).await;
    let pve = client(&emu);
    let router = router(&sshd, &ssh_config(&sshd, SshStrategy::Auto));
    let cancel = CancellationToken::new();
    let node = router.owning_node(&pve, 202, &cancel).await.expect("owner");
    assert_eq!(node, "pve02");
    let command = argv(&["pct", "exec", "202", "--", "bash", "-lc", "exit 255"]);
    let (out, route) = router
        .run_on_node(&pve, &node, &command, options(), &cancel)
        .await
        .expect("ran");
    assert_eq!((out.exit_status, route), (Some(255), Route::Direct));
    assert_eq!(sshd.calls("pct").len(), 1, "the command ran exactly once");
    assert!(sshd.calls("ssh").is_empty(), "no hop after the command ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_connect_failure_falls_back_to_the_hop_which_runs_once() {
    let sshd = Sshd::start();
    // pve02 at 127.0.0.2: nothing listens there, so the direct route cannot connect.
    let emu = emulator_with(&[]).await;
    let pve = client(&emu);
    let router = router(&sshd, &ssh_config(&sshd, SshStrategy::Auto));
    let cancel = CancellationToken::new();
    let command = argv(&[
        "pct",
        "exec",
        "202",
        "--",
        "bash",
        "-lc",
        "echo via-hop; exit 255",
    ]);
    let (out, route) = router
        .run_on_node(&pve, "pve02", &command, options(), &cancel)
        .await
        .expect("hop ran");
    assert_eq!(route, Route::Hop);
    assert_eq!(out.stdout, "via-hop\n");
    assert_eq!(out.exit_status, Some(255));
    let hops = sshd.calls("ssh");
    assert_eq!(hops.len(), 1);
    let dash = hops[0]
        .iter()
        .position(|a| a == "--")
        .expect("-- before the address");
    assert_eq!(
        hops[0][dash + 1],
        "127.0.0.2",
        "address is its own argv element"
    );
    assert!(hops[0].contains(&"StrictHostKeyChecking=yes".to_owned()));
    assert_eq!(
        sshd.calls("pct"),
        vec![command[1..].to_vec()],
        "ran once, argv intact"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn hostile_node_addresses_are_refused_before_any_connection() {
    let sshd = Sshd::start();
    let marker = sshd.dir().join("pwned");
    let m = marker.display().to_string();
    for hostile in [
        format!("127.0.0.2;touch {m}"),
        format!("-oProxyCommand=touch {m}"),
        format!("$(touch {m})"),
        "pve 02".to_owned(),
    ] {
        let emu = emulator_with(&[("pve02", hostile.as_str())]).await;
        let pve = client(&emu);
        for strategy in [SshStrategy::Hop, SshStrategy::Auto, SshStrategy::Direct] {
            let router = router(&sshd, &ssh_config(&sshd, strategy));
            let err = router
                .run_on_node(
                    &pve,
                    "pve02",
                    &argv(&["pct", "exec", "202", "--", "true"]),
                    options(),
                    &CancellationToken::new(),
                )
                .await
                .expect_err("refused");
            assert!(
                matches!(err, RouteError::Ssh(SshError::InvalidTarget { .. })),
                "{hostile}: {err:?}"
            );
        }
    }
    assert!(sshd.calls("ssh").is_empty() && sshd.calls("pct").is_empty());
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn node_overrides_and_the_entry_node_route_directly() {
    let sshd = Sshd::start();
    let emu = emulator_with(&[]).await;
    let pve = client(&emu);
    let mut config = ssh_config(&sshd, SshStrategy::Direct);
    config.nodes.insert(
        "pve02".into(),
        SshNodeOverride {
            host: "localhost".into(),
            port: Some(sshd.port),
            user: None,
        },
    );
    let router = router(&sshd, &config);
    let cancel = CancellationToken::new();
    for (ctid, node) in [(201, "pve01"), (202, "pve02")] {
        assert_eq!(router.owning_node(&pve, ctid, &cancel).await.unwrap(), node);
        let (out, route) = router
            .run_on_node(&pve, node, &argv(&["echo", node]), options(), &cancel)
            .await
            .expect("direct");
        assert_eq!((out.stdout.trim(), route), (node, Route::Direct));
    }
    // A QEMU VM id or an unknown id is not a container.
    for ctid in [101, 4242] {
        let err = router.owning_node(&pve, ctid, &cancel).await.unwrap_err();
        assert!(matches!(err, RouteError::GuestNotFound { .. }), "{err:?}");
    }
}

fn ssh_env(emu: &Emulator, sshd: &Sshd) -> Vec<(String, String)> {
    let mut env = env_for(emu);
    env.extend(sshd.server_vars(&known_hosts(sshd)));
    env.push(("PVE_ACCESS_TIER".into(), "full".into()));
    env.push(("PVE_MODULE_MODE".into(), "advanced".into()));
    env
}

async fn ok_data(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{tool}: {env}");
    assert_ne!(result["isError"], true);
    env["data"].clone()
}

async fn err_of(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], false, "{tool}: {env}");
    assert_eq!(result["isError"], true);
    env["error"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn the_five_tools_work_through_the_binary() {
    let sshd = Sshd::start();
    let emu = emulator_with(&[]).await;
    let mut mcp = McpProcess::spawn(&["run"], &ssh_env(&emu, &sshd));
    let init = mcp.initialize().await;
    let instructions = init["result"]["instructions"].as_str().unwrap().to_owned();
    assert!(
        instructions.contains("never trusted on first use"),
        "{instructions}"
    );
    let listed: Vec<String> = mcp
        .list_tools()
        .await
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    // Legacy aliases (runRemoteDiagnostic, execInContainer) are callable, not listed.
    for name in [
        "pve_run_remote_diagnostic",
        "pve_ssh_batch_diagnostics",
        "pve_exec_in_container",
        "pve_docker_ps_in_container",
        "pve_docker_logs_in_container",
    ] {
        assert!(listed.iter().any(|n| n == name), "{name} not listed");
    }

    // CT 201 lives on pve01, whose address is the SSH host: direct.
    let data = ok_data(
        &mut mcp,
        "pve_run_remote_diagnostic",
        json!({"ctid": 201, "command": "uptime", "confirm": true}),
    )
    .await;
    assert_eq!(data["node"], "pve01");
    assert_eq!(data["route"], "direct");
    assert!(
        data["stdout"].as_str().unwrap().contains("load average"),
        "{data}"
    );
    let error = err_of(
        &mut mcp,
        "runRemoteDiagnostic",
        json!({"ctid": 201, "command": "uptime; id"}),
    )
    .await;
    // The command is an enum: validation refuses it before anything reaches SSH.
    assert_eq!(error["code"], "TOOL_INPUT_REJECTED");

    let data = ok_data(
        &mut mcp,
        "pve_docker_ps_in_container",
        json!({"ctid": 201, "confirm": true}),
    )
    .await;
    assert!(
        data["stdout"].as_str().unwrap().contains("nginx:1.27"),
        "{data}"
    );
    // CT 202 lives on pve02 (127.0.0.2, nothing listening): the hop through the entry node.
    let data = ok_data(
        &mut mcp,
        "dockerLogsInContainer",
        json!({"ctid": 202, "containerName": "web", "tail": 3, "confirm": true}),
    )
    .await;
    assert_eq!(data["node"], "pve02");
    assert_eq!(data["route"], "hop");
    let stdout = data["stdout"].as_str().unwrap();
    assert!(
        stdout.contains("web log line 3") && !stdout.contains("line 4"),
        "{stdout}"
    );
    assert!(
        stdout.contains("web stderr line"),
        "docker's stderr is interleaved: {stdout}"
    );
    let pct_before = sshd.calls("pct").len();
    let marker = sshd.dir().join("pwned");
    let hostile_name = format!("web; touch {}", marker.display());
    let error = err_of(
        &mut mcp,
        "pve_docker_logs_in_container",
        json!({"ctid": 201, "containerName": hostile_name, "confirm": true}),
    )
    .await;
    assert_eq!(error["code"], "INVALID_CONTAINER_NAME");
    assert_eq!(sshd.calls("pct").len(), pct_before, "nothing ran");

    // exec: confirmation first, then the command arrives as one literal argv element.
    let command = format!(
        "printf '%s|' \"a b\" '$(touch {m})' \"`echo ok`\"; echo",
        m = marker.display()
    );
    let error = err_of(
        &mut mcp,
        "execInContainer",
        json!({"ctid": 201, "command": command}),
    )
    .await;
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED");
    let data = ok_data(
        &mut mcp,
        "pve_exec_in_container",
        json!({"ctid": 201, "command": command, "confirm": true}),
    )
    .await;
    assert_eq!(
        data["stdout"],
        format!("a b|$(touch {})|ok|\n", marker.display())
    );
    let last = sshd.calls("pct").pop().unwrap();
    assert_eq!(last, argv(&["exec", "201", "--", "bash", "-lc", &command]));
    assert!(!marker.exists());

    // A failing command keeps stdout, stderr and the exit code.
    let error = err_of(
        &mut mcp,
        "pve_exec_in_container",
        json!({"ctid": 201, "command": "echo partial; echo broken >&2; exit 7", "confirm": true}),
    )
    .await;
    assert_eq!(error["code"], "REMOTE_COMMAND_FAILED");
    assert_eq!(error["details"]["exitCode"], 7);
    assert_eq!(error["details"]["stdout"], "partial\n");
    assert_eq!(error["details"]["stderr"], "broken\n");
    assert!(error["message"].as_str().unwrap().contains("broken"));
    let error = err_of(
        &mut mcp,
        "pve_exec_in_container",
        json!({"ctid": 101, "command": "true", "confirm": true}),
    )
    .await;
    assert_eq!(error["code"], "GUEST_NOT_FOUND");

    let data = ok_data(&mut mcp, "pve_ssh_batch_diagnostics", json!({})).await;
    let checks: Vec<&str> = data
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        checks,
        [
            "batch_echo",
            "authorized_keys_permissions",
            "shell",
            "sshd_batch_related"
        ]
    );
    assert_eq!(
        data[0],
        json!({"check": "batch_echo", "ok": true, "detail": "batch-ok"})
    );
    for item in data.as_array().unwrap() {
        assert!(
            item["ok"].is_boolean() && item["detail"].is_string(),
            "{item}"
        );
    }
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ssh_settings_the_tools_are_not_registered() {
    let emu = emulator_with(&[]).await;
    let mut env = env_for(&emu);
    env.push(("PVE_ACCESS_TIER".into(), "full".into()));
    env.push(("PVE_MODULE_MODE".into(), "advanced".into()));
    let mut mcp = McpProcess::spawn(&["run"], &env);
    let init = mcp.initialize().await;
    let instructions = init["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("SSH is not configured"),
        "{instructions}"
    );
    let tools = mcp.list_tools().await;
    assert!(!tools.is_empty());
    assert!(
        !tools
            .iter()
            .any(|t| t["_meta"]["category"] == "remote" || t["name"] == "execInContainer"),
        "SSH tools listed without SSH"
    );
    let response = mcp
        .request("tools/call", json!({"name": "pve_exec_in_container", "arguments": {"ctid": 201, "command": "id", "confirm": true}}))
        .await;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool not found")
    );
    mcp.shutdown().await;
}

/// Runs `nandi-proxmox-mcp doctor <args>` with exactly `env` (plus PATH/HOME) in a
/// blocking task, so the emulator keeps serving on this test's runtime.
async fn doctor(
    args: &'static [&'static str],
    env: Vec<(String, String)>,
) -> (Option<i32>, String) {
    tokio::task::spawn_blocking(move || {
        let home = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(common::binary())
            .arg("doctor")
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .current_dir(home.path())
            .envs(env)
            .output()
            .expect("doctor runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    })
    .await
    .unwrap()
}

/// `doctor --check remote-op` runs a real command on the entry host and a routed
/// `pct exec`, through the same executor the tools use; an unknown host key is RED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn doctor_remote_op_uses_the_real_ssh_path() {
    let sshd = Sshd::start();
    let emu = emulator_with(&[]).await;
    let (code, stdout) = doctor(
        &["--check", "remote-op", "--ctid", "201"],
        ssh_env(&emu, &sshd),
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("[GREEN] sshBatch"), "{stdout}");
    assert!(stdout.contains("[GREEN] pctExec"), "{stdout}");
    assert!(stdout.contains("container 201 on pve01"), "{stdout}");

    let empty = tempfile::NamedTempFile::new().unwrap();
    let mut env = ssh_env(&emu, &sshd);
    env.push((
        "PROXMOX_SSH_KNOWN_HOSTS".into(),
        empty.path().display().to_string(),
    ));
    let (code, stdout) = doctor(&["--check", "remote-op"], env).await;
    assert_ne!(code, Some(0), "{stdout}");
    assert!(stdout.contains("[RED] sshBatch"), "{stdout}");
    assert!(stdout.contains("not trusted"), "{stdout}");
}
