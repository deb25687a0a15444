//! The official MCP Python SDK (pinned, from PyPI, in a venv under the test target folder)
//! against the built binary over stdio, in demo mode: a task-starting tool answers a valid,
//! complete result with `content` on a 2025-11-25 session, as the SDK's result model demands.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The Python SDK release the check runs with.
const PYTHON_SDK: &str = "mcp==2.3.0";

/// A venv with the SDK, made once per target folder.
fn venv() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-sdk-2.3.0");
    let python = dir.join("bin/python");
    if !python.is_file() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .expect("python3 runs");
        assert!(made.success(), "python3 -m venv failed");
    }
    let installed = Command::new(&python)
        .args(["-c", "import mcp"])
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        let pip = Command::new(&python)
            .args(["-m", "pip", "install", "-q", PYTHON_SDK])
            .status()
            .expect("pip runs");
        assert!(
            pip.success(),
            "pip install {PYTHON_SDK} failed (is PyPI reachable?)"
        );
    }
    python
}

#[test]
#[cfg_attr(
    no_python,
    ignore = "needs python3 with venv to install the MCP Python SDK from PyPI"
)]
fn the_python_sdk_gets_a_task_starting_tools_outcome() {
    let python = venv();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/python_sdk_call.py"))
        .arg(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"))
        .arg(home.path())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(answer["protocol"], "2025-11-25", "{answer}");
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("UPID:pve01:")),
        "{answer}"
    );
    assert_eq!(result["structuredContent"]["ok"], true, "{answer}");
}
