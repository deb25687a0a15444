//! `bootstrap`, `harden`, `list`, `completions` and every command's `--help`.

use crate::common;

use common::{CliDirs, text_of};
use nandi_proxmox_mcp::catalog::Tier;
use nandi_proxmox_mcp::cli::bootstrap::{privileges_for, role_name};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::Value;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_prints_a_least_privilege_role_per_tier() {
    let d = CliDirs::new();
    for tier in Tier::ALL {
        let out = d
            .run(&["bootstrap", "--tier", tier.as_str()], &[], None)
            .await;
        assert!(out.status.success(), "{}", text_of(&out));
        let text = stdout(&out);
        let privs: Vec<&str> = privileges_for(tier).into_iter().collect();
        let role = role_name(tier);
        assert!(
            text.contains(&format!("for p in {}; do", privs.join(" "))),
            "{text}"
        );
        assert!(
            text.contains(&format!("pveum role add {role} --privs \"$privs\"")),
            "{text}"
        );
        assert!(text.contains(&format!(
            "pveum acl modify / --users mcp@pve --roles {role}"
        )));
        assert!(text.contains("pveum user token add mcp@pve nandi --privsep 0"));
        assert!(
            text.contains("bash -e <<'NANDI_BOOTSTRAP'") && text.contains("\nNANDI_BOOTSTRAP\n")
        );
        assert!(!text.contains("|| echo"), "no failure masking: {text}");
        assert!(!text.contains("PVEAdmin") && !text.contains("PVEAuditor"));
        assert!(!text.contains("authorized_keys"), "no key given");
    }
    let ro = stdout(&d.run(&["bootstrap"], &[], None).await);
    for forbidden in [
        "VM.PowerMgmt",
        "Sys.Modify",
        "VM.Allocate",
        "Permissions.Modify",
    ] {
        assert!(!ro.contains(forbidden), "read-only grants {forbidden}");
    }
    let out = d.run(&["bootstrap", "--tier", "admin"], &[], None).await;
    assert_eq!(out.status.code(), Some(2));
    let out = d.run(&["bootstrap", "--user", "-x"], &[], None).await;
    assert_eq!(out.status.code(), Some(2));
}

