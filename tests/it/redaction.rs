//! The redaction canary: secrets planted in the emulator's seed data (VM 101's cloud-init
//! password hash) and in call arguments (every secret-named parameter) are counted in every
//! output of every registered tool, at each of the three tiers, over the real binary —
//! success and error paths, the server's own log and its audit trail included. The goal is
//! zero, except the new API token's secret, which `pve_create_api_token` returns once at
//! `full` (and says so).

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{McpProcess, emulator, env_for, with_policy};
use nandi_proxmox_mcp::audit::verify::verify_file;
use nandi_proxmox_mcp::pve;
use nandi_proxmox_mcp::redact::{SECRET_FIELDS, SECRET_NOTICE};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Part of the emulator's seed `cipassword` of VM 101 (`pve_emulator` `seed::SEED_CIPASSWORD`).
const SEED_CANARY: &str = "CANARYcipw5f2b81d0e7a94c3";
/// Put into every secret-named argument.
const ARG_CANARY: &str = "ARGCANARY-3b9f1d7e-pw";

/// What Proxmox itself answers for VM 101, bypassing the MCP server: proves the seed canary
/// is really there to be leaked.
async fn raw_vm_config(emu: &Emulator) -> String {
    let opts = EmulatorOptions::default();
    let client = pve::Client::new(&pve::Connection {
        host: emu.host().to_owned(),
        port: emu.port(),
        user: opts.user,
        realm: opts.realm,
        token_name: opts.token_name,
        token_secret: opts.token_secret,
        tls: pve::TlsMode::Fingerprint(emu.cert_fingerprint().expect("https emulator")),
    })
    .expect("client");
    let outcome = client
        .call(
            pve::ApiRequest {
                method: pve::Method::Get,
                path: "/nodes/pve01/qemu/101/config".into(),
                params: Vec::new(),
                timeout: Duration::from_secs(10),
                retry: pve::RetryPolicy::Never,
            },
            &CancellationToken::new(),
        )
        .await;
    outcome.result.expect("raw config").to_string()
}

fn is_secret_name(name: &str) -> bool {
    SECRET_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(name))
}

/// A value the schema accepts often enough to get past validation to Proxmox.
fn plausible(name: &str, schema: &Value) -> Value {
    if is_secret_name(name) {
        return json!(ARG_CANARY);
    }
    let kind = schema["type"].as_str().unwrap_or("string");
    match (name, kind) {
        ("node" | "target", _) => json!("pve01"),
        ("vmid" | "newid", "integer") => json!(101),
        ("vmid", _) => json!("101"),
        ("userid", _) => json!("alice@pve"),
        ("tokenid", _) => json!("canary"),
        ("storage", _) => json!("local"),
        ("poolid", _) => json!("emu-pool"),
        ("upid", _) => json!("UPID:pve01:00012345:00000000:6750A0B0:qmstart:101:root@pam:"),
        _ => {
            if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
                return first.clone();
            }
            match kind {
                "integer" | "number" => schema["minimum"].as_i64().map_or(json!(1), |m| json!(m)),
                "boolean" => json!(false),
                "array" => json!(["x"]),
                _ => json!("x"),
            }
        }
    }
}

/// Required and secret-named parameters filled in; `confirm` left out on purpose, so the
/// gated tools are refused (and audited) rather than run.
fn plausible_args(tool: &Value) -> Value {
    // The whole contract (ranges, patterns), as the listing leaves the value rules out.
    let name = tool["name"].as_str().unwrap_or_default();
    let schema = &match nandi_proxmox_mcp::catalog::find(name) {
        Some(spec) => Value::Object(nandi_proxmox_mcp::schema::input_schema_with_rules(spec)),
        None => tool["inputSchema"].clone(),
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut args = Map::new();
    for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
        if name != "confirm" && (required.contains(&name.as_str()) || is_secret_name(name)) {
            args.insert(name.clone(), plausible(name, prop));
        }
    }
    Value::Object(args)
}

/// Calls that reach the secret-carrying answers and the secret-taking writes for real.
fn targeted_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("pve_get_qemu_config", json!({"node": "pve01", "vmid": 101})),
        (
            "pve_get_qemu_cloudinit_dump",
            json!({"node": "pve01", "vmid": 101}),
        ),
        (
            "pve_create_user",
            json!({"userid": "canary@pve", "password": ARG_CANARY, "confirm": true}),
        ),
        (
            "pve_set_qemu_cloudinit",
            json!({"node": "pve01", "vmid": 101, "cipassword": ARG_CANARY, "confirm": true}),
        ),
        (
            "pve_create_storage",
            json!({"storage": "nas", "type": "cifs", "server": "10.0.0.9", "share": "b",
                   "username": "u", "password": ARG_CANARY, "confirm": true}),
        ),
        (
            "pve_lxc_create",
            json!({"node": "pve01", "vmid": 280, "password": ARG_CANARY,
                   "ostemplate": "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"}),
        ),
        // An error path that quotes the bad value: the user exists now.
        (
            "pve_create_user",
            json!({"userid": "canary@pve", "password": ARG_CANARY, "confirm": true}),
        ),
        (
            "pve_create_api_token",
            json!({"userid": "alice@pve", "tokenid": "canary", "confirm": true}),
        ),
        ("pve_list_api_tokens", json!({"userid": "alice@pve"})),
    ]
}

