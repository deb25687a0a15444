//! Node network endpoints: list and read interfaces, stage creations, updates and
//! removals, apply (reload) or revert the staged configuration.
//!
//! Invariant: create/update/delete only touch the staged configuration; reads show the
//! staged one (as Proxmox reads `interfaces.new` when it exists) with `active` only on
//! interfaces that are running, plus a `changes` attribute naming what is pending; only
//! `PUT /nodes/{node}/network` makes the staged configuration the running one.

use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::state_infra::{Iface, NodeNetwork};

/// Settings stored as given (strings) or as 1/0 (flags).
const TEXT_KEYS: &[&str] = &[
    "address",
    "netmask",
    "gateway",
    "cidr6",
    "address6",
    "gateway6",
    "bridge_ports",
    "bridge_vids",
    "bond_mode",
    "bond-primary",
    "bond_xmit_hash_policy",
    "slaves",
    "vlan-raw-device",
    "comments",
    "comments6",
    "ovs_bridge",
    "ovs_bonds",
    "ovs_ports",
    "ovs_options",
];
/// Settings stored as JSON numbers.
const INT_KEYS: &[&str] = &["mtu", "vlan-id", "ovs_tag", "netmask6"];
const FLAG_KEYS: &[&str] = &["autostart", "bridge_vlan_aware"];

fn network<'c>(call: &'c mut Call<'_>) -> &'c mut NodeNetwork {
    let node = call.cap("node").to_string();
    call.st.infra.networks.entry(node).or_default()
}

fn name_of(iface: &Iface) -> &str {
    iface.get("iface").and_then(Value::as_str).unwrap_or("")
}

/// One row as the API shows it: `active` only when running unchanged.
fn row(net: &NodeNetwork, iface: &Iface) -> Value {
    let mut row = iface.clone();
    let running = net.active.iter().find(|a| name_of(a) == name_of(iface));
    if running.is_some() {
        row.insert("active".into(), json!(1));
    }
    if running.is_some_and(|a| a != iface) {
        // Staged edits of a running interface show as pending.
        row.insert("pending".into(), json!(1));
    }
    Value::Object(row)
}

/// What is staged, as a short text (Proxmox sends a diff in `changes`).
fn changes(net: &NodeNetwork) -> Option<String> {
    let pending = net.pending.as_ref()?;
    let mut lines = Vec::new();
    for iface in pending {
        match net.active.iter().find(|a| name_of(a) == name_of(iface)) {
            None => lines.push(format!("+iface {}", name_of(iface))),
            Some(a) if a != iface => lines.push(format!("~iface {}", name_of(iface))),
            Some(_) => {}
        }
    }
    for iface in &net.active {
        if !pending.iter().any(|p| name_of(p) == name_of(iface)) {
            lines.push(format!("-iface {}", name_of(iface)));
        }
    }
    Some(lines.join("\n"))
}

/// `GET /nodes/{node}/network`, honouring `type`.
pub(in super::super) fn list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let wanted = call.str("type").map(String::from);
    let net = network(call).clone();
    let rows: Vec<Value> = net
        .current()
        .iter()
        .filter(|iface| {
            let kind = iface.get("type").and_then(Value::as_str).unwrap_or("");
            match wanted.as_deref() {
                None | Some("include_sdn") => true,
                Some("any_bridge") | Some("any_local_bridge") => {
                    kind == "bridge" || kind == "OVSBridge"
                }
                Some(other) => kind == other,
            }
        })
        .map(|iface| row(&net, iface))
        .collect();
    if let Some(text) = changes(&net) {
        call.attrib("changes", json!(text));
    }
    Ok(Value::Array(rows))
}

fn missing(iface: &str) -> ApiError {
    ApiError::server(format!("interface '{iface}' does not exist"))
}

/// `GET /nodes/{node}/network/{iface}`.
pub(in super::super) fn get(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let name = call.cap("iface").to_string();
    let net = network(call).clone();
    net.current()
        .iter()
        .find(|i| name_of(i) == name)
        .map(|i| row(&net, i))
        .ok_or_else(|| missing(&name))
}

