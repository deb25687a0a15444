//! The MCP Inspector's CLI (pinned, from npm) against the built binary over stdio, in demo
//! mode: it declares the tasks extension at `initialize` and then makes a plain `tools/call`
//! it never follows, so a task-starting tool must answer it with the outcome itself — a
//! valid result with `content`, never a `working` task handle it would print and drop.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The Inspector release the check runs with.
const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

fn inspector_call(home: &Path, tool: &str, args: &[&str]) -> Value {
    let mut command = Command::new("npx");
    command
        .args([
            "-y",
            INSPECTOR,
            "--cli",
            env!("CARGO_BIN_EXE_nandi-proxmox-mcp"),
        ])
        .args(["run", "--demo", "-e", "PVE_ACCESS_TIER=full"])
        .args(["--method", "tools/call", "--tool-name", tool]);
    for arg in args {
        command.args(["--tool-arg", arg]);
    }
    let out = command
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .output()
        .expect("npx runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{tool}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{tool}: {e}: {stdout}"))
}

#[test]
#[cfg_attr(
    no_npx,
    ignore = "needs npx (Node.js) to run @modelcontextprotocol/inspector from npm"
)]
fn the_inspector_cli_shows_a_task_starting_tools_outcome() {
    let home = tempfile::tempdir().unwrap();
    let result = inspector_call(
        home.path(),
        "pve_stop_qemu_vm",
        &["node=pve01", "vmid=101", "confirm=true"],
    );
    assert!(result.get("taskId").is_none(), "a task handle: {result}");
    assert_ne!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("UPID:pve01:"), "{result}");
    let upid = result["structuredContent"]["data"]
        .as_str()
        .unwrap_or_default();
    assert!(upid.contains(":qmstop:101:"), "{result}");
    // And with `wait=true` the Inspector shows how the task ended.
    let waited = inspector_call(
        home.path(),
        "pve_start_qemu_vm",
        &["node=pve03", "vmid=102", "confirm=true", "wait=true"],
    );
    assert!(waited.get("taskId").is_none(), "{waited}");
    assert_eq!(
        waited["structuredContent"]["data"]["exitstatus"], "OK",
        "{waited}"
    );
}
