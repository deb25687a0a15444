//! Guest endpoints: QEMU and LXC lists, current status, config, and the
//! power operations that run as tasks.
//!
//! Invariant: a power operation either fails synchronously with Proxmox's
//! message (already running, not running, template) and changes nothing, or
//! changes the guest's state and returns the UPID of a new task.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::{Guest, GuestKind, Power};
use super::guest;

/// A list row for `/nodes/{node}/qemu` and `/nodes/{node}/lxc`.
fn list_row(g: &Guest, full: bool) -> Value {
    let mut row = Map::new();
    row.insert("vmid".into(), json!(g.vmid));
    row.insert("name".into(), json!(g.name()));
    row.insert("status".into(), json!(g.status()));
    row.insert("cpus".into(), json!(g.cpus()));
    row.insert(
        "cpu".into(),
        json!(if g.is_running() { 0.012 } else { 0.0 }),
    );
    row.insert("maxmem".into(), json!(g.maxmem()));
    row.insert("mem".into(), json!(g.mem()));
    row.insert("maxdisk".into(), json!(g.maxdisk));
    row.insert("disk".into(), json!(0));
    row.insert("uptime".into(), json!(g.uptime()));
    for key in ["netin", "netout", "diskread", "diskwrite"] {
        row.insert(key.into(), json!(0));
    }
    if !g.tags().is_empty() {
        row.insert("tags".into(), json!(g.tags()));
    }
    match g.kind {
        GuestKind::Qemu => {
            if g.is_template() {
                row.insert("template".into(), json!(1));
            }
            if g.is_running() {
                row.insert("pid".into(), json!(10_000 + g.vmid));
            }
            if full {
                row.insert("qmpstatus".into(), json!(qmpstatus(g)));
            }
        }
        GuestKind::Lxc => {
            row.insert("type".into(), json!("lxc"));
            row.insert("maxswap".into(), json!(536_870_912));
            row.insert("swap".into(), json!(0));
        }
    }
    Value::Object(row)
}

fn qmpstatus(g: &Guest) -> &'static str {
    match g.power {
        Power::Running => "running",
        Power::Paused => "paused",
        Power::Stopped => "stopped",
    }
}

fn list(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let full = call.flag("full");
    let node = call.cap("node");
    let rows = call
        .st
        .guests_on(node)
        .filter(|g| g.kind == kind)
        .map(|g| list_row(g, full))
        .collect();
    Ok(Value::Array(rows))
}

/// `GET /nodes/{node}/qemu`.
pub(in super::super) fn qemu_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    list(call, GuestKind::Qemu)
}

/// `GET /nodes/{node}/lxc`.
pub(in super::super) fn lxc_list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    list(call, GuestKind::Lxc)
}

fn current(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let g = guest(call, kind)?;
    let mut row = match list_row(g, true) {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    row.insert("ha".into(), json!({ "managed": 0 }));
    if kind == GuestKind::Qemu {
        if g.config.get("agent").and_then(Value::as_str) == Some("1") {
            row.insert("agent".into(), json!(1));
        }
        if g.is_running() {
            row.insert("running-machine".into(), json!("pc-q35-10.0+pve1"));
            row.insert("running-qemu".into(), json!("10.0.2"));
        }
    }
    Ok(Value::Object(row))
}

/// `GET /nodes/{node}/qemu/{vmid}/status/current`.
pub(in super::super) fn qemu_current(call: &mut Call<'_>) -> Result<Value, ApiError> {
    current(call, GuestKind::Qemu)
}

/// `GET /nodes/{node}/lxc/{vmid}/status/current`.
pub(in super::super) fn lxc_current(call: &mut Call<'_>) -> Result<Value, ApiError> {
    current(call, GuestKind::Lxc)
}

fn config(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let snapshot = call.str("snapshot").map(str::to_owned);
    let g = guest(call, kind)?;
    match snapshot {
        None => Ok(Value::Object(g.config_with_digest())),
        Some(snap) => g
            .snapshots
            .iter()
            .find(|s| s.name == snap)
            .map(|s| Value::Object(s.config.clone()))
            .ok_or_else(|| ApiError::server(format!("snapshot '{snap}' does not exist"))),
    }
}

/// `GET /nodes/{node}/qemu/{vmid}/config`.
pub(in super::super) fn qemu_config(call: &mut Call<'_>) -> Result<Value, ApiError> {
    config(call, GuestKind::Qemu)
}

/// `GET /nodes/{node}/lxc/{vmid}/config`.
pub(in super::super) fn lxc_config(call: &mut Call<'_>) -> Result<Value, ApiError> {
    config(call, GuestKind::Lxc)
}

/// A power operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Start,
    Stop,
    Shutdown,
    Reboot,
    Reset,
    Suspend,
    Resume,
}

impl Op {
    fn word(self) -> &'static str {
        match self {
            Op::Start => "start",
            Op::Stop => "stop",
            Op::Shutdown => "shutdown",
            Op::Reboot => "reboot",
            Op::Reset => "reset",
            Op::Suspend => "suspend",
            Op::Resume => "resume",
        }
    }
}

fn power(call: &mut Call<'_>, kind: GuestKind, op: Op) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let g = guest(call, kind)?;
    let label = format!("{} {}", kind.label(), g.vmid);
    if op == Op::Start && g.is_template() {
        return Err(ApiError::server("you can't start a vm if it's a template"));
    }
    match op {
        Op::Start if g.is_running() => {
            return Err(ApiError::server(format!("{label} already running")));
        }
        Op::Start => {}
        // Stopping a stopped VM is a no-op task in Proxmox, not an error.
        Op::Stop | Op::Shutdown if kind == GuestKind::Qemu => {}
        _ if !g.is_running() => {
            return Err(ApiError::server(format!("{label} not running")));
        }
        _ => {}
    }
    match op {
        Op::Start | Op::Resume | Op::Reboot | Op::Reset => g.set_running(),
        Op::Suspend => g.power = Power::Paused,
        Op::Stop | Op::Shutdown => g.set_stopped(),
    }
    let vmid = g.vmid.to_string();
    let prefix = match kind {
        GuestKind::Qemu => "qm",
        GuestKind::Lxc => "vz",
    };
    let task_type = format!("{prefix}{}", op.word());
    let description = format!("{} {label}", op.word());
    let upid = call.st.spawn_task(&node, &task_type, &vmid, &description);
    Ok(Value::String(upid))
}

macro_rules! power_handlers {
    ($($name:ident => $kind:ident, $op:ident;)*) => {
        $(
            #[doc = concat!("`POST /nodes/{node}/", stringify!($kind), "/{vmid}/status/", stringify!($op), "`.")]
            pub(in super::super) fn $name(call: &mut Call<'_>) -> Result<Value, ApiError> {
                power(call, GuestKind::$kind, Op::$op)
            }
        )*
    };
}

power_handlers! {
    qemu_start => Qemu, Start;
    qemu_stop => Qemu, Stop;
    qemu_shutdown => Qemu, Shutdown;
    qemu_reboot => Qemu, Reboot;
    qemu_reset => Qemu, Reset;
    qemu_suspend => Qemu, Suspend;
    qemu_resume => Qemu, Resume;
    lxc_start => Lxc, Start;
    lxc_stop => Lxc, Stop;
    lxc_shutdown => Lxc, Shutdown;
    lxc_reboot => Lxc, Reboot;
    lxc_suspend => Lxc, Suspend;
    lxc_resume => Lxc, Resume;
}
