//! Monitoring endpoints: RRD time series of nodes and guests, and node facts
//! (version, DNS, time, syslog, services).
//!
//! Invariant: RRD answers have the shape Proxmox gives — an array of points with a
//! `time` (Unix seconds, aligned to the timeframe's step, oldest first) and the metric
//! fields — and honour `timeframe` (step) and `cf` (MAX ≥ AVERAGE); the syslog pages
//! exactly like `start`/`limit` say and filters by `service`, `since`, `until`.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::stamps::unix_now;
use super::super::state::GuestKind;
use super::guest;

/// Points per RRD answer, as Proxmox returns about 70.
const POINTS: u64 = 70;

/// Seconds between two points of a timeframe.
fn step(timeframe: &str) -> u64 {
    match timeframe {
        "hour" => 60,
        "day" => 1_800,
        "week" => 10_800,
        "month" => 43_200,
        "year" => 604_800,
        _ => 6_048_000, // decade
    }
}

/// A smooth, deterministic load curve in 0..1 for point `i`.
fn wave(i: u64, seed: u64) -> f64 {
    let x = (i + seed) as f64 / 7.0;
    0.25 + 0.15 * x.sin() + 0.05 * (x * 3.1).cos()
}

/// The points of one series; `fields(i, load)` fills one point's metrics.
fn series(call: &Call<'_>, seed: u64, fields: impl Fn(f64) -> Map<String, Value>) -> Value {
    let timeframe = call.str("timeframe").unwrap_or("hour");
    let peak = call.str("cf") == Some("MAX");
    let step = step(timeframe);
    let end = unix_now() / step * step;
    let points = (0..POINTS)
        .map(|i| {
            let mut load = wave(i, seed);
            if peak {
                load = (load * 1.4).min(1.0);
            }
            let mut point = fields(load);
            point.insert("time".into(), json!(end - (POINTS - 1 - i) * step));
            Value::Object(point)
        })
        .collect();
    Value::Array(points)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// `GET /nodes/{node}/rrddata`.
pub(in super::super) fn node_rrd(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node");
    let Some(n) = call.st.node(node).cloned() else {
        return Err(ApiError::server(format!("no such node '{node}'")));
    };
    Ok(series(call, u64::from(n.nodeid), |load| {
        object(json!({
            "cpu": load * 0.4,
            "maxcpu": n.maxcpu,
            "iowait": load * 0.01,
            "loadavg": load * f64::from(n.maxcpu) / 4.0,
            "memtotal": n.maxmem,
            "memused": (n.maxmem as f64 * (0.2 + load / 2.0)) as u64,
            "swaptotal": 8_589_930_496_u64,
            "swapused": 0,
            "roottotal": n.maxdisk,
            "rootused": n.disk,
            "netin": load * 250_000.0,
            "netout": load * 120_000.0,
        }))
    }))
}

fn guest_rrd(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let g = guest(call, kind)?.clone();
    Ok(series(call, u64::from(g.vmid), |load| {
        let load = if g.is_running() { load } else { 0.0 };
        object(json!({
            "cpu": load * 0.3,
            "maxcpu": g.cpus(),
            "mem": (g.maxmem() as f64 * load) as u64,
            "maxmem": g.maxmem(),
            "disk": 0,
            "maxdisk": g.maxdisk,
            "diskread": load * 80_000.0,
            "diskwrite": load * 40_000.0,
            "netin": load * 50_000.0,
            "netout": load * 20_000.0,
        }))
    }))
}

/// `GET /nodes/{node}/qemu/{vmid}/rrddata`.
pub(in super::super) fn qemu_rrd(call: &mut Call<'_>) -> Result<Value, ApiError> {
    guest_rrd(call, GuestKind::Qemu)
}

/// `GET /nodes/{node}/lxc/{vmid}/rrddata`.
pub(in super::super) fn lxc_rrd(call: &mut Call<'_>) -> Result<Value, ApiError> {
    guest_rrd(call, GuestKind::Lxc)
}

/// `GET /nodes/{node}/version`.
pub(in super::super) fn version(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(json!({ "version": "9.1.2", "release": "9.1", "repoid": "3f2c6a1e9d0b7a54" }))
}

/// `GET /nodes/{node}/dns`.
pub(in super::super) fn dns(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(json!({ "search": "emu.lan", "dns1": "192.168.100.1", "dns2": "9.9.9.9" }))
}

/// `GET /nodes/{node}/time`: UTC seconds and the same instant in the local zone.
pub(in super::super) fn time(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    let now = unix_now();
    Ok(json!({ "timezone": "Europe/Vienna", "time": now, "localtime": now + 3_600 }))
}

/// Units that write the emulated journal, round robin.
const UNITS: &[(&str, &str)] = &[
    ("pveproxy", "worker 3 finished"),
    (
        "pvedaemon",
        "<root@pam> successful auth for user 'svc_mcp@pve'",
    ),
    ("corosync", "[TOTEM ] Retransmit List: 1a"),
    ("pve-cluster", "[status] notice: received log"),
    (
        "cron",
        "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
    ),
    ("pvestatd", "status update time (5.012 seconds)"),
];

/// Lines in the emulated journal of each node (one a minute before emulator start).
const JOURNAL_LINES: u64 = 600;

/// "YYYY-MM-DD[ HH:MM[:SS]]" as UTC seconds (the emulated nodes run on UTC clocks for this).
fn parse_when(text: &str) -> Option<u64> {
    let full = match text.len() {
        10 => format!("{text} 00:00:00"),
        16 => format!("{text}:00"),
        _ => text.to_string(),
    };
    chrono::NaiveDateTime::parse_from_str(&full, "%Y-%m-%d %H:%M:%S")
        .ok()
        .and_then(|t| u64::try_from(t.and_utc().timestamp()).ok())
}

/// `GET /nodes/{node}/syslog`: `[{n, t}]`, paged by `start` (0-based) and `limit`
/// (default 50), filtered by `service`, `since`, `until`; `total` is set.
pub(in super::super) fn syslog(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let base = unix_now() - unix_now() % 60 - JOURNAL_LINES * 60;
    let service = call.str("service");
    let since = call.str("since").and_then(parse_when);
    let until = call.str("until").and_then(parse_when);
    let lines: Vec<String> = (0..JOURNAL_LINES)
        .filter_map(|i| {
            let (unit, text) = UNITS[(i as usize) % UNITS.len()];
            let at = base + i * 60;
            let keep = service.is_none_or(|s| s == unit)
                && since.is_none_or(|s| at >= s)
                && until.is_none_or(|u| at <= u);
            let stamp = chrono::DateTime::from_timestamp(i64::try_from(at).ok()?, 0)?
                .format("%b %d %H:%M:%S");
            keep.then(|| format!("{stamp} {node} {unit}[{}]: {text}", 1000 + i % 97))
        })
        .collect();
    let start = usize::try_from(call.int("start").unwrap_or(0))
        .unwrap_or(0)
        .min(lines.len());
    let limit = usize::try_from(call.int("limit").unwrap_or(50)).unwrap_or(0);
    let end = (start + limit).min(lines.len());
    let rows = lines[start..end]
        .iter()
        .enumerate()
        .map(|(i, t)| json!({ "n": start + i + 1, "t": t }))
        .collect();
    call.attrib("total", json!(lines.len()));
    Ok(Value::Array(rows))
}

/// `GET /nodes/{node}/services`.
pub(in super::super) fn services(_call: &mut Call<'_>) -> Result<Value, ApiError> {
    let rows = [
        ("pveproxy", "PVE API Proxy Server", "running"),
        ("pvedaemon", "PVE API Daemon", "running"),
        (
            "pve-cluster",
            "The Proxmox VE cluster filesystem",
            "running",
        ),
        ("corosync", "Corosync Cluster Engine", "running"),
        ("pve-firewall", "Proxmox VE firewall", "running"),
        ("pvestatd", "PVE Status Daemon", "running"),
        (
            "pve-ha-crm",
            "PVE Cluster HA Resource Manager Daemon",
            "running",
        ),
        (
            "pve-ha-lrm",
            "PVE Local HA Resource Manager Daemon",
            "running",
        ),
        ("spiceproxy", "PVE SPICE Proxy Server", "running"),
        ("chrony", "chrony, an NTP client/server", "running"),
        ("sshd", "OpenBSD Secure Shell server", "running"),
        (
            "postfix",
            "Postfix Mail Transport Agent (instance -)",
            "dead",
        ),
    ]
    .iter()
    .map(|(name, desc, state)| {
        let active = if *state == "running" {
            "active"
        } else {
            "inactive"
        };
        json!({
            "service": name, "name": name, "desc": desc, "state": state,
            "active-state": active, "unit-state": "enabled",
        })
    })
    .collect();
    Ok(Value::Array(rows))
}
