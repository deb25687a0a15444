//! The gate's ground truth (issue 36), through the built binary over stdio with rmcp's client
//! side, a request-logging emulator serving a real PVE schema, and a person who declines:
//! a POST is never a read (the QEMU monitor's commands), a newer schema's parameters,
//! endpoints and methods are never sent unasked, and the server's own checks run before a
//! person is asked. The cases come from the schema files and the emulator's request log.

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, call, code, connect_stdio};
use common::{emulator, env_for, schemas, with_policy};
use pve_emulator::Emulator;
use serde_json::{Value, json};

/// Requests to `path` the emulator received, any method.
fn reached(emu: &Emulator, path: &str) -> usize {
    emu.requests().iter().filter(|r| r.path == path).count()
}

/// Requests other than the schema lookup's two reads (`/version`, `apidata.js`).
fn beyond_lookup(emu: &Emulator) -> Vec<String> {
    emu.requests()
        .iter()
        .filter(|r| r.path != "/version" && !r.path.ends_with("apidata.js"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

const MONITOR: &str = "/nodes/pve01/qemu/101/monitor";

/// A client of the built binary over stdio, at `tier` in the advanced module, whose person
/// answers `answer`, against `emu` serving `schema` (an `apidata.js` array).
async fn connect(
    emu: &Emulator,
    schema: Value,
    tier: &str,
    answer: Answer,
    extra: &[(&str, &str)],
) -> (
    Person,
    rmcp::service::RunningService<rmcp::RoleClient, Person>,
    tempfile::TempDir,
) {
    emu.serve_api_schema(schema.to_string());
    let mut vars = vec![("PVE_ACCESS_TIER", tier), ("PVE_MODULE_MODE", "advanced")];
    vars.extend_from_slice(extra);
    let person = Person::new(answer);
    let (client, home) = connect_stdio(person.clone(), &with_policy(env_for(emu), &vars)).await;
    (person, client, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_commands_are_asked_as_exec_and_destroy_and_send_nothing_when_declined() {
    let emu = emulator().await;
    let (person, client, _home) =
        connect(&emu, schemas::apidata_9_1_3(), "full", Answer::Decline, &[]).await;
    for command in ["quit", "system_reset", "migrate \"exec:touch /tmp/pwned\""] {
        let args = json!({"method": "POST", "path": "/nodes/pve01/qemu/101/monitor",
            "params": [format!("command={command}")], "confirm": true});
        let result = call(&client, "pve_api_write", args).await;
        assert_eq!(
            code(&result),
            "CONFIRMATION_DECLINED",
            "{command}: {result:?}"
        );
    }
    assert_eq!(reached(&emu, MONITOR), 0, "the monitor was reached");
    let questions = person.questions();
    assert_eq!(questions.len(), 3, "{questions:?}");
    for q in &questions {
        assert!(q.contains("exec"), "{q}");
        assert!(q.contains("destroy"), "{q}");
    }
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_info_is_a_sensitive_read_that_needs_full_and_a_person() {
    let emu = emulator().await;
    let (person, client, _home) =
        connect(&emu, schemas::apidata_9_1_3(), "full", Answer::Accept, &[]).await;
    let args = json!({"method": "POST", "path": "/nodes/pve01/qemu/101/monitor",
        "params": ["command=info status"], "confirm": true});
    let _ = call(&client, "pve_api_write", args).await;
    let questions = person.questions();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(questions[0].contains("sensitive-read"), "{}", questions[0]);
    assert!(!questions[0].contains("destroy"), "{}", questions[0]);
    // Approved, so the one request was sent (the emulator may not implement the monitor).
    assert_eq!(reached(&emu, MONITOR), 1);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_command_is_refused_while_frozen() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().expect("temp");
    let freeze = dir.path().join("frozen");
    std::fs::write(&freeze, "incident 42").expect("freeze file");
    let frozen = [("PVE_FREEZE_FILE", freeze.to_str().expect("utf-8"))];
    let schema = schemas::apidata_9_1_3();
    let (person, client, _home) = connect(&emu, schema, "full", Answer::Accept, &frozen).await;
    for (tool, args) in [
        (
            "pve_api_write",
            json!({"method": "POST", "path": "/nodes/pve01/qemu/101/monitor", "params": ["command=quit"], "confirm": true}),
        ),
        (
            "pve_api_write",
            json!({"method": "POST", "path": "/nodes/pve01/qemu/101/agent/ping", "confirm": true}),
        ),
    ] {
        let result = call(&client, tool, args.clone()).await;
        if args["path"] == "/nodes/pve01/qemu/101/monitor" {
            assert_eq!(code(&result), "FROZEN", "{args}: {result:?}");
        }
    }
    assert_eq!(reached(&emu, MONITOR), 0);
    assert!(
        person.questions().iter().all(|q| !q.contains("monitor")),
        "{:?}",
        person.questions()
    );
    client.cancel().await.ok();
}

/// The 9.1.3 schema with what a newer PVE might add: a URL parameter on a read, a new
/// endpoint, a new method on an old path.
fn newer_schema() -> Value {
    let mut tree = schemas::apidata_9_1_3();
    let config = schemas::node_mut(&mut tree, "/nodes/{node}/qemu/{vmid}/config").expect("config");
    config["info"]["GET"]["parameters"]["properties"]["remote-url"] = json!({"type": "string", "optional": 1, "pattern": "https?://.*", "description": "invented"});
    let version = schemas::node_mut(&mut tree, "/version").expect("version");
    version["info"]["GET"]["parameters"]["properties"]["check-url"] =
        json!({"type": "string", "optional": 1, "format": "uri", "description": "invented"});
    version["info"]["POST"] = json!({"method": "POST", "permissions": {"user": "all"},
        "parameters": {"additionalProperties": 0, "properties": {}}, "returns": {}});
    let cluster = schemas::node_mut(&mut tree, "/cluster").expect("cluster");
    cluster["children"]
        .as_array_mut()
        .expect("children")
        .push(json!({
        "path": "/cluster/newthing", "text": "newthing", "leaf": 1,
        "info": {"GET": {"method": "GET", "permissions": {"user": "all"},
            "parameters": {"additionalProperties": 0, "properties": {}}, "returns": {}}}}));
    tree
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_schema_is_never_sent_unasked_at_read_only() {
    let emu = emulator().await;
    let (person, client, _home) =
        connect(&emu, newer_schema(), "read-only", Answer::Decline, &[]).await;
    let cases = [
        json!({"path": "/nodes/pve01/qemu/101/config", "params": ["remote-url=https://x.attacker.example/"], "confirm": true}),
        json!({"path": "/version", "params": ["check-url=https://x.attacker.example/"], "confirm": true}),
        json!({"path": "/cluster/newthing", "confirm": true}),
    ];
    for args in &cases {
        let result = call(&client, "pve_api_call", args.clone()).await;
        assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{args}: {result:?}");
    }
    assert_eq!(beyond_lookup(&emu), Vec::<String>::new());
    // `/version` is also the schema lookup's own read: it was never sent with the parameter.
    assert!(
        emu.requests()
            .iter()
            .all(|r| r.query.iter().all(|(k, _)| k != "check-url"))
    );
    let questions = person.questions();
    assert_eq!(questions.len(), 3, "{questions:?}");
    assert!(questions[0].contains("egress"), "{}", questions[0]);
    assert!(
        questions.iter().all(|q| q.contains("unplaced")),
        "{questions:?}"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_method_is_asked_at_full_with_its_effect_named() {
    let emu = emulator().await;
    let (person, client, _home) = connect(&emu, newer_schema(), "full", Answer::Decline, &[]).await;
    let result = call(
        &client,
        "pve_api_write",
        json!({"method": "POST", "path": "/version", "confirm": true}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
    assert!(
        emu.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        beyond_lookup(&emu)
    );
    let q = &person.questions()[0];
    assert!(q.contains("unplaced") && q.contains("change"), "{q}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_checks_run_before_a_person_is_asked() {
    let emu = emulator().await;
    let (person, client, _home) =
        connect(&emu, schemas::apidata_9_1_3(), "full", Answer::Accept, &[]).await;
    let cases = [
        (
            "pve_download_to_storage",
            json!({"node": "pve01", "storage": "local", "content": "iso",
            "filename": "x.iso", "url": "http://169.254.169.254/latest/meta-data", "confirm": true}),
        ),
        (
            "pve_api_write",
            json!({"method": "POST", "path": "/nodes/pve01/qemu/101/status/start",
            "params": ["bogus=1"], "confirm": true}),
        ),
        (
            "pve_api_write",
            json!({"method": "POST", "path": "/nodes/pve01/../../etc", "confirm": true}),
        ),
    ];
    for (tool, args) in &cases {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(
            code(&result),
            "TOOL_INPUT_REJECTED",
            "{tool} {args}: {result:?}"
        );
        // A dry run of the same call reports the refusal too.
        let mut dry = args.clone();
        dry["dry_run"] = json!(true);
        dry.as_object_mut().map(|o| o.remove("confirm"));
        let preview = call(&client, tool, dry).await;
        assert_eq!(
            code(&preview),
            "TOOL_INPUT_REJECTED",
            "dry run of {tool} {args}: {preview:?}"
        );
    }
    assert_eq!(person.questions(), Vec::<String>::new());
    assert_eq!(beyond_lookup(&emu), Vec::<String>::new());
    client.cancel().await.ok();
}

/// The SSH tools' input rules run before a person is asked: a person who would decline is
/// never asked about a call the server refuses anyway, and nothing is tried over SSH (the
/// SSH port is closed: a connection attempt would say so).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn ssh_input_rules_run_before_a_person_is_asked() {
    let sshd = common::sshd::Sshd::start();
    let emu = emulator().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut env = env_for(&emu);
    env.extend(sshd.server_vars(&sshd.trusted_known_hosts()));
    for (k, v) in env.iter_mut() {
        if k == "PROXMOX_SSH_PORT" {
            *v = closed.to_string();
        }
    }
    let env = with_policy(
        env,
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let cases = [
        (
            "pve_cli_run",
            json!({"node": "pve01", "argv": ["bash"], "confirm": true}),
            "NODE_ACCESS_REFUSED",
        ),
        (
            "pve_node_file_read",
            json!({"node": "pve01", "path": "/etc/../etc/shadow", "confirm": true}),
            "NODE_ACCESS_REFUSED",
        ),
        (
            "pve_docker_logs_in_container",
            json!({"ctid": 200, "containerName": "x; id", "confirm": true}),
            "INVALID_CONTAINER_NAME",
        ),
    ];
    for (tool, args, expected) in cases {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(code(&result), expected, "{tool} {args}: {result:?}");
    }
    assert_eq!(person.questions(), Vec::<String>::new());
    assert!(emu.requests().iter().all(|r| r.method == "GET"));
    client.cancel().await.ok();
}