/// Per tier: outputs seen, and for each canary the outputs it appeared in.
struct Tally {
    outputs: usize,
    hits: BTreeMap<&'static str, Vec<String>>,
    token_secret: Option<String>,
    audit_lines: usize,
}

async fn sweep(tier: &str) -> Tally {
    let emu = emulator().await;
    assert!(
        raw_vm_config(&emu).await.contains(SEED_CANARY),
        "the seed canary must be in what Proxmox answers"
    );
    let dir = tempfile::tempdir().unwrap();
    let (log_path, audit_path) = (
        dir.path().join("server.log"),
        dir.path().join("audit.jsonl"),
    );
    let mut env = with_policy(
        env_for(&emu),
        &[("PVE_ACCESS_TIER", tier), ("PVE_MODULE_MODE", "advanced")],
    );
    env.push(("PVE_AUDIT_LOG".into(), audit_path.display().to_string()));
    env.push(("RUST_LOG".into(), "debug".into()));
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &env, &log_path);
    mcp.initialize().await;
    let tools = mcp.list_tools().await;
    let names: Vec<String> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();

    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut token_secret = None;
    for (tool, args) in targeted_calls() {
        if !names.iter().any(|n| n == tool) {
            continue;
        }
        let result = mcp.call(tool, args).await;
        if tool == "pve_create_api_token" {
            let data = &result["structuredContent"]["data"];
            if let Some(secret) = data["value"].as_str() {
                assert_eq!(data["secretNotice"], SECRET_NOTICE);
                token_secret = Some(secret.to_owned());
            }
        }
        outputs.push((format!("{tool} (targeted)"), result.to_string()));
    }
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        // Error path: secrets as parameters the tool may not even have.
        let bad = json!({"password": ARG_CANARY, "cipassword": ARG_CANARY});
        let result = mcp.call(name, bad).await;
        outputs.push((format!("{name} (invalid)"), result.to_string()));
        let result = mcp.call(name, plausible_args(tool)).await;
        outputs.push((format!("{name} (plausible)"), result.to_string()));
    }
    // The config again, after the writes: still nothing.
    if names.iter().any(|n| n == "pve_get_qemu_config") {
        let result = mcp
            .call("pve_get_qemu_config", json!({"node": "pve01", "vmid": 101}))
            .await;
        outputs.push(("pve_get_qemu_config (after)".into(), result.to_string()));
    }
    let sent_args_canary = emu
        .requests()
        .iter()
        .any(|r| r.form.iter().any(|(_, v)| v.contains(ARG_CANARY)));
    assert!(mcp.shutdown().await.success());
    emu.shutdown().await;
    if tier == "full" {
        assert!(
            sent_args_canary,
            "{tier}: the argument canary reached Proxmox"
        );
    }

    let log = std::fs::read_to_string(&log_path).unwrap();
    outputs.push(("server log".into(), log));
    let audit = std::fs::read_to_string(&audit_path).unwrap_or_default();
    let report = verify_file(&audit_path)
        .unwrap_or_else(|_| nandi_proxmox_mcp::audit::verify::verify_bytes(b""));
    assert!(report.is_intact(), "{tier}: {report:?}");
    let audit_lines = audit.lines().count();
    outputs.push(("audit log".into(), audit));

    let mut hits: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut canaries = vec![
        ("seed cipassword", SEED_CANARY.to_owned()),
        ("argument", ARG_CANARY.to_owned()),
    ];
    if let Some(secret) = &token_secret {
        canaries.push(("token secret", secret.clone()));
    }
    for (label, canary) in &canaries {
        let entry = hits.entry(label).or_default();
        for (source, text) in &outputs {
            if text.contains(canary.as_str()) {
                entry.push(source.clone());
            }
        }
    }
    Tally {
        outputs: outputs.len(),
        hits,
        token_secret,
        audit_lines,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_leaves_the_server_outside_token_creation_at_full() {
    for tier in ["read-only", "read-execute", "full"] {
        let tally = sweep(tier).await;
        eprintln!(
            "{tier}: {} outputs checked, {} audit lines, hits: {:?}",
            tally.outputs, tally.audit_lines, tally.hits
        );
        assert!(tally.outputs > 100, "{tier}: the sweep ran");
        assert!(
            tally.hits["seed cipassword"].is_empty(),
            "{tier}: {:?}",
            tally.hits
        );
        assert!(
            tally.hits["argument"].is_empty(),
            "{tier}: {:?}",
            tally.hits
        );
        if tier == "full" {
            assert!(tally.token_secret.is_some(), "token creation ran at full");
            assert_eq!(
                tally.hits["token secret"],
                ["pve_create_api_token (targeted)"],
                "the token secret is returned once, by its creation only"
            );
            assert!(tally.audit_lines > 10, "changes and refusals were audited");
        } else {
            assert!(tally.token_secret.is_none(), "{tier}: no token creation");
        }
    }
}
