//! The shipped forms agree with the code: the MCPB manifest (version, user settings mapped to
//! real variables, validated by the official `mcpb` CLI), the image definition (static binary,
//! minimal base, non-root, HTTP by default, a health check the binary answers itself), the
//! Kubernetes example (checked against the API schemas by kubernetes-validate) and the
//! `health` command the image relies on.

use crate::common;

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

// ---- the Debian package, the SBOM and the release workflow (issue 38; docs/RELEASE.md) ------

const UNIT: &str = "packaging/deb/nandi-proxmox-mcp.service";

/// The unit's `Key=value` lines, in order (comments and section headers left out).
fn unit_lines() -> Vec<(String, String)> {
    read(UNIT)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('[') && l.contains('='))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("key=value");
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Every variable the server reads, by name.
fn known_vars() -> BTreeSet<&'static str> {
    config::ENV_VARS
        .iter()
        .chain(policy::ENV_VARS)
        .chain(nandi_proxmox_mcp::transport::http::VARS)
        .map(|v| v.name)
        .collect()
}

#[test]
fn the_unit_serves_http_in_a_hardened_sandbox_with_its_tokens_in_an_environment_file() {
    let lines = unit_lines();
    let has = |key: &str, value: &str| lines.iter().any(|(k, v)| k == key && v == value);
    for (key, value) in [
        ("ExecStart", "/usr/bin/nandi-proxmox-mcp run"),
        ("Environment", "MCP_TRANSPORT=http"),
        ("EnvironmentFile", "/etc/nandi-proxmox-mcp/env"),
        ("DynamicUser", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("NoNewPrivileges", "yes"),
        ("PrivateTmp", "yes"),
        ("StateDirectory", "nandi-proxmox-mcp"),
        ("CapabilityBoundingSet", ""),
        ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
        ("SystemCallFilter", "@system-service"),
    ] {
        assert!(has(key, value), "{UNIT} lacks {key}={value}");
    }
    // The audit log and freeze file live in the only writable place, the state directory.
    for var in ["PVE_AUDIT_LOG", "PVE_FREEZE_FILE"] {
        let value = lines
            .iter()
            .find_map(|(k, v)| (k == "Environment").then(|| v.strip_prefix(&format!("{var}=")))?)
            .unwrap_or_else(|| panic!("{UNIT} sets no {var}"));
        assert!(value.starts_with("%S/nandi-proxmox-mcp/"), "{var}={value}");
    }
    // Every variable the unit and its env file set is one the server reads.
    let known = known_vars();
    let env_file = read("packaging/deb/env");
    let from_file = env_file
        .lines()
        .map(|l| l.trim_start_matches('#'))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
    let from_unit = lines
        .iter()
        .filter(|(k, _)| k == "Environment")
        .filter_map(|(_, v)| v.split_once('=').map(|(k, _)| k));
    for name in from_unit.chain(from_file) {
        assert!(
            known.contains(name) || ["XDG_STATE_HOME", "RUST_LOG"].contains(&name),
            "{name} is not a variable the server reads"
        );
    }
}

/// Stages the package tree from the test binary (`scripts/build-deb --stage-only`).
fn stage_deb() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("bash")
        .arg(root().join("scripts/build-deb"))
        .arg(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"))
        .arg("--stage-only")
        .arg(dir.path().join("stage"))
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "build-deb --stage-only failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = PathBuf::from(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .expect("path"),
    );
    (dir, tree)
}

