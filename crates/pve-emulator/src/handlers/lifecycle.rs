//! Guest lifecycle endpoints: create (and restore, which Proxmox routes through create),
//! destroy, clone and migrate, for QEMU and LXC.
//!
//! Invariant: each either fails with Proxmox's message and changes nothing, or changes
//! the state at once and returns the UPID of a new task (whose status later reads "OK").
//! VMIDs stay unique across QEMU and LXC; a migrated guest lives on the target node.

use std::time::Instant;

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::stamps::unix_now;
use super::super::state::{Guest, GuestKind, Power};
use super::guest;
use super::guest_config::{apply_params, mac_for};

/// The node-name check the dispatcher does for `{node}`, for a `target` parameter.
fn check_target(call: &Call<'_>, target: &str) -> Result<(), ApiError> {
    if call.st.node(target).is_none() {
        return Err(ApiError::param(
            "target",
            format!("no such cluster node '{target}'"),
        ));
    }
    Ok(())
}

fn exists_error(kind: GuestKind, action: &str, vmid: u32, node: &str) -> ApiError {
    ApiError::server(format!(
        "unable to {action} {} {vmid} - VM {vmid} already exists on node '{node}'",
        kind.label()
    ))
}

/// A fresh stopped guest with the given configuration.
fn new_guest(kind: GuestKind, vmid: u32, node: &str, config: Map<String, Value>) -> Guest {
    Guest {
        vmid,
        kind,
        node: node.to_string(),
        power: Power::Stopped,
        started: None,
        uptime_offset: 0,
        maxdisk: match kind {
            GuestKind::Qemu => 34_359_738_368,
            GuestKind::Lxc => 8_589_934_592,
        },
        pool: None,
        config,
        snapshots: Vec::new(),
    }
}

/// Inserts a guest, keeping the vmid order.
fn insert_guest(call: &mut Call<'_>, mut g: Guest, start: bool, pool: Option<&str>) {
    if start {
        g.power = Power::Running;
        g.started = Some(Instant::now());
    }
    g.pool = pool.map(str::to_owned);
    call.st.guests.push(g);
    call.st.guests.sort_by_key(|g| g.vmid);
}

/// The configuration a backup archive restores: the original guest's if it still
/// exists (the emulator keeps no archive contents), else a minimal one.
fn restored_config(
    call: &Call<'_>,
    kind: GuestKind,
    archive: &str,
) -> Result<Map<String, Value>, ApiError> {
    let volume = call
        .st
        .infra
        .volumes
        .iter()
        .find(|v| v.volid == archive && v.content == "backup")
        .ok_or_else(|| ApiError::server(format!("volume '{archive}' does not exist")))?;
    let expected = match kind {
        GuestKind::Qemu => "qemu",
        GuestKind::Lxc => "lxc",
    };
    if volume.backup_subtype() != expected {
        return Err(ApiError::server(format!(
            "archive '{archive}' is not a {expected} backup"
        )));
    }
    let source = volume.vmid.unwrap_or(0);
    let original = call
        .st
        .guests
        .iter()
        .find(|g| g.vmid == source && g.kind == kind)
        .map(|g| g.config.clone());
    Ok(original.unwrap_or_else(|| {
        let mut config = Map::new();
        config.insert("memory".into(), json!(512));
        config
    }))
}

/// `unique` restores get new MAC addresses (QEMU `model=<MAC>`, LXC `hwaddr=<MAC>`).
fn renew_macs(config: &mut Map<String, Value>, kind: GuestKind, vmid: u32) {
    for (key, value) in config.iter_mut() {
        let is_net = key
            .strip_prefix("net")
            .is_some_and(|n| n.parse::<u8>().is_ok());
        let Some(text) = value.as_str().filter(|_| is_net) else {
            continue;
        };
        let mac = mac_for(vmid, key);
        let renewed: Vec<String> = text
            .split(',')
            .enumerate()
            .map(|(i, part)| match (kind, part.split_once('=')) {
                (GuestKind::Qemu, Some((model, _))) if i == 0 => format!("{model}={mac}"),
                (GuestKind::Lxc, Some(("hwaddr", _))) => format!("hwaddr={mac}"),
                _ => part.to_owned(),
            })
            .collect();
        *value = json!(renewed.join(","));
    }
}

