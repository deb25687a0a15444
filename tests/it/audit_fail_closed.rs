//! The audit trail fails closed: a change reaches Proxmox only after its `sending` line was
//! written and synced. Checked against the emulator's request log (no request other than a
//! GET when the line could not be written) with the log on `/dev/full` (opens, every write
//! fails with ENOSPC), on a log that is swapped for `/dev/full` after a first change was
//! recorded, on a small tmpfs that is full (a line cut short by the full disk is removed
//! again, so the chain verifies once space is freed) and on one that fills up between
//! changes; and `tasks/cancel`, which is audited like `pve_stop_task`.
//!
//! The tmpfs tests mount a filesystem, so they need root: they are `#[ignore]`d with the
//! reason and fail (never pass silently) when run with `--ignored` where mounting is denied.

use crate::common;
use crate::mcp_tasks_client;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{McpProcess, binary, emulator, env_for, envelope, with_policy};
use mcp_tasks_client::{ClientSetup, call_once, connect, emulator_task_status, emulator_with_pace};
use nandi_proxmox_mcp::audit::{AuditLog, AuditTarget, call as audit_call};
use nandi_proxmox_mcp::registry::Registry;
use nandi_proxmox_mcp::server::{AppState, Server};
use pve_emulator::Emulator;
use rmcp::model::{CallToolResponse, CancelTaskParams, RequestMetaObject};
use serde_json::{Value, json};

const DEV_FULL: &str = "/dev/full";

fn server_env(emu: &Emulator, audit: &Path) -> Vec<(String, String)> {
    let mut env = with_policy(
        env_for(emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    env.push(("PVE_AUDIT_LOG".into(), audit.display().to_string()));
    env
}

async fn server(emu: &Emulator, audit: &Path) -> McpProcess {
    let mut mcp = McpProcess::spawn(&["run"], &server_env(emu, audit));
    mcp.initialize().await;
    mcp
}

/// Every request the emulator received that could change something (not a GET).
fn sent(emu: &Emulator) -> Vec<String> {
    emu.requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an audit line"))
        .collect()
}

fn decisions(path: &Path) -> Vec<String> {
    lines(path)
        .iter()
        .map(|l| l["decision"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// `audit verify FILE` through the binary: (exit code, output).
fn verify(path: &Path) -> (i32, String) {
    let out = Command::new(binary())
        .args(["audit", "verify"])
        .arg(path)
        .env_clear()
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn assert_intact(path: &Path) {
    let (code, text) = verify(path);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("hash chain intact"), "{text}");
}

/// Points the symlink `link` at `target`, replacing what it pointed at.
fn repoint(link: &Path, target: &Path) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).unwrap();
}

async fn stop_confirmed(mcp: &mut McpProcess) -> Value {
    envelope(
        &mcp.call(
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101, "confirm": true}),
        )
        .await,
    )
}

async fn start(mcp: &mut McpProcess) -> Value {
    envelope(
        &mcp.call(
            "pve_start_qemu_vm",
            json!({"node": "pve03", "vmid": 102, "confirm": true}),
        )
        .await,
    )
}

fn assert_audit_refusal(answer: &Value) {
    assert_eq!(answer["ok"], false, "{answer}");
    assert_eq!(answer["error"]["code"], "AUDIT_LOG_UNAVAILABLE", "{answer}");
    let hint = answer["error"]["hint"].as_str().unwrap_or_default();
    assert!(hint.contains("Nothing was sent"), "{answer}");
}

#[tokio::test]
async fn dev_full_refuses_every_change_and_nothing_is_sent() {
    let emu = emulator().await;
    let mut mcp = server(&emu, Path::new(DEV_FULL)).await;
    emu.clear_requests();

    // Approved by the confirm flag (stdio cannot ask a person), then refused: not recorded.
    let stop = stop_confirmed(&mut mcp).await;
    assert_audit_refusal(&stop);
    let message = stop["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("/dev/full") && message.contains("No space left"),
        "{message}"
    );
    // An ungated change as well, twice: no cached verdict lets a later one through.
    assert_audit_refusal(&start(&mut mcp).await);
    assert_audit_refusal(&start(&mut mcp).await);
    assert_eq!(sent(&emu), Vec::<String>::new(), "nothing reached Proxmox");

    let read = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(read["ok"], true, "reads still work: {read}");
    assert!(mcp.shutdown().await.success());
    emu.shutdown().await;
}

#[tokio::test]
async fn a_log_that_turns_into_dev_full_after_a_recorded_change_refuses_the_next() {
    let emu = emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("audit.jsonl");
    let link = dir.path().join("audit-link.jsonl");
    repoint(&link, &real);
    let mut mcp = server(&emu, &link).await;
    emu.clear_requests();

    let first = start(&mut mcp).await;
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(decisions(&real), ["sending", "executed"]);
    assert_eq!(sent(&emu).len(), 1);

    // The disk "fills": every later write fails, though the file still opens.
    repoint(&link, Path::new(DEV_FULL));
    assert_audit_refusal(&stop_confirmed(&mut mcp).await);
    assert_audit_refusal(&start(&mut mcp).await);
    assert_eq!(
        sent(&emu).len(),
        1,
        "no request after the log filled: {:?}",
        sent(&emu)
    );

    // Space again: the next change is recorded and sent, and the chain continues.
    repoint(&link, &real);
    let stop = stop_confirmed(&mut mcp).await;
    assert_eq!(stop["ok"], true, "{stop}");
    assert_eq!(
        decisions(&real),
        ["sending", "executed", "sending", "executed"]
    );
    assert_eq!(lines(&real)[2]["approval"], "confirm-flag");
    assert_eq!(sent(&emu).len(), 2);
    assert!(mcp.shutdown().await.success());
    assert_intact(&real);
    emu.shutdown().await;
}

/// A tmpfs mounted on a temporary folder for one test; unmounted when dropped.
struct Tmpfs {
    _dir: tempfile::TempDir,
    mnt: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `64k`), or panics with the reason it cannot (these
    /// tests are `#[ignore]`d by default, so a run that asked for them must not pass
    /// without them).
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(&mnt)
            .output();
        match out {
            Ok(out) if out.status.success() => Tmpfs { _dir: dir, mnt },
            Ok(out) => panic!(
                "cannot mount a tmpfs (needs root / CAP_SYS_ADMIN): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Err(e) => panic!("cannot run mount: {e}"),
        }
    }

    /// Writes a filler file until the filesystem is full; returns its path.
    fn fill(&self) -> PathBuf {
        let filler = self.mnt.join("filler");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&filler)
            .unwrap();
        let chunk = [0u8; 1024];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(28), "ENOSPC expected: {e}");
                    break;
                }
            }
        }
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
    }
}

