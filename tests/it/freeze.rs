//! The kill switch, end to end: `nandi-proxmox-mcp freeze` (the built binary) stops every
//! change of every server process watching the freeze file at its next call — through the
//! built binary over stdio with rmcp's client side and a person who approves everything,
//! against the emulator over HTTPS, whose request log shows nothing that changes reached
//! "Proxmox" and that nobody was asked. Reads go on; `unfreeze` lifts it; both are audit
//! lines and the chain verifies. A freeze that lands while the person is being asked stops
//! the approved call at the door; `tasks/cancel` (a stop) is refused too. A freeze holds
//! when its audit line cannot be written (and says so); an unfreeze whose line cannot be
//! written (`/dev/full` included) is refused and leaves the file.

use crate::approval_common;
use crate::common;
use crate::mcp_tasks_client;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use approval_common::{Answer, Person, call, changes, code, connect_stdio, envelope};
use common::{CliDirs, emulator, env_for, text_of, with_policy};
use rmcp::model::{
    CancelTaskParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{RequestContext, ServiceExt};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Value, json};

/// A state folder holding the freeze file and the audit log, shared by the servers and the CLI.
struct Shared {
    dir: tempfile::TempDir,
    cli: CliDirs,
}

impl Shared {
    fn new() -> Shared {
        Shared {
            dir: tempfile::tempdir().expect("tempdir"),
            cli: CliDirs::new(),
        }
    }

    fn freeze_file(&self) -> PathBuf {
        self.dir.path().join("volume").join("frozen")
    }

    fn audit_log(&self) -> PathBuf {
        self.dir.path().join("audit.jsonl")
    }

    /// The variables every server and command here shares.
    fn vars(&self) -> Vec<(String, String)> {
        vec![
            (
                "PVE_FREEZE_FILE".into(),
                self.freeze_file().display().to_string(),
            ),
            (
                "PVE_AUDIT_LOG".into(),
                self.audit_log().display().to_string(),
            ),
        ]
    }

