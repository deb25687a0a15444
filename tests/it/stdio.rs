//! The built binary over real stdio against the emulator over real HTTPS.

use crate::common;

use common::{McpProcess, emulator, env_for, envelope, with_policy};
use nandi_proxmox_mcp::catalog::{self, Module, Tier};
use serde_json::{Value, json};

const FULL: &[(&str, &str)] = &[("PVE_ACCESS_TIER", "full")];

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_announces_identity_and_policy() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    let init = mcp.initialize().await;
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "nandi-proxmox-mcp");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(result["protocolVersion"], "2025-06-18");
    let instructions = result["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("access tier read-only"),
        "{instructions}"
    );
    assert!(instructions.contains("module mode core"), "{instructions}");
    assert!(result["capabilities"]["tools"].is_object());

    let pong = mcp.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    let unknown = mcp.request("no/such/method", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    // Start-up and the handshake talk to nobody.
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_protocol_revisions_are_negotiated() {
    let emu = emulator().await;
    for version in ["2024-11-05", "2025-03-26", "2025-11-25"] {
        let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
        let init = mcp.initialize_with(version).await;
        assert_eq!(init["result"]["protocolVersion"], version);
        mcp.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_settings_list_only_read_only_core_tools() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    mcp.initialize().await;
    let listed = names(&mcp.list_tools().await);
    // Aliases and superseded reference tools are callable but not listed by default
    // (PVE_ALIASES=hidden).
    let expected: Vec<&str> = catalog::all()
        .filter(|s| s.tier == Tier::ReadOnly && s.module == Module::Core)
        .filter(|s| s.superseded_by.is_none())
        // Offered only when one server serves several clusters.
        .filter(|s| !s.spans_clusters())
        // Listed only where a Proxmox Backup Server is configured.
        .filter(|s| !s.backend.is_pbs())
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, expected);
    for legacy in ["pve_get_node_metrics_day", "listVMs"] {
        assert!(!listed.iter().any(|n| n == legacy), "{legacy} listed");
    }
    let old = mcp
        .call(
            "pve_get_node_metrics_week",
            json!({"node": "pve01", "cf": "MAX"}),
        )
        .await;
    assert_eq!(old["isError"], false, "{old}");
    let new = mcp
        .call(
            "pve_get_node_metrics",
            json!({"node": "pve01", "timeframe": "week", "cf": "MAX"}),
        )
        .await;
    assert_eq!(new["isError"], false, "{new}");
    let rrd: Vec<_> = emu
        .requests()
        .into_iter()
        .filter(|r| r.path == "/nodes/pve01/rrddata")
        .map(|r| {
            let mut query = r.query;
            query.sort();
            query
        })
        .collect();
    assert_eq!(rrd.len(), 2, "{rrd:?}");
    assert_eq!(
        rrd[0], rrd[1],
        "the old name and the new tool send the same request"
    );
    emu.clear_requests();
    assert!(!listed.iter().any(|n| n == "pve_stop_qemu_vm"));
    // A filtered tool is not callable either.
    let response = mcp
        .request(
            "tools/call",
            json!({"name": "pve_stop_qemu_vm", "arguments": {"node": "pve01", "vmid": 101, "confirm": true}}),
        )
        .await;
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool not found")
    );
    assert!(emu.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_tier_lists_the_whole_slice_with_gates() {
    let emu = emulator().await;
    let listed_aliases = [FULL[0], ("PVE_ALIASES", "listed")];
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), &listed_aliases));
    mcp.initialize().await;
    let tools = mcp.list_tools().await;
    let canonical = tools
        .iter()
        .filter(|t| t["_meta"]["aliasFor"].is_null())
        .count();
    assert_eq!(
        canonical,
        catalog::all()
            .filter(|s| {
                s.module == Module::Core
                    && !s.backend.is_ssh()
                    && !s.backend.is_pbs()
                    && !s.spans_clusters()
            })
            .count(),
        "every core tool except the SSH ones (no SSH configured)"
    );
    let aliases = tools.len() - canonical;
    assert_eq!(aliases, 8);
    let stop = tools
        .iter()
        .find(|t| t["name"] == "pve_stop_qemu_vm")
        .unwrap();
    assert_eq!(stop["_meta"]["anthropic/requiresUserInteraction"], true);
    assert_eq!(stop["annotations"]["destructiveHint"], true);
    assert_eq!(stop["annotations"]["readOnlyHint"], false);
    let stop_alias = tools.iter().find(|t| t["name"] == "stopVM").unwrap();
    assert_eq!(
        stop_alias["_meta"]["anthropic/requiresUserInteraction"],
        true
    );
    assert_eq!(stop_alias["_meta"]["aliasFor"], "pve_stop_qemu_vm");
    assert_eq!(stop_alias["inputSchema"], stop["inputSchema"]);
    // A start is a routine change: not announced as needing a person on every call (the
    // server asks when the target is protected), and it takes `confirm` (for clients that
    // cannot ask, when it does).
    let start = tools
        .iter()
        .find(|t| t["name"] == "pve_start_qemu_vm")
        .unwrap();
    assert_eq!(
        start["_meta"]["anthropic/requiresUserInteraction"],
        Value::Null
    );
    assert_eq!(
        start["inputSchema"]["properties"]["confirm"]["type"],
        "boolean"
    );
    // A plain read needs no approval.
    let nodes = tools
        .iter()
        .find(|t| t["name"] == "pve_list_nodes")
        .unwrap();
    assert_eq!(nodes["annotations"]["readOnlyHint"], true);
    assert!(
        nodes["_meta"]
            .get("anthropic/requiresUserInteraction")
            .is_none()
    );
    assert!(nodes["inputSchema"]["properties"].get("confirm").is_none());
    assert!(
        emu.requests().is_empty(),
        "listing tools must not call Proxmox"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_tool_returns_emulator_data() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    mcp.initialize().await;
    let result = mcp.call("pve_list_nodes", json!({})).await;
    assert_ne!(result["isError"], true, "{result}");
    let env = envelope(&result);
    assert_eq!(env["ok"], true);
    let mut nodes: Vec<&str> = env["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["pve01", "pve02", "pve03"]);
    assert_eq!(env["meta"]["tool"], "pve_list_nodes");
    assert_eq!(env["meta"]["retries"], 0);
    let requests = emu.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/nodes")
    );
    assert!(requests[0].authorized);

    // An alias reaches the same row and says so.
    let result = mcp
        .call("getVMStatus", json!({"node": "pve01", "vmid": 101}))
        .await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(env["data"]["status"], "running");
    assert_eq!(env["meta"]["aliasFor"], "pve_get_qemu_status");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmation_gate_then_upid() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), FULL));
    mcp.initialize().await;

    let refused = mcp
        .call("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": 101}))
        .await;
    assert_eq!(refused["isError"], true);
    let env = envelope(&refused);
    assert_eq!(env["error"]["code"], "CONFIRMATION_REQUIRED");
    assert!(env["error"]["impact"].is_string());
    let via_alias = mcp
        .call(
            "stopVM",
            json!({"node": "pve01", "vmid": 101, "confirm": false}),
        )
        .await;
    let env = envelope(&via_alias);
    assert_eq!(env["error"]["code"], "CONFIRMATION_REQUIRED");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pve_stop_qemu_vm")
    );
    assert!(
        emu.requests().is_empty(),
        "a refused call must not reach Proxmox"
    );

    let done = mcp
        .call(
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101, "confirm": true}),
        )
        .await;
    assert_ne!(done["isError"], true, "{done}");
    let env = envelope(&done);
    let upid = env["data"].as_str().expect("UPID string");
    assert!(upid.starts_with("UPID:pve01:"), "{upid}");
    // Besides the stop, only the undo record's plain read of the power state before it.
    let all = emu.requests();
    assert!(
        all.iter()
            .all(|r| r.method != "GET" || r.path == "/nodes/pve01/qemu/101/status/current"),
        "{all:?}"
    );
    let requests: Vec<_> = all.into_iter().filter(|r| r.method != "GET").collect();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/nodes/pve01/qemu/101/status/stop");
    assert!(
        requests[0].form.is_empty(),
        "confirm must never be sent: {:?}",
        requests[0].form
    );

    // The UPID round-trips through the task tools (percent-encoded in the path).
    let status = mcp
        .call(
            "pve_get_task_status",
            json!({"node": "pve01", "upid": upid}),
        )
        .await;
    let env = envelope(&status);
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(env["data"]["upid"], upid);
    let status = mcp
        .call("pve_get_qemu_status", json!({"node": "pve01", "vmid": 101}))
        .await;
    assert_eq!(envelope(&status)["data"]["status"], "stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
/// A start of a protected guest (102 is tagged prod) is asked: without approval it is refused
/// and nothing but the target's fact reads is sent; with the model's `confirm: true` (this
/// client cannot ask a person) it runs and answers the UPID.
async fn power_tool_without_gate_returns_upid() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), FULL));
    mcp.initialize().await;
    let refused = mcp
        .call("startVM", json!({"node": "pve03", "vmid": 102}))
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    let env = envelope(&refused);
    assert_eq!(env["error"]["code"], "CONFIRMATION_REQUIRED", "{env}");
    assert!(
        emu.requests().iter().all(|r| r.method == "GET"),
        "nothing is sent: {:?}",
        emu.requests()
    );
    let started = mcp
        .call(
            "startVM",
            json!({"node": "pve03", "vmid": 102, "confirm": true}),
        )
        .await;
    let env = envelope(&started);
    assert_eq!(env["ok"], true, "{env}");
    assert!(env["data"].as_str().unwrap().starts_with("UPID:pve03:"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_never_reach_proxmox() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &with_policy(env_for(&emu), FULL));
    mcp.initialize().await;
    let cases = [
        ("pve_get_qemu_status", json!({"node": "pve01"}), "vmid"),
        (
            "pve_get_qemu_status",
            json!({"node": "pve01", "vmid": "101"}),
            "vmid",
        ),
        (
            "pve_get_qemu_status",
            json!({"node": "pve01", "vmid": 7}),
            "vmid",
        ),
        (
            "pve_get_qemu_status",
            json!({"node": "pve01/../x", "vmid": 101}),
            "node",
        ),
        ("pve_list_nodes", json!({"surprise": true}), "surprise"),
        (
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101, "confirm": "yes"}),
            "confirm",
        ),
        (
            "pve_get_task_status",
            json!({"node": "pve02", "upid": "UPID:pve01:0000ABCD:0001E240:674F1C2A:qmstart:101:root@pam:"}),
            "node",
        ),
    ];
    for (tool, args, field) in cases {
        let result = mcp.call(tool, args.clone()).await;
        assert_eq!(result["isError"], true, "{tool} {args}");
        let env = envelope(&result);
        assert_eq!(env["error"]["code"], "TOOL_INPUT_REJECTED", "{env}");
        assert!(
            env["error"]["details"]["errors"][field].is_string(),
            "{tool} {args}: {env}"
        );
    }
    assert!(emu.requests().is_empty(), "{:?}", emu.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxmox_errors_keep_their_detail() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    mcp.initialize().await;
    let missing = mcp
        .call("pve_get_qemu_status", json!({"node": "pve01", "vmid": 999}))
        .await;
    assert_eq!(missing["isError"], true);
    let env = envelope(&missing);
    assert_eq!(env["error"]["code"], "PROXMOX_NOT_FOUND", "{env}");
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{env}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_list_fans_out_over_nodes() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    mcp.initialize().await;
    let result = mcp.call("listContainers", json!({})).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{env}");
    let mut ids: Vec<i64> = env["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["vmid"].as_i64().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, [201, 202, 203]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfigured_server_starts_and_explains() {
    let mut mcp = McpProcess::spawn(&["run"], &[]);
    mcp.initialize().await;
    let result = mcp.call("pve_list_nodes", json!({})).await;
    let env = envelope(&result);
    assert_eq!(env["error"]["code"], "PROXMOX_NOT_CONFIGURED");
    assert!(env["error"]["hint"].as_str().unwrap().contains("setup"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_mode_serves_the_built_in_emulator() {
    let mut mcp = McpProcess::spawn(&["run", "--demo"], &[]);
    let init = mcp.initialize().await;
    assert!(
        init["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("DEMO MODE")
    );
    let result = mcp
        .call("pve_list_cluster_resources", json!({"type": "vm"}))
        .await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{env}");
    assert!(
        env["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["type"] != "node")
    );
    // The demo's PBS storage answers the backup-health question.
    let result = mcp.call("pve_backup_health", json!({"days": 7})).await;
    let env = envelope(&result);
    assert_eq!(env["ok"], true, "{env}");
    let shared: Vec<&Value> = env["data"]["storages_read"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["type"] == "pbs")
        .collect();
    assert_eq!(shared.len(), 1, "{env}");
    assert_eq!(
        env["data"]["without_verified_backup_within_days"][0], 102,
        "{env}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_recipes_are_listed_and_served() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    let init = mcp.initialize().await;
    assert!(init["result"]["capabilities"]["prompts"].is_object());
    let listed = mcp.request("prompts/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cluster-health",
            "guest-inventory",
            "backup-audit",
            "troubleshoot-guest"
        ]
    );
    let got = mcp
        .request("prompts/get", json!({"name": "cluster-health"}))
        .await;
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("pve_get_cluster_status"), "{got}");
    let missing = mcp.request("prompts/get", json!({"name": "nope"})).await;
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("prompt not found")
    );

    // A recipe whose tool is filtered out is not offered.
    let mut narrowed = McpProcess::spawn(
        &["run"],
        &with_policy(
            env_for(&emu),
            &[("PVE_TOOL_BLACKLIST", "pve_list_backup_jobs")],
        ),
    );
    narrowed.initialize().await;
    let listed = narrowed.request("prompts/list", json!({})).await;
    assert!(!listed.to_string().contains("backup-audit"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_the_server_never_issued_is_invalid_params() {
    let mut mcp = McpProcess::spawn(&["run"], &[]);
    mcp.initialize().await;
    for method in ["tools/list", "prompts/list"] {
        let response = mcp.request(method, json!({"cursor": "not-a-cursor"})).await;
        assert_eq!(response["error"]["code"], -32602, "{method}: {response}");
    }
    let response = mcp.request("tools/list", json!({})).await;
    assert!(response["result"]["tools"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_json_gets_a_parse_error_and_the_server_keeps_serving() {
    let emu = emulator().await;
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut mcp = McpProcess::spawn_logging_to(&["run"], &env_for(&emu), log.path());
    // Before the handshake and after it: typed garbage, then a pasted secret-looking line.
    for garbage in [&b"hello\r\n"[..], b"tokenSecret=s3cr3t-pasted-value\n"] {
        mcp.send_raw(garbage).await;
        let reply = mcp.next_message().await;
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert_eq!(reply["error"]["code"], -32700, "{reply}");
        assert_eq!(reply["error"]["message"], "Parse error: Invalid JSON");
        // No id could be read: like rmcp's own -32600, the reply carries none.
        assert!(reply["id"].is_null(), "{reply}");
        let text = reply.to_string();
        assert!(
            !text.contains("hello") && !text.contains("s3cr3t"),
            "{text}"
        );
        if garbage.starts_with(b"hello") {
            mcp.initialize().await;
        }
    }
    assert!(names(&mcp.list_tools().await).contains(&"pve_list_nodes".to_owned()));

    // A blank line is skipped; an over-long line is still discarded unanswered, and the
    // message after it is not taken as part of it.
    let mut long = vec![b'x'; 16 * 1024 * 1024 + 10];
    long.push(b'\n');
    mcp.send_raw(b"  \n").await;
    mcp.send_raw(&long).await;
    mcp.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"after\",\"method\":\"ping\"}\n")
        .await;
    let reply = mcp.next_message().await;
    assert_eq!(reply["id"], "after", "{reply}");
    assert!(reply.get("result").is_some(), "{reply}");

    // A cut-off last line (no newline) is left alone, as before: no reply, a clean exit.
    mcp.send_raw(b"hello").await;
    let (status, rest) = mcp.finish().await;
    assert!(status.success(), "{status:?}");
    assert!(rest.is_empty(), "{rest:?}");
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert!(logged.contains("not JSON"), "{logged}");
    assert!(
        !logged.contains("s3cr3t"),
        "the line is never logged: {logged}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_repeats_a_key_is_refused_over_stdio_and_sends_nothing() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), &[("PVE_ACCESS_TIER", "full")]);
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    let before = emu.requests().len();
    // `confirm` twice: serde would keep the last one. The line arrives in three writes, cut
    // inside a key, so the check must see the whole line, not each piece.
    let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pve_stop_qemu_vm","arguments":{"node":"pve01","vmid":101,"confirm":false,"confirm":true}}}"#;
    let (first, rest) = line.split_at(60);
    let (second, third) = rest.split_at(70);
    for piece in [first, second] {
        mcp.send_raw(piece).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    mcp.send_raw(&[third, b"\n"].concat()).await;
    let reply = mcp.next_message().await;
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"confirm\"") && message.contains("params.arguments.confirm"),
        "{message}"
    );
    assert_eq!(emu.requests().len(), before, "nothing reached Proxmox");
    // The next message is read whole and served.
    let ok = mcp.call("pve_list_nodes", json!({})).await;
    assert_eq!(envelope(&ok)["ok"], true, "{ok}");
    let _ = mcp.shutdown().await;
}

/// With certificate checks on against the system store (the default TLS mode), the store is
/// read at the first handshake, never before `initialize` and `tools/list` are answered. The
/// store here is a FIFO: opening it blocks the reader until the test writes the emulator's
/// certificate into it, so a server that read it at start would never answer `initialize`.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_store_is_read_at_the_first_request_not_before_the_listing() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("system-ca.pem");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let empty_dir = dir.path().join("certs");
    std::fs::create_dir(&empty_dir).unwrap();
    let mut env: Vec<(String, String)> = env_for(&emu)
        .into_iter()
        .filter(|(k, _)| k != "PROXMOX_TLS_FINGERPRINT")
        .collect();
    env.push(("SSL_CERT_FILE".into(), fifo.display().to_string()));
    env.push(("SSL_CERT_DIR".into(), empty_dir.display().to_string()));
    let mut mcp = McpProcess::spawn(&["run"], &env);
    mcp.initialize().await;
    assert!(!mcp.list_tools().await.is_empty());

    let pem = emu.cert_pem().unwrap();
    let writer = std::thread::spawn(move || std::fs::write(&fifo, pem));
    let nodes = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(nodes["ok"], true, "{nodes}");
    writer.join().unwrap().unwrap();
    assert!(mcp.shutdown().await.success());
}
