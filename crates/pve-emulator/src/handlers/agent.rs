//! QEMU guest-agent endpoints (info, network interfaces, OS info, filesystems, exec) and
//! the cloud-init dump, shaped like Proxmox's answers.
//!
//! Invariant: the agent answers only for a running VM whose configuration enables it;
//! otherwise the error is Proxmox's ("No QEMU guest agent configured", "VM n is not
//! running"). The cloud-init dump is derived from the stored configuration, with
//! `sshkeys` decoded as Proxmox decodes its `urlencoded` value.

use percent_encoding::percent_decode_str;
use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::GuestKind;
use super::agent_guest::agent_guest;
use super::guest;

/// `GET /nodes/{node}/qemu/{vmid}/agent/info`.
pub(in super::super) fn info(call: &mut Call<'_>) -> Result<Value, ApiError> {
    agent_guest(call)?;
    let commands: Vec<Value> = [
        "guest-exec",
        "guest-exec-status",
        "guest-get-fsinfo",
        "guest-get-osinfo",
        "guest-info",
        "guest-network-get-interfaces",
        "guest-ping",
        "guest-shutdown",
    ]
    .iter()
    .map(|name| json!({"name": name, "enabled": true, "success-response": true}))
    .collect();
    Ok(json!({"result": {"version": "9.1.0", "supported_commands": commands}}))
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces`.
pub(in super::super) fn network(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let g = agent_guest(call)?;
    let mac = g
        .config
        .get("net0")
        .and_then(Value::as_str)
        .and_then(|net| net.split(',').next())
        .and_then(|model| {
            model
                .split_once('=')
                .map(|(_, mac)| mac.to_ascii_lowercase())
        })
        .unwrap_or_else(|| "bc:24:11:00:00:00".into());
    let last = g.vmid % 200 + 20;
    Ok(json!({"result": [
        {
            "name": "lo",
            "hardware-address": "00:00:00:00:00:00",
            "ip-addresses": [
                {"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8},
                {"ip-address": "::1", "ip-address-type": "ipv6", "prefix": 128}
            ]
        },
        {
            "name": "eth0",
            "hardware-address": mac,
            "ip-addresses": [
                {"ip-address": format!("192.168.10.{last}"), "ip-address-type": "ipv4", "prefix": 24}
            ],
            "statistics": {"rx-bytes": 1_048_576, "tx-bytes": 524_288, "rx-packets": 1024, "tx-packets": 512, "rx-errs": 0, "tx-errs": 0, "rx-dropped": 0, "tx-dropped": 0}
        }
    ]}))
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/get-osinfo`.
pub(in super::super) fn osinfo(call: &mut Call<'_>) -> Result<Value, ApiError> {
    agent_guest(call)?;
    Ok(json!({"result": {
        "id": "debian",
        "name": "Debian GNU/Linux",
        "pretty-name": "Debian GNU/Linux 12 (bookworm)",
        "version": "12 (bookworm)",
        "version-id": "12",
        "kernel-release": "6.1.0-28-amd64",
        "kernel-version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1",
        "machine": "x86_64"
    }}))
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/get-fsinfo`.
pub(in super::super) fn fsinfo(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let g = agent_guest(call)?;
    let total = g.maxdisk.saturating_sub(1_073_741_824);
    Ok(json!({"result": [{
        "name": "sda1",
        "mountpoint": "/",
        "type": "ext4",
        "total-bytes": total,
        "used-bytes": total / 3,
        "disk": [{"bus-type": "scsi", "bus": 0, "target": 0, "unit": 0, "dev": "/dev/sda1",
                  "pci-controller": {"domain": 0, "bus": 9, "slot": 1, "function": 0}}]
    }]}))
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/exec`: starts the argv, returns `{pid}`.
pub(in super::super) fn exec(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let argv: Vec<String> = call.all("command").into_iter().map(str::to_owned).collect();
    if argv.iter().all(|a| a.is_empty()) {
        return Err(ApiError::param(
            "command",
            "property is missing and it is not optional",
        ));
    }
    agent_guest(call)?;
    call.st.last_pid = call.st.last_pid.wrapping_add(7);
    let pid = call.st.last_pid % 100_000;
    super::peer::record_exec(call, pid, &argv);
    Ok(json!({"pid": pid}))
}

/// `GET /nodes/{node}/qemu/{vmid}/cloudinit/dump?type=user|network|meta`.
pub(in super::super) fn cloudinit_dump(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let kind = call.str("type").unwrap_or("user").to_string();
    let g = guest(call, GuestKind::Qemu)?;
    let get = |key: &str| g.config.get(key).and_then(Value::as_str).map(str::to_owned);
    let text = match kind.as_str() {
        "user" => {
            let mut text = format!(
                "#cloud-config\nhostname: {}\nmanage_etc_hosts: true\nfqdn: {}\n",
                g.name(),
                g.name()
            );
            if let Some(user) = get("ciuser") {
                text.push_str(&format!("user: {user}\n"));
            }
            if let Some(hash) = get("cipassword") {
                text.push_str(&format!("password: {hash}\n"));
            }
            if let Some(keys) = get("sshkeys") {
                let decoded = percent_decode_str(&keys).decode_utf8_lossy().into_owned();
                text.push_str("ssh_authorized_keys:\n");
                for key in decoded.lines().filter(|l| !l.trim().is_empty()) {
                    text.push_str(&format!("  - {key}\n"));
                }
            }
            text.push_str(
                "chpasswd:\n  expire: False\nusers:\n  - default\npackage_upgrade: true\n",
            );
            text
        }
        "network" => {
            let mut text = String::from("version: 1\nconfig:\n");
            for n in 0..32 {
                let Some(net) = get(&format!("net{n}")) else {
                    continue;
                };
                let mac = net
                    .split(',')
                    .next()
                    .and_then(|m| m.split_once('=').map(|(_, mac)| mac.to_ascii_lowercase()))
                    .unwrap_or_default();
                let ip = get(&format!("ipconfig{n}")).unwrap_or_else(|| "ip=dhcp".into());
                let subnet = if ip.contains("ip=dhcp") || !ip.contains("ip=") {
                    "      - type: dhcp4\n".to_string()
                } else {
                    let addr = ip
                        .split(',')
                        .find_map(|p| p.strip_prefix("ip="))
                        .unwrap_or_default();
                    let mut s = format!("      - type: static\n        address: '{addr}'\n");
                    if let Some(gw) = ip.split(',').find_map(|p| p.strip_prefix("gw=")) {
                        s.push_str(&format!("        gateway: '{gw}'\n"));
                    }
                    s
                };
                text.push_str(&format!(
                    "    - type: physical\n      name: eth{n}\n      mac_address: '{mac}'\n      subnets:\n{subnet}"
                ));
            }
            if let Some(ns) = get("nameserver") {
                text.push_str(&format!(
                    "    - type: nameserver\n      address:\n      - '{ns}'\n"
                ));
            }
            text
        }
        _ => format!("instance-id: {}\n", g.digest()),
    };
    Ok(Value::String(text))
}
