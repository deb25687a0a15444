//! Guest snapshots: list (with Proxmox's "current" pseudo-entry), create, delete and
//! rollback, for QEMU and LXC.
//!
//! Invariant: snapshot names are unique per guest; the live configuration's `parent`
//! names the latest snapshot it descends from, and every snapshot's `parent` names an
//! existing snapshot or nothing — deleting one re-links its children as Proxmox does.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::stamps::unix_now;
use super::super::state::{GuestKind, Power, Snapshot};
use super::guest;

fn task_word(kind: GuestKind, what: &str) -> String {
    match kind {
        GuestKind::Qemu => format!("qm{what}"),
        GuestKind::Lxc => format!("vz{what}"),
    }
}

fn list(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let g = guest(call, kind)?;
    let mut rows: Vec<Value> = g
        .snapshots
        .iter()
        .map(|s| {
            let mut row = Map::new();
            row.insert("name".into(), json!(s.name));
            row.insert("description".into(), json!(s.description));
            row.insert("snaptime".into(), json!(s.snaptime));
            if let Some(parent) = &s.parent {
                row.insert("parent".into(), json!(parent));
            }
            if kind == GuestKind::Qemu {
                row.insert("vmstate".into(), json!(u8::from(s.vmstate)));
            }
            Value::Object(row)
        })
        .collect();
    let mut current = Map::new();
    current.insert("name".into(), json!("current"));
    current.insert("description".into(), json!("You are here!"));
    current.insert("running".into(), json!(u8::from(g.is_running())));
    if let Some(parent) = g.config.get("parent") {
        current.insert("parent".into(), parent.clone());
    }
    rows.push(Value::Object(current));
    Ok(Value::Array(rows))
}

/// `GET /nodes/{node}/qemu/{vmid}/snapshot`.
pub(in super::super) fn qemu_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    list(call, GuestKind::Qemu)
}

/// `GET /nodes/{node}/lxc/{vmid}/snapshot`.
pub(in super::super) fn lxc_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    list(call, GuestKind::Lxc)
}

fn create(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let name = call.str("snapname").unwrap_or_default().to_string();
    let description = call.str("description").unwrap_or_default().to_string();
    let vmstate = call.flag("vmstate");
    if name == "current" || !is_configid(&name) {
        return Err(ApiError::param(
            "snapname",
            format!("invalid format - invalid configuration ID '{name}'"),
        ));
    }
    let g = guest(call, kind)?;
    let vmid = g.vmid;
    if g.is_template() {
        return Err(ApiError::server(
            "you can't take a snapshot if it's a template",
        ));
    }
    if g.snapshots.iter().any(|s| s.name == name) {
        return Err(ApiError::server(format!(
            "snapshot name '{name}' already used"
        )));
    }
    let parent = g
        .config
        .get("parent")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut config = g.config.clone();
    config.remove("parent");
    g.snapshots.push(Snapshot {
        name: name.clone(),
        description,
        snaptime: unix_now(),
        vmstate: vmstate && g.is_running(),
        parent,
        config,
    });
    g.config.insert("parent".into(), json!(name));
    Ok(Value::String(call.st.spawn_task(
        &node,
        &task_word(kind, "snapshot"),
        &vmid.to_string(),
        &format!("snapshot {} {vmid} as '{name}'", kind.label()),
    )))
}

/// `pve-configid`: a letter, then letters, digits, `-` and `_`.
fn is_configid(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name.len() <= 40
}

/// `POST /nodes/{node}/qemu/{vmid}/snapshot`.
pub(in super::super) fn qemu_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    create(call, GuestKind::Qemu)
}

/// `POST /nodes/{node}/lxc/{vmid}/snapshot`.
pub(in super::super) fn lxc_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    create(call, GuestKind::Lxc)
}

fn missing(name: &str) -> ApiError {
    ApiError::server(format!("snapshot '{name}' does not exist"))
}

fn remove(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let name = call.cap("snapname").to_string();
    let g = guest(call, kind)?;
    let vmid = g.vmid;
    let index = g
        .snapshots
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| missing(&name))?;
    let removed = g.snapshots.remove(index);
    for s in &mut g.snapshots {
        if s.parent.as_deref() == Some(name.as_str()) {
            s.parent.clone_from(&removed.parent);
        }
    }
    if g.config.get("parent").and_then(Value::as_str) == Some(name.as_str()) {
        match &removed.parent {
            Some(parent) => g.config.insert("parent".into(), json!(parent)),
            None => g.config.remove("parent"),
        };
    }
    Ok(Value::String(call.st.spawn_task(
        &node,
        &task_word(kind, "delsnapshot"),
        &vmid.to_string(),
        &format!("delete snapshot '{name}' of {} {vmid}", kind.label()),
    )))
}

/// `DELETE /nodes/{node}/qemu/{vmid}/snapshot/{snapname}`.
pub(in super::super) fn qemu_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    remove(call, GuestKind::Qemu)
}

/// `DELETE /nodes/{node}/lxc/{vmid}/snapshot/{snapname}`.
pub(in super::super) fn lxc_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    remove(call, GuestKind::Lxc)
}

fn rollback(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let name = call.cap("snapname").to_string();
    let start = call.flag("start");
    let g = guest(call, kind)?;
    let vmid = g.vmid;
    let snapshot = g
        .snapshots
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| missing(&name))?;
    let mut config = snapshot.config;
    config.insert("parent".into(), json!(name));
    g.config = config;
    // Rolling back discards the running state; a snapshot with RAM resumes running.
    if snapshot.vmstate || start {
        g.power = Power::Stopped;
        g.set_running();
    } else {
        g.set_stopped();
    }
    Ok(Value::String(call.st.spawn_task(
        &node,
        &task_word(kind, "rollback"),
        &vmid.to_string(),
        &format!("rollback {} {vmid} to '{name}'", kind.label()),
    )))
}

/// `POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback`.
pub(in super::super) fn qemu_rollback(call: &mut Call<'_>) -> Result<Value, ApiError> {
    rollback(call, GuestKind::Qemu)
}

/// `POST /nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback`.
pub(in super::super) fn lxc_rollback(call: &mut Call<'_>) -> Result<Value, ApiError> {
    rollback(call, GuestKind::Lxc)
}
