//! docs/CLAUDE_CODE_SETUP.md cannot drift: its `nandi-proxmox-mcp` lines run, its `harden` line is
//! the one tests/it/docs.rs runs against the emulator, its `claude mcp add` lines run with the pinned
//! Claude Code CLI (npm) in a scratch home and project and write exactly the `.mcp.json` the guide
//! shows, and the Claude Code plugin starts the same command.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The Claude Code CLI the guide's `claude` lines run with (also pinned in scripts/release-dry-run).
const CLAUDE_CODE: &str = "@anthropic-ai/claude-code@2.1.332";
const GUIDE: &str = "docs/CLAUDE_CODE_SETUP.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The contents of the guide's fenced blocks of one language.
fn blocks(lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in read(GUIDE).lines() {
        let trimmed = line.trim();
        match &mut block {
            None if trimmed == format!("```{lang}") => block = Some(String::new()),
            Some(_) if trimmed.starts_with("```") => out.extend(block.take()),
            Some(b) => {
                b.push_str(line);
                b.push('\n');
            }
            None => {}
        }
    }
    out
}

/// The shell lines (continuations joined) that run `program`, as words.
fn sh_lines(program: &str) -> Vec<Vec<String>> {
    let mut lines = Vec::new();
    for block in blocks("sh") {
        let mut pending = String::new();
        for line in block.lines() {
            let trimmed = line.trim();
            pending.push_str(trimmed.trim_end_matches('\\'));
            pending.push(' ');
            if !trimmed.ends_with('\\') {
                let words: Vec<String> = pending.split_whitespace().map(str::to_owned).collect();
                pending.clear();
                if words.first().map(String::as_str) == Some(program) {
                    lines.push(words);
                }
            }
        }
    }
    lines
}

/// The `.mcp.json` block of the guide.
fn guide_mcp_json() -> Value {
    let docs: Vec<Value> = blocks("json")
        .iter()
        .map(|b| serde_json::from_str(b).unwrap_or_else(|e| panic!("{GUIDE}: {e}\n{b}")))
        .collect();
    assert_eq!(docs.len(), 1, "{GUIDE} shows one .mcp.json");
    docs[0].clone()
}

#[test]
fn the_guides_server_commands_run() {
    let lines = sh_lines("nandi-proxmox-mcp");
    assert!(lines.len() >= 3, "{lines:?}");
    let quickstart = read("docs/QUICKSTART.md");
    for words in lines {
        if words[1] == "harden" {
            // Run against the emulator by tests/it/docs.rs (guide_setup_sequence_runs_against_the_emulator).
            assert!(
                quickstart.contains(&words.join(" ")),
                "{words:?} is not QUICKSTART's harden line"
            );
            continue;
        }
        let home = tempfile::tempdir().unwrap();
        let out = Command::new(common::binary())
            .args(&words[1..])
            .env("HOME", home.path())
            .current_dir(home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{words:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_plugin_starts_the_guides_server() {
    let guide = guide_mcp_json();
    let entry = &guide["mcpServers"]["proxmox"];
    let plugin: Value = serde_json::from_str(&read(".claude-plugin/plugin.json")).unwrap();
    let server = &plugin["mcpServers"]["proxmox"];
    assert_eq!(server["command"], entry["command"]);
    assert_eq!(server["args"], entry["args"]);
    // Defaults: a person approves where Claude Code can ask; the tier is left to the instance
    // file (read-only when none says otherwise); no secret in the plugin.
    assert_eq!(server["env"]["PVE_HUMAN_APPROVAL"], "auto");
    assert!(server["env"].get("PVE_ACCESS_TIER").is_none());
    assert!(server["env"].get("PROXMOX_TOKEN_SECRET").is_none());
    let marketplace: Value =
        serde_json::from_str(&read(".claude-plugin/marketplace.json")).unwrap();
    assert_eq!(marketplace["plugins"][0]["name"], plugin["name"]);
    assert_eq!(marketplace["plugins"][0]["source"], "./");
}

#[test]
#[cfg_attr(
    no_npx,
    ignore = "needs npx (Node.js) to run @anthropic-ai/claude-code from npm"
)]
fn the_guides_claude_mcp_add_lines_write_what_the_guide_shows() {
    let lines = sh_lines("claude");
    assert_eq!(lines.len(), 2, "{lines:?}");
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    for words in &lines {
        assert_eq!(words[1..3], ["mcp", "add"], "{words:?}");
        let out = Command::new("npx")
            .args(["-y", CLAUDE_CODE])
            .args(&words[1..])
            .env("HOME", home.path())
            .current_dir(project.path())
            .output()
            .expect("npx runs");
        assert!(
            out.status.success(),
            "{words:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // --scope project: exactly the guide's .mcp.json.
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".mcp.json")).expect(".mcp.json written"),
    )
    .unwrap();
    assert_eq!(written, guide_mcp_json());
    // --scope user: ~/.claude.json's top level, with the variable.
    let user: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".claude.json")).expect("~/.claude.json"),
    )
    .unwrap();
    let entry = &user["mcpServers"]["proxmox-home"];
    assert_eq!(entry["command"], "nandi-proxmox-mcp");
    assert_eq!(entry["args"], serde_json::json!(["run"]));
    assert_eq!(entry["env"]["PVE_ACCESS_TIER"], "read-only");
}