    /// Runs `nandi-proxmox-mcp <args>` with the shared variables; asserts it succeeded.
    async fn cli(&self, args: &[&str]) -> String {
        let vars = self.vars();
        let env: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let out = self.cli.run(args, &env, None).await;
        assert!(out.status.success(), "{args:?}: {}", text_of(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A server environment for `emu` at tier `full`, advanced, watching the shared file.
    fn server_env(&self, emu: &pve_emulator::Emulator) -> Vec<(String, String)> {
        let mut env = with_policy(
            env_for(emu),
            &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
        );
        env.extend(self.vars());
        env
    }

    fn audit_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.audit_log())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
            .collect()
    }
}

fn stop_101() -> Value {
    json!({"node": "pve01", "vmid": 101})
}

fn stops(emu: &pve_emulator::Emulator) -> usize {
    changes(emu)
        .iter()
        .filter(|r| r.path == "/nodes/pve01/qemu/101/status/stop")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freeze_refuses_changes_unasked_reads_go_on_and_unfreeze_lifts_it() {
    let emu = emulator().await;
    let shared = Shared::new();
    let person = Person::new(Answer::Accept);
    let (client, _home) = connect_stdio(person.clone(), &shared.server_env(&emu)).await;

    let status = shared.cli(&["freeze", "--status"]).await;
    assert!(status.starts_with("not frozen"), "{status}");
    let out = shared
        .cli(&[
            "freeze",
            "--reason",
            "incident 42: agent misbehaving\nIGNORE THIS",
        ])
        .await;
    assert!(
        out.starts_with("FROZEN: changes are frozen since "),
        "{out}"
    );
    let status = shared.cli(&["freeze", "--status"]).await;
    assert!(
        status.starts_with("FROZEN: changes are frozen since ")
            && status.contains(": incident 42: agent misbehaving\\nIGNORE THIS.")
            && status.contains(&shared.freeze_file().display().to_string()),
        "{status}"
    );
    // A second freeze leaves the first note alone.
    let again = shared.cli(&["freeze", "--reason", "other"]).await;
    assert!(
        again.starts_with("Already frozen") && again.contains("incident 42"),
        "{again}"
    );

    // The change is refused at once: nobody asked, nothing sent.
    let result = call(&client, "pve_stop_qemu_vm", stop_101()).await;
    assert_eq!(code(&result), "FROZEN", "{result:?}");
    let error = &envelope(&result)["error"];
    let hint = error["hint"].as_str().expect("hint");
    assert!(
        hint.starts_with("changes are frozen since ")
            && hint.contains(": incident 42: agent misbehaving\\nIGNORE THIS")
            && hint.contains("`nandi-proxmox-mcp unfreeze`"),
        "{hint}"
    );
    assert!(!hint.contains('\n'), "the note cannot start a line: {hint}");
    assert!(
        !error
            .to_string()
            .contains(&shared.freeze_file().display().to_string()),
        "the freeze file's path is not told to the client: {error}"
    );
    assert_eq!(envelope(&result)["meta"]["attempts"], 0);
    // A dry run is not reported as sendable either, and the generic write is refused too.
    let dry = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "dry_run": true}),
    )
    .await;
    assert_eq!(code(&dry), "FROZEN", "{dry:?}");
    let write = call(
        &client,
        "pve_api_write",
        json!({"method": "POST", "path": "/nodes/pve01/qemu/101/status/start", "confirm": true}),
    )
    .await;
    assert_eq!(code(&write), "FROZEN", "{write:?}");
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));

    // Reads go on.
    let nodes = call(&client, "pve_list_nodes", json!({})).await;
    assert_ne!(nodes.is_error, Some(true), "{nodes:?}");

    let out = shared.cli(&["unfreeze"]).await;
    assert!(out.starts_with("Unfrozen"), "{out}");
    let result = call(&client, "pve_stop_qemu_vm", stop_101()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        person.questions().len(),
        1,
        "asked once, after the unfreeze"
    );
    assert_eq!(stops(&emu), 1, "{:?}", changes(&emu));
    let out = shared.cli(&["unfreeze"]).await;
    assert!(out.starts_with("Not frozen"), "{out}");
    client.cancel().await.ok();

    // The trail: freeze, the three refusals, unfreeze, then the stop (sending, executed).
    let lines = shared.audit_lines();
    let summary: Vec<(String, String, String)> = lines
        .iter()
        .map(|l| {
            let s = |k: &str| l[k].as_str().unwrap_or("").to_owned();
            (s("tool"), s("decision"), s("outcome"))
        })
        .collect();
    let expect = |t: &str, d: &str, o: &str| (t.to_owned(), d.to_owned(), o.to_owned());
    assert_eq!(
        summary,
        vec![
            expect("freeze", "executed", "ok"),
            expect("pve_stop_qemu_vm", "refused", "FROZEN"),
            expect("pve_stop_qemu_vm", "refused", "FROZEN"),
            expect("pve_api_write", "refused", "FROZEN"),
            expect("unfreeze", "sending", "pending"),
            expect("unfreeze", "executed", "ok"),
            expect("pve_stop_qemu_vm", "sending", "pending"),
            expect("pve_stop_qemu_vm", "executed", "ok"),
        ],
        "{lines:#?}"
    );
    assert_eq!(
        lines[0]["arguments"]["reason"],
        "incident 42: agent misbehaving\nIGNORE THIS"
    );
    for line in &lines[4..6] {
        assert!(line["arguments"]["liftedBy"].is_string(), "{line}");
    }
    let verify = shared
        .cli(&["audit", "verify", &shared.audit_log().display().to_string()])
        .await;
    assert!(verify.starts_with("OK:"), "{verify}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_the_file_freeze_together_at_their_next_call() {
    let emu = emulator().await;
    let shared = Shared::new();
    let env = shared.server_env(&emu);
    let (a_person, b_person) = (Person::new(Answer::Accept), Person::new(Answer::Accept));
    let (a, _home_a) = connect_stdio(a_person.clone(), &env).await;
    let (b, _home_b) = connect_stdio(b_person.clone(), &env).await;
    // Both are live (and neither has the file cached from start-up).
    for client in [&a, &b] {
        let nodes = call(client, "pve_list_nodes", json!({})).await;
        assert_ne!(nodes.is_error, Some(true), "{nodes:?}");
    }
    shared.cli(&["freeze", "--reason", "rollout paused"]).await;
    for client in [&a, &b] {
        let result = call(client, "pve_stop_qemu_vm", stop_101()).await;
        assert_eq!(code(&result), "FROZEN", "{result:?}");
        assert!(
            envelope(&result)["error"]["hint"]
                .as_str()
                .is_some_and(|h| h.contains("rollout paused")),
            "{result:?}"
        );
    }
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    assert!(a_person.questions().is_empty() && b_person.questions().is_empty());
    shared.cli(&["unfreeze"]).await;
    let result = call(&b, "pve_stop_qemu_vm", stop_101()).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(stops(&emu), 1);
    a.cancel().await.ok();
    b.cancel().await.ok();
}

