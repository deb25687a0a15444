//! `dry_run: true` on every tool that changes something, through the built binary against
//! the emulator: the exact request comes back, the gate decision is told, and not one
//! state-changing request reaches Proxmox. Also: config updates show current values and the
//! digest, and a stale digest is refused by Proxmox itself.

use crate::common;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use nandi_proxmox_mcp::catalog::{self, Param, ParamKind, ToolSpec};
use nandi_proxmox_mcp::{gate, schema};
use regex::Regex;
use serde_json::{Map, Value, json};

const UPID: &str = "UPID:pve01:00001234:00005678:6561A1B2:qmstart:101:root@pam:";

/// String candidates tried in order; the first one the parameter's rules accept is used.
const CANDIDATES: &[&str] = &[
    "pve01",
    "local",
    "snap1",
    "daily",
    "backup-1",
    "vmbr9",
    "/",
    "mcp@pve",
    "PVEAuditor",
    "tok1",
    "pool1",
    UPID,
    "local:backup/vzdump-qemu-101-2024_01_01-00_00_00.vma.zst",
    "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
    "local:iso/debian.iso",
    "192.0.2.10",
    "192.0.2.10/24",
    "in",
    "ACCEPT",
    "scsi0",
    "+1G",
    "32G",
    "eth0",
    "mp0",
    "host",
    "a",
    "1",
    "101",
    "https://9.9.9.9/debian.iso",
];

fn accepts(param: &Param, value: &str) -> bool {
    if !param.one_of.is_empty() {
        return param.one_of.contains(&value);
    }
    if param
        .max_length
        .is_some_and(|max| value.chars().count() > max as usize)
    {
        return false;
    }
    param
        .pattern
        .is_none_or(|p| Regex::new(p).expect("row pattern compiles").is_match(value))
}

fn sample(param: &Param) -> Value {
    match param.kind {
        ParamKind::Integer => {
            let lo = param.minimum.unwrap_or(0);
            let preferred = if param.name == "vmid" || param.name == "newid" {
                9100
            } else {
                lo.max(1)
            };
            json!(preferred.clamp(lo, param.maximum.unwrap_or(i64::MAX)))
        }
        ParamKind::Number => json!(param.minimum.unwrap_or(1)),
        ParamKind::Boolean => json!(true),
        ParamKind::StringArray => json!(["uptime"]),
        ParamKind::ObjectArray => {
            json!([{"tool": "pve_start_qemu_vm", "arguments": {"node": "pve01", "vmid": 101}}])
        }
        // The generic write checks its path against the cluster's schema before the gate.
        ParamKind::String if param.name == "path" => json!("/nodes/pve01/qemu/101/status/start"),
        ParamKind::String => {
            let chosen = param
                .one_of
                .first()
                .copied()
                .or_else(|| CANDIDATES.iter().copied().find(|c| accepts(param, c)))
                .unwrap_or_else(|| panic!("no sample value for {}", param.name));
            json!(chosen)
        }
    }
}

/// Minimal valid arguments of a row: its required parameters, plus the first of an
/// at-least-one-of group.
fn minimal_args(spec: &ToolSpec) -> Map<String, Value> {
    let key = |param: &Param| match param.index {
        Some((lo, _)) => format!("{}{lo}", param.name),
        None => param.name.to_owned(),
    };
    let mut args = Map::new();
    for param in spec.params.iter().filter(|p| p.required && !p.fixed) {
        args.insert(key(param), sample(param));
    }
    if let Some(first) = spec.at_least_one_of.first()
        && let Some(param) = spec.param(first)
    {
        args.insert(key(param), sample(param));
    }
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mutating_tool_previews_without_sending_a_change() {
    let emu = emulator().await;
    let env = with_policy(
        env_for(&emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    let listed: Vec<String> = mcp
        .list_tools()
        .await
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let mut previewed = 0;
    for spec in catalog::all().filter(|s| !s.effect.is_read() && listed.iter().any(|n| n == s.name))
    {
        // A revert needs a recorded change to preview: its dry run is in tests/it/undo.rs.
        if spec.name == "pve_undo_change" {
            continue;
        }
        // A plan previews its steps (each one's row gated), not one request: tests/it/plans.rs.
        if spec.name == "pve_provision_qemu_guest" || spec.name == "pve_apply_plan" {
            continue;
        }
        let mut args = minimal_args(spec);
        let valid = schema::validate(spec, Some(&args))
            .unwrap_or_else(|e| panic!("{}: sample arguments invalid: {:?}", spec.name, e.errors));
        // What the row says about these arguments, independent of the answer.
        let gated = gate::evaluate(spec, &valid).is_some();
        args.insert("dry_run".into(), json!(true));
        emu.clear_requests();
        let result = mcp.call(spec.name, Value::Object(args.clone())).await;
        assert_ne!(result["isError"], true, "{}: {result}", spec.name);
        let data = &envelope(&result)["data"];
        assert_eq!(data["dryRun"], true, "{}", spec.name);
        assert_eq!(data["sent"], false);
        assert_eq!(data["decision"]["tier"], spec.tier.as_str());
        assert_eq!(
            data["decision"]["needsApproval"], gated,
            "{}: {data}",
            spec.name
        );
        if let Some((method, _)) = spec.backend.method_and_path() {
            assert_eq!(data["request"]["method"], method.as_str(), "{}", spec.name);
        }
        let changes: Vec<_> = emu
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET")
            .collect();
        assert!(changes.is_empty(), "{} sent {changes:?}", spec.name);
        previewed += 1;
    }
    assert!(previewed >= 50, "only {previewed} mutating tools previewed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_preview_shows_current_values_and_the_digest_guards_stale_writes() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), &[("PVE_ACCESS_TIER", "full")]);
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    let result = mcp
        .call(
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 101, "cores": 4, "cipassword": "s3cret-value", "dry_run": true}),
        )
        .await;
    let data = envelope(&result)["data"].clone();
    assert_eq!(data["current"]["cores"], "2", "{data}");
    assert_eq!(data["target"]["name"], "vm-web");
    let digest = data["digest"].as_str().expect("digest read").to_owned();
    assert!(
        !result.to_string().contains("s3cret-value"),
        "secret echoed: {result}"
    );
    assert_eq!(data["decision"]["needsApproval"], true);

    // The digest makes Proxmox refuse a change made against a stale read.
    let stale = mcp
        .call(
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 101, "cores": 3, "digest": "0000000000000000000000000000000000000000", "confirm": true}),
        )
        .await;
    assert_eq!(stale["isError"], true, "{stale}");
    let fresh = mcp
        .call(
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 101, "cores": 3, "digest": digest, "confirm": true}),
        )
        .await;
    assert_ne!(fresh["isError"], true, "{fresh}");
}
