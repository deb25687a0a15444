//! The shipped forms agree with the code: the MCPB manifest (version, user settings mapped to
//! real variables, validated by the official `mcpb` CLI), the image definition (static binary,
//! minimal base, non-root, HTTP by default, a health check the binary answers itself), the
//! Kubernetes example (checked against the API schemas by kubernetes-validate) and the
//! `health` command the image relies on.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nandi_proxmox_mcp::config;
use nandi_proxmox_mcp::policy;
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

const TOKEN: &str = "3f9a0c7d51e2b846a9d03c5e7f1b2a8d6c4e0f9b3a5d7c1e8f2a4b6c9d0e1f3a";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn manifest() -> Value {
    serde_json::from_str(&read("packaging/mcpb/manifest.json")).expect("manifest is JSON")
}

#[test]
fn the_mcpb_manifest_matches_cargo_and_maps_settings_to_real_variables() {
    let manifest = manifest();
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["server"]["type"], "binary");
    let known: BTreeSet<&str> = config::ENV_VARS
        .iter()
        .chain(policy::ENV_VARS)
        .map(|v| v.name)
        .collect();
    let secret: BTreeSet<&str> = config::ENV_VARS
        .iter()
        .chain(policy::ENV_VARS)
        .filter(|v| v.secret)
        .map(|v| v.name)
        .collect();
    let user_config = manifest["user_config"].as_object().expect("user_config");
    let env = manifest["server"]["mcp_config"]["env"]
        .as_object()
        .expect("env");
    let mut used = BTreeSet::new();
    for (name, value) in env {
        assert!(
            known.contains(name.as_str()),
            "{name} is not a variable the server reads"
        );
        let key = value
            .as_str()
            .and_then(|v| v.strip_prefix("${user_config."))
            .and_then(|v| v.strip_suffix('}'))
            .unwrap_or_else(|| panic!("{name} = {value}: expected ${{user_config.KEY}}"));
        let option = &user_config[key];
        assert!(option.is_object(), "{name} names unknown user_config {key}");
        assert_eq!(
            option["sensitive"].as_bool().unwrap_or(false),
            secret.contains(name.as_str()),
            "{key}: sensitive exactly when {name} is a secret"
        );
        used.insert(key);
    }
    let declared: BTreeSet<&str> = user_config.keys().map(String::as_str).collect();
    assert_eq!(used, declared, "every user setting reaches the server");
    for needed in ["proxmox_host", "token_secret", "access_tier"] {
        assert!(declared.contains(needed), "{needed}");
    }
    // The access tier's default is the server's own default.
    assert_eq!(user_config["access_tier"]["default"], "read-only");
    // One binary per platform, inside the bundle.
    let config = &manifest["server"]["mcp_config"];
    assert_eq!(config["args"], serde_json::json!(["run"]));
    let mut commands = vec![config["command"].as_str().expect("command")];
    for platform in ["darwin", "win32"] {
        commands.push(
            config["platform_overrides"][platform]["command"]
                .as_str()
                .unwrap_or_else(|| panic!("{platform} override")),
        );
    }
    for command in commands {
        assert!(command.starts_with("${__dirname}/server/"), "{command}");
    }
    assert_eq!(
        manifest["compatibility"]["platforms"],
        serde_json::json!(["darwin", "win32", "linux"])
    );
}

#[test]
#[cfg_attr(no_npx, ignore = "needs npx (Node.js) to run @anthropic-ai/mcpb")]
fn the_official_mcpb_cli_accepts_the_manifest_and_refuses_a_broken_one() {
    let validate = |path: &std::path::Path| {
        std::process::Command::new("npx")
            .args(["-y", "@anthropic-ai/mcpb@2.1.2", "validate"])
            .arg(path)
            .output()
            .expect("npx runs")
    };
    let good = validate(&root().join("packaging/mcpb/manifest.json"));
    assert!(
        good.status.success(),
        "mcpb validate failed (npm registry reachable?): {}{}",
        String::from_utf8_lossy(&good.stdout),
        String::from_utf8_lossy(&good.stderr)
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let mut broken = manifest();
    broken["server"]["type"] = "rust".into();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, broken.to_string()).expect("write");
    assert!(
        !validate(&path).status.success(),
        "a wrong server type must fail"
    );
}

