//! Peer-surface endpoints: agent ping, exec status, guest files, node power, PCI mappings,
//! download-url, console proxies, Ceph status and SDN lists, shaped like Proxmox's answers.
//!
//! Invariant: writes change the state later reads see (a written file is read back, a
//! downloaded file is listed, a mapping is listed and gone once deleted); agent endpoints
//! fail like Proxmox's when the agent is disabled or the VM stopped.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::stamps::{digest_of, unix_now};
use super::super::state::GuestKind;
use super::super::state_infra::Volume;
use super::super::state_peer::AgentProcess;
use super::agent_guest::agent_guest;
use super::guest;

/// `POST /nodes/{node}/qemu/{vmid}/agent/ping`.
pub(in super::super) fn ping(call: &mut Call<'_>) -> Result<Value, ApiError> {
    agent_guest(call)?;
    Ok(json!({"result": {}}))
}

/// What the emulated guest prints for an argv: `echo`, `cat <file>` (files written via
/// file-write), `cat` (stdin), `false`, `sleep N`, `sh -c "<echo …>; exit N"`; anything else
/// is "not found" with 127.
fn simulate(
    vmid: u32,
    argv: &[String],
    input: Option<&str>,
    files: &super::super::state_peer::PeerState,
) -> (i64, String, String, Duration) {
    let program = argv.first().map(String::as_str).unwrap_or_default();
    let name = program.rsplit('/').next().unwrap_or(program);
    match name {
        "echo" => (
            0,
            format!("{}\n", argv[1..].join(" ")),
            String::new(),
            Duration::ZERO,
        ),
        "true" => (0, String::new(), String::new(), Duration::ZERO),
        "false" => (1, String::new(), String::new(), Duration::ZERO),
        "cat" if argv.len() == 1 => (
            0,
            input.unwrap_or_default().to_owned(),
            String::new(),
            Duration::ZERO,
        ),
        "cat" => match files.files.get(&(vmid, argv[1].clone())) {
            Some(content) => (0, content.clone(), String::new(), Duration::ZERO),
            None => (
                1,
                String::new(),
                format!("cat: {}: No such file or directory\n", argv[1]),
                Duration::ZERO,
            ),
        },
        "sleep" => {
            let secs: f64 = argv.get(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
            (
                0,
                String::new(),
                String::new(),
                Duration::from_secs_f64(secs.clamp(0.0, 3600.0)),
            )
        }
        "yes" => (0, "y\n".repeat(100_000), String::new(), Duration::ZERO),
        "sh" if argv.get(1).map(String::as_str) == Some("-c") => {
            // `echo out; echo err >&2; exit 3` style scripts.
            let script = argv.get(2).cloned().unwrap_or_default();
            let (mut out, mut err, mut code) = (String::new(), String::new(), 0);
            for part in script.split(';').map(str::trim) {
                if let Some(rest) = part.strip_prefix("echo ") {
                    match rest.strip_suffix(" >&2") {
                        Some(text) => err.push_str(&format!("{text}\n")),
                        None => out.push_str(&format!("{rest}\n")),
                    }
                } else if let Some(n) = part.strip_prefix("exit ") {
                    code = n.trim().parse().unwrap_or(1);
                }
            }
            (code, out, err, Duration::ZERO)
        }
        _ => (
            127,
            String::new(),
            format!("sh: 1: {program}: not found\n"),
            Duration::ZERO,
        ),
    }
}

/// Records the process `agent/exec` started (called by `agent::exec`).
pub(in super::super) fn record_exec(call: &mut Call<'_>, pid: u32, argv: &[String]) {
    let vmid = call.vmid();
    let input = call.str("input-data").map(str::to_owned);
    let (exitcode, stdout, stderr, runtime) = simulate(vmid, argv, input.as_deref(), &call.st.peer);
    call.st.peer.processes.insert(
        pid,
        AgentProcess {
            vmid,
            started: Instant::now(),
            runtime,
            exitcode,
            stdout,
            stderr,
        },
    );
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/exec-status?pid=`.
pub(in super::super) fn exec_status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let vmid = agent_guest(call)?.vmid;
    let pid = call.int("pid").unwrap_or(-1);
    let process = u32::try_from(pid)
        .ok()
        .and_then(|pid| call.st.peer.processes.get(&pid))
        .filter(|p| p.vmid == vmid)
        .ok_or_else(|| ApiError::server(format!("Agent error: Invalid parameter 'pid' ({pid})")))?;
    if process.started.elapsed() < process.runtime {
        return Ok(json!({"exited": 0}));
    }
    let mut out = json!({"exited": 1, "exitcode": process.exitcode});
    // Proxmox's agent caps each stream (16 MiB there; 64 KiB here so tests can see it).
    for (key, text, flag) in [
        ("out-data", &process.stdout, "out-truncated"),
        ("err-data", &process.stderr, "err-truncated"),
    ] {
        if text.is_empty() {
            continue;
        }
        if text.len() > 65_536 {
            out[key] = json!(&text[..65_536]);
            out[flag] = json!(1);
        } else {
            out[key] = json!(text);
        }
    }
    Ok(out)
}

/// `GET /nodes/{node}/qemu/{vmid}/agent/file-read?file=`.
pub(in super::super) fn file_read(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let vmid = agent_guest(call)?.vmid;
    let file = call.str("file").unwrap_or_default().to_owned();
    match call.st.peer.files.get(&(vmid, file.clone())) {
        Some(content) => Ok(json!({"content": content, "bytes-read": content.len()})),
        None => Err(ApiError::server(format!(
            "Agent error: Failed to open file '{file}': No such file or directory"
        ))),
    }
}

/// `POST /nodes/{node}/qemu/{vmid}/agent/file-write`.
pub(in super::super) fn file_write(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let vmid = agent_guest(call)?.vmid;
    let file = call.str("file").unwrap_or_default().to_owned();
    let content = call.str("content").unwrap_or_default().to_owned();
    // encode=0: the content is already base64 and is decoded by the agent.
    let text = if call.str("encode").is_some() && !call.flag("encode") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(content.as_bytes())
            .map_err(|_| ApiError::param("content", "value is not base64"))?;
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        content
    };
    call.st.peer.files.insert((vmid, file), text);
    Ok(Value::Null)
}

/// `POST /nodes/{node}/status` (reboot/shutdown): recorded, nothing else happens.
pub(in super::super) fn node_power(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node").to_owned();
    let command = call.str("command").unwrap_or_default().to_owned();
    call.st.peer.power_requests.push((node, command));
    Ok(Value::Null)
}

fn mapping_id(call: &Call<'_>) -> String {
    call.cap("id").to_owned()
}

fn no_mapping(id: &str) -> ApiError {
    ApiError::server(format!("PCI mapping '{id}' does not exist"))
}

/// `GET /cluster/mapping/pci`.
pub(in super::super) fn pci_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let check = call.str("check-node").map(str::to_owned);
    Ok(Value::Array(
        call.st
            .peer
            .pci_mappings
            .values()
            .map(|m| {
                let mut row = m.clone();
                if check.is_some() {
                    row["checks"] = json!([]);
                }
                row
            })
            .collect(),
    ))
}

/// `GET /cluster/mapping/pci/{id}`.
pub(in super::super) fn pci_get(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = mapping_id(call);
    call.st
        .peer
        .pci_mappings
        .get(&id)
        .cloned()
        .ok_or_else(|| no_mapping(&id))
}

fn apply_mapping_fields(call: &Call<'_>, row: &mut Value) {
    let maps: Vec<&str> = call.all("map");
    if !maps.is_empty() {
        row["map"] = json!(maps);
    }
    if let Some(d) = call.str("description") {
        row["description"] = json!(d);
    }
    for flag in ["mdev", "live-migration-capable"] {
        if call.str(flag).is_some() {
            row[flag] = json!(u8::from(call.flag(flag)));
        }
    }
    let digest = digest_of(&row.to_string());
    row["digest"] = json!(digest);
}

/// `POST /cluster/mapping/pci`.
pub(in super::super) fn pci_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = call.str("id").unwrap_or_default().to_owned();
    if call.st.peer.pci_mappings.contains_key(&id) {
        return Err(ApiError::server(format!(
            "PCI mapping '{id}' already exists"
        )));
    }
    let mut row = json!({"id": id, "type": "pci"});
    apply_mapping_fields(call, &mut row);
    call.st.peer.pci_mappings.insert(id, row);
    Ok(Value::Null)
}

/// `PUT /cluster/mapping/pci/{id}`.
pub(in super::super) fn pci_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = mapping_id(call);
    let mut row = call
        .st
        .peer
        .pci_mappings
        .get(&id)
        .cloned()
        .ok_or_else(|| no_mapping(&id))?;
    if let Some(digest) = call.str("digest")
        && row["digest"] != digest
    {
        return Err(ApiError::server(
            "detected modified configuration - file changed by other user? Try again.",
        ));
    }
    if let Some(keys) = call.str("delete") {
        for key in keys.split(',') {
            if let Some(obj) = row.as_object_mut() {
                obj.remove(key.trim());
            }
        }
    }
    apply_mapping_fields(call, &mut row);
    call.st.peer.pci_mappings.insert(id, row);
    Ok(Value::Null)
}

/// `DELETE /cluster/mapping/pci/{id}`.
pub(in super::super) fn pci_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = mapping_id(call);
    call.st
        .peer
        .pci_mappings
        .remove(&id)
        .map(|_| Value::Null)
        .ok_or_else(|| no_mapping(&id))
}

/// `POST /nodes/{node}/storage/{storage}/download-url`: a task, and the file is listed.
pub(in super::super) fn download_url(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node").to_owned();
    let storage = call.cap("storage").to_owned();
    let Some(s) = call.st.storages.iter().find(|s| s.id == storage) else {
        return Err(ApiError::server(format!(
            "storage '{storage}' does not exist"
        )));
    };
    let content = call.str("content").unwrap_or("iso").to_owned();
    if !s.content.split(',').any(|c| c == content) {
        return Err(ApiError::server(format!(
            "storage '{storage}' does not support content type '{content}'"
        )));
    }
    let filename = call.str("filename").unwrap_or_default().to_owned();
    let format = filename.rsplit('.').next().unwrap_or("raw").to_owned();
    call.st.infra.volumes.push(Volume {
        storage: storage.clone(),
        volid: format!("{storage}:{content}/{filename}"),
        content,
        format,
        size: 1_048_576,
        vmid: None,
        ctime: unix_now(),
        notes: None,
        verification: None,
        protected: false,
    });
    Ok(json!(
        call.st.spawn_task(&node, "download", &storage, "download")
    ))
}

/// `POST /nodes/{node}/{qemu|lxc}/{vmid}/{vncproxy|termproxy}`.
pub(in super::super) fn console(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let vmid = guest(call, kind)?.vmid;
    let user = call.st.caller.clone();
    let ticket = format!(
        "PVEVNC:{:08X}::{}",
        unix_now(),
        digest_of(&format!("{vmid}{}", unix_now()))
    );
    let upid = call.st.spawn_task(
        call.cap("node").to_owned().as_str(),
        "vncproxy",
        &vmid.to_string(),
        "console",
    );
    Ok(
        json!({"port": "5900", "ticket": ticket, "user": user, "upid": upid, "cert": "-----BEGIN CERTIFICATE-----\n"}),
    )
}

/// QEMU console.
pub(in super::super) fn qemu_console(call: &mut Call<'_>) -> Result<Value, ApiError> {
    console(call, GuestKind::Qemu)
}

/// LXC console.
pub(in super::super) fn lxc_console(call: &mut Call<'_>) -> Result<Value, ApiError> {
    console(call, GuestKind::Lxc)
}

/// `GET /cluster/ceph/status`: a healthy three-monitor Ceph.
pub(in super::super) fn ceph_status(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let mons: Vec<Value> = call
        .st
        .nodes
        .iter()
        .map(|n| json!({"name": n.name, "addr": format!("{}:6789/0", n.ip)}))
        .collect();
    Ok(json!({
        "health": {"status": "HEALTH_OK", "checks": {}},
        "fsid": "3a4f1c2e-6b7d-4e8f-9a0b-1c2d3e4f5a6b",
        "monmap": {"mons": mons},
        "osdmap": {"num_osds": 3, "num_up_osds": 3, "num_in_osds": 3},
        "pgmap": {"num_pgs": 129, "bytes_used": 12_884_901_888u64, "bytes_total": 3_221_225_472_000u64,
                  "pgs_by_state": [{"state_name": "active+clean", "count": 129}]},
    }))
}

/// `GET /cluster/sdn/zones`.
pub(in super::super) fn sdn_zones(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let zones = [
        json!({"zone": "localnet", "type": "simple", "ipam": "pve", "state": "applied"}),
        json!({"zone": "vlanzone", "type": "vlan", "bridge": "vmbr0", "ipam": "pve", "state": "applied"}),
    ];
    let wanted = call.str("type");
    Ok(Value::Array(
        zones
            .into_iter()
            .filter(|z| wanted.is_none_or(|t| z["type"] == t))
            .collect(),
    ))
}

/// `GET /cluster/sdn/vnets`.
pub(in super::super) fn sdn_vnets(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(json!([
        {"vnet": "vnet10", "zone": "vlanzone", "tag": 10, "type": "vnet"},
        {"vnet": "local1", "zone": "localnet", "type": "vnet"}
    ]))
}