#[test]
fn the_staged_deb_holds_the_binary_man_page_completions_unit_conffile_and_docs() {
    let (_dir, tree) = stage_deb();
    for file in [
        "usr/bin/nandi-proxmox-mcp",
        "usr/share/man/man1/nandi-proxmox-mcp.1.gz",
        "usr/share/bash-completion/completions/nandi-proxmox-mcp",
        "usr/share/zsh/vendor-completions/_nandi-proxmox-mcp",
        "usr/share/fish/vendor_completions.d/nandi-proxmox-mcp.fish",
        "usr/lib/systemd/system/nandi-proxmox-mcp.service",
        "etc/nandi-proxmox-mcp/env",
        "usr/share/doc/nandi-proxmox-mcp/README.md",
        "usr/share/doc/nandi-proxmox-mcp/changelog.gz",
        "usr/share/doc/nandi-proxmox-mcp/copyright",
        "usr/share/doc/nandi-proxmox-mcp/docs/RELEASE.md",
        "DEBIAN/control",
        "DEBIAN/conffiles",
        "DEBIAN/md5sums",
        "DEBIAN/postinst",
        "DEBIAN/prerm",
        "DEBIAN/postrm",
    ] {
        let path = tree.join(file);
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(meta.len() > 0, "{file} is empty");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &str| {
        std::fs::metadata(tree.join(f))
            .expect(f)
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("usr/bin/nandi-proxmox-mcp"), 0o755);
    assert_eq!(mode("etc/nandi-proxmox-mcp/env"), 0o600, "the tokens file");
    assert_eq!(mode("DEBIAN/postinst"), 0o755);

    // The man page is clap's, with every visible command.
    let gz =
        std::fs::File::open(tree.join("usr/share/man/man1/nandi-proxmox-mcp.1.gz")).expect("page");
    let mut page = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz), &mut page).expect("gzip");
    assert!(page.contains(".TH nandi-proxmox-mcp 1"), "{page:.200}");
    for command in ["run", "tools", "setup", "doctor", "freeze", "audit"] {
        assert!(
            page.contains(&format!(".SS {command}\n")),
            "man page lacks {command}"
        );
    }
    // The unit shipped is the one in the tree.
    assert_eq!(
        std::fs::read_to_string(tree.join("usr/lib/systemd/system/nandi-proxmox-mcp.service"))
            .expect("unit"),
        read(UNIT)
    );

    let control = std::fs::read_to_string(tree.join("DEBIAN/control")).expect("control");
    let field = |name: &str| {
        control
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .map(str::to_owned)
    };
    assert_eq!(field("Package").as_deref(), Some("nandi-proxmox-mcp"));
    assert_eq!(
        field("Version"),
        Some(env!("CARGO_PKG_VERSION").replace('-', "~"))
    );
    assert!(matches!(
        field("Architecture").as_deref(),
        Some("amd64" | "arm64")
    ));
    // The test binary is a dynamic glibc build: it depends on libc6 at the version its symbols
    // need (a static release binary depends on nothing).
    let depends = field("Depends").expect("a dynamic binary has Depends");
    assert!(depends.starts_with("libc6 (>= 2."), "{depends}");
    assert!(control.ends_with('\n') && control.contains("\nDescription: "));
    assert_eq!(
        std::fs::read_to_string(tree.join("DEBIAN/conffiles")).expect("conffiles"),
        "/etc/nandi-proxmox-mcp/env\n"
    );
    // md5sums lists every file outside DEBIAN.
    let sums = std::fs::read_to_string(tree.join("DEBIAN/md5sums")).expect("md5sums");
    assert!(
        sums.contains("  usr/bin/nandi-proxmox-mcp\n")
            && sums.contains("  etc/nandi-proxmox-mcp/env\n")
    );
}