/// Runs bootstrap's pasted script with a stand-in `pveum` whose roles list `node_privs` (what the
/// node's Proxmox VE version knows); returns the script's output and the `pveum` calls made.
#[cfg(unix)]
fn run_bootstrap_script(script: &str, node_privs: &str) -> (std::process::Output, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let roles = dir.path().join("roles.json");
    std::fs::write(
        &roles,
        format!(r#"[{{"privs":"{node_privs}","roleid":"Administrator","special":1}}]"#),
    )
    .unwrap();
    let log = dir.path().join("calls.log");
    let pveum = dir.path().join("pveum");
    std::fs::write(
        &pveum,
        format!(
            "#!/bin/sh\ncase \"$1 $2\" in\n  'role list') cat '{}' ;;\n  'user list') echo '[]' ;;\n  \
             *) echo \"$*\" >> '{}' ;;\nesac\n",
            roles.display(),
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&pveum, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", script])
        .env("PATH", path)
        .output()
        .unwrap();
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    (out, calls)
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_script_leaves_out_privileges_an_older_proxmox_lacks() {
    let d = CliDirs::new();
    let text = stdout(&d.run(&["bootstrap"], &[], None).await);
    let script = text
        .split("--- copy from here ---\n")
        .nth(1)
        .and_then(|rest| rest.split("--- to here ---").next())
        .unwrap_or_else(|| panic!("no script: {text}"));
    let read_only: Vec<&str> = privileges_for(Tier::ReadOnly).into_iter().collect();
    assert!(read_only.contains(&"VM.GuestAgent.Audit"));
    // PVE 9: every privilege exists; the role holds them all and nothing is noted.
    let pve9 = read_only.join(",") + ",VM.GuestAgent.Unrestricted";
    let (out, calls) = run_bootstrap_script(script, &pve9);
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        calls.contains(&format!(
            "role add NandiMcpReadOnly --privs {}",
            read_only.join(",")
        )),
        "{calls}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("note:"));
    // PVE 8: no VM.GuestAgent.*; the script still completes, without it, and says so.
    let pve8: Vec<&str> = read_only
        .iter()
        .copied()
        .filter(|p| !p.starts_with("VM.GuestAgent."))
        .chain(["VM.Monitor"])
        .collect();
    let (out, calls) = run_bootstrap_script(script, &pve8.join(","));
    assert!(out.status.success(), "{}", text_of(&out));
    let granted = format!(
        "role add NandiMcpReadOnly --privs {}",
        pve8[..pve8.len() - 1].join(",")
    );
    assert!(calls.contains(&format!("{granted}\n")), "{calls}");
    assert!(
        !calls.contains("VM.Monitor"),
        "never added on its own: {calls}"
    );
    assert!(
        calls.contains("user token add mcp@pve nandi --privsep 0"),
        "{calls}"
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("note: this Proxmox VE has no VM.GuestAgent.Audit"),
        "{said}"
    );
    assert!(said.contains("--privs VM.Monitor --append 1"), "{said}");
    // A privilege list that cannot be read stops the script before any role is written.
    let (out, calls) = run_bootstrap_script(script, "");
    assert!(!out.status.success(), "{}", text_of(&out));
    assert!(!calls.contains("role add"), "{calls}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_grants_the_role_on_a_validated_acl_path() {
    let d = CliDirs::new();
    let out = d
        .run(
            &["bootstrap", "--tier", "full", "--acl-path", "/pool/lab"],
            &[],
            None,
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let text = stdout(&out);
    assert!(
        text.contains("pveum acl modify /pool/lab --users mcp@pve --roles NandiMcpFull"),
        "{text}"
    );
    assert!(!text.contains("pveum acl modify / "), "{text}");
    // A pool holds guests and storages only: node, cluster and SDN checks are named.
    assert!(text.contains("does not reach these checks"), "{text}");
    assert!(text.contains("Sys.Audit on /nodes/{node}"), "{text}");
    assert!(
        text.contains("SDN.Use on /sdn/zones/localnetwork/{bridge}"),
        "{text}"
    );
    assert!(
        !text.contains("VM.Config.CPU on"),
        "guests are in the pool: {text}"
    );
    // The default grants on / and needs no note.
    let text = stdout(&d.run(&["bootstrap", "--tier", "full"], &[], None).await);
    assert!(text.contains("pveum acl modify / --users mcp@pve --roles NandiMcpFull"));
    assert!(!text.contains("does not reach"), "{text}");
    for bad in [
        "pool/lab",
        "/pool",
        "/pool/lab;id",
        "/pool/../x",
        "/bogus/x",
    ] {
        let out = d.run(&["bootstrap", "--acl-path", bad], &[], None).await;
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text_of(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--acl-path"),
            "{bad}: {}",
            text_of(&out)
        );
        assert!(stdout(&out).is_empty(), "{bad}: nothing printed");
    }
}

fn doctor_env(emu: &Emulator) -> Vec<(String, String)> {
    let mut env = common::env_for(emu);
    env.push(("PVE_ACCESS_TIER".into(), "full".into()));
    env
}

async fn doctor_permissions(d: &CliDirs, emu: &Emulator) -> (Option<i32>, Value) {
    let env = doctor_env(emu);
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = d
        .run(
            &["doctor", "--check", "permissions", "--json"],
            &pairs,
            None,
        )
        .await;
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text_of(&out)));
    let item = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == "permissions")
        .cloned()
        .unwrap_or_else(|| panic!("no permissions item: {report:#}"));
    (out.status.code(), item)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_names_a_missing_per_key_privilege_and_the_full_role_is_green() {
    let d = CliDirs::new();
    // The full role minus the per-key privileges CPU and cloud-init.
    let granted: Vec<String> = privileges_for(Tier::Full)
        .into_iter()
        .filter(|p| !["VM.Config.CPU", "VM.Config.Cloudinit"].contains(p))
        .map(str::to_owned)
        .collect();
    let emu = Emulator::start(EmulatorOptions {
        privileges: Some(granted),
        ..EmulatorOptions::default()
    })
    .await
    .unwrap();
    let (code, item) = doctor_permissions(&d, &emu).await;
    assert_eq!(code, Some(1), "{item:#}");
    assert_eq!(item["status"], "RED", "{item:#}");
    let detail = item["detail"].as_str().unwrap();
    assert!(
        detail.contains("pve_set_qemu_cloudinit (VM.Config.Cloudinit)"),
        "{detail}"
    );
    let update = detail
        .split("; ")
        .find(|t| t.contains("pve_qemu_update_config ("))
        .unwrap_or_else(|| panic!("{detail}"));
    assert!(
        update.contains("VM.Config.CPU") && update.contains("VM.Config.Cloudinit"),
        "{update}"
    );
    assert!(
        detail.contains("pve_lxc_update_config (VM.Config.CPU)"),
        "{detail}"
    );
    let fix = item["fix"].as_str().unwrap();
    assert!(
        fix.contains("VM.Config.CPU") && fix.contains("bootstrap --tier full"),
        "{fix}"
    );
    // Exactly the privileges bootstrap's full role holds: every registered tool is covered.
    let emu = Emulator::start(EmulatorOptions {
        privileges: Some(
            privileges_for(Tier::Full)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        ),
        ..EmulatorOptions::default()
    })
    .await
    .unwrap();
    let (code, item) = doctor_permissions(&d, &emu).await;
    assert_eq!(item["status"], "GREEN", "{item:#}");
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_new_ssh_key_generates_at_setups_default_path() {
    let d = CliDirs::new();
    let out = d.run(&["bootstrap", "--new-ssh-key"], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let key = d.home.path().join(".ssh/id_ed25519_proxmox");
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    assert!(public.starts_with("ssh-ed25519 "));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let text = stdout(&out);
    assert!(text.contains(&format!("'{}'", public.trim())), "{text}");
    assert!(!text.contains("PRIVATE KEY"));
    // The first line says what this run does to this machine: it writes the key pair.
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.contains(&format!(
            "contacts nothing; writes a new SSH key pair {} and {}",
            key.display(),
            key.with_extension("pub").display()
        )),
        "{first}"
    );
    assert!(!first.contains("prints only"), "{first}");
    // OpenSSH itself accepts the key and derives the same public key from it (when installed).
    if let Ok(derived) = std::process::Command::new("ssh-keygen")
        .arg("-y")
        .arg("-f")
        .arg(&key)
        .output()
    {
        assert!(derived.status.success(), "ssh-keygen rejects the key");
        let derived = String::from_utf8_lossy(&derived.stdout);
        let mine: Vec<&str> = public.split_whitespace().take(2).collect();
        let theirs: Vec<&str> = derived.split_whitespace().take(2).collect();
        assert_eq!(mine, theirs);
    }
    // Second run reuses the key, and writes nothing.
    let again = d.run(&["bootstrap", "--new-ssh-key"], &[], None).await;
    assert!(stdout(&again).contains("Reusing the existing key"));
    assert!(
        stdout(&again)
            .lines()
            .next()
            .is_some_and(|l| l.contains("contacts nothing, writes nothing")),
        "{}",
        stdout(&again)
    );
    // A private key passed as --ssh-key is refused.
    let out = d
        .run(
            &["bootstrap", "--ssh-key", key.to_str().unwrap()],
            &[],
            None,
        )
        .await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harden_is_idempotent_and_refuses_malformed_settings() {
    let d = CliDirs::new();
    let out = d.run(&["harden"], &[], None).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "no instance configured: {}",
        text_of(&out)
    );
    // A name that is neither an instance nor a client entry is refused, nothing written.
    let out = d.run(&["harden", "--name", "lab"], &[], None).await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    assert!(!d.cwd.path().join(".claude").exists());
    std::fs::write(
        d.cwd.path().join(".mcp.json"),
        r#"{"mcpServers":{"lab":{"command":"nandi-proxmox-mcp","args":["run"],"env":{"PVE_ACCESS_TIER":"full"}}}}"#,
    )
    .unwrap();
    let settings = d.cwd.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{"permissions":{"allow":["Bash(ls)"]},"model":"x"}"#,
    )
    .unwrap();
    let out = d.run(&["harden", "--name", "lab"], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(stdout(&out).contains("mcp__lab__pve_stop_qemu_vm"));
    let first = std::fs::read_to_string(&settings).unwrap();
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["model"], "x");
    assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
    let ask = v["permissions"]["ask"].as_array().unwrap();
    assert!(
        ask.iter().any(|r| r == "mcp__lab__stopVM"),
        "aliases covered"
    );
    let out = d.run(&["harden", "--name", "lab"], &[], None).await;
    assert!(stdout(&out).contains("already covered"));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        first,
        "idempotent"
    );
    std::fs::write(&settings, r#"{"permissions":{"ask":"no"}}"#).unwrap();
    let out = d.run(&["harden", "--name", "lab"], &[], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        r#"{"permissions":{"ask":"no"}}"#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn harden_writes_rules_only_for_tools_the_instance_tier_lists() {
    let d = CliDirs::new();
    let settings = d.cwd.path().join(".claude/settings.json");
    let ask = |path: &std::path::Path| -> Vec<String> {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        v["permissions"]["ask"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    };
    // The Claude Code entry of `lab` starts the server at read-execute.
    std::fs::write(
        d.cwd.path().join(".mcp.json"),
        r#"{"mcpServers":{"lab":{"command":"nandi-proxmox-mcp","args":["run"],"env":{"PVE_ACCESS_TIER":"read-execute"}}}}"#,
    )
    .unwrap();
    let out = d.run(&["harden", "--name", "lab"], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        stdout(&out).contains("tier read-execute from its Claude Code entry"),
        "{}",
        stdout(&out)
    );
    let rules = ask(&settings);
    assert!(rules.iter().any(|r| r == "mcp__lab__pve_stop_qemu_vm"));
    assert!(
        rules.iter().any(|r| r == "mcp__lab__stopVM"),
        "aliases covered"
    );
    for full_only in [
        "pve_qemu_delete",
        "pve_exec_in_container",
        "pve_create_user",
    ] {
        assert!(
            !rules.iter().any(|r| r == &format!("mcp__lab__{full_only}")),
            "{full_only} is not listed at read-execute: {rules:?}"
        );
    }
    // The flag wins over the entry; read-only lists one tool that can need a person (the
    // generic API call, for a path not known to be a read), already covered, so nothing
    // is added.
    assert!(
        rules.iter().any(|r| r == "mcp__lab__pve_api_call"),
        "{rules:?}"
    );
    let before = std::fs::read_to_string(&settings).unwrap();
    let out = d
        .run(
            &["harden", "--name", "lab", "--access-tier", "read-only"],
            &[],
            None,
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        stdout(&out).contains("1 gated tool name(s)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);
    let out = d
        .run(
            &["harden", "--name", "lab", "--access-tier", "full"],
            &[],
            None,
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        ask(&settings)
            .iter()
            .any(|r| r == "mcp__lab__pve_qemu_delete")
    );
    let out = d
        .run(
            &["harden", "--name", "lab", "--access-tier", "admin"],
            &[],
            None,
        )
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    // An entry with an invalid tier is reported, not guessed.
    std::fs::write(
        d.cwd.path().join(".mcp.json"),
        r#"{"mcpServers":{"bad":{"command":"x","env":{"PVE_ACCESS_TIER":"root"}}}}"#,
    )
    .unwrap();
    let out = d.run(&["harden", "--name", "bad"], &[], None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(stdout(&out).contains("FAILED"), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_completions_and_help() {
    let d = CliDirs::new();
    let out = d.run(&["list"], &[], None).await;
    assert!(stdout(&out).contains("No Proxmox instances configured yet"));
    let dir = d.home.path().join(".nandi-proxmox-mcp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lab.json"), "{}").unwrap();
    let text = stdout(&d.run(&["list"], &[], None).await);
    assert!(text.contains("Configured Proxmox instances (1):"), "{text}");
    assert!(
        text.contains("scope:  user") && text.contains("prefixed with \"lab\""),
        "{text}"
    );
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = d.run(&["completions", shell], &[], None).await;
        assert!(
            out.status.success() && stdout(&out).contains("bootstrap"),
            "{shell}"
        );
    }
    for cmd in [
        "run",
        "tools",
        "setup",
        "doctor",
        "bootstrap",
        "harden",
        "list",
        "completions",
    ] {
        let out = d.run(&[cmd, "--help"], &[], None).await;
        assert!(
            stdout(&out).contains("Examples:"),
            "{cmd} --help has examples"
        );
    }
}

/// Issue 40: `bootstrap --person` adds one token per person with privilege separation and the
/// tier's role on the token, and says what goes into the people file; bad values touch nothing.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_prints_one_separated_token_per_person() {
    let d = CliDirs::new();
    let args = [
        "bootstrap",
        "--tier",
        "read-execute",
        "--person",
        "alice@pve",
        "--person",
        "bob@ldap",
    ];
    let text = stdout(&d.run(&args, &[], None).await);
    let script = text
        .split("--- copy from here ---\n")
        .nth(1)
        .and_then(|rest| rest.split("--- to here ---").next())
        .unwrap_or_else(|| panic!("no script: {text}"));
    let privs: Vec<&str> = privileges_for(Tier::ReadExecute).into_iter().collect();
    let (out, calls) =
        run_bootstrap_script(script, &(privs.join(",") + ",VM.GuestAgent.Unrestricted"));
    assert!(out.status.success(), "{}", text_of(&out));
    for person in ["alice@pve", "bob@ldap"] {
        assert!(
            calls.contains(&format!("user token add {person} nandi --privsep 1")),
            "{calls}"
        );
        assert!(
            calls.contains(&format!(
                "acl modify / --tokens {person}!nandi --roles NandiMcpReadExecute"
            )),
            "{calls}"
        );
    }
    assert!(calls.contains("user add alice@pve"), "{calls}");
    assert!(
        !calls.contains("user add bob@ldap"),
        "a directory's user is not created: {calls}"
    );
    assert!(text.contains(r#""tokenId": "alice@pve!nandi""#), "{text}");
    let out = d.run(&["bootstrap", "--person", "alice"], &[], None).await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    assert!(
        text_of(&out).contains("--person `alice` must be USER@REALM"),
        "{}",
        text_of(&out)
    );
}
