//! `doctor` against the emulator: green, red on a bad token or missing privileges, unknown
//! checks refused, environment configuration, several instances checked one by one, exit codes.

use crate::common;

use common::{CliDirs, setup_flags, text_of};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::Value;

fn env_of(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

/// `doctor --check permissions --json`, which must exit 1: its report and all it printed.
async fn failing_permissions_report(d: &CliDirs, env: &[(String, String)]) -> (Value, String) {
    let out = d
        .run(
            &["doctor", "--check", "permissions", "--json"],
            &env_of(env),
            None,
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), text_of(&out))
}

fn item<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == check)
        .unwrap_or_else(|| panic!("no {check} item: {report:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_configuration_is_checked_and_green() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let env = common::env_for(&emu);
    let out = d.run(&["doctor", "--json"], &env_of(&env), None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(item(&report, "config")["detail"], "environment variables");
    assert_eq!(item(&report, "mcpConfig")["status"], "SKIP");
    assert_eq!(item(&report, "listNodes")["detail"], "Found 3 nodes");
    let tls = item(&report, "tls");
    assert_eq!(tls["status"], "GREEN");
    assert!(
        tls["detail"]
            .as_str()
            .unwrap()
            .contains(&emu.cert_fingerprint().unwrap())
    );
    assert_eq!(item(&report, "sshBatch")["status"], "SKIP");
    let out = d
        .run(&["doctor", "--check", "nodes"], &env_of(&env), None)
        .await;
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[GREEN] listNodes: Found 3 nodes"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when piped");
}

/// Issue 38: doctor says how many tools this configuration serves (its tier and module, SSH
/// or not), in the registry's one sentence, not the catalog's size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_how_many_tools_this_configuration_serves() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let counts = nandi_proxmox_mcp::registry::tool_counts();
    for (tier, module, served) in [
        ("read-only", "core", counts.default),
        // No PBS is configured here: its rows are not served.
        ("full", "advanced", counts.full_without_ssh - counts.pbs),
    ] {
        let mut env = common::env_for(&emu);
        env.push(("PVE_ACCESS_TIER".into(), tier.into()));
        env.push(("PVE_MODULE_MODE".into(), module.into()));
        let out = d
            .run(
                &["doctor", "--json", "--check", "nodes"],
                &env_of(&env),
                None,
            )
            .await;
        assert!(out.status.success(), "{}", text_of(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let tools = item(&report, "tools");
        assert_eq!(tools["status"], "GREEN");
        let detail = tools["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!(
                "{served} of {} tools exposed",
                counts.one_cluster_max
            )),
            "{tier}: {detail}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_token_is_red_and_exits_nonzero() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let mut env = common::env_for(&emu);
    for (k, v) in &mut env {
        if k == "PROXMOX_TOKEN_SECRET" {
            *v = "not-the-right-secret".into();
        }
    }
    let out = d
        .run(&["doctor", "--check", "nodes,vms"], &env_of(&env), None)
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[RED] listNodes: authentication failed (HTTP 401)"),
        "{text}"
    );
    assert!(text.contains("fix: "), "{text}");
    assert!(text.contains("--privsep 0"), "{text}");
    assert!(!text.contains("not-the-right-secret"));
    assert!(text.contains("[SKIP] vms"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_name_is_named_plainly_by_doctor_and_run() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let env = common::with_policy(common::env_for(&emu), &[("PROXMOX_TOKEN_NAME", "my token")]);
    let said = "the API token's name \"my token\" contains whitespace";
    let out = d.run(&["doctor"], &env_of(&env), None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(said),
        "{}",
        text_of(&out)
    );
    let out = d.run(&["run"], &env_of(&env), None).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(said), "{}", text_of(&out));
    assert!(!err.contains("token token"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_privileges_name_the_tools_that_will_fail() {
    let emu = Emulator::start(EmulatorOptions {
        privileges: Some(vec!["Sys.Audit".into()]),
        ..EmulatorOptions::default()
    })
    .await
    .unwrap();
    let d = CliDirs::new();
    let env = common::env_for(&emu);
    let (report, _) = failing_permissions_report(&d, &env).await;
    let p = item(&report, "permissions");
    assert_eq!(p["status"], "RED");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("pve_list_qemu_vms (VM.Audit)"), "{detail}");
    assert!(
        !detail.contains("pve_get_cluster_status"),
        "Sys.Audit is granted: {detail}"
    );
    assert!(
        p["fix"]
            .as_str()
            .unwrap()
            .contains("bootstrap --tier read-only")
    );
    // Full privileges: green.
    let emu = common::emulator().await;
    let env = common::env_for(&emu);
    let out = d
        .run(&["doctor", "--check", "permissions"], &env_of(&env), None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_checks_and_missing_configuration() {
    let d = CliDirs::new();
    let out = d
        .run(&["doctor", "--check", "nodes,bogus"], &[], None)
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown check `bogus`"));
    let out = d.run(&["doctor"], &[], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[RED] config"));
    let out = d.run(&["doctor", "--name", "nope"], &[], None).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[RED] instance"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pin_mismatch_and_refused_connections_are_diagnosed() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let mut env = common::env_for(&emu);
    let wrong = vec!["AB"; 32].join(":");
    for (k, v) in &mut env {
        if k == "PROXMOX_TLS_FINGERPRINT" {
            *v = wrong.clone();
        }
    }
    let out = d
        .run(
            &["doctor", "--check", "nodes,tls", "--json"],
            &env_of(&env),
            None,
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let real = emu.cert_fingerprint().unwrap();
    let tls = item(&report, "tls");
    assert_eq!(tls["status"], "RED");
    assert!(tls["detail"].as_str().unwrap().contains(&real), "{tls}");
    let nodes = item(&report, "listNodes");
    assert!(nodes["fix"].as_str().unwrap().contains(&real), "{nodes}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut env = common::env_for(&emu);
    for (k, v) in &mut env {
        if k == "PROXMOX_PORT" {
            *v = port.to_string();
        }
    }
    let out = d
        .run(&["doctor", "--check", "nodes"], &env_of(&env), None)
        .await;
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[RED] listNodes: connection refused"),
        "{text}"
    );
    assert!(text.contains("pveproxy"), "{text}");
}

/// Two instances for one cluster (`--name` picks each) and no `--name` for doctor: discovery
/// cannot choose, so doctor checks each in its own section, says which flag picks one, and
/// exits non-zero because one of them is RED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_instances_are_checked_one_by_one() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let flags = setup_flags(&emu);
    for (name, secret) in [
        ("good", "emulator-secret-token\n"),
        ("stale", "an-old-revoked-secret\n"),
    ] {
        let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
        args.extend(["--name", name, "--clients", "claude-code"]);
        let out = d.run(&args, &[], Some(secret)).await;
        assert!(
            out.status.code().is_some(),
            "{name} setup ran: {}",
            text_of(&out)
        );
    }
    let out = d
        .run(&["doctor", "--check", "mcp-config,nodes"], &[], None)
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 Proxmox instances are configured (good, stale)"),
        "{text}"
    );
    assert!(text.contains("doctor --name NAME"), "{text}");
    assert!(!text.contains("NANDI_PROXMOX_CONFIG to the file"), "{text}");
    let good = text
        .find("instance `good` (project)")
        .expect("a section for good");
    let stale = text
        .find("instance `stale` (project)")
        .expect("a section for stale");
    assert!(good < stale, "{text}");
    let (good_part, stale_part) = text.split_at(stale);
    assert!(good_part[good..].contains("[GREEN] listNodes"), "{text}");
    assert!(
        good_part[good..].contains("[GREEN] mcpConfig:claude-code"),
        "{text}"
    );
    assert!(
        stale_part.contains("[RED] listNodes: authentication failed"),
        "{text}"
    );
    assert!(
        text.contains("Something is RED in instance `stale`"),
        "{text}"
    );
    assert!(!text.contains("an-old-revoked-secret"), "{text}");

    let out = d
        .run(&["doctor", "--check", "nodes", "--json"], &[], None)
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "RED");
    let sections = report["instances"]
        .as_array()
        .expect("one report per instance");
    let status: Vec<(&str, &str)> = sections
        .iter()
        .map(|s| {
            (
                s["instance"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(status, [("good", "GREEN"), ("stale", "RED")], "{report:#}");

    // `--name` picks one: the good one alone is GREEN.
    let out = d
        .run(&["doctor", "--name", "good", "--check", "nodes"], &[], None)
        .await;
    assert!(out.status.success(), "{}", text_of(&out));

    // `run` cannot choose: it says how to pick one (the variable; --name where a command has it).
    let out = d.run(&["run"], &[], None).await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "several Proxmox instances are configured",
        "set NANDI_PROXMOX_CONFIG to the file",
        "`run` takes no --name",
        "--name NAME to `doctor` or `harden`",
        "nandi-proxmox-mcp doctor --name good",
    ] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_whether_changes_are_frozen_without_going_red() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let freeze_file = d.home.path().join("frozen-here");
    let mut env = common::env_for(&emu);
    env.push(("PVE_FREEZE_FILE".into(), freeze_file.display().to_string()));
    let out = d.run(&["doctor", "--json"], &env_of(&env), None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let freeze = item(&report, "freeze");
    assert_eq!(freeze["status"], "GREEN", "{freeze}");
    assert!(
        freeze["detail"]
            .as_str()
            .unwrap()
            .contains("changes allowed")
    );

    let frozen = d
        .run(&["freeze", "--reason", "maintenance"], &env_of(&env), None)
        .await;
    assert!(frozen.status.success(), "{}", text_of(&frozen));
    let out = d.run(&["doctor", "--json"], &env_of(&env), None).await;
    assert!(
        out.status.success(),
        "a freeze is not a fault: {}",
        text_of(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let freeze = item(&report, "freeze");
    assert_eq!(freeze["status"], "SKIP", "{freeze}");
    let detail = freeze["detail"].as_str().unwrap();
    assert!(
        detail.contains("changes are frozen") && detail.contains("maintenance"),
        "{detail}"
    );
    assert!(detail.contains("unfreeze"), "{detail}");
}

/// Issue 40: with a people file, `permissions` runs once more per person, with that person's
/// own token: a token Proxmox accepts is checked like the server's; one it refuses is RED,
/// naming the person and the token id; no secret is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_persons_own_token_is_checked() {
    let emu = common::emulator().await;
    let alice_secret = "a11ce000-5ec2-4e7a-9d3b-0000000000a1";
    emu.add_token("alice@pve!mcp", alice_secret);
    let d = CliDirs::new();
    let people = d.home.path().join("people.json");
    let wrong_secret = "0bad0000-5ec2-4e7a-9d3b-00000000dead";
    let body = serde_json::json!({"people": {
        "alice": {"tokenId": "alice@pve!mcp", "secret": alice_secret},
        "mallory": {"tokenId": "mallory@pve!mcp", "secret": wrong_secret},
    }});
    std::fs::write(&people, body.to_string()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&people, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let mut env = common::env_for(&emu);
    env.push(("PVE_PEOPLE_FILE".into(), people.display().to_string()));
    let (report, shown) = failing_permissions_report(&d, &env).await;
    assert_eq!(item(&report, "permissions")["status"], "GREEN");
    assert_eq!(
        item(&report, "permissions of alice (alice@pve!mcp)")["status"],
        "GREEN"
    );
    let mallory = item(&report, "permissions of mallory (mallory@pve!mcp)");
    assert_eq!(mallory["status"], "RED", "{mallory}");
    assert!(
        mallory["detail"].as_str().unwrap().contains("cannot read"),
        "{mallory}"
    );
    assert!(
        !shown.contains(alice_secret) && !shown.contains(wrong_secret),
        "{shown}"
    );
}