fn create(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let vmid = u32::try_from(call.int("vmid").unwrap_or(0)).unwrap_or(0);
    let force = call.flag("force");
    let archive = match kind {
        GuestKind::Qemu => call.str("archive").map(str::to_owned),
        GuestKind::Lxc if call.flag("restore") => call.str("ostemplate").map(str::to_owned),
        GuestKind::Lxc => None,
    };
    let action = if archive.is_some() {
        "restore"
    } else {
        "create"
    };
    if let Some(existing) = call.st.guests.iter().find(|g| g.vmid == vmid) {
        if archive.is_none() || !force || existing.kind != kind || existing.node != node {
            return Err(exists_error(kind, action, vmid, &existing.node.clone()));
        }
        if existing.is_running() {
            return Err(ApiError::server(format!(
                "unable to restore {} {vmid} - it is running",
                kind.label()
            )));
        }
    }
    let mut config = match &archive {
        Some(archive) => restored_config(call, kind, archive)?,
        None => Map::new(),
    };
    if archive.is_some() && call.flag("unique") {
        renew_macs(&mut config, kind, vmid);
    }
    if archive.is_none() {
        match kind {
            GuestKind::Qemu => {
                config.insert(
                    "meta".into(),
                    json!(format!("creation-qemu=10.0.2,ctime={}", unix_now())),
                );
                config.insert(
                    "smbios1".into(),
                    json!(format!("uuid=6b1f3c2e-{vmid:04}-4c1d-9a01-{vmid:012}")),
                );
            }
            GuestKind::Lxc => {
                let template = call.str("ostemplate").unwrap_or_default().to_string();
                if !call
                    .st
                    .infra
                    .volumes
                    .iter()
                    .any(|v| v.volid == template && v.content == "vztmpl")
                {
                    return Err(ApiError::server(format!(
                        "volume '{template}' does not exist"
                    )));
                }
                let ostype = [
                    "debian",
                    "ubuntu",
                    "alpine",
                    "centos",
                    "fedora",
                    "archlinux",
                ]
                .into_iter()
                .find(|os| template.contains(os))
                .unwrap_or("unmanaged");
                config.insert("ostype".into(), json!(ostype));
                config.insert("arch".into(), json!("amd64"));
                config.insert("memory".into(), json!(512));
                config.insert("swap".into(), json!(512));
                // Proxmox's default root disk: 4 GiB on `storage`.
                if call.str("rootfs").is_none() {
                    let storage = call.str("storage").unwrap_or("local-lvm");
                    config.insert(
                        "rootfs".into(),
                        json!(format!("{storage}:vm-{vmid}-disk-0,size=4G")),
                    );
                }
            }
        }
    }
    let params: Vec<(String, String)> = call.params().to_vec();
    apply_params(call.st, &mut config, kind, vmid, &params)?;
    config.remove("template");
    call.st.guests.retain(|g| g.vmid != vmid);
    let start = call.flag("start");
    let pool = call.str("pool").map(str::to_owned);
    insert_guest(
        call,
        new_guest(kind, vmid, &node, config),
        start,
        pool.as_deref(),
    );
    let word = match (kind, action) {
        (GuestKind::Qemu, "create") => "qmcreate",
        (GuestKind::Qemu, _) => "qmrestore",
        (GuestKind::Lxc, "create") => "vzcreate",
        (GuestKind::Lxc, _) => "vzrestore",
    };
    Ok(Value::String(call.st.spawn_task(
        &node,
        word,
        &vmid.to_string(),
        &format!("{action} {} {vmid}", kind.label()),
    )))
}

/// `POST /nodes/{node}/qemu`: create, or restore when `archive` is given.
pub(in super::super) fn qemu_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    create(call, GuestKind::Qemu)
}

/// `POST /nodes/{node}/lxc`: create, or restore with `restore=1` + `ostemplate=<backup>`.
pub(in super::super) fn lxc_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    create(call, GuestKind::Lxc)
}

fn destroy(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let force = kind == GuestKind::Lxc && call.flag("force");
    let g = guest(call, kind)?;
    let vmid = g.vmid;
    if g.config.get("protection").and_then(Value::as_u64) == Some(1) {
        return Err(ApiError::server(format!(
            "can't remove {} {vmid} - protection mode enabled",
            kind.label()
        )));
    }
    if g.is_running() && !force {
        return Err(ApiError::server(format!(
            "{} {vmid} is running - destroy failed",
            kind.label()
        )));
    }
    call.st.guests.retain(|g| g.vmid != vmid);
    let word = match kind {
        GuestKind::Qemu => "qmdestroy",
        GuestKind::Lxc => "vzdestroy",
    };
    Ok(Value::String(call.st.spawn_task(
        &node,
        word,
        &vmid.to_string(),
        &format!("destroy {} {vmid}", kind.label()),
    )))
}

/// `DELETE /nodes/{node}/qemu/{vmid}`.
pub(in super::super) fn qemu_destroy(call: &mut Call<'_>) -> Result<Value, ApiError> {
    destroy(call, GuestKind::Qemu)
}

/// `DELETE /nodes/{node}/lxc/{vmid}`.
pub(in super::super) fn lxc_destroy(call: &mut Call<'_>) -> Result<Value, ApiError> {
    destroy(call, GuestKind::Lxc)
}

