//! The two read-only diagnoses of a VM: the guest agent, and boot.
//!
//! Invariant: only reads (the agent ping is a POST that changes nothing); never mounts or
//! opens guest disks; cloud-init content is summarised, never returned (it can hold
//! password hashes and keys). Each finding carries plain advice.

use serde_json::{Value, json};

use super::calls::{Calls, agent_enabled, finding, qemu_path};
use crate::envelope::ToolFailure;
use crate::pve::ApiRequest;
use crate::schema::ValidArgs;

/// What the agent part of both diagnoses learned.
struct AgentCheck {
    enabled: bool,
    ping: Option<Result<(), String>>,
    version: Option<String>,
}

async fn check_agent(
    calls: &mut Calls<'_>,
    base: &str,
    config: &Value,
    running: bool,
    findings: &mut Vec<Value>,
) -> AgentCheck {
    let enabled = agent_enabled(config);
    let mut check = AgentCheck {
        enabled,
        ping: None,
        version: None,
    };
    if !enabled {
        findings.push(finding(
            "warning",
            "The guest agent is disabled in the VM configuration (agent is not 1).",
            "Set agent=1 with pve_qemu_update_config, install and start qemu-guest-agent in the guest, then restart the VM (a reboot from inside is not enough).",
        ));
        return check;
    }
    if !running {
        findings.push(finding(
            "info",
            "The agent is enabled but the VM is not running, so it cannot answer.",
            "Start the VM and try again once it has booted.",
        ));
        return check;
    }
    let ping = calls
        .send(ApiRequest::post(format!("{base}/agent/ping")))
        .await;
    match ping {
        Ok(_) => {
            check.ping = Some(Ok(()));
            if let Ok(info) = calls.try_get(format!("{base}/agent/info")).await {
                check.version = info
                    .pointer("/result/version")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
        }
        Err(e) => {
            findings.push(finding(
                "error",
                format!("The agent is enabled but does not answer a ping: {e}"),
                "Install qemu-guest-agent in the guest and start it (systemctl enable --now qemu-guest-agent); if it was enabled only now, restart the VM so the virtio-serial device exists.",
            ));
            check.ping = Some(Err(e.to_string()));
        }
    }
    check
}

fn agent_json(check: &AgentCheck) -> Value {
    json!({
        "enabled": check.enabled,
        "ping": match &check.ping {
            None => Value::Null,
            Some(Ok(())) => json!("ok"),
            Some(Err(e)) => json!(e),
        },
        "version": check.version,
    })
}

/// `pve_diagnose_qemu_guest_agent`.
pub(super) async fn agent(calls: &mut Calls<'_>, args: &ValidArgs) -> Result<Value, ToolFailure> {
    let base = qemu_path(args)?;
    let config = calls.get(format!("{base}/config")).await?;
    let status = calls.get(format!("{base}/status/current")).await?;
    let running = status.get("status").and_then(Value::as_str) == Some("running");
    let mut findings = Vec::new();
    let check = check_agent(calls, &base, &config, running, &mut findings).await;
    let healthy = check.ping == Some(Ok(()));
    if healthy {
        findings.push(finding(
            "ok",
            "The guest agent answers.",
            "Nothing to do; agent tools (network, OS info, exec) will work.",
        ));
    }
    Ok(json!({
        "healthy": healthy,
        "status": status.get("status"),
        "agent": agent_json(&check),
        "findings": findings,
    }))
}

/// Disk-like keys a boot order may name.
fn is_boot_device(key: &str) -> bool {
    ["scsi", "sata", "ide", "virtio", "net", "efidisk", "nvme"]
        .iter()
        .any(|prefix| {
            key.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// `pve_diagnose_qemu_boot`.
pub(super) async fn boot(calls: &mut Calls<'_>, args: &ValidArgs) -> Result<Value, ToolFailure> {
    let base = qemu_path(args)?;
    let config = calls.get(format!("{base}/config")).await?;
    let status = calls.get(format!("{base}/status/current")).await?;
    let state = status
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let running = state == "running";
    let mut findings = Vec::new();
    if config.get("template").is_some_and(|t| t == 1 || t == "1") {
        findings.push(finding(
            "error",
            "The VM is a template; templates do not boot.",
            "Clone it (pve_qemu_clone) and start the clone.",
        ));
    }
    if let Some(lock) = config.get("lock").and_then(Value::as_str) {
        findings.push(finding("error", format!("The VM is locked ({lock})."), "Wait for the running operation to finish; an operator can clear a stale lock with `qm unlock`."));
    }
    if !running {
        findings.push(finding(
            "info",
            format!("The VM is {state}."),
            "Start it with pve_start_qemu_vm, then read the task log if it fails.",
        ));
    }
    let order: Vec<String> = config
        .get("boot")
        .and_then(Value::as_str)
        .and_then(|b| b.split(',').find_map(|p| p.strip_prefix("order=")))
        .map(|o| o.split(';').map(str::to_owned).collect())
        .unwrap_or_default();
    let devices: Vec<&str> = config
        .as_object()
        .map(|o| {
            o.keys()
                .map(String::as_str)
                .filter(|k| is_boot_device(k))
                .collect()
        })
        .unwrap_or_default();
    if order.is_empty() {
        findings.push(finding(
            "warning",
            "No boot order is set (boot=order=...).",
            "Set boot to \"order=scsi0\" (your system disk first) with pve_qemu_update_config.",
        ));
    }
    for device in &order {
        if !devices.contains(&device.as_str()) {
            findings.push(finding(
                "error",
                format!("The boot order names {device}, which the VM does not have."),
                "Remove it from boot=order=... or add the device.",
            ));
        }
    }
    let first_disk = order.iter().find(|d| !d.starts_with("net"));
    if let Some(first) = first_disk {
        let media = config
            .get(first.as_str())
            .and_then(Value::as_str)
            .unwrap_or_default();
        if media.contains("media=cdrom") && media.starts_with("none") {
            findings.push(finding(
                "warning",
                format!("{first} is an empty CD drive but comes first in the boot order."),
                "Put the system disk first, or insert an ISO.",
            ));
        }
    } else if !order.is_empty() {
        findings.push(finding(
            "warning",
            "The boot order names only network devices.",
            "Add the system disk to boot=order=... unless the VM boots over PXE.",
        ));
    }
    if config.get("bios").and_then(Value::as_str) == Some("ovmf")
        && config.get("efidisk0").is_none()
    {
        findings.push(finding(
            "warning",
            "UEFI (ovmf) without efidisk0: boot entries are not kept across restarts.",
            "Add an EFI disk (efidisk0) with pve_qemu_update_config.",
        ));
    }
    let agent = check_agent(calls, &base, &config, running, &mut findings).await;
    let cloudinit = cloudinit_summary(calls, &base, &config, &mut findings).await;
    if findings
        .iter()
        .all(|f| f["severity"] == "ok" || f["severity"] == "info")
        && running
    {
        findings.push(finding(
            "ok",
            "Nothing in the configuration prevents booting.",
            "If the guest still misbehaves, read its console.",
        ));
    }
    Ok(json!({
        "status": state,
        "boot_order": order,
        "devices": devices,
        "agent": agent_json(&agent),
        "cloudinit": cloudinit,
        "findings": findings,
    }))
}

/// Whether a cloud-init drive exists, and a summary of its generated user and network
/// data (never the text itself).
async fn cloudinit_summary(
    calls: &mut Calls<'_>,
    base: &str,
    config: &Value,
    findings: &mut Vec<Value>,
) -> Value {
    let drive = config.as_object().and_then(|o| {
        o.iter()
            .find(|(k, v)| is_boot_device(k) && v.as_str().is_some_and(|v| v.contains("cloudinit")))
            .map(|(k, _)| k.clone())
    });
    let Some(drive) = drive else {
        return json!({"drive": null});
    };
    let mut summary = json!({"drive": drive});
    for kind in ["user", "network"] {
        let answer = calls
            .send(ApiRequest::get(format!("{base}/cloudinit/dump")).param("type", kind))
            .await;
        match answer {
            Ok(Value::String(text)) => {
                let lines = text.lines().count();
                let valid = kind != "user" || text.starts_with("#cloud-config");
                summary[kind] = json!({"lines": lines, "valid_header": valid});
                if !valid {
                    findings.push(finding(
                        "warning",
                        "The cloud-init user data does not start with #cloud-config.",
                        "Check cicustom user= snippet or the ciuser/sshkeys settings.",
                    ));
                }
            }
            Ok(_) => summary[kind] = json!({"lines": 0}),
            Err(e) => {
                findings.push(finding("warning", format!("The cloud-init {kind} data cannot be generated: {e}"), "Check the cloud-init settings (pve_set_qemu_cloudinit) and any cicustom snippet."));
                summary[kind] = json!({"error": e.to_string()});
            }
        }
    }
    summary
}