/// Appends library lines to `log` until its last 4 KiB page has 20..=100 bytes free, so the
/// next line (a few hundred bytes) crosses into a page a full tmpfs cannot give: its write
/// is cut short after the free bytes.
fn leave_a_sliver(log: &AuditLog, path: &Path) {
    let append = |tool: &str| {
        let line = audit_call::entry(
            tool,
            None,
            json!({}),
            "executed",
            None,
            "ok",
            Some(200),
            None,
            Duration::ZERO,
        );
        log.append_blocking(&line).unwrap();
    };
    let len = || std::fs::metadata(path).map_or(0, |m| m.len());
    let before = len();
    append("x");
    let base = len() - before;
    for _ in 0..100 {
        let free = 4096 - len() % 4096;
        if (20..=100).contains(&free) {
            return;
        }
        let want = free.saturating_sub(60);
        if want >= base {
            append(&"x".repeat(usize::try_from(1 + want - base).unwrap()));
        } else {
            append("x");
        }
    }
    panic!("could not leave a sliver at the end of a page");
}

#[tokio::test]
#[ignore = "mounts a small tmpfs, needs root: cargo test --test it audit_fail_closed:: -- --ignored"]
async fn a_full_tmpfs_refuses_and_a_cut_line_does_not_break_the_chain() {
    let fs = Tmpfs::mount("64k");
    let path = fs.mnt.join("audit.jsonl");
    let log = AuditLog::new(AuditTarget::File(path.clone()));
    leave_a_sliver(&log, &path);
    let filler = fs.fill();
    let before = std::fs::read(&path).unwrap();

    let emu = emulator().await;
    let mut mcp = server(&emu, &path).await;
    emu.clear_requests();
    let stop = stop_confirmed(&mut mcp).await;
    assert_audit_refusal(&stop);
    assert!(
        stop["error"]["message"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{stop}"
    );
    assert_audit_refusal(&start(&mut mcp).await);
    assert_eq!(sent(&emu), Vec::<String>::new(), "nothing reached Proxmox");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the cut line was removed"
    );
    assert_intact(&path);
    let read = envelope(&mcp.call("pve_list_nodes", json!({})).await);
    assert_eq!(read["ok"], true, "reads still work: {read}");

    // Space is freed: the next change is recorded, sent, and the chain verifies.
    std::fs::remove_file(&filler).unwrap();
    let stop = stop_confirmed(&mut mcp).await;
    assert_eq!(stop["ok"], true, "{stop}");
    let all = decisions(&path);
    assert_eq!(all[all.len() - 2..], ["sending", "executed"]);
    assert_eq!(sent(&emu).len(), 1);
    assert!(mcp.shutdown().await.success());
    assert_intact(&path);
    emu.shutdown().await;
}