#[test]
fn the_image_is_static_non_root_http_by_default_with_a_health_check() {
    let dockerfile = read("Dockerfile");
    let stages: Vec<&str> = dockerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    let last = stages.last().expect("a FROM line");
    assert!(
        last.contains("gcr.io/distroless/static") || last.contains("FROM scratch"),
        "minimal base, no libc needed: {last}"
    );
    // The source build runs on musl (Alpine), so the binary is static.
    assert!(dockerfile.contains("FROM rust:") && dockerfile.contains("-alpine"));
    for line in [
        "USER 65532:65532",
        "MCP_TRANSPORT=http",
        "MCP_HOST=0.0.0.0",
        "EXPOSE 3000",
        "ENTRYPOINT [\"/usr/local/bin/nandi-proxmox-mcp\"]",
        "CMD [\"/usr/local/bin/nandi-proxmox-mcp\", \"health\", \"--url\", \"http://127.0.0.1:3000/health\"]",
    ] {
        assert!(dockerfile.contains(line), "Dockerfile lacks {line}");
    }
    assert!(dockerfile.contains("HEALTHCHECK"));
    assert!(
        !dockerfile.contains("MCP_AUTH_TOKEN="),
        "no token baked into the image"
    );
    let descriptor: Value = serde_json::from_str(&read(".mcp/server.json")).expect("JSON");
    let name = descriptor["name"].as_str().expect("name");
    assert!(
        dockerfile.contains(&format!("io.modelcontextprotocol.server.name=\"{name}\"")),
        "the registry verifies the image by this label"
    );
    assert!(dockerfile.contains(&format!("ARG VERSION={}", env!("CARGO_PKG_VERSION"))));
    assert!(read(".dockerignore").lines().any(|l| l == "target/"));
}

#[test]
fn the_kubernetes_example_runs_two_stateless_replicas_with_probes_and_secrets() {
    let deployment = read("deploy/kubernetes/deployment.yaml");
    for needle in [
        "replicas: 2",
        "name: MCP_STATELESS\n              value: \"true\"",
        "name: PVE_APPROVAL_KEY_FILE",
        "name: MCP_AUTH_TOKEN_FILE",
        "path: /health",
        "path: /ready",
        "key: proxmox-token-secret",
        "runAsNonRoot: true",
        &format!("nandi-proxmox-mcp:{}", env!("CARGO_PKG_VERSION")),
    ] {
        assert!(deployment.contains(needle), "deployment lacks {needle:?}");
    }
    let secret = read("deploy/kubernetes/secret.yaml");
    for key in ["mcp-auth-token:", "proxmox-token-secret:", "approval-key:"] {
        assert!(secret.contains(key), "secret lacks {key}");
    }
    assert!(read("deploy/kubernetes/service.yaml").contains("kind: Service"));
}

#[test]
#[cfg_attr(
    no_python,
    ignore = "needs python3: scripts/validate-k8s installs kubernetes-validate from PyPI into a venv"
)]
fn the_kubernetes_example_passes_the_api_schemas() {
    let out = std::process::Command::new("bash")
        .arg(root().join("scripts/validate-k8s"))
        .output()
        .expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    for file in ["deployment.yaml", "secret.yaml", "service.yaml"] {
        assert!(text.contains(&format!("{file} passed")), "{file}: {text}");
    }
}

/// `health --url URL`: the exit status of the binary.
async fn health(url: &str) -> Option<i32> {
    tokio::process::Command::new(common::binary())
        .args(["health", "--url", url])
        .env_clear()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .expect("runs")
        .code()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_zero_only_when_the_server_answers_200() {
    let home = tempfile::tempdir().expect("home");
    let mut child = tokio::process::Command::new(common::binary())
        .args(["run", "--demo"])
        .env_clear()
        .env("HOME", home.path())
        .env("RUST_LOG", "info")
        .env("MCP_TRANSPORT", "http")
        .env("MCP_PORT", "0")
        .env("MCP_AUTH_TOKEN", TOKEN)
        .current_dir(home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("server starts");
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    // One deadline for the whole wait: a chatty process cannot keep the loop alive.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let base = loop {
        let line = tokio::time::timeout_at(deadline, stderr.next_line())
            .await
            .expect("listening within 20 s")
            .expect("readable")
            .expect("server exited early");
        if let Some(at) = line.find("listening on http://") {
            let url = line[at + "listening on ".len()..]
                .split_whitespace()
                .next()
                .expect("url")
                .to_owned();
            break url.trim_end_matches("/mcp").to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });

    assert_eq!(health(&format!("{base}/health")).await, Some(0));
    // A route that answers, but not 200.
    assert_eq!(health(&format!("{base}/no-such-route")).await, Some(1));
    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    assert_eq!(
        health(&format!("http://127.0.0.1:{port}/health")).await,
        Some(1)
    );
    // Only plain http next to the server.
    assert_eq!(health("https://127.0.0.1/health").await, Some(2));
    assert_eq!(health("not a url").await, Some(2));
}
