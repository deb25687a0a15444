//! Operator policy as data (issue 37, point 5) through the built binary, rmcp's client side and
//! the request-logging emulator: a `deny` refuses and sends nothing, an `allow` lets a change
//! run without a person (and never one with an effect it does not list), an `ask` makes a
//! routine start ask, the dry run and `policy explain` name the deciding rule, a policy file
//! outside the user's folder is ignored until trusted, and a policy that does not parse stops
//! start-up.
//!
//! Seed facts used: 101 (pve01, running, tags prod;web, pool emu-pool), 201 (lxc pve01,
//! running, pool emu-pool), 203 (lxc pve03, stopped, no tags).

use crate::approval_common;
use crate::common;

use std::path::{Path, PathBuf};

use approval_common::{Answer, Person, call, code, connect_stdio, envelope};
use common::{emulator, env_for, with_policy};
use pve_emulator::Emulator;
use serde_json::{Value, json};

/// Non-GET requests the emulator received, as `METHOD path`.
fn changes(emu: &Emulator) -> Vec<String> {
    emu.requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// A home folder with the policy in the user's own folder (used without trust).
fn home_with_policy(rules: Value) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().expect("temp home");
    let dir = home.path().join(".nandi-proxmox-mcp/policy");
    std::fs::create_dir_all(&dir).expect("policy folder");
    for d in [home.path().join(".nandi-proxmox-mcp"), dir.clone()] {
        set_mode(&d, 0o700);
    }
    let file = dir.join("rules.json");
    std::fs::write(&file, json!({ "rules": rules }).to_string()).expect("policy written");
    set_mode(&file, 0o600);
    (home, file)
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn text(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The server's environment: full tier, the emulator, this HOME and policy file, and more.
fn env(
    emu: &Emulator,
    home: &Path,
    policy: &Path,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut vars = vec![
        ("PVE_ACCESS_TIER", "full"),
        ("PVE_MODULE_MODE", "advanced"),
        ("HOME", text(home)),
        ("PVE_POLICY_FILE", text(policy)),
    ];
    vars.extend_from_slice(extra);
    with_policy(env_for(emu), &vars)
}

/// Runs the built binary with `args` under `env` (clean environment, cwd `cwd`).
fn binary(args: &[&str], env: &[(String, String)], cwd: &Path) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_nandi-proxmox-mcp"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(cwd)
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().expect("binary runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_refuses_names_its_rule_is_audited_and_sends_nothing() {
    let emu = emulator().await;
    let (home, policy) = home_with_policy(json!([
        { "name": "lab-anything", "action": "allow", "pool": "emu-pool" },
        { "name": "no-prod-destroys", "action": "deny", "effect": "destroy", "tag": "prod" },
    ]));
    let audit = home.path().join("audit.jsonl");
    let env = env(
        &emu,
        home.path(),
        &policy,
        &[("PVE_AUDIT_LOG", text(&audit))],
    );
    let person = Person::new(Answer::Accept);
    let (client, _cwd) = connect_stdio(person.clone(), &env).await;
    // A stop destroys (the guest's running state); 101 is tagged prod: the deny beats the
    // allow of its pool, before any question and before anything but the facts' reads.
    let result = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(code(&result), "POLICY_DENIED", "{result:?}");
    let error = &envelope(&result)["error"];
    assert_eq!(error["details"]["rule"], "no-prod-destroys", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("no-prod-destroys"),
        "{error}"
    );
    // A dry run is refused just the same: a deny is not a preview.
    let dry = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "dry_run": true}),
    )
    .await;
    assert_eq!(code(&dry), "POLICY_DENIED", "{dry:?}");
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    assert_eq!(changes(&emu), Vec::<String>::new());
    let trail = std::fs::read_to_string(&audit).expect("audit log");
    assert!(trail.contains("POLICY_DENIED"), "{trail}");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allow_lets_a_change_run_without_a_person_but_never_an_unlisted_effect() {
    let emu = emulator().await;
    let (home, policy) = home_with_policy(json!([
        // 101 is tagged prod (protected by default): the operator lets routine changes in
        // the lab pool run all the same.
        { "name": "lab-routine", "action": "allow", "class": "routine", "pool": "emu-pool" },
        // An allow for changes only: a stop also destroys, so it still asks.
        { "name": "changes-201", "action": "allow", "effect": ["change"], "vmid": "200-209" },
        // A consequential change allowed outright, every effect of it listed.
        { "name": "stop-101", "action": "allow", "effect": ["change", "destroy"], "tool": "pve_stop_qemu_vm", "vmid": 101 },
    ]));
    let audit = home.path().join("audit.jsonl");
    let env = env(
        &emu,
        home.path(),
        &policy,
        &[("PVE_AUDIT_LOG", text(&audit))],
    );
    let person = Person::new(Answer::Decline);
    let (client, _cwd) = connect_stdio(person.clone(), &env).await;
    let snapshot = json!({"node": "pve01", "vmid": 101, "snapname": "by-policy"});
    let result = call(&client, "pve_qemu_create_snapshot", snapshot).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(person.questions().is_empty(), "{:?}", person.questions());
    // The all-effects rule: an allow for `change` does not let a stop (change + destroy) by.
    let stop = call(
        &client,
        "pve_stop_lxc_container",
        json!({"node": "pve01", "vmid": 201}),
    )
    .await;
    assert_eq!(code(&stop), "CONFIRMATION_DECLINED", "{stop:?}");
    assert_eq!(person.questions().len(), 1, "{:?}", person.questions());
    assert!(
        !changes(&emu).iter().any(|c| c.contains("/lxc/201/")),
        "{:?}",
        changes(&emu)
    );
    // Listed in full, a consequential stop runs without a person.
    let stop = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_ne!(stop.is_error, Some(true), "{stop:?}");
    assert_eq!(person.questions().len(), 1, "{:?}", person.questions());
    let sent = changes(&emu);
    assert!(
        sent.iter().any(|c| c.contains("/qemu/101/snapshot")),
        "{sent:?}"
    );
    assert!(
        sent.iter().any(|c| c.contains("/qemu/101/status/stop")),
        "{sent:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let trail = std::fs::read_to_string(&audit).expect("audit log");
    assert!(
        trail.contains("\"approval\":\"policy:lab-routine\""),
        "{trail}"
    );
    assert!(
        trail.contains("\"approval\":\"policy:stop-101\""),
        "{trail}"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_makes_a_routine_start_ask_and_the_dry_run_names_the_rule() {
    let emu = emulator().await;
    let (home, policy) = home_with_policy(json!([
        { "name": "ask-pve03", "action": "ask", "node": "pve03" },
    ]));
    let person = Person::new(Answer::Decline);
    let (client, _cwd) = connect_stdio(person.clone(), &env(&emu, home.path(), &policy, &[])).await;
    let start = json!({"node": "pve03", "vmid": 203});
    let mut dry = start.clone();
    dry["dry_run"] = json!(true);
    let preview = envelope(&call(&client, "pve_start_lxc_container", dry).await);
    assert_eq!(
        preview["data"]["policy"]["decidedBy"], "ask-pve03",
        "{preview}"
    );
    assert_eq!(preview["data"]["policy"]["action"], "ask", "{preview}");
    let result = call(&client, "pve_start_lxc_container", start).await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED", "{result:?}");
    assert_eq!(person.questions().len(), 1, "{:?}", person.questions());
    assert_eq!(changes(&emu), Vec::<String>::new());
    // Another node's start is routine and unasked, as the built-in default says; its dry run
    // says so too.
    let mut dry = json!({"node": "pve01", "vmid": 201});
    dry["dry_run"] = json!(true);
    let preview = envelope(&call(&client, "pve_start_lxc_container", dry).await);
    assert_eq!(
        preview["data"]["policy"]["decidedBy"], "built-in default",
        "{preview}"
    );
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_prints_the_effects_the_class_the_matches_and_the_deciding_rule() {
    let emu = emulator().await;
    let (home, policy) = home_with_policy(json!([
        { "name": "lab-starts", "action": "allow", "tool": "pve_start_*", "pool": "emu-pool" },
        { "name": "ask-pve01", "action": "ask", "node": "pve01" },
        { "name": "no-prod-destroys", "action": "deny", "effect": "destroy", "tag": "prod" },
    ]));
    let env = env(&emu, home.path(), &policy, &[]);
    let run = |args: &[&str]| binary(args, &env, home.path());
    let out = run(&[
        "policy",
        "explain",
        "pve_start_qemu_vm",
        "node=pve01",
        "vmid=101",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "effects:    change",
        "class:      routine",
        "lab-starts: allow tool=pve_start_* pool=emu-pool",
        "ask-pve01: ask node=pve01",
        "decided by: ask-pve01",
        "result:     a person is asked",
        "read:       GET /cluster/resources",
    ] {
        assert!(stdout.contains(line), "{line:?} missing:\n{stdout}");
    }
    let out = run(&[
        "policy",
        "explain",
        "pve_stop_qemu_vm",
        "node=pve01",
        "vmid=101",
        "--json",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        report["decidedBy"], "no-prod-destroys: deny effect=destroy tag=prod",
        "{report}"
    );
    assert_eq!(report["action"], "deny");
    assert_eq!(report["class"], "consequential");
    assert_eq!(
        report["matched"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    // Offline, the guest's facts are unknown: the pool allow no longer holds, the tightening
    // rules still do.
    let out = run(&[
        "policy",
        "explain",
        "pve_start_qemu_vm",
        "node=pve02",
        "vmid=101",
        "--offline",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("decided by: built-in default"), "{stdout}");
    assert!(!stdout.contains("lab-starts"), "{stdout}");
    assert!(stdout.contains("guest:      facts unknown"), "{stdout}");
    // No sent change, ever.
    assert_eq!(changes(&emu), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_policy_file_is_ignored_until_trusted() {
    let emu = emulator().await;
    let home = tempfile::tempdir().expect("home");
    let project = tempfile::tempdir().expect("project");
    let policy = project.path().join("policy.json");
    let rules = json!({ "rules": [{ "name": "no-starts", "action": "deny", "tool": "pve_start_lxc_container" }] });
    std::fs::write(&policy, rules.to_string()).expect("written");
    let env = env(&emu, home.path(), &policy, &[]);
    let explain = [
        "policy",
        "explain",
        "pve_start_lxc_container",
        "node=pve03",
        "vmid=203",
    ];
    let out = binary(&explain, &env, project.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("decided by: built-in default"), "{stdout}");
    assert!(stdout.contains("is not trusted"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "nandi-proxmox-mcp trust {}",
            policy.canonicalize().expect("path").display()
        )),
        "{stdout}"
    );
    // The server ignores it too: the start runs (routine, unprotected).
    let person = Person::new(Answer::Decline);
    let (client, _cwd) = connect_stdio(person.clone(), &env).await;
    let start = call(
        &client,
        "pve_start_lxc_container",
        json!({"node": "pve03", "vmid": 203}),
    )
    .await;
    assert_ne!(start.is_error, Some(true), "{start:?}");
    client.cancel().await.ok();
    // Trusted, it decides.
    let out = binary(&["trust", text(&policy)], &env, project.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = binary(&explain, &env, project.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("decided by: no-starts"), "{stdout}");
    let (client, _cwd) = connect_stdio(person.clone(), &env).await;
    let start = call(
        &client,
        "pve_start_lxc_container",
        json!({"node": "pve03", "vmid": 203}),
    )
    .await;
    assert_eq!(code(&start), "POLICY_DENIED", "{start:?}");
    client.cancel().await.ok();
    // Changed after `trust`, it is ignored again.
    std::fs::write(&policy, json!({ "rules": [] }).to_string()).expect("rewritten");
    let out = binary(&explain, &env, project.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("changed since it was trusted"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_does_not_parse_stops_start_up() {
    let emu = emulator().await;
    for (rules, needle) in [
        (
            json!([{ "action": "allow", "effect": "write" }]),
            "is not an effect",
        ),
        (
            json!([{ "action": "permit" }]),
            "is not one of: allow, ask, deny",
        ),
        (
            json!([{ "action": "deny", "pool": "lab", "tags": "x" }]),
            "unknown key",
        ),
    ] {
        let (home, policy) = home_with_policy(rules);
        let out = binary(&["run"], &env(&emu, home.path(), &policy, &[]), home.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
        assert!(stderr.contains("rules[0]"), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing on stdout");
    }
    // An instance file's `policy` is checked the same way.
    let home = tempfile::tempdir().expect("home");
    let instance = home.path().join("lab.json");
    let opts = pve_emulator::EmulatorOptions::default();
    let file = json!({
        "proxmoxHost": emu.host(), "proxmoxPort": emu.port(), "proxmoxUser": opts.user,
        "proxmoxRealm": opts.realm, "tokenName": opts.token_name, "tokenSecret": opts.token_secret,
        "allowInsecureTls": true,
        "policy": { "rules": [{ "action": "ask", "class": "sometimes" }] },
    });
    std::fs::write(&instance, file.to_string()).expect("instance");
    set_mode(&instance, 0o600);
    let env = vec![
        ("HOME".to_owned(), text(home.path()).to_owned()),
        (
            "NANDI_PROXMOX_CONFIG".to_owned(),
            text(&instance).to_owned(),
        ),
    ];
    let out = binary(&["run"], &env, home.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("routine, consequential"), "{stderr}");
    // …and a valid one decides: `explain` reads it.
    let file = json!({
        "proxmoxHost": emu.host(), "proxmoxPort": emu.port(), "proxmoxUser": opts.user,
        "proxmoxRealm": opts.realm, "tokenName": opts.token_name, "tokenSecret": opts.token_secret,
        "allowInsecureTls": true,
        "policy": { "rules": [{ "name": "file-deny", "action": "deny", "vmid": "100-199" }] },
    });
    std::fs::write(&instance, file.to_string()).expect("instance");
    let out = binary(
        &[
            "policy",
            "explain",
            "pve_start_qemu_vm",
            "node=pve01",
            "vmid=150",
            "--offline",
        ],
        &env,
        home.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("decided by: file-deny"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_flags_an_allow_that_lets_exec_egress_or_access_run_unasked() {
    let emu = emulator().await;
    let (home, policy) = home_with_policy(json!([
        { "name": "lab-all", "action": "allow", "pool": "lab" },
        { "name": "lab-routine", "action": "allow", "class": "routine", "pool": "lab" },
        { "name": "shell-ok", "action": "allow", "effect": ["change", "exec"], "node": "pve02" },
    ]));
    let env = env(&emu, home.path(), &policy, &[]);
    let out = binary(&["doctor", "--check", "nodes"], &env, home.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "lab-all (allow pool=lab) lets exec, egress, access, unplaced run without a person"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "shell-ok (allow effect=change,exec node=pve02) lets exec run without a person"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("lab-routine ("),
        "a routine-only allow is no risk: {stdout}"
    );
    // A broken policy file is never trusted.
    let project = tempfile::tempdir().expect("project");
    let broken = project.path().join("policy.json");
    std::fs::write(
        &broken,
        r#"{"rules": [{"action": "allow", "effect": "write"}]}"#,
    )
    .expect("written");
    let out = binary(&["trust", text(&broken)], &env, project.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an effect"));
}
