//! Firewall endpoints: datacenter rules, options, aliases and IP sets, and the per-guest
//! rules of QEMU VMs and LXC containers.
//!
//! Invariant: rule changes are addressed by position, refused when the given `digest`
//! is not the ruleset's current one, and validated completely before the ruleset is
//! touched — a refused change leaves every rule where it was. A guest ruleset is only
//! reachable through the guest's own kind and node, as in Proxmox.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::GuestKind;
use super::super::state_security::Ruleset;
use super::guest;

/// Rule keys a create or update may set, as Proxmox stores them.
const RULE_KEYS: &[&str] = &[
    "type",
    "action",
    "enable",
    "source",
    "dest",
    "proto",
    "dport",
    "sport",
    "iface",
    "log",
    "macro",
    "icmp-type",
    "comment",
];

/// Options keys a `PUT …/firewall/options` may set.
const OPTION_KEYS: &[&str] = &[
    "enable",
    "policy_in",
    "policy_out",
    "policy_forward",
    "log_ratelimit",
    "ebtables",
];

/// Keys whose wire value is a number in Proxmox's answers.
const NUMERIC_KEYS: &[&str] = &["enable", "ebtables"];

fn modified() -> ApiError {
    ApiError::server("detected modified configuration - file changed by other user? Try again.")
}

fn check_digest(call: &Call<'_>, current: &str) -> Result<(), ApiError> {
    match call.str("digest") {
        Some(given) if !given.eq_ignore_ascii_case(current) => Err(modified()),
        _ => Ok(()),
    }
}

fn wire_value(key: &str, value: &str) -> Value {
    match value.parse::<i64>() {
        Ok(n) if NUMERIC_KEYS.contains(&key) => json!(n),
        _ => json!(value),
    }
}

/// A rule's keys must make sense together: ports need a protocol (or a macro), and a
/// plain rule's action is one of the three verdicts.
fn check_rule(rule: &Map<String, Value>) -> Result<(), ApiError> {
    let get = |k: &str| rule.get(k).and_then(Value::as_str);
    for port in ["dport", "sport"] {
        if get(port).is_some() && get("proto").is_none() && get("macro").is_none() {
            return Err(ApiError::param(
                port,
                "missing property - 'proto' is required by 'dport'/'sport'",
            ));
        }
    }
    match (get("type"), get("action")) {
        (Some("group"), Some(group)) => Err(ApiError::param(
            "action",
            format!("security group '{group}' does not exist"),
        )),
        (Some(_), Some("ACCEPT" | "DROP" | "REJECT")) => Ok(()),
        (Some(_), Some(other)) => Err(ApiError::param(
            "action",
            format!("unknown action '{other}'"),
        )),
        _ => Err(ApiError::param("type", "rule needs a type and an action")),
    }
}

fn pos_capture(call: &Call<'_>) -> Result<usize, ApiError> {
    let raw = call.cap("pos");
    raw.parse::<usize>().map_err(|_| {
        ApiError::param(
            "pos",
            format!("type check ('integer') failed - got '{raw}'"),
        )
    })
}

fn create_in(call: &Call<'_>, set: &mut Ruleset) -> Result<Value, ApiError> {
    check_digest(call, &set.digest())?;
    let mut rule = Map::new();
    for key in RULE_KEYS {
        if let Some(v) = call.str(key) {
            rule.insert((*key).into(), wire_value(key, v));
        }
    }
    check_rule(&rule)?;
    // Without `pos`, Proxmox puts a new rule at the top.
    let pos = call
        .int("pos")
        .map_or(0, |p| usize::try_from(p).unwrap_or(0))
        .min(set.rules.len());
    set.rules.insert(pos, rule);
    Ok(Value::Null)
}

fn update_in(call: &Call<'_>, set: &mut Ruleset) -> Result<Value, ApiError> {
    let pos = pos_capture(call)?;
    check_digest(call, &set.digest())?;
    let Some(current) = set.rules.get(pos) else {
        return Err(ApiError::server(format!("no rule at position {pos}")));
    };
    // `moveto` only moves (Proxmox ignores the other arguments then): the rule is put
    // before the one now at `moveto`, or last when `moveto` is past the end.
    if let Some(to) = call.int("moveto") {
        let to = usize::try_from(to).unwrap_or(usize::MAX);
        let moved = current.clone();
        let mut rules = Vec::with_capacity(set.rules.len());
        for (i, rule) in set.rules.iter().enumerate() {
            if i == pos {
                continue;
            }
            if i == to {
                rules.push(moved.clone());
            }
            rules.push(rule.clone());
        }
        if to >= set.rules.len() {
            rules.push(moved);
        }
        set.rules = rules;
        return Ok(Value::Null);
    }
    let mut rule = current.clone();
    for key in call.str("delete").unwrap_or("").split(',') {
        rule.remove(key.trim());
    }
    for key in RULE_KEYS {
        if let Some(v) = call.str(key) {
            rule.insert((*key).into(), wire_value(key, v));
        }
    }
    check_rule(&rule)?;
    set.rules[pos] = rule;
    Ok(Value::Null)
}

fn delete_in(call: &Call<'_>, set: &mut Ruleset) -> Result<Value, ApiError> {
    let pos = pos_capture(call)?;
    check_digest(call, &set.digest())?;
    if pos >= set.rules.len() {
        return Err(ApiError::server(format!("no rule at position {pos}")));
    }
    set.rules.remove(pos);
    Ok(Value::Null)
}

