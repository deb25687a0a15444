//! The CLI with several clusters, as a user meets it (issue 38): the built binary in a
//! temporary HOME and working directory against emulators over real HTTPS. `tools`, `list`,
//! `doctor` and `harden` load the configuration exactly as `run` does — an instance file's
//! `accessTier` beats the variables, a folder or a comma-separated list is accepted — and name
//! tools after the client entry that serves a cluster; `doctor` judges each cluster by its own
//! tier and the served tools' privileges; `CLUSTER_NOT_ALLOWED` names the file that limits.

use crate::common;

use std::path::{Path, PathBuf};

use common::{CliDirs, McpProcess, setup_flags, text_of};
use pve_emulator::{Emulator, EmulatorOptions};
use serde_json::{Value, json};

const SECRET: &str = "emulator-secret-token\n";

/// An audit-only token: the privileges every read-only tool needs, and no change.
const AUDITOR: [&str; 8] = [
    "VM.Audit",
    "Sys.Audit",
    "Datastore.Audit",
    "SDN.Audit",
    "Pool.Audit",
    "Mapping.Audit",
    "VM.GuestAgent.Audit",
    "Sys.Syslog",
];

async fn auditor_emulator() -> Emulator {
    Emulator::start(EmulatorOptions {
        privileges: Some(AUDITOR.iter().map(|p| (*p).to_owned()).collect()),
        ..EmulatorOptions::default()
    })
    .await
    .unwrap()
}

/// `setup` for `emu` under `name` for Claude Code, with `extra` flags; must succeed.
async fn setup(d: &CliDirs, emu: &Emulator, name: &str, extra: &[&str]) -> String {
    let flags = setup_flags(emu);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["--clients", "claude-code", "--name", name]);
    args.extend(extra);
    let out = d.run(&args, &[], Some(SECRET)).await;
    assert!(out.status.success(), "{}", text_of(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn folder(d: &CliDirs) -> PathBuf {
    d.cwd.path().join(".nandi-proxmox-mcp")
}

fn file(d: &CliDirs, name: &str) -> String {
    folder(d).join(format!("{name}.json")).display().to_string()
}

/// Writes `accessTier: tier` into the instance file `name` (as a user edits it).
fn set_file_tier(d: &CliDirs, name: &str, tier: &str) {
    let path = file(d, name);
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["accessTier"] = json!(tier);
    std::fs::write(&path, v.to_string()).unwrap();
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text_of(out)))
}

fn item<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == check)
        .unwrap_or_else(|| panic!("no {check} item: {report:#}"))
}