#[test]
#[ignore = "needs root and dpkg (dpkg -i into /usr); .ci/run runs scripts/check-deb as root"]
fn the_deb_installs_runs_and_removes_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let built = std::process::Command::new("bash")
        .arg(root().join("scripts/build-deb"))
        .arg(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"))
        .arg("--out")
        .arg(dir.path())
        .output()
        .expect("bash runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let deb = String::from_utf8_lossy(&built.stdout)
        .lines()
        .last()
        .expect("path")
        .to_owned();
    let checked = std::process::Command::new("bash")
        .arg(root().join("scripts/check-deb"))
        .arg(&deb)
        .status()
        .expect("bash runs");
    assert!(checked.success(), "scripts/check-deb {deb} failed");
}

#[test]
fn the_sbom_names_our_crate_and_every_direct_dependency_at_its_locked_version() {
    let out = std::process::Command::new("python3")
        .arg(root().join("scripts/sbom"))
        .args(["--target", "x86_64-unknown-linux-musl"])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bom: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(bom["bomFormat"], "CycloneDX");
    assert_eq!(bom["specVersion"], "1.5");
    let component = &bom["metadata"]["component"];
    assert_eq!(component["name"], "nandi-proxmox-mcp");
    assert_eq!(component["version"], env!("CARGO_PKG_VERSION"));
    let components = bom["components"].as_array().expect("components");
    let lock = read("Cargo.lock");
    let manifest = read("Cargo.toml");
    let deps = manifest
        .split("\n[dependencies]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("[dependencies]");
    for (name, spec) in deps
        .lines()
        .filter_map(|l| l.split_once(" = ").map(|(k, v)| (k.trim(), v)))
        .filter(|(k, _)| !k.is_empty() && !k.starts_with('#'))
    {
        // A workspace crate (crates/pve-emulator) has no registry checksum to record.
        let from_registry = !spec.contains("path = ");
        let found: Vec<&Value> = components.iter().filter(|c| c["name"] == name).collect();
        assert!(
            !found.is_empty(),
            "the SBOM lacks the direct dependency {name}"
        );
        for c in found {
            let version = c["version"].as_str().expect("version");
            assert!(
                lock.contains(&format!("name = \"{name}\"\nversion = \"{version}\"")),
                "{name} {version} is not in Cargo.lock"
            );
            assert_eq!(c["purl"], format!("pkg:cargo/{name}@{version}"));
            if from_registry {
                assert_eq!(c["hashes"][0]["alg"], "SHA-256", "{name}");
            }
        }
    }
    let refs: BTreeSet<&str> = components
        .iter()
        .filter_map(|c| c["bom-ref"].as_str())
        .collect();
    for dep in bom["dependencies"].as_array().expect("dependencies") {
        for on in dep["dependsOn"].as_array().expect("dependsOn") {
            let on = on.as_str().expect("ref");
            assert!(refs.contains(on), "{on} is depended on but not listed");
        }
    }
}

#[test]
fn the_release_workflow_builds_auditable_signs_attests_and_ships_sboms_and_debs() {
    // The workflow cannot run here (no GitHub runner); .ci/run checks it against the workflow
    // schema, and this checks the supply-chain steps are in it and agree with docs/RELEASE.md.
    let workflow = read(".github/workflows/release.yml");
    for needle in [
        "cargo auditable build --release --locked --target",
        "cargo install --locked --version \"${CARGO_AUDITABLE_VERSION}\" cargo-auditable",
        "python scripts/sbom --target",
        "bash scripts/build-deb",
        "uses: actions/attest-sbom@v2",
        "uses: actions/attest-build-provenance@v2",
        "uses: sigstore/cosign-installer@v3",
        "cosign sign-blob --yes --bundle",
        "cosign verify-blob --bundle SHA256SUMS.sigstore.json",
        "id-token: write",
        "attestations: write",
    ] {
        assert!(workflow.contains(needle), "release.yml lacks `{needle}`");
    }
    let auditable = workflow
        .lines()
        .find_map(|l| l.trim().strip_prefix("CARGO_AUDITABLE_VERSION: "))
        .expect("CARGO_AUDITABLE_VERSION")
        .trim_matches('"');
    assert!(
        read(".ci/run").contains(&format!("CARGO_AUDITABLE_VERSION={auditable}\n")),
        "CI and the release pin the same cargo-auditable"
    );
    let release = read("docs/RELEASE.md");
    for needle in [
        "gh attestation verify",
        "--predicate-type https://cyclonedx.org/bom",
        "cosign verify-blob",
        "--certificate-oidc-issuer https://token.actions.githubusercontent.com",
        "sudo dpkg -i nandi-proxmox-mcp_",
        "cargo audit bin",
    ] {
        assert!(release.contains(needle), "docs/RELEASE.md lacks `{needle}`");
    }
}
