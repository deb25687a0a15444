//! The generic API call through the built binary against the emulator: arguments judged by
//! the schema the "cluster" serves at `/pve-docs/api-viewer/apidata.js`.
//!
//! The emulator serves, per test, either the official PVE 9.1 schema from
//! `../shared/pve-api/apidata-pve-9.1.json.gz` (the test is ignored when absent outside CI, a
//! failure under CI) or the subset it generates from its own routes (always available);
//! each test says which. Refused calls are checked to send nothing to Proxmox.

use crate::common;

use std::io::Read;

use common::{McpProcess, env_for, envelope, fails, ok, with_policy};
use pve_emulator::{Emulator, RecordedRequest};
use serde_json::{Value, json};

/// The official schema array as JSON text. Callers carry the `no_pve_api` ignore (set by
/// build.rs when `../shared/pve-api` is absent outside CI); under CI a missing file fails.
fn official_schema() -> String {
    let path = common::shared_dir().join("pve-api/apidata-pve-9.1.json.gz");
    let file = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read ({e})", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzip JSON");
    text
}

/// Requests other than the `/version` lookup.
fn calls(emu: &Emulator) -> Vec<RecordedRequest> {
    emu.requests()
        .into_iter()
        .filter(|r| r.path != "/version")
        .collect()
}

fn spawn(emu: &Emulator, tier: &str, extra: &[(&str, &str)]) -> McpProcess {
    let mut vars = vec![("PVE_ACCESS_TIER", tier), ("PVE_MODULE_MODE", "advanced")];
    vars.extend_from_slice(extra);
    McpProcess::spawn(&["run"], &with_policy(env_for(emu), &vars))
}

fn params(items: &[&str]) -> Value {
    json!(items)
}

