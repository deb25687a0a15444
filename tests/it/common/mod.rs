//! Shared test harness: the built binary driven over real stdio, and the emulator it
//! talks to over real HTTPS.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Path of the binary under test.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"))
}

/// `../shared` beside the project root, where the official API schema lives.
pub fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// True under CI, where missing fixtures are failures rather than ignored checks.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Reads a file of `../shared`. The tests that call this carry
/// `#[cfg_attr(no_pve_api | no_reference_tools, ignore = "…")]` (set by build.rs when the
/// fixture is absent outside CI), so reaching here without the file means CI lacks it: fail.
fn shared_file(relative: &str) -> Vec<u8> {
    let path = shared_dir().join(relative);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{} cannot be read ({e}): CI=true runs the checks that need ../shared, so it must \
             be beside the project (NANDI_SHARED_OPTIONAL=1 lets such a CI ignore them)",
            path.display()
        )
    })
}

/// The official PVE 9.1 API schema, `../shared/pve-api/endpoints-pve-9.1.json.gz`. Callers
/// carry `#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]`.
pub fn pve_api_endpoints() -> Value {
    let gz = shared_file("pve-api/endpoints-pve-9.1.json.gz");
    serde_json::from_reader(flate2::read::GzDecoder::new(gz.as_slice())).expect("gzip JSON")
}

/// The reference's tool table, `../shared/spec/reference-tools.json`. Callers carry
/// `#[cfg_attr(no_reference_tools, ignore = "needs ../shared/spec beside the project")]`.
pub fn reference_tools() -> Value {
    serde_json::from_slice(&shared_file("spec/reference-tools.json")).expect("valid JSON")
}

/// Starts the default emulator (HTTPS, 3 nodes, fast tasks).
pub async fn emulator() -> Emulator {
    Emulator::start(EmulatorOptions {
        task_duration: Duration::from_millis(100),
        ..EmulatorOptions::default()
    })
    .await
    .expect("emulator starts")
}

/// Environment that points the binary at `emu`, pinned to its certificate.
pub fn env_for(emu: &Emulator) -> Vec<(String, String)> {
    let opts = EmulatorOptions::default();
    vec![
        ("PROXMOX_HOST".into(), emu.host().into()),
        ("PROXMOX_PORT".into(), emu.port().to_string()),
        ("PROXMOX_USER".into(), opts.user),
        ("PROXMOX_REALM".into(), opts.realm),
        ("PROXMOX_TOKEN_NAME".into(), opts.token_name),
        ("PROXMOX_TOKEN_SECRET".into(), opts.token_secret),
        (
            "PROXMOX_TLS_FINGERPRINT".into(),
            emu.cert_fingerprint()
                .expect("https emulator has a certificate"),
        ),
    ]
}

/// A running server process spoken to over its stdin/stdout.
pub struct McpProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    _home: tempfile::TempDir,
}

impl McpProcess {
    /// Spawns `nandi-proxmox-mcp <args>` with a clean environment plus `env`, in an empty
    /// working directory and HOME (so no instance file is discovered).
    pub fn spawn(args: &[&str], env: &[(String, String)]) -> McpProcess {
        McpProcess::spawn_named(binary(), args, env)
    }

    /// Like [`McpProcess::spawn`], but runs `program` (a path, or a name looked up in the
    /// `PATH` given in `env`), the way an MCP client launches its configured command.
    pub fn spawn_named(
        program: impl AsRef<std::ffi::OsStr>,
        args: &[&str],
        env: &[(String, String)],
    ) -> McpProcess {
        McpProcess::launch(program, args, env, Stdio::inherit())
    }

    /// Like [`McpProcess::spawn`], but the server's stderr (its whole log) goes to the
    /// file `log`, so a test can check what the server wrote there.
    pub fn spawn_logging_to(args: &[&str], env: &[(String, String)], log: &Path) -> McpProcess {
        let stderr = std::fs::File::create(log).expect("log file");
        McpProcess::launch(binary(), args, env, Stdio::from(stderr))
    }

    fn launch(
        program: impl AsRef<std::ffi::OsStr>,
        args: &[&str],
        env: &[(String, String)],
        stderr: Stdio,
    ) -> McpProcess {
        let home = tempfile::tempdir().expect("tempdir");
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("RUST_LOG", "warn")
            .current_dir(home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("binary spawns");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        McpProcess {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 1,
            _home: home,
        }
    }

    /// Sends one JSON-RPC message.
    pub async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    /// Writes raw bytes to the server's stdin (a line that need not be JSON, or part of one).
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.expect("write");
        self.stdin.flush().await.expect("flush");
    }

