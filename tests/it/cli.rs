//! The binary's non-serving commands and start-up errors.

use crate::common;

use std::process::Command;

use serde_json::Value;

fn run(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(common::binary());
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .current_dir(home.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("binary runs")
}

/// Issue 23.3: an allow-listed tool the settings hide is named, with why and what exposes it.
#[test]
fn allow_listed_tools_that_stay_hidden_are_explained() {
    let out = run(
        &["tools"],
        &[(
            "PVE_TOOL_WHITELIST",
            "pve_stop_qemu_vm,pve_api_call,pve_list_nodes",
        )],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 of "), "{text}");
    assert!(
        text.contains("pve_stop_qemu_vm (tier read-execute is above PVE_ACCESS_TIER=read-only; set PVE_ACCESS_TIER=read-execute)"),
        "{text}"
    );
    assert!(
        text.contains("pve_api_call (an advanced tool; set PVE_MODULE_MODE=advanced)"),
        "{text}"
    );
    assert!(!text.contains("pve_list_nodes ("), "{text}");
}

#[test]
fn tools_json_needs_no_proxmox() {
    let out = run(
        &["tools", "--json"],
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    assert_eq!(doc["toolCount"].as_u64().unwrap() as usize, tools.len());
    let stop = tools
        .iter()
        .find(|t| t["name"] == "pve_stop_qemu_vm")
        .unwrap();
    assert_eq!(stop["tier"], "read-execute");
    assert_eq!(stop["confirm"], true);
    assert_eq!(stop["method"], "POST");
    assert_eq!(stop["path"], "/nodes/{node}/qemu/{vmid}/status/stop");
    assert_eq!(stop["aliases"][0], "stopVM");
    assert_eq!(stop["params"], serde_json::json!(["node", "vmid"]));
}

#[test]
fn default_tools_listing_is_read_only() {
    let out = run(&["tools", "--json"], &[]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["tier"], "read-only");
    assert!(
        doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["tier"] == "read-only")
    );
    let text = run(&["tools"], &[]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("pve_list_nodes"));
}

#[test]
fn invalid_policy_is_a_clear_startup_error() {
    for args in [&["run"][..], &["tools"][..]] {
        let out = run(args, &[("PVE_ACCESS_TIER", "admin")]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("read-only, read-execute, full"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing on stdout");
    }
}

/// Issue 38: an entry of `PVE_DOWNLOAD_ALLOW` that is neither a host name, an address nor a CIDR
/// stops start-up (exit 2) naming the entry, instead of being kept as a host nobody can match;
/// a valid list still starts.
#[test]
fn invalid_download_allow_entries_are_refused_by_name() {
    for bad in [
        "10.0.0.0/33",
        "https://mirror.lan/iso",
        "mirror.lan:8080",
        "*.example.com",
        "fd00::/129",
        "not/a-cidr",
    ] {
        let value = format!("mirror.lan, {bad}");
        for args in [&["run"][..], &["tools"][..]] {
            let out = run(args, &[("PVE_DOWNLOAD_ALLOW", &value)]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
            assert!(
                stderr.contains(&format!("PVE_DOWNLOAD_ALLOW entry {bad:?} is not valid")),
                "{bad}: {stderr}"
            );
            assert!(out.stdout.is_empty(), "nothing on stdout");
        }
    }
    let out = run(
        &["tools"],
        &[(
            "PVE_DOWNLOAD_ALLOW",
            "mirror.lan, Mirror.Example.com., 10.0.0.5, 192.168.0.0/16, fd00::/8, [fd00::5]",
        )],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn broken_config_file_is_reported_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.json");
    std::fs::write(&file, "{ not json").unwrap();
    let out = run(
        &["run"],
        &[
            ("NANDI_PROXMOX_CONFIG", file.to_str().unwrap()),
            ("PROXMOX_HOST", "10.0.0.1"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("broken.json"), "{stderr}");
}

#[test]
fn help_and_version() {
    let out = run(&["--version"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
    let out = run(&["run", "--help"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--demo"));
}

/// Issue acceptance: under full/advanced, `tools --json` lists every REST tool of the reference,
/// every alias of those tools, and the tools we added.
#[test]
#[cfg_attr(no_reference_tools, ignore = "needs ../shared/spec beside the project")]
fn tools_json_lists_the_reference_surface() {
    let reference = common::reference_tools();
    let out = run(
        &["tools", "--json"],
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut listed = std::collections::BTreeSet::new();
    for tool in doc["tools"].as_array().unwrap() {
        listed.insert(tool["name"].as_str().unwrap().to_owned());
        for alias in tool["aliases"].as_array().unwrap() {
            listed.insert(alias.as_str().unwrap().to_owned());
        }
    }
    for tool in reference.as_array().unwrap() {
        if tool["kind"] != "canonical" || tool["backend"] != "rest" {
            continue;
        }
        let name = tool["name"].as_str().unwrap();
        assert!(listed.contains(name), "{name} missing");
        for alias in tool["aliases"].as_array().unwrap() {
            assert!(
                listed.contains(alias.as_str().unwrap()),
                "alias {alias} missing"
            );
        }
    }
    for added in [
        "pve_apply_network_changes",
        "pve_list_qemu_snapshots",
        "pve_list_lxc_snapshots",
    ] {
        assert!(listed.contains(added), "{added} missing");
    }
}

/// Issue 12.5: a reader that closes the pipe early (`tools | head -1`) ends every printing
/// command quietly with status 0 — no "failed printing to stdout" panic, no exit 101. The
/// pipe's read end is closed before the binary starts, so every write meets EPIPE.
#[test]
fn closed_stdout_ends_every_printing_command_quietly() {
    let commands: &[&[&str]] = &[
        &["tools"],
        &["tools", "--json"],
        &["bootstrap"],
        &["bootstrap", "--tier", "full"],
        &["completions", "bash"],
        &["completions", "zsh"],
        &["list"],
        &["doctor", "--json"],
        &["--help"],
    ];
    for args in commands {
        let home = tempfile::tempdir().unwrap();
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = Command::new(common::binary())
            .args(*args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("PVE_ACCESS_TIER", "full")
            .env("PVE_MODULE_MODE", "advanced")
            .current_dir(home.path())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
        // `doctor` without an instance is RED, but its report was never read: either status.
        let allowed: &[i32] = if args[0] == "doctor" { &[0, 1] } else { &[0] };
        let code = out.status.code().expect("exited, not killed");
        assert!(allowed.contains(&code), "{args:?}: status {code}: {stderr}");
    }
}

/// Issue 12.8: input that ends before `initialize` (a client that gives up, Ctrl-D) is a
/// normal exit: status 0 and no "MCP initialization failed" line.
#[test]
fn end_of_input_before_initialize_is_a_normal_exit() {
    let out = run(&["run"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("initialization failed"), "{stderr}");
    assert!(
        !stderr.contains("waiting for an MCP client"),
        "not a terminal: {stderr}"
    );
    assert!(out.stdout.is_empty(), "stdout carries only MCP");
}

/// Issue 12.8: started at a terminal, `run` says what it is waiting for, and Ctrl-D (end of
/// input on the terminal) ends it with status 0. `script` (util-linux) gives the binary a
/// real pseudo-terminal as stdin; its own stdin at end of file sends the terminal's EOF.
#[test]
fn run_at_a_terminal_says_it_waits_for_a_client() {
    let home = tempfile::tempdir().unwrap();
    let command = format!("'{}' run --demo", common::binary().display());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .current_dir(home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(
        terminal.contains(
            "waiting for an MCP client on stdin (this is meant to be started by an MCP client; \
             Ctrl-C to stop)"
        ),
        "{terminal}"
    );
    assert!(!terminal.contains("initialization failed"), "{terminal}");
    assert_eq!(out.status.code(), Some(0), "{terminal}");
}