fn ask_rules(path: &Path) -> Vec<String> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["permissions"]["ask"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_and_harden_read_each_file_and_name_tools_after_the_entry() {
    let lab = common::emulator().await;
    let prod = common::emulator().await;
    let d = CliDirs::new();
    setup(&d, &lab, "lab", &["--access-tier", "full"]).await;
    let said = setup(&d, &prod, "prod", &[]).await;
    assert!(said.contains("added as a cluster of entry `lab`"), "{said}");
    set_file_tier(&d, "lab", "full");

    // A file with accessTier full: `tools` lists what `run` serves, not the read-only default.
    let only_lab = [("NANDI_PROXMOX_CONFIG", file(&d, "lab"))];
    let env: Vec<(&str, &str)> = only_lab.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let full = json_of(&d.run(&["tools", "--json"], &env, None).await);
    assert_eq!(full["tier"], "full", "{}", full["tier"]);
    let only_prod = [("NANDI_PROXMOX_CONFIG", file(&d, "prod"))];
    let env: Vec<(&str, &str)> = only_prod.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let read_only = json_of(&d.run(&["tools", "--json"], &env, None).await);
    assert_eq!(read_only["tier"], "read-only");
    assert!(full["toolCount"].as_u64() > read_only["toolCount"].as_u64());
    let mut mcp = McpProcess::spawn(
        &["run"],
        &[("NANDI_PROXMOX_CONFIG".into(), file(&d, "lab"))],
    );
    mcp.initialize().await;
    let served = mcp.list_tools().await.len() as u64;
    mcp.shutdown().await;
    assert_eq!(
        Some(served),
        full["toolCount"].as_u64(),
        "run and tools agree"
    );

    // The folder and the comma-separated list `run` accepts: one listing per cluster.
    let list = format!("{},{}", file(&d, "lab"), file(&d, "prod"));
    let dir = folder(&d).display().to_string();
    for value in [list.as_str(), dir.as_str()] {
        let env = [("NANDI_PROXMOX_CONFIG", value)];
        let out = d.run(&["tools", "--json"], &env, None).await;
        assert!(out.status.success(), "{}", text_of(&out));
        let doc = json_of(&out);
        let tiers: Vec<(&str, &str)> = doc["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["cluster"].as_str().unwrap(), c["tier"].as_str().unwrap()))
            .collect();
        assert_eq!(tiers, [("lab", "full"), ("prod", "read-only")], "{value}");
        let out = d.run(&["list"], &env, None).await;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", text_of(&out));
        assert!(
            text.contains("read-only, module core (from the file)"),
            "{text}"
        );
        assert!(text.contains("full, module core (from the file)"), "{text}");
        assert!(!text.contains("mcp__prod__"), "{text}");
    }

    // prod is a cluster of entry `lab`: its tools are mcp__lab__… with cluster "prod".
    let text = String::from_utf8_lossy(&d.run(&["list"], &[], None).await.stdout).into_owned();
    assert!(
        text.contains("mcp__lab__pve_list_nodes with cluster: \"prod\""),
        "{text}"
    );
    assert!(!text.contains("mcp__prod__"), "{text}");
    assert!(!text.contains("emulator-secret-token"), "{text}");

    // harden writes the entry's names, at prod's own (read-only) tier.
    let settings = d.cwd.path().join(".claude/settings.json");
    let _ = std::fs::remove_file(&settings);
    let out = d.run(&["harden", "--name", "prod"], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let rules = ask_rules(&settings);
    assert_eq!(rules, ["mcp__lab__pve_api_call"], "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("cluster `prod` of entry `lab`"));

    // A name that does not exist: refused, the known names listed, nothing written.
    let before = std::fs::read_to_string(&settings).unwrap();
    let out = d.run(&["harden", "--name", "nosuch"], &[], None).await;
    assert_ne!(out.status.code(), Some(0), "{}", text_of(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no instance named `nosuch`"), "{err}");
    assert!(err.contains("lab, prod"), "{err}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), before);
    let fresh = CliDirs::new();
    let out = fresh.run(&["harden", "--name", "nosuch"], &[], None).await;
    assert_ne!(out.status.code(), Some(0), "{}", text_of(&out));
    assert!(!fresh.cwd.path().join(".claude").exists());
    assert!(!fresh.home.path().join(".claude").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_judges_each_cluster_by_its_tier_and_the_served_tools_privileges() {
    let lab = auditor_emulator().await;
    let lab2 = auditor_emulator().await;
    let d = CliDirs::new();
    setup(&d, &lab, "lab", &["--access-tier", "full"]).await;
    // A read-only cluster added under the full entry: judged at read-only, and an auditor
    // token holds every privilege read-only tools need.
    let said = setup(&d, &lab2, "lab2", &[]).await;
    assert!(said.contains("added as a cluster of entry `lab`"), "{said}");
    let out = d
        .run(
            &[
                "doctor",
                "--name",
                "lab2",
                "--check",
                "permissions,mcp-config",
                "--json",
            ],
            &[],
            None,
        )
        .await;
    let report = json_of(&out);
    let p = item(&report, "permissions");
    assert_eq!(p["status"], "GREEN", "{report:#}");
    assert!(
        p["detail"].as_str().unwrap().contains("tier read-only"),
        "{p}"
    );
    assert!(out.status.success(), "{}", text_of(&out));

    // The full cluster with an audit-only token: RED, naming how many served tools fail and
    // the privileges missing — the tier in force is the file's, not the read-only default.
    let out = d
        .run(
            &[
                "doctor",
                "--name",
                "lab",
                "--check",
                "permissions",
                "--json",
            ],
            &[],
            None,
        )
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let report = json_of(&out);
    let p = item(&report, "permissions");
    assert_eq!(p["status"], "RED", "{report:#}");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("served tools (tier full from"), "{detail}");
    assert!(detail.contains("will fail with 403; missing "), "{detail}");
    assert!(detail.contains("VM.PowerMgmt"), "{detail}");
    assert!(
        detail.contains("pve_stop_qemu_vm (VM.PowerMgmt)"),
        "{detail}"
    );
    assert!(
        p["fix"].as_str().unwrap().contains("bootstrap --tier full"),
        "{p}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_not_allowed_names_the_file_that_sets_the_tier() {
    let lab = common::emulator().await;
    let prod = common::emulator().await;
    let d = CliDirs::new();
    setup(&d, &lab, "lab", &["--access-tier", "full"]).await;
    setup(&d, &prod, "prod", &[]).await;
    set_file_tier(&d, "lab", "full");
    let list = format!("{},{}", file(&d, "lab"), file(&d, "prod"));
    let mut mcp = McpProcess::spawn(&["run"], &[("NANDI_PROXMOX_CONFIG".into(), list)]);
    mcp.initialize().await;
    let result = mcp
        .call(
            "pve_stop_qemu_vm",
            json!({"cluster": "prod", "node": "pve01", "vmid": 101}),
        )
        .await;
    mcp.shutdown().await;
    let text = result.to_string();
    assert!(text.contains("CLUSTER_NOT_ALLOWED"), "{text}");
    assert!(text.contains("accessTier in"), "{text}");
    assert!(text.contains("prod.json"), "{text}");
    assert!(!text.contains("set PVE_ACCESS_TIER"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_yellow_for_tls_off_and_prints_the_source_once() {
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let mut env = common::env_for(&emu);
    env.retain(|(k, _)| k != "PROXMOX_TLS_FINGERPRINT");
    env.push(("PROXMOX_ALLOW_INSECURE_TLS".into(), "true".into()));
    env.push(("RUST_LOG".into(), "info".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = d.run(&["doctor", "--check", "tls,nodes"], &env, None).await;
    assert!(
        out.status.success(),
        "YELLOW is not a failure: {}",
        text_of(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[YELLOW] tls:"), "{text}");
    assert!(text.contains("PROXMOX_ALLOW_INSECURE_TLS"), "{text}");
    assert!(!text.contains("All good"), "{text}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        log.matches("Proxmox configuration source").count(),
        1,
        "the configuration source is said once: {log}"
    );
    let out = d
        .run(&["doctor", "--check", "tls", "--json"], &env, None)
        .await;
    assert_eq!(json_of(&out)["status"], "YELLOW");
}

/// The user name of this test process's uid, from /etc/passwd (what `freeze` should record).
fn uid_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            (f.len() > 2 && f[2].parse::<u32>().ok()? == uid).then(|| f[0].to_owned())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_names_the_uid_without_user_and_doctor_says_the_demo_entry() {
    let d = CliDirs::new();
    let state = tempfile::tempdir().unwrap();
    let frozen = state.path().join("frozen");
    let log = state.path().join("audit.jsonl");
    let (frozen_s, log_s) = (frozen.display().to_string(), log.display().to_string());
    // CliDirs clears the environment: no USER, LOGNAME or USERNAME.
    let env = [
        ("PVE_FREEZE_FILE", frozen_s.as_str()),
        ("PVE_AUDIT_LOG", log_s.as_str()),
    ];
    let out = d.run(&["freeze"], &env, None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let recorded = format!(
        "{}{}",
        std::fs::read_to_string(&frozen).unwrap(),
        std::fs::read_to_string(&log).unwrap()
    );
    assert!(!recorded.contains("unknown@"), "{recorded}");
    if let Some(name) = uid_name() {
        assert!(recorded.contains(&format!("cli:{name}@")), "{recorded}");
    }

    // Only the demo entry in .mcp.json: doctor checks it and says it is the demo.
    let d = CliDirs::new();
    let exe = common::binary().display().to_string();
    std::fs::write(
        d.cwd.path().join(".mcp.json"),
        json!({"mcpServers": {"try": {"command": exe, "args": ["run", "--demo"]}}}).to_string(),
    )
    .unwrap();
    let out = d.run(&["doctor", "--check", "mcp-config"], &[], None).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(text.contains("[GREEN] mcpConfig:demo:try"), "{text}");
    assert!(text.contains("is the demo"), "{text}");
    std::fs::write(
        d.cwd.path().join(".mcp.json"),
        json!({"mcpServers": {"try": {"command": "/nonexistent/nandi", "args": ["run", "--demo"]}}})
            .to_string(),
    )
    .unwrap();
    let out = d.run(&["doctor", "--check", "mcp-config"], &[], None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("[RED] mcpConfig:demo:try"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wizard_checks_the_host_at_once_defaults_to_self_signed_and_offers_a_pin() {
    let emu = common::emulator().await;
    let (host, port) = (emu.host().to_owned(), emu.port());
    let secret = SECRET.trim();
    // A URL is refused at once and asked again; "maybe" is asked again, not taken as No;
    // Enter at "self-signed?" is Yes, and Enter at "pin?" pins.
    let d = CliDirs::new();
    let answers = format!(
        "y\n1\nhttps://{host}:{port}\n{host}\n{port}\nsvc_mcp\npve\nemu\n{secret}\nmaybe\n\n\nn\n"
    );
    let out = d
        .run(
            &["setup", "--name", "wiz", "--clients", "claude-code"],
            &[],
            Some(&answers),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("without scheme"), "{text}");
    assert!(text.contains("answer y (yes) or n (no)"), "{text}");
    assert!(text.contains("self-signed certificate? [Y/n]"), "{text}");
    let wiz: Value =
        serde_json::from_str(&std::fs::read_to_string(folder(&d).join("wiz.json")).unwrap())
            .unwrap();
    assert_eq!(wiz["proxmoxHost"], json!(host));
    assert_eq!(
        wiz["tlsFingerprint"],
        json!(emu.cert_fingerprint().unwrap())
    );

    // "Not self-signed": the system CA refuses the node, and the failure menu offers the pin.
    let d = CliDirs::new();
    let answers = format!("y\n1\n{host}\n{port}\nsvc_mcp\npve\nemu\n{secret}\nn\nn\n5\n");
    let out = d
        .run(
            &["setup", "--name", "wiz", "--clients", "claude-code"],
            &[],
            Some(&answers),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("5) pin it"));
    let wiz: Value =
        serde_json::from_str(&std::fs::read_to_string(folder(&d).join("wiz.json")).unwrap())
            .unwrap();
    assert_eq!(
        wiz["tlsFingerprint"],
        json!(emu.cert_fingerprint().unwrap())
    );

    // A --name setup would have to change is refused with the rule and a suggestion.
    let d = CliDirs::new();
    let flags = setup_flags(&emu);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["--clients", "claude-code", "--name", "Bad Name"]);
    let out = d.run(&args, &[], Some(SECRET)).await;
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("use `--name bad-name`"), "{err}");
    assert!(!folder(&d).exists(), "nothing written");
}