#[tokio::test]
#[ignore = "mounts a small tmpfs, needs root: cargo test --test it audit_fail_closed:: -- --ignored"]
async fn a_tmpfs_that_fills_between_changes_refuses_once_a_line_no_longer_fits() {
    let fs = Tmpfs::mount("64k");
    let path = fs.mnt.join("audit.jsonl");
    let emu = emulator().await;
    let mut mcp = server(&emu, &path).await;
    emu.clear_requests();
    let first = start(&mut mcp).await;
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(decisions(&path), ["sending", "executed"]);

    // The disk fills; the lines that still fit in the log's last page are written, then
    // changes are refused. Every request sent has its `sending` line on disk.
    let filler = fs.fill();
    let mut refused = false;
    for _ in 0..60 {
        let sent_before = sent(&emu).len();
        let answer = start(&mut mcp).await;
        if answer["error"]["code"] == "AUDIT_LOG_UNAVAILABLE" {
            assert_audit_refusal(&answer);
            assert_eq!(
                sent(&emu).len(),
                sent_before,
                "a refused change sent nothing"
            );
            refused = true;
            break;
        }
        assert_eq!(sent(&emu).len(), sent_before + 1, "{answer}");
    }
    assert!(refused, "the full tmpfs never refused a change");
    let sending = decisions(&path).iter().filter(|d| *d == "sending").count();
    assert_eq!(
        sent(&emu).len(),
        sending,
        "one sending line per request sent"
    );
    assert_intact(&path);

    std::fs::remove_file(&filler).unwrap();
    let stop = stop_confirmed(&mut mcp).await;
    assert_eq!(stop["ok"], true, "{stop}");
    assert!(mcp.shutdown().await.success());
    assert_intact(&path);
    emu.shutdown().await;
}

/// An in-process server with every tool exposed, auditing to `audit`.
/// The early check: a change that could not be recorded is refused before anyone is asked to
/// approve it. A client that answers questions (and would approve) is never asked one, and
/// nothing is sent; a read still answers on the same unwritable log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_is_asked_to_approve_a_change_that_could_not_be_recorded() {
    let emu = emulator().await;
    // Under a regular file: the log cannot even be opened (ENOTDIR, for root too). (`/dev/full`
    // opens, so only the write just before sending can find it full.)
    let dir = tempfile::tempdir().unwrap();
    let not_a_folder = dir.path().join("a-file");
    std::fs::write(&not_a_folder, b"").unwrap();
    let log = not_a_folder.join("audit.jsonl");
    let setup = ClientSetup {
        tasks: false,
        approve: Some(true),
    };
    let (client, handler) = connect(tasks_server(&emu, &log), setup).await;
    emu.clear_requests();
    let (is_error, refused) = mcp_tasks_client::envelope(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert!(is_error, "{refused}");
    assert_eq!(
        refused["error"]["code"], "AUDIT_LOG_UNAVAILABLE",
        "{refused}"
    );
    assert_eq!(
        handler.questions.lock().unwrap().len(),
        0,
        "nobody is asked to approve what could not be recorded"
    );
    assert!(
        emu.requests().is_empty(),
        "nothing read or sent: {:?}",
        emu.requests()
    );

    let (is_error, read) = mcp_tasks_client::envelope(&client, "pve_list_nodes", json!({})).await;
    assert!(
        !is_error,
        "reads are not recorded, so they still answer: {read}"
    );
    assert_eq!(sent(&emu), Vec::<String>::new());
    client.cancel().await.unwrap();
    emu.shutdown().await;
}