/// Asserts a refusal names `param` and contains `allows`, and that nothing was sent.
async fn refused(mcp: &mut McpProcess, emu: &Emulator, args: Value, param: &str, allows: &str) {
    emu.clear_requests();
    let error = fails(mcp, "pve_api_call", args.clone()).await;
    assert_eq!(error["code"], "TOOL_INPUT_REJECTED", "{args}: {error}");
    let why = error["details"]["errors"][param]
        .as_str()
        .unwrap_or_else(|| panic!("{param} not named for {args}: {error}"));
    assert!(why.contains(allows), "{args}: {why}");
    assert!(
        calls(emu).is_empty(),
        "{args} reached Proxmox: {:?}",
        calls(emu)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
async fn reads_are_judged_by_the_official_schema() {
    let schema = official_schema();
    let emu = common::emulator().await;
    emu.serve_api_schema(schema);
    let mut mcp = spawn(&emu, "read-only", &[]);
    mcp.initialize().await;
    let names: Vec<String> = mcp
        .list_tools()
        .await
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.iter().any(|n| n == "pve_api_call"));
    assert!(
        !names.iter().any(|n| n == "pve_api_write"),
        "write listed at read-only"
    );

    // Accepted: an enum value, a pattern, a range — each reaches Proxmox as given.
    let data = ok(
        &mut mcp,
        "pve_api_call",
        json!({"path": "/cluster/resources", "params": params(&["type=vm"])}),
    )
    .await;
    assert_eq!(data["endpoint"], "/cluster/resources");
    assert_eq!(data["schema"]["checked"], true);
    assert_eq!(data["schema"]["pveVersion"], "9.1.2");
    assert_eq!(data["schema"]["source"], "cluster");
    assert!(
        data["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] == "qemu" || r["type"] == "lxc")
    );
    let sent = calls(&emu);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].method.as_str(), sent[0].path.as_str()),
        ("GET", "/cluster/resources")
    );
    assert_eq!(sent[0].query, [("type".to_owned(), "vm".to_owned())]);
    emu.clear_requests();
    ok(
        &mut mcp,
        "pve_api_call",
        json!({"path": "/api2/json/nodes/pve01/syslog", "params": params(&["since=2026-01-01 10:00", "limit=5"])}),
    )
    .await;
    let sent = calls(&emu);
    assert_eq!(sent[0].path, "/nodes/pve01/syslog");
    assert!(
        sent[0]
            .query
            .contains(&("since".into(), "2026-01-01 10:00".into()))
    );

    // Refused, naming the parameter and what the schema allows; nothing sent.
    let resources = |p: &[&str]| json!({"path": "/cluster/resources", "params": params(p)});
    refused(
        &mut mcp,
        &emu,
        resources(&["type=vms"]),
        "type",
        "vm, storage, node, sdn",
    )
    .await;
    refused(
        &mut mcp,
        &emu,
        resources(&["bogus=1"]),
        "bogus",
        "it accepts: type",
    )
    .await;
    let syslog = |p: &[&str]| json!({"path": "/nodes/pve01/syslog", "params": params(p)});
    refused(
        &mut mcp,
        &emu,
        syslog(&["since=yesterday"]),
        "since",
        "must match the pattern",
    )
    .await;
    refused(&mut mcp, &emu, syslog(&["limit=-1"]), "limit", "at least 0").await;
    refused(
        &mut mcp,
        &emu,
        syslog(&["limit=ten"]),
        "limit",
        "must be an integer",
    )
    .await;
    let tasks = |p: &[&str]| json!({"path": "/nodes/pve01/tasks", "params": params(p)});
    refused(
        &mut mcp,
        &emu,
        tasks(&["vmid=99"]),
        "vmid",
        "100 to 999999999",
    )
    .await;
    refused(
        &mut mcp,
        &emu,
        tasks(&["errors=maybe"]),
        "errors",
        "boolean",
    )
    .await;
    refused(
        &mut mcp,
        &emu,
        json!({"path": "/nodes/pve01/rrddata"}),
        "timeframe",
        "is required",
    )
    .await;
    refused(
        &mut mcp,
        &emu,
        // Not a known endpoint, so not known to be a read: it needs approval first, and the
        // schema check still refuses it once approved.
        json!({"path": "/nodes/pve01/no-such-thing", "confirm": true}),
        "path",
        "not an endpoint",
    )
    .await;
    refused(
        &mut mcp,
        &emu,
        json!({"path": "/nodes/-pve01/status"}),
        "node",
        "format pve-node",
    )
    .await;
    refused(
        &mut mcp,
        &emu,
        // No GET is known there either, so it needs approval first; the schema refuses it.
        json!({"path": "/nodes/pve01/qemu/101/status/start", "confirm": true}),
        "method",
        "GET is not defined",
    )
    .await;
    // The schema was fetched once for all these calls.
    assert_eq!(emu.api_schema_fetches(), 1);
    let error = mcp
        .request(
            "tools/call",
            json!({"name": "pve_api_write", "arguments": {"method": "POST", "path": "/version"}}),
        )
        .await;
    assert!(
        error.get("error").is_some(),
        "write callable at read-only: {error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
async fn writes_need_full_and_approval_and_check_indexed_keys() {
    let schema = official_schema();
    let emu = common::emulator().await;
    emu.serve_api_schema(schema);
    // A client without elicitation: the confirm flag is the approval.
    let mut mcp = spawn(&emu, "full", &[]);
    mcp.initialize().await;
    let config = "/nodes/pve01/qemu/101/config";
    let write = |p: &[&str], confirm: bool| json!({"method": "PUT", "path": config, "params": params(p), "confirm": confirm});
    emu.clear_requests();
    let error = fails(
        &mut mcp,
        "pve_api_write",
        write(&["net3=virtio,bridge=vmbr0"], false),
    )
    .await;
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED", "{error}");
    // The schema check runs before the question (its lookup reads the version and the
    // schema); the call itself is not sent.
    assert!(
        emu.requests().iter().all(|r| r.method == "GET"),
        "sent before approval: {:?}",
        emu.requests()
    );
    assert!(
        calls(&emu).iter().all(|r| r.path != config),
        "sent before approval"
    );

    let error = fails(&mut mcp, "pve_api_write", write(&["nte3=virtio"], true)).await;
    assert_eq!(error["code"], "TOOL_INPUT_REJECTED");
    assert!(
        error["details"]["errors"]["nte3"]
            .as_str()
            .unwrap()
            .contains("net[n]"),
        "{error}"
    );
    let error = fails(&mut mcp, "pve_api_write", write(&["cores=0"], true)).await;
    assert!(
        error["details"]["errors"]["cores"]
            .as_str()
            .unwrap()
            .contains("at least 1"),
        "{error}"
    );
    assert!(calls(&emu).is_empty());

    let result = mcp
        .call(
            "pve_api_write",
            write(&["net3=virtio,bridge=vmbr0", "cores=4"], true),
        )
        .await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(env["meta"]["approval"], "confirm-flag", "{env}");
    assert_eq!(env["data"]["endpoint"], "/nodes/{node}/qemu/{vmid}/config");
    // Besides the change, only the undo record's plain reads of the config (before, after).
    let all = calls(&emu);
    assert!(
        all.iter().all(|r| r.method != "GET" || r.path == config),
        "{all:?}"
    );
    let sent: Vec<_> = all.into_iter().filter(|r| r.method != "GET").collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (sent[0].method.as_str(), sent[0].path.as_str()),
        ("PUT", config)
    );
    assert!(
        sent[0]
            .form
            .contains(&("net3".into(), "virtio,bridge=vmbr0".into()))
    );
    assert!(sent[0].form.contains(&("cores".into(), "4".into())));
    // A later read sees the change.
    let data = ok(&mut mcp, "pve_api_call", json!({"path": config})).await;
    assert_eq!(data["data"]["cores"], 4, "{data}");
    assert!(
        data["data"]["net3"]
            .as_str()
            .unwrap()
            .contains("bridge=vmbr0")
    );
    // The read tool never writes, whatever it is given.
    let error = mcp
        .request(
            "tools/call",
            json!({"name": "pve_api_call", "arguments": {"path": config, "method": "PUT"}}),
        )
        .await;
    let env = envelope(&error["result"]);
    assert_eq!(env["error"]["code"], "TOOL_INPUT_REJECTED", "{env}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_schema_only_structural_checks_apply_and_the_result_says_so() {
    let emu = common::emulator().await;
    emu.hide_api_schema();
    let mut mcp = spawn(&emu, "read-only", &[]);
    mcp.initialize().await;
    let data = ok(
        &mut mcp,
        "pve_api_call",
        json!({"path": "/cluster/resources", "params": ["type=vm"]}),
    )
    .await;
    assert_eq!(data["schema"]["checked"], false, "{data}");
    assert!(
        data["schema"]["reason"]
            .as_str()
            .unwrap()
            .contains("apidata.js"),
        "{data}"
    );
    assert!(
        data["schema"]["applied"]
            .as_str()
            .unwrap()
            .contains("structural")
    );
    for (path, allows) in [
        ("/nodes/../access/users", "'..'"),
        ("/nodes/pve01%2F..%2Faccess", "percent"),
        ("/version?x=1", "query"),
        ("/nodes/pve01/status#x", "fragment"),
        ("/nodes/pve01\u{7}/status", "control"),
        ("/nodes//status", "empty segments"),
    ] {
        refused(&mut mcp, &emu, json!({"path": path}), "path", allows).await;
    }
    refused(
        &mut mcp,
        &emu,
        json!({"path": "/version", "params": ["a;b=1"]}),
        "a;b",
        "not a parameter name",
    )
    .await;
    // A segment with ':' travels encoded, never as a new path.
    emu.clear_requests();
    let _ = mcp
        .call(
            "pve_api_call",
            json!({"path": "/nodes/pve01/tasks/UPID:pve01:0:0:0:x:y:z:/status"}),
        )
        .await;
    assert_eq!(
        calls(&emu)[0].path,
        "/nodes/pve01/tasks/UPID:pve01:0:0:0:x:y:z:/status"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_schema_is_cached_per_version_in_a_file() {
    // The emulator's own subset (generated from its routes), not the official schema.
    let emu = common::emulator().await;
    let cache = tempfile::tempdir().unwrap();
    let xdg = cache.path().display().to_string();
    let mut first = spawn(&emu, "read-only", &[("XDG_CACHE_HOME", xdg.as_str())]);
    first.initialize().await;
    let data = ok(&mut first, "pve_api_call", json!({"path": "/version"})).await;
    assert_eq!(data["schema"]["source"], "cluster");
    refused(
        &mut first,
        &emu,
        json!({"path": "/cluster/resources", "params": ["type=vms"]}),
        "type",
        "vm, storage, node, sdn",
    )
    .await;
    first.shutdown().await;
    let files: Vec<_> = std::fs::read_dir(cache.path().join("nandi-proxmox-mcp"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["apidata-9.1.2-3f2c6a1e9d0b7a54.json"]);

    // A new process reads the file and does not fetch again.
    let mut second = spawn(&emu, "read-only", &[("XDG_CACHE_HOME", xdg.as_str())]);
    second.initialize().await;
    let data = ok(
        &mut second,
        "pve_api_call",
        json!({"path": "/cluster/status"}),
    )
    .await;
    assert_eq!(data["schema"]["source"], "cache-file");
    assert_eq!(emu.api_schema_fetches(), 1);
}