fn clone(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let newid = u32::try_from(call.int("newid").unwrap_or(0)).unwrap_or(0);
    let target = call.str("target").unwrap_or(&node).to_string();
    check_target(call, &target)?;
    let name_key = match kind {
        GuestKind::Qemu => "name",
        GuestKind::Lxc => "hostname",
    };
    let new_name = call.str(name_key).map(str::to_owned);
    let snapname = call.str("snapname").map(str::to_owned);
    let full = call.flag("full");
    if let Some(existing) = call.st.guests.iter().find(|g| g.vmid == newid) {
        return Err(exists_error(
            kind,
            "clone to",
            newid,
            &existing.node.clone(),
        ));
    }
    let g = guest(call, kind)?;
    let vmid = g.vmid;
    // A linked clone needs the template's base volumes on shared storage to cross nodes.
    if g.is_template() && !full && target != node {
        return Err(ApiError::server(
            "Can't clone to other node - linked clone requires shared storage",
        ));
    }
    let mut config = match &snapname {
        None => g.config.clone(),
        Some(snap) => g
            .snapshots
            .iter()
            .find(|s| &s.name == snap)
            .map(|s| s.config.clone())
            .ok_or_else(|| ApiError::server(format!("snapshot '{snap}' does not exist")))?,
    };
    config.remove("template");
    config.remove("parent");
    let (old_vm, old_base) = (format!("vm-{vmid}-"), format!("base-{vmid}-"));
    let new_vm = format!("vm-{newid}-");
    for value in config.values_mut() {
        if let Some(text) = value.as_str() {
            let renamed = text.replace(&old_vm, &new_vm).replace(&old_base, &new_vm);
            *value = json!(renamed);
        }
    }
    config.insert(
        name_key.into(),
        json!(new_name.unwrap_or_else(|| format!("Copy-of-{}", g.name()))),
    );
    if let Some(description) = call.str("description") {
        config.insert("description".into(), json!(description));
    }
    let pool = call.str("pool").map(str::to_owned);
    insert_guest(
        call,
        new_guest(kind, newid, &target, config),
        false,
        pool.as_deref(),
    );
    let word = match kind {
        GuestKind::Qemu => "qmclone",
        GuestKind::Lxc => "vzclone",
    };
    Ok(Value::String(call.st.spawn_task(
        &node,
        word,
        &vmid.to_string(),
        &format!("clone {} {vmid} to {newid}", kind.label()),
    )))
}

/// `POST /nodes/{node}/qemu/{vmid}/clone`.
pub(in super::super) fn qemu_clone(call: &mut Call<'_>) -> Result<Value, ApiError> {
    clone(call, GuestKind::Qemu)
}

/// `POST /nodes/{node}/lxc/{vmid}/clone`.
pub(in super::super) fn lxc_clone(call: &mut Call<'_>) -> Result<Value, ApiError> {
    clone(call, GuestKind::Lxc)
}

fn migrate(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let target = call.str("target").unwrap_or_default().to_string();
    check_target(call, &target)?;
    let online = call.flag("online");
    let restart = kind == GuestKind::Lxc && call.flag("restart");
    if target == node {
        return Err(ApiError::server("target is local node."));
    }
    if kind == GuestKind::Lxc && online {
        return Err(ApiError::server(
            "lxc live migration is currently not implemented",
        ));
    }
    let g = guest(call, kind)?;
    let vmid = g.vmid;
    if g.is_running() {
        match kind {
            GuestKind::Qemu if !online => {
                return Err(ApiError::server(
                    "can't migrate running VM without --online",
                ));
            }
            GuestKind::Lxc if !restart => {
                return Err(ApiError::server(
                    "can't migrate running container without --online or --restart",
                ));
            }
            _ => {}
        }
    }
    // The emulator moves the guest at once; a client sees it on the target after it
    // follows the task to "OK", exactly as with a real migration.
    g.node = target.clone();
    let word = match kind {
        GuestKind::Qemu => "qmigrate",
        GuestKind::Lxc => "vzmigrate",
    };
    Ok(Value::String(call.st.spawn_task(
        &node,
        word,
        &vmid.to_string(),
        &format!("migrate {} {vmid} to {target}", kind.label()),
    )))
}

/// `POST /nodes/{node}/qemu/{vmid}/migrate`.
pub(in super::super) fn qemu_migrate(call: &mut Call<'_>) -> Result<Value, ApiError> {
    migrate(call, GuestKind::Qemu)
}

/// `POST /nodes/{node}/lxc/{vmid}/migrate`.
pub(in super::super) fn lxc_migrate(call: &mut Call<'_>) -> Result<Value, ApiError> {
    migrate(call, GuestKind::Lxc)
}