    /// The next line the server writes to stdout, parsed as JSON (within 30 s).
    pub async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("a line within 30 s")
            .expect("read")
            .expect("server closed stdout");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"))
    }

    /// Closes stdin, waits for the exit, and returns it with the lines stdout still carried.
    pub async fn finish(mut self) -> (std::process::ExitStatus, Vec<String>) {
        drop(self.stdin);
        let mut rest = Vec::new();
        let drain = async {
            while let Ok(Some(line)) = self.lines.next_line().await {
                rest.push(line);
            }
            self.child.wait().await.expect("wait")
        };
        let status = tokio::time::timeout(Duration::from_secs(10), drain)
            .await
            .expect("exits after stdin closes");
        (status, rest)
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        // One deadline for the whole wait: a chatty process cannot keep the loop alive.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.next_line())
                .await
                .expect("response within 30 s")
                .expect("read")
                .expect("server closed stdout");
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            if value.get("id") == Some(&json!(id)) {
                return value;
            }
        }
    }

    /// Runs the initialize handshake with the given protocol version.
    pub async fn initialize_with(&mut self, version: &str) -> Value {
        let response = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "test-client", "version": "1.0"}
                }),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        response
    }

    /// Initializes with a common protocol revision.
    pub async fn initialize(&mut self) -> Value {
        self.initialize_with("2025-06-18").await
    }

    /// `tools/list` → the tools array.
    pub async fn list_tools(&mut self) -> Vec<Value> {
        let response = self.request("tools/list", json!({})).await;
        response["result"]["tools"]
            .as_array()
            .expect("tools array")
            .clone()
    }

    /// `tools/call` → the whole `result` (content, structuredContent, isError).
    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("expected a result for {name}: {response}"))
    }

    /// The server's process id (for reading its footprint in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// Closes stdin and waits for a clean exit.
    pub async fn shutdown(mut self) -> std::process::ExitStatus {
        drop(self.stdin);
        tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("exits after stdin closes")
            .expect("wait")
    }
}

/// The structured envelope of a call result, checked to equal its text twin.
pub fn envelope(result: &Value) -> Value {
    let structured = result["structuredContent"].clone();
    let text = result["content"][0]["text"].as_str().expect("text content");
    let parsed: Value = serde_json::from_str(text).expect("text is JSON");
    assert_eq!(parsed, structured, "text and structuredContent differ");
    structured
}

/// Environment with the given policy variables added.
pub fn with_policy(mut env: Vec<(String, String)>, vars: &[(&str, &str)]) -> Vec<(String, String)> {
    for (k, v) in vars {
        env.push(((*k).into(), (*v).into()));
    }
    env
}

// ---- Helpers for the tool suites (tools_infra*, …) ----

/// Policy of a server that exposes every tool.
pub const FULL_ADVANCED: &[(&str, &str)] =
    &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];

/// A server process with every tool exposed, pointed at `emu`, initialized.
pub async fn full_server(emu: &Emulator) -> McpProcess {
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(emu), FULL_ADVANCED));
    mcp.initialize().await;
    mcp
}

/// Calls a tool that must succeed and returns its `data`.
pub async fn ok(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{tool}: {env}");
    env["data"].clone()
}

/// Calls a tool that must fail and returns the error object.
pub async fn fails(mcp: &mut McpProcess, tool: &str, args: Value) -> Value {
    let result = mcp.call(tool, args).await;
    assert_eq!(result["isError"], true, "{tool}: {result}");
    envelope(&result)["error"].clone()
}

pub fn ids(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .filter_map(|row| row[key].as_str().map(str::to_owned))
        .collect()
}

/// A temporary HOME and working directory for one CLI scenario.
pub struct CliDirs {
    /// The HOME folder.
    pub home: tempfile::TempDir,
    /// The working directory (project scope).
    pub cwd: tempfile::TempDir,
}

impl CliDirs {
    /// Two fresh empty folders.
    pub fn new() -> CliDirs {
        CliDirs {
            home: tempfile::tempdir().expect("tempdir"),
            cwd: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Runs the binary with a clean environment (PATH, HOME plus `env`) in `cwd`, feeding
    /// `stdin` (empty when `None`).
    pub async fn run(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> std::process::Output {
        let mut command = Command::new(binary());
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("RUST_LOG", "warn")
            .current_dir(self.cwd.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("binary spawns");
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            // A command that refuses its arguments may exit before it reads its input; the
            // pipe is then closed, which is its answer, not a harness failure.
            match input.write_all(text.as_bytes()).await {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.expect("write stdin"),
            }
        }
        drop(input);
        tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("command finishes within 60 s")
            .expect("wait")
    }
}

/// stdout + stderr of an output, for assertion messages.
pub fn text_of(out: &std::process::Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Scripted `setup` flags pointing at `emu` (secret read from stdin), pinned to its certificate.
pub fn setup_flags(emu: &Emulator) -> Vec<String> {
    let opts = EmulatorOptions::default();
    vec![
        "setup".into(),
        "--proxmox-host".into(),
        emu.host().into(),
        "--proxmox-port".into(),
        emu.port().to_string(),
        "--proxmox-user".into(),
        opts.user,
        "--token-name".into(),
        opts.token_name,
        "--token-secret-stdin".into(),
        "--tls-fingerprint".into(),
        emu.cert_fingerprint().expect("https emulator"),
    ]
}

pub mod schemas;
pub mod sshd;

/// Helpers shared by the guest lifecycle tool tests.
pub mod guests;
pub mod peer;
