//! Guest lifecycle tools through the built binary over stdio, against the emulator over
//! HTTPS: every tool listed with its schema, the confirmation gate (nothing sent without
//! `confirm`), indexed keys validated before any request, secrets kept out of the log.
//! The round trips live in `tools_guests_qemu.rs`, `tools_guests_lxc.rs` and
//! `tools_guests_templates.rs`.

use crate::common;

use common::guests::{FULL_ADVANCED, GUEST_TOOLS, fails, ok, pairs, start};
use common::{McpProcess, emulator, env_for, with_policy};
use nandi_proxmox_mcp::catalog;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_guest_tool_is_listed_with_indexed_keys_advertised() {
    let (_emu, mut mcp) = start().await;
    let tools = mcp.list_tools().await;
    for name in GUEST_TOOLS {
        let tool = tools
            .iter()
            .find(|t| t["name"] == *name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert!(schema.get("anyOf").is_none() && schema.get("oneOf").is_none());
        assert!(catalog::find(name).unwrap().aliases.is_empty(), "{name}");
    }
    let create = tools
        .iter()
        .find(|t| t["name"] == "pve_qemu_create")
        .unwrap();
    let families = create["inputSchema"]["patternProperties"]
        .as_object()
        .expect("patternProperties");
    assert!(
        families.contains_key("^net([0-9]|[1-2][0-9]|3[0-1])$"),
        "{families:?}"
    );
    assert!(families.contains_key("^scsi([0-9]|[1-2][0-9]|30)$"));
    // Unknown keys are refused by validation, not advertised per tool (listing budget).
    assert!(create["inputSchema"].get("additionalProperties").is_none());
    let iso = tools
        .iter()
        .find(|t| t["name"] == "pve_list_iso_images")
        .unwrap();
    assert!(iso["inputSchema"]["properties"].get("content").is_none());
    let exec = tools
        .iter()
        .find(|t| t["name"] == "pve_exec_qemu_guest_command")
        .unwrap();
    assert_eq!(
        exec["inputSchema"]["properties"]["command"]["type"],
        "array"
    );
    assert!(mcp.shutdown().await.success());
}

/// Valid arguments for a tool, without `confirm`.
fn sample_args(spec: &catalog::ToolSpec) -> Value {
    let mut args = serde_json::Map::new();
    for p in spec.params.iter().filter(|p| p.required && !p.fixed) {
        let value = match p.name {
            "node" => json!("pve01"),
            "vmid" => json!(101),
            "newid" => json!(777),
            "snapname" => json!("snap1"),
            "target" => json!("pve02"),
            "disk" => json!("scsi0"),
            "size" => json!("+1G"),
            "archive" => json!("local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst"),
            "ostemplate" => json!("local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"),
            "command" => json!(["true"]),
            "storage" => json!("local"),
            other => panic!("{}: no sample for {other}", spec.name),
        };
        args.insert(p.name.into(), value);
    }
    if let Some(first) = spec.at_least_one_of.first() {
        let value = match spec.param(first).map(|p| p.kind) {
            Some(catalog::ParamKind::Integer) => json!(1),
            Some(catalog::ParamKind::Boolean) => json!(true),
            _ => json!("x"),
        };
        let key = if spec.param(first).is_some_and(|p| p.index.is_some()) {
            format!("{first}0")
        } else {
            (*first).to_owned()
        };
        args.insert(key, value);
    }
    Value::Object(args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_tools_refuse_without_confirm_and_send_nothing() {
    let (emu, mut mcp) = start().await;
    let mut checked = 0;
    for name in GUEST_TOOLS {
        let spec = catalog::find(name).unwrap();
        // Every tool whose calls all need approval: the rows marked `confirm` and every
        // other change (create, clone, snapshot, ...).
        if !spec.always_gated() {
            continue;
        }
        let args = sample_args(spec);
        for confirm in [None, Some(json!(false))] {
            let mut args = args.clone();
            if let Some(value) = &confirm {
                args["confirm"] = value.clone();
            }
            let (error, requests) =
                fails(&mut mcp, &emu, name, args, "CONFIRMATION_REQUIRED").await;
            assert!(requests.is_empty(), "{name} sent {requests:?}");
            assert_eq!(
                error["message"],
                format!("Tool '{name}' requires explicit confirmation.")
            );
        }
        checked += 1;
    }
    // Starts, resumes, snapshots and clones can be routine (issue 37): not every call asks.
    assert_eq!(checked, 19, "guest tools whose every call needs approval");
    // The at-least-one-of guard comes first and also sends nothing.
    let (error, requests) = fails(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "digest": "abc", "confirm": true}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(requests.is_empty());
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("At least one mutable field")
    );
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_keys_are_validated_before_any_request() {
    let (emu, mut mcp) = start().await;
    for (key, tool) in [
        ("net99", "pve_qemu_update_config"),
        ("net32", "pve_qemu_update_config"),
        ("net05", "pve_qemu_update_config"),
        ("scsi31", "pve_qemu_update_config"),
        ("virtio16", "pve_qemu_update_config"),
        ("mp256", "pve_lxc_update_config"),
        ("net", "pve_lxc_update_config"),
    ] {
        let vmid = if tool.contains("lxc") { 201 } else { 101 };
        let (error, requests) = fails(
            &mut mcp,
            &emu,
            tool,
            json!({"node": "pve01", "vmid": vmid, key: "virtio,bridge=vmbr0", "confirm": true}),
            "TOOL_INPUT_REJECTED",
        )
        .await;
        assert!(requests.is_empty(), "{key}: {requests:?}");
        assert!(error["message"].as_str().unwrap().contains(key), "{error}");
    }
    // In range: accepted and sent under the client's key.
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "net31": "virtio,bridge=vmbr0", "confirm": true}),
    )
    .await;
    assert_eq!(pairs(&req.form), [("net31", "virtio,bridge=vmbr0")]);
    // Other bad input: a wrong resize size and a bad snapshot name never leave.
    for (tool, args) in [
        (
            "pve_qemu_resize_disk",
            json!({"node": "pve01", "vmid": 101, "disk": "scsi0", "size": "-5G", "confirm": true}),
        ),
        (
            "pve_qemu_create_snapshot",
            json!({"node": "pve01", "vmid": 101, "snapname": "1bad name"}),
        ),
        (
            "pve_exec_qemu_guest_command",
            json!({"node": "pve01", "vmid": 101, "command": [], "confirm": true}),
        ),
        ("pve_qemu_create", json!({"node": "pve01", "vmid": 42})),
    ] {
        let (_, requests) = fails(&mut mcp, &emu, tool, args, "TOOL_INPUT_REJECTED").await;
        assert!(requests.is_empty(), "{tool}");
    }
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_arguments_reach_proxmox_but_never_the_log() {
    let emu = emulator().await;
    let log_dir = tempfile::tempdir().unwrap();
    let log_path = log_dir.path().join("server.log");
    let mut env = with_policy(env_for(&emu), FULL_ADVANCED);
    env.push(("RUST_LOG".into(), "trace".into()));
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &env, &log_path);
    mcp.initialize().await;
    let (password, cipassword) = ("ct-root-pw-7f3a9c", "vm-ci-pw-b81d2e");
    ok(
        &mut mcp,
        &emu,
        "pve_lxc_create",
        json!({"node": "pve01", "vmid": 270, "password": password, "confirm": true,
               "ostemplate": "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}),
    )
    .await;
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_set_qemu_cloudinit",
        json!({"node": "pve01", "vmid": 101, "cipassword": cipassword, "confirm": true}),
    )
    .await;
    assert_eq!(pairs(&req.form), [("cipassword", cipassword)]);
    // A failing call with a secret does not echo it either.
    fails(
        &mut mcp,
        &emu,
        "pve_lxc_create",
        json!({"node": "pve01", "vmid": 270, "password": password, "confirm": true,
               "ostemplate": "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}),
        "PROXMOX_SERVER_ERROR",
    )
    .await;
    assert!(mcp.shutdown().await.success());
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("pve_lxc_create"),
        "the log is being written: {log}"
    );
    for secret in [password, cipassword] {
        assert!(!log.contains(secret), "secret in the log:\n{log}");
    }
}

/// Proxmox's 512 KiB body limit is on form-encoded bytes: 50 000 four-byte characters are
/// under both character caps (61 440 and 65 536) but 600 000 bytes as sent, so the call is
/// refused before anything leaves; the same count of ASCII letters goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_byte_text_over_the_body_limit_in_bytes_is_refused_before_sending() {
    let (emu, mut mcp) = start().await;
    let wide = "\u{1F600}".repeat(50_000);
    assert!(wide.chars().count() < 61_440);
    for (tool, args) in [
        (
            "pve_exec_qemu_guest_command",
            json!({"node": "pve01", "vmid": 101, "command": ["cat"], "input-data": wide,
                   "confirm": true}),
        ),
        (
            "pve_qemu_agent_file_write",
            json!({"node": "pve01", "vmid": 101, "file": "/tmp/x", "content": wide,
                   "confirm": true}),
        ),
    ] {
        let (error, requests) = fails(&mut mcp, &emu, tool, args, "TOOL_INPUT_REJECTED").await;
        assert!(requests.is_empty(), "{tool} sent {requests:?}");
        let message = error.to_string();
        assert!(
            message.contains("600000 bytes") && message.contains("512 KiB"),
            "{tool}: {error}"
        );
    }
    let narrow = "a".repeat(50_000);
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_agent_file_write",
        json!({"node": "pve01", "vmid": 101, "file": "/tmp/x", "content": narrow, "confirm": true}),
    )
    .await;
    assert!(pairs(&req.form).contains(&("content", narrow.as_str())));
    assert!(mcp.shutdown().await.success());
}