fn tasks_server(emu: &Emulator, audit: &Path) -> Server {
    let settings = mcp_tasks_client::settings(&[]);
    mcp_tasks_client::isolate_schema_cache();
    Server::new(AppState {
        registry: Registry::build(&settings),
        settings,
        pve: Some(mcp_tasks_client::pve_client(emu)),
        connection_note: "test".into(),
        ssh: None,
        ssh_note: String::new(),
        audit: AuditLog::new(AuditTarget::File(audit.to_path_buf())),
        pbs: Vec::new(),
    })
}

fn confirmed_cancel(task_id: &str) -> CancelTaskParams {
    let mut meta = RequestMetaObject::default();
    meta.0.0.insert("confirm".into(), json!(true));
    let mut params = CancelTaskParams::new(task_id);
    params.meta = Some(meta);
    params
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_cancel_is_audited_and_refused_when_the_log_cannot_be_written() {
    let emu = emulator_with_pace(Duration::from_secs(5)).await;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("audit.jsonl");
    let link = dir.path().join("audit-link.jsonl");
    repoint(&link, &real);
    let setup = ClientSetup {
        tasks: true,
        approve: None,
    };
    let (client, _) = connect(tasks_server(&emu, &link), setup).await;
    let args = json!({"node": "pve01", "vmid": 101, "newid": 810, "full": true, "confirm": true});
    let (task_id, upid) = match call_once(&client, "pve_qemu_clone", args).await {
        CallToolResponse::Task(created) => (
            created.task.task_id,
            created.meta.expect("meta").0["upid"]
                .as_str()
                .expect("upid")
                .to_owned(),
        ),
        other => panic!("expected a task, got {other:?}"),
    };
    assert_eq!(decisions(&real), ["sending", "executed"], "the clone");

    // Not confirmed: refused, and the refusal is recorded.
    let err = client
        .peer()
        .cancel_task(CancelTaskParams::new(&task_id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("confirm"), "{err}");
    let refused = lines(&real).pop().unwrap();
    assert_eq!(refused["tool"], "tasks/cancel");
    assert_eq!(refused["canonical"], "pve_stop_task");
    assert_eq!(refused["decision"], "refused");
    assert_eq!(refused["arguments"]["upid"], upid.as_str());
    assert_eq!(refused["arguments"]["node"], "pve01");
    assert!(
        refused["outcome"]
            .as_str()
            .unwrap()
            .starts_with("CONFIRMATION_")
    );

    // Confirmed, but the log cannot be written: refused, nothing sent, the task runs on.
    repoint(&link, Path::new(DEV_FULL));
    emu.clear_requests();
    let err = client
        .peer()
        .cancel_task(confirmed_cancel(&task_id))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(data) = &err else {
        panic!("{err}");
    };
    let details = data.data.clone().unwrap_or_default();
    assert_eq!(details["code"], "AUDIT_LOG_UNAVAILABLE", "{err}");
    assert!(
        details["hint"]
            .as_str()
            .unwrap()
            .contains("Nothing was sent")
    );
    assert_eq!(sent(&emu), Vec::<String>::new());
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "running");
    assert_eq!(lines(&real).len(), 3, "nothing more could be recorded");

    // Confirmed with a writable log: a `sending` line, the DELETE, then the outcome.
    repoint(&link, &real);
    client
        .peer()
        .cancel_task(confirmed_cancel(&task_id))
        .await
        .expect("confirmed cancel");
    assert_eq!(emulator_task_status(&emu, &upid).await["status"], "stopped");
    let deletes = sent(&emu);
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert!(
        deletes[0].starts_with("DELETE /nodes/pve01/tasks/"),
        "{deletes:?}"
    );
    let all = lines(&real);
    assert_eq!(all.len(), 5);
    let (sending, done) = (&all[3], &all[4]);
    assert_eq!(sending["tool"], "tasks/cancel");
    assert_eq!(sending["decision"], "sending");
    assert_eq!(sending["approval"], "confirm-flag");
    assert_eq!(sending["arguments"]["upid"], upid.as_str());
    assert_eq!(done["decision"], "executed");
    assert_eq!(done["outcome"], "ok");
    assert_eq!(done["upid"], upid.as_str());
    client.cancel().await.unwrap();
    assert_intact(&real);
}
