//! Several clusters from the command line, as a user would run it (the built binary in a
//! temporary HOME and working directory, two emulators over real HTTPS): `setup` adds a second
//! cluster to the existing client entry instead of writing a second entry, `list` shows each
//! with its tier, and `doctor` checks every cluster in its own section, exiting non-zero when
//! one of them is RED.

use crate::common;

use std::path::Path;

use common::{CliDirs, setup_flags, text_of};
use nandi_proxmox_mcp::cli::clients::{ClientId, read_entry};
use serde_json::Value;

const SECRET: &str = "emulator-secret-token\n";

fn args<'a>(flags: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    flags
        .iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
        .collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_adds_a_cluster_to_the_entry_and_doctor_checks_each() {
    let lab = common::emulator().await;
    let prod = common::emulator().await;
    let d = CliDirs::new();
    let lab_flags = setup_flags(&lab);
    let prod_flags = setup_flags(&prod);
    let extra_lab = [
        "--clients",
        "claude-code",
        "--name",
        "lab",
        "--access-tier",
        "full",
    ];
    let out = d
        .run(&args(&lab_flags, &extra_lab), &[], Some(SECRET))
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let extra_prod = ["--clients", "claude-code", "--name", "prod"];
    for _ in 0..2 {
        // The second run updates the same cluster: the entry's list does not grow.
        let out = d
            .run(&args(&prod_flags, &extra_prod), &[], Some(SECRET))
            .await;
        assert!(out.status.success(), "{}", text_of(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("added as a cluster of entry `lab`"),
            "{stdout}"
        );
    }
    let mcp = d.cwd.path().join(".mcp.json");
    let servers = read_json(&mcp)["mcpServers"].clone();
    assert_eq!(
        servers.as_object().unwrap().len(),
        1,
        "one entry: {servers:#}"
    );
    let entry = read_entry(ClientId::ClaudeCode, &mcp, "lab")
        .unwrap()
        .unwrap();
    let folder = d.cwd.path().join(".nandi-proxmox-mcp");
    let expected = format!(
        "{},{}",
        folder.join("lab.json").display(),
        folder.join("prod.json").display()
    );
    assert_eq!(entry.env["NANDI_PROXMOX_CONFIG"], expected);
    assert_eq!(entry.env["PVE_ACCESS_TIER"], "full");
    // prod keeps its own tier in its file.
    assert_eq!(
        read_json(&folder.join("prod.json"))["accessTier"],
        "read-only"
    );

    let out = d.run(&["list"], &[], None).await;
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("read-only (from the file)"), "{listed}");
    assert!(!listed.contains("emulator-secret-token"), "{listed}");

    // doctor as the client entry runs the server: one section per cluster, both GREEN.
    let env = [("NANDI_PROXMOX_CONFIG", expected.as_str())];
    let out = d
        .run(
            &["doctor", "--json", "--check", "nodes,mcp-config"],
            &env,
            None,
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sections = report["instances"].as_array().expect("sections");
    let names: Vec<&str> = sections
        .iter()
        .map(|s| s["instance"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lab", "prod"], "{report:#}");
    assert_eq!(report["status"], "GREEN", "{report:#}");
    // prod down: its section is RED and doctor exits non-zero; lab stays GREEN.
    prod.shutdown().await;
    let out = d
        .run(&["doctor", "--json", "--check", "nodes"], &env, None)
        .await;
    assert!(!out.status.success(), "{}", text_of(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "RED");
    let sections = report["instances"].as_array().unwrap();
    assert_eq!(sections[0]["status"], "GREEN", "{report:#}");
    assert_eq!(sections[1]["status"], "RED", "{report:#}");
}