/// Runs `op` on the cluster ruleset, committing only on success.
fn on_cluster(
    call: &mut Call<'_>,
    op: fn(&Call<'_>, &mut Ruleset) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let mut set = call.st.security.cluster_rules.clone();
    let result = op(call, &mut set)?;
    call.st.security.cluster_rules = set;
    Ok(result)
}

/// Runs `op` on a guest's ruleset (the guest must exist with that kind on that node),
/// committing only on success.
fn on_guest(
    call: &mut Call<'_>,
    kind: GuestKind,
    op: fn(&Call<'_>, &mut Ruleset) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let vmid = guest(call, kind)?.vmid;
    let mut set = call
        .st
        .security
        .guest_rules
        .get(&vmid)
        .cloned()
        .unwrap_or_default();
    let result = op(call, &mut set)?;
    call.st.security.guest_rules.insert(vmid, set);
    Ok(result)
}

fn list_guest(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let vmid = guest(call, kind)?.vmid;
    Ok(call
        .st
        .security
        .guest_rules
        .get(&vmid)
        .map_or_else(|| Value::Array(Vec::new()), Ruleset::rows))
}

/// `GET /cluster/firewall/rules`.
pub(in super::super) fn cluster_rules(call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(call.st.security.cluster_rules.rows())
}

/// `POST /cluster/firewall/rules`.
pub(in super::super) fn cluster_rule_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_cluster(call, create_in)
}

/// `PUT /cluster/firewall/rules/{pos}`.
pub(in super::super) fn cluster_rule_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_cluster(call, update_in)
}

/// `DELETE /cluster/firewall/rules/{pos}`.
pub(in super::super) fn cluster_rule_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_cluster(call, delete_in)
}

/// `GET /cluster/firewall/options`: the options set, plus their digest.
pub(in super::super) fn options(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let sec = &call.st.security;
    let mut out = sec.fw_options.clone();
    out.insert("digest".into(), json!(sec.options_digest()));
    Ok(Value::Object(out))
}

/// `PUT /cluster/firewall/options`.
pub(in super::super) fn options_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    check_digest(call, &call.st.security.options_digest())?;
    if let Some(limit) = call.str("log_ratelimit") {
        let ok = limit.split(',').all(|part| match part.split_once('=') {
            Some(("enable", v)) => matches!(v, "0" | "1"),
            Some(("burst", v)) => v.parse::<u32>().is_ok(),
            Some(("rate", v)) => v.split_once('/').is_some_and(|(n, unit)| {
                n.parse::<u32>().is_ok_and(|n| n > 0)
                    && ["second", "minute", "hour", "day"].contains(&unit)
            }),
            None => matches!(part, "0" | "1"),
            _ => false,
        });
        if !ok {
            return Err(ApiError::param(
                "log_ratelimit",
                format!("invalid format - unable to parse '{limit}'"),
            ));
        }
    }
    let mut options = call.st.security.fw_options.clone();
    for key in call.str("delete").unwrap_or("").split(',') {
        options.remove(key.trim());
    }
    for key in OPTION_KEYS {
        if let Some(v) = call.str(key) {
            options.insert((*key).into(), wire_value(key, v));
        }
    }
    call.st.security.fw_options = options;
    Ok(Value::Null)
}

/// `GET /cluster/firewall/aliases`.
pub(in super::super) fn aliases(call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(Value::Array(call.st.security.aliases.clone()))
}

/// `GET /cluster/firewall/ipset`.
pub(in super::super) fn ipsets(call: &mut Call<'_>) -> Result<Value, ApiError> {
    Ok(Value::Array(call.st.security.ipsets.clone()))
}

/// `GET /nodes/{node}/qemu/{vmid}/firewall/rules`.
pub(in super::super) fn qemu_rules(call: &mut Call<'_>) -> Result<Value, ApiError> {
    list_guest(call, GuestKind::Qemu)
}

/// `GET /nodes/{node}/lxc/{vmid}/firewall/rules`.
pub(in super::super) fn lxc_rules(call: &mut Call<'_>) -> Result<Value, ApiError> {
    list_guest(call, GuestKind::Lxc)
}

/// `POST /nodes/{node}/qemu/{vmid}/firewall/rules`.
pub(in super::super) fn qemu_rule_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_guest(call, GuestKind::Qemu, create_in)
}

/// `POST /nodes/{node}/lxc/{vmid}/firewall/rules`.
pub(in super::super) fn lxc_rule_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_guest(call, GuestKind::Lxc, create_in)
}

/// `PUT /nodes/{node}/qemu/{vmid}/firewall/rules/{pos}`.
pub(in super::super) fn qemu_rule_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_guest(call, GuestKind::Qemu, update_in)
}

/// `PUT /nodes/{node}/lxc/{vmid}/firewall/rules/{pos}`.
pub(in super::super) fn lxc_rule_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_guest(call, GuestKind::Lxc, update_in)
}

/// `DELETE /nodes/{node}/qemu/{vmid}/firewall/rules/{pos}`.
pub(in super::super) fn qemu_rule_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_guest(call, GuestKind::Qemu, delete_in)
}

/// `DELETE /nodes/{node}/lxc/{vmid}/firewall/rules/{pos}`.
pub(in super::super) fn lxc_rule_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    on_guest(call, GuestKind::Lxc, delete_in)
}