/// A person who approves — but the operator pulls the switch while the question is open.
#[derive(Clone)]
struct FreezesWhileAsked {
    file: PathBuf,
    asked: Arc<Mutex<u32>>,
}

impl ClientHandler for FreezesWhileAsked {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("freeze-test", "1.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_06_18)
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        *self.asked.lock().expect("lock") += 1;
        freeze_by_hand(&self.file, "pulled during the question");
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})))
    }
}

/// What an operator without the binary may do: write the note into the file.
fn freeze_by_hand(file: &Path, reason: &str) {
    std::fs::create_dir_all(file.parent().expect("folder")).expect("folder");
    std::fs::write(file, reason).expect("freeze file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freeze_during_the_question_stops_the_approved_call_at_the_door() {
    let emu = emulator().await;
    let shared = Shared::new();
    let home = tempfile::tempdir().expect("home");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"));
    command
        .arg("run")
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(home.path())
        .stderr(std::process::Stdio::null());
    for (k, v) in shared.server_env(&emu) {
        command.env(k, v);
    }
    let person = FreezesWhileAsked {
        file: shared.freeze_file(),
        asked: Arc::default(),
    };
    let client = person
        .clone()
        .serve(TokioChildProcess::new(command).expect("spawn"))
        .await
        .expect("client connects");
    let result = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("pve_stop_qemu_vm")
                .with_arguments(stop_101().as_object().cloned().expect("object")),
        )
        .await
        .expect("answered");
    assert_eq!(*person.asked.lock().expect("lock"), 1);
    assert_eq!(code(&result), "FROZEN", "{result:?}");
    let error = &envelope(&result)["error"];
    assert!(
        error["hint"]
            .as_str()
            .is_some_and(|h| h.contains("pulled during the question")),
        "{error}"
    );
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    client.cancel().await.ok();
    // Its `sending` line was written before the door refused it; the outcome says why.
    let lines = shared.audit_lines();
    let last = lines.last().expect("lines");
    assert_eq!(
        (last["decision"].as_str(), last["outcome"].as_str()),
        (Some("refused"), Some("FROZEN")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_is_a_change_and_is_refused_while_frozen() {
    use mcp_tasks_client::{ClientSetup, call_once, connect, emulator_task_status, server};
    let emu = mcp_tasks_client::emulator_with_pace(Duration::from_secs(5)).await;
    let shared = Shared::new();
    let file = shared.freeze_file().display().to_string();
    let vars = [("PVE_FREEZE_FILE", file.as_str())];
    let tasks = ClientSetup {
        tasks: true,
        approve: None,
    };
    let (starter, _) = connect(server(&emu, &vars), tasks).await;
    let args = json!({"node": "pve01", "vmid": 101, "newid": 880, "full": true, "confirm": true});
    let (task_id, upid) = match call_once(&starter, "pve_qemu_clone", args).await {
        rmcp::model::CallToolResponse::Task(created) => (
            created.task.task_id,
            created.meta.expect("meta").0["upid"]
                .as_str()
                .expect("upid")
                .to_owned(),
        ),
        other => panic!("expected a task, got {other:?}"),
    };
    freeze_by_hand(&shared.freeze_file(), "hands off");
    let approving = ClientSetup {
        tasks: true,
        approve: Some(true),
    };
    let (client, handler) = connect(server(&emu, &vars), approving).await;
    let err = client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .expect_err("refused while frozen");
    let text = err.to_string();
    assert!(
        text.contains("frozen") && text.contains("hands off"),
        "{text}"
    );
    assert!(
        handler.questions.lock().expect("lock").is_empty(),
        "nobody asked"
    );
    assert!(
        !emu.requests().iter().any(|r| r.method == "DELETE"),
        "nothing stopped"
    );
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");
    starter.cancel().await.ok();
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_never_waits_on_the_audit_log_and_unfreeze_needs_it() {
    let dirs = CliDirs::new();
    let state = tempfile::tempdir().expect("tempdir");
    let file = state.path().join("frozen");
    let blocker = state.path().join("plain-file");
    std::fs::write(&blocker, "x").expect("write");
    // An audit log below a regular file cannot be opened.
    let broken_log = blocker.join("audit.jsonl");
    let env = [
        ("PVE_FREEZE_FILE", file.to_str().expect("utf-8")),
        ("PVE_AUDIT_LOG", broken_log.to_str().expect("utf-8")),
    ];
    let out = dirs
        .run(&["freeze", "--reason", "disk trouble"], &env, None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(file.exists(), "frozen despite the audit log");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning: changes are frozen, but"),
        "{}",
        text_of(&out)
    );
    let out = dirs.run(&["unfreeze"], &env, None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("changes stay frozen"),
        "{}",
        text_of(&out)
    );
    assert!(
        file.exists(),
        "still frozen: the unfreeze could not be recorded"
    );
    let status = dirs.run(&["freeze", "--status"], &env, None).await;
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("FROZEN: changes are frozen since "),
        "{}",
        text_of(&status)
    );
}

/// `/dev/full` opens for appending and fails every write with ENOSPC: the early
/// `ensure_writable` check passes, only the real write shows the problem.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_full_audit_log_freeze_holds_with_a_warning_and_unfreeze_is_refused() {
    let dirs = CliDirs::new();
    let state = tempfile::tempdir().expect("tempdir");
    let file = state.path().join("frozen");
    let full = [
        ("PVE_FREEZE_FILE", file.to_str().expect("utf-8")),
        ("PVE_AUDIT_LOG", "/dev/full"),
    ];
    let out = dirs
        .run(&["freeze", "--reason", "disk full"], &full, None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(file.exists(), "frozen although the audit log is full");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: changes are frozen, but no audit line was written")
            && stderr.contains("the freeze holds"),
        "{}",
        text_of(&out)
    );

    let out = dirs.run(&["unfreeze"], &full, None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("changes stay frozen")
            && stderr.contains("no audit line was written")
            && stderr.contains("/dev/full")
            && stderr.contains("left in place"),
        "{}",
        text_of(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("Unfrozen"),
        "{}",
        text_of(&out)
    );
    assert!(file.exists(), "the freeze file stays: nothing recorded it");

    // With a log that takes lines the same file is lifted, its line written first.
    let log = state.path().join("audit.jsonl");
    let good = [
        ("PVE_FREEZE_FILE", file.to_str().expect("utf-8")),
        ("PVE_AUDIT_LOG", log.to_str().expect("utf-8")),
    ];
    let out = dirs.run(&["unfreeze"], &good, None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(!file.exists(), "lifted");
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let summary: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["decision"].as_str().unwrap_or(""),
                l["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![("sending", "pending"), ("executed", "ok")],
        "{lines:#?}"
    );
    assert_eq!(lines[0]["tool"], "unfreeze");
    assert_eq!(lines[0]["arguments"]["reason"], "disk full");
}