/// Writes the request's settings into `iface` (`cidr` also sets address/netmask).
fn apply_settings(call: &Call<'_>, iface: &mut Iface) {
    for key in TEXT_KEYS {
        if let Some(value) = call.str(key) {
            iface.insert((*key).to_string(), json!(value));
        }
    }
    for key in INT_KEYS {
        if let Some(value) = call.int(key) {
            iface.insert((*key).to_string(), json!(value));
        }
    }
    for key in FLAG_KEYS {
        if call.str(key).is_some() {
            iface.insert((*key).to_string(), json!(u8::from(call.flag(key))));
        }
    }
    if let Some(cidr) = call.str("cidr") {
        iface.insert("cidr".into(), json!(cidr));
        if let Some((address, prefix)) = cidr.split_once('/') {
            iface.insert("address".into(), json!(address));
            iface.insert("netmask".into(), json!(prefix));
        }
    }
    let method = if iface.contains_key("address") {
        "static"
    } else {
        "manual"
    };
    iface.insert("method".into(), json!(method));
}

/// Ports and slaves must name interfaces that exist in the staged configuration.
fn check_members(call: &Call<'_>, config: &[Iface]) -> Result<(), ApiError> {
    for key in ["bridge_ports", "slaves"] {
        for port in call.str(key).unwrap_or("").split([' ', ',']) {
            if !port.is_empty() && !config.iter().any(|i| name_of(i) == port) {
                return Err(ApiError::param(
                    key,
                    format!("interface '{port}' does not exist"),
                ));
            }
        }
    }
    Ok(())
}

/// `POST /nodes/{node}/network`: stages a new interface.
pub(in super::super) fn create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let name = call.str("iface").unwrap_or_default().to_string();
    let kind = call.str("type").unwrap_or_default().to_string();
    let current = network(call).current().to_vec();
    if current.iter().any(|i| name_of(i) == name) {
        return Err(ApiError::param("iface", "interface already exists"));
    }
    check_members(call, &current)?;
    let mut iface = Iface::new();
    iface.insert("iface".into(), json!(name));
    iface.insert("type".into(), json!(kind));
    iface.insert("families".into(), json!(["inet"]));
    iface.insert("method6".into(), json!("manual"));
    apply_settings(call, &mut iface);
    network(call).staged().push(iface);
    Ok(Value::Null)
}

/// `PUT /nodes/{node}/network/{iface}`: stages changed settings.
pub(in super::super) fn update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let name = call.cap("iface").to_string();
    let kind = call.str("type").unwrap_or_default().to_string();
    let current = network(call).current().to_vec();
    let Some(mut iface) = current.iter().find(|i| name_of(i) == name).cloned() else {
        return Err(missing(&name));
    };
    if iface.get("type").and_then(Value::as_str) != Some(kind.as_str()) {
        return Err(ApiError::param("type", "interface type mismatch"));
    }
    check_members(call, &current)?;
    for key in call
        .str("delete")
        .unwrap_or("")
        .split([',', ';', ' '])
        .filter(|k| !k.is_empty())
    {
        iface.remove(key);
        if key == "cidr" || key == "address" {
            for k in ["cidr", "address", "netmask"] {
                iface.remove(k);
            }
        }
    }
    apply_settings(call, &mut iface);
    let staged = network(call).staged();
    if let Some(slot) = staged.iter_mut().find(|i| name_of(i) == name) {
        *slot = iface;
    }
    Ok(Value::Null)
}

/// `DELETE /nodes/{node}/network/{iface}`: stages the removal.
pub(in super::super) fn remove(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let name = call.cap("iface").to_string();
    if !network(call).current().iter().any(|i| name_of(i) == name) {
        return Err(missing(&name));
    }
    network(call).staged().retain(|i| name_of(i) != name);
    Ok(Value::Null)
}

/// `PUT /nodes/{node}/network`: the staged configuration becomes the running one, in
/// a reload task whose UPID is returned.
pub(in super::super) fn apply(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let net = network(call);
    if let Some(pending) = net.pending.take() {
        net.active = pending;
    }
    let upid = call.st.spawn_task(
        &node,
        "srvreload",
        "networking",
        "reload network configuration",
    );
    Ok(json!(upid))
}

/// `DELETE /nodes/{node}/network`: drops the staged configuration.
pub(in super::super) fn revert(call: &mut Call<'_>) -> Result<Value, ApiError> {
    network(call).pending = None;
    Ok(Value::Null)
}
