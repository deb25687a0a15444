//! Template, cloud-init, guest-agent and restore tools through the built binary against
//! the emulator: the content filters and the template filter really filter, `sshkeys` is
//! double-encoded on the wire, `command` goes out as an argv array, LXC restore uses
//! `ostemplate` + `restore=1`.

use crate::common;

use common::guests::{assert_request, call, fails, ok, pairs, start, wait_task};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_cloudinit_agent_and_restores() {
    let (emu, mut mcp) = start().await;
    let (isos, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_iso_images",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/storage/local/content",
        &[("content", "iso")],
        &[],
    );
    assert!(!isos.as_array().unwrap().is_empty());
    assert!(
        isos.as_array()
            .unwrap()
            .iter()
            .all(|v| v["content"] == "iso")
    );
    let (tmpls, req) = ok(
        &mut mcp,
        &emu,
        "pve_list_storage_templates",
        json!({"node": "pve01", "storage": "local"}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/storage/local/content",
        &[("content", "vztmpl")],
        &[],
    );
    assert!(
        tmpls
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["content"] == "vztmpl")
    );
    // `content` is fixed: a client cannot widen the list.
    let (_, requests) = fails(
        &mut mcp,
        &emu,
        "pve_list_iso_images",
        json!({"node": "pve01", "storage": "local", "content": "backup"}),
        "TOOL_INPUT_REJECTED",
    )
    .await;
    assert!(requests.is_empty());

    let (templates, _) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_templates",
        json!({"node": "pve01"}),
    )
    .await;
    let (vms, _) = ok(
        &mut mcp,
        &emu,
        "pve_list_qemu_vms",
        json!({"node": "pve01"}),
    )
    .await;
    assert_eq!(
        vms.as_array().unwrap().len(),
        2,
        "pve01 has VM 101 and template 9000"
    );
    assert_eq!(templates.as_array().unwrap().len(), 1);
    assert_eq!(templates[0]["vmid"], 9000);

    // sshkeys: percent-encoded before the form layer, so Proxmox decodes it once from
    // the form and once from `format: urlencoded`.
    let keys =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOk+x/y= ops@example.com\nssh-rsa AAAAB3Nz other@host";
    let (data, req) = ok(
        &mut mcp,
        &emu,
        "pve_set_qemu_cloudinit",
        json!({"node": "pve01", "vmid": 101, "ciuser": "ops", "cipassword": "s3cret-pw",
               "sshkeys": keys, "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1",
               "nameserver": "1.1.1.1", "confirm": true}),
    )
    .await;
    assert_eq!(data, Value::Null);
    let encoded = "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIOk%2Bx%2Fy%3D%20ops%40example.com%0Assh-rsa%20AAAAB3Nz%20other%40host";
    assert_request(
        &req,
        "PUT",
        "/nodes/pve01/qemu/101/config",
        &[],
        &[
            ("ciuser", "ops"),
            ("cipassword", "s3cret-pw"),
            ("sshkeys", encoded),
            ("ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1"),
            ("nameserver", "1.1.1.1"),
        ],
    );
    let (dump, req) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_request(
        &req,
        "GET",
        "/nodes/pve01/qemu/101/cloudinit/dump",
        &[("type", "user")],
        &[],
    );
    let dump = dump.as_str().unwrap();
    assert!(
        dump.contains("  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOk+x/y= ops@example.com\n"),
        "{dump}"
    );
    assert!(dump.contains("  - ssh-rsa AAAAB3Nz other@host\n"), "{dump}");
    assert!(dump.contains("user: ops"));
    let (network, req) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101, "type": "network"}),
    )
    .await;
    assert_eq!(req.query, vec![("type".to_owned(), "network".to_owned())]);
    assert!(network.as_str().unwrap().contains("address: '10.0.0.5/24'"));

    // Guest agent (VM 101: agent=1, running).
    for (tool, path) in [
        ("pve_get_qemu_agent_info", "info"),
        ("pve_get_qemu_agent_network", "network-get-interfaces"),
        ("pve_get_qemu_agent_osinfo", "get-osinfo"),
        ("pve_get_qemu_agent_fsinfo", "get-fsinfo"),
    ] {
        let (data, req) = ok(&mut mcp, &emu, tool, json!({"node": "pve01", "vmid": 101})).await;
        assert_request(
            &req,
            "GET",
            &format!("/nodes/pve01/qemu/101/agent/{path}"),
            &[],
            &[],
        );
        assert!(data.get("result").is_some(), "{tool}: {data}");
    }
    // VM 102 is stopped; template 9000 has the agent but VM 102's node is pve03 — ask
    // a VM without the agent enabled: Proxmox's message and the agent error code.
    ok(
        &mut mcp,
        &emu,
        "pve_qemu_update_config",
        json!({"node": "pve03", "vmid": 102, "agent": "0", "confirm": true}),
    )
    .await;
    let (error, _) = fails(
        &mut mcp,
        &emu,
        "pve_get_qemu_agent_info",
        json!({"node": "pve03", "vmid": 102}),
        "QEMU_GUEST_AGENT_UNAVAILABLE",
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("No QEMU guest agent configured")
    );

    // The exec is followed through agent/exec-status to its output.
    let (env, requests) = call(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "command": ["echo", "-la", "/var/log"], "confirm": true}),
    )
    .await;
    assert_eq!(env["ok"], true, "{env}");
    let req = &requests[0];
    assert_request(
        req,
        "POST",
        "/nodes/pve01/qemu/101/agent/exec",
        &[],
        &[
            ("command", "echo"),
            ("command", "-la"),
            ("command", "/var/log"),
        ],
    );
    assert_eq!(
        req.form[0],
        ("command".to_owned(), "echo".to_owned()),
        "argv order kept"
    );
    assert_eq!(requests[1].path, "/nodes/pve01/qemu/101/agent/exec-status");
    assert_eq!(env["data"]["stdout"], "-la /var/log\n");
    assert_eq!(env["data"]["exitcode"], 0);
    // The reference's string form still works: split on whitespace.
    let (_, requests) = call(
        &mut mcp,
        &emu,
        "pve_exec_qemu_guest_command",
        json!({"node": "pve01", "vmid": 101, "command": "uptime -p", "confirm": true}),
    )
    .await;
    assert_eq!(
        pairs(&requests[0].form),
        [("command", "uptime"), ("command", "-p")]
    );

    // Restores: QEMU sends `archive`; LXC sends the schema's ostemplate + restore=1.
    let archive = "local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst";
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_restore_qemu_backup",
        json!({"node": "pve01", "vmid": 160, "archive": archive, "storage": "local-lvm",
               "unique": true, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/qemu",
        &[],
        &[
            ("vmid", "160"),
            ("archive", archive),
            ("storage", "local-lvm"),
            ("unique", "1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_qemu_config",
        json!({"node": "pve01", "vmid": 160}),
    )
    .await;
    assert_eq!(config["name"], "vm-web");
    // `unique`: the restored copy does not share the original's MAC address.
    let net0 = config["net0"].as_str().unwrap();
    assert!(
        net0.starts_with("virtio=BC:24:11:") && !net0.contains("1A:01:01"),
        "{net0}"
    );
    let ct_archive = "local:backup/vzdump-lxc-201-2025_11_23-01_00_41.tar.zst";
    let (upid, req) = ok(
        &mut mcp,
        &emu,
        "pve_restore_lxc_backup",
        json!({"node": "pve01", "vmid": 260, "archive": ct_archive, "confirm": true}),
    )
    .await;
    assert_request(
        &req,
        "POST",
        "/nodes/pve01/lxc",
        &[],
        &[
            ("vmid", "260"),
            ("ostemplate", ct_archive),
            ("restore", "1"),
        ],
    );
    wait_task(&mut mcp, &upid).await;
    let (config, _) = ok(
        &mut mcp,
        &emu,
        "pve_get_lxc_config",
        json!({"node": "pve01", "vmid": 260}),
    )
    .await;
    assert_eq!(config["hostname"], "ct-docker");
    // Restoring over an existing guest needs `force`.
    let (error, _) = fails(
        &mut mcp,
        &emu,
        "pve_restore_lxc_backup",
        json!({"node": "pve01", "vmid": 260, "archive": ct_archive, "confirm": true}),
        "PROXMOX_SERVER_ERROR",
    )
    .await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );
    assert!(mcp.shutdown().await.success());
}
