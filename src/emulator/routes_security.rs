//! Security routes: users, groups, roles, ACLs, realms, API tokens, and the cluster and
//! guest firewalls.
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema accepts for
//! it, so a tool that sends anything else is refused with a 400 like pveproxy does
//! (checked against the official schema by the test below).

use super::api::{Param, bool, int, one_of, s};
use super::dispatch::{Route, delete, get, post, put};
use super::handlers::{access, firewall};

const USER_CREATE: &[Param] = &[
    s("userid").required(),
    s("password"),
    s("comment"),
    s("email"),
    bool("enable"),
    int("expire"),
    s("firstname"),
    s("groups"),
    s("keys"),
    s("lastname"),
];

const USER_UPDATE: &[Param] = &[
    bool("append"),
    s("comment"),
    s("email"),
    bool("enable"),
    int("expire"),
    s("firstname"),
    s("groups"),
    s("keys"),
    s("lastname"),
];

const ACL_UPDATE: &[Param] = &[
    s("path").required(),
    s("roles").required(),
    s("users"),
    s("groups"),
    s("tokens"),
    bool("propagate"),
    bool("delete"),
];

const TOKEN_CREATE: &[Param] = &[s("comment"), int("expire"), bool("privsep")];

const RULE_TYPES: &[&str] = &["in", "out", "forward", "group"];
const LOG_LEVELS: &[&str] = &[
    "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog",
];

const RULE_CREATE: &[Param] = &[
    one_of("type", RULE_TYPES).required(),
    s("action").required(),
    s("comment"),
    s("dest"),
    s("digest"),
    s("dport"),
    int("enable"),
    s("icmp-type"),
    s("iface"),
    one_of("log", LOG_LEVELS),
    s("macro"),
    int("pos"),
    s("proto"),
    s("source"),
    s("sport"),
];

const RULE_UPDATE: &[Param] = &[
    one_of("type", RULE_TYPES),
    s("action"),
    s("comment"),
    s("delete"),
    s("dest"),
    s("digest"),
    s("dport"),
    int("enable"),
    s("icmp-type"),
    s("iface"),
    one_of("log", LOG_LEVELS),
    s("macro"),
    int("moveto"),
    s("proto"),
    s("source"),
    s("sport"),
];

const RULE_DELETE: &[Param] = &[s("digest")];

const POLICY: &[&str] = &["ACCEPT", "REJECT", "DROP"];

const OPTIONS_UPDATE: &[Param] = &[
    s("delete"),
    s("digest"),
    bool("ebtables"),
    int("enable"),
    s("log_ratelimit"),
    one_of("policy_forward", &["ACCEPT", "DROP"]),
    one_of("policy_in", POLICY),
    one_of("policy_out", POLICY),
];

/// Routes of this table (see `routes::TABLES`).
pub(super) static ROUTES: &[Route] = &[
    get(
        "/access/users",
        &[bool("enabled"), bool("full")],
        access::users,
    ),
    post("/access/users", USER_CREATE, access::user_create),
    put("/access/users/{userid}", USER_UPDATE, access::user_update),
    delete("/access/users/{userid}", &[], access::user_delete),
    get("/access/groups", &[], access::groups),
    get("/access/roles", &[], access::roles),
    get("/access/domains", &[], access::domains),
    get("/access/acl", &[], access::acls),
    put("/access/acl", ACL_UPDATE, access::acl_update),
    get("/access/users/{userid}/token", &[], access::tokens),
    post(
        "/access/users/{userid}/token/{tokenid}",
        TOKEN_CREATE,
        access::token_create,
    ),
    delete(
        "/access/users/{userid}/token/{tokenid}",
        &[],
        access::token_delete,
    ),
    get("/cluster/firewall/rules", &[], firewall::cluster_rules),
    post(
        "/cluster/firewall/rules",
        RULE_CREATE,
        firewall::cluster_rule_create,
    ),
    put(
        "/cluster/firewall/rules/{pos}",
        RULE_UPDATE,
        firewall::cluster_rule_update,
    ),
    delete(
        "/cluster/firewall/rules/{pos}",
        RULE_DELETE,
        firewall::cluster_rule_delete,
    ),
    get("/cluster/firewall/options", &[], firewall::options),
    put(
        "/cluster/firewall/options",
        OPTIONS_UPDATE,
        firewall::options_update,
    ),
    get("/cluster/firewall/aliases", &[], firewall::aliases),
    get("/cluster/firewall/ipset", &[], firewall::ipsets),
    get(
        "/nodes/{node}/qemu/{vmid}/firewall/rules",
        &[],
        firewall::qemu_rules,
    ),
    post(
        "/nodes/{node}/qemu/{vmid}/firewall/rules",
        RULE_CREATE,
        firewall::qemu_rule_create,
    ),
    put(
        "/nodes/{node}/qemu/{vmid}/firewall/rules/{pos}",
        RULE_UPDATE,
        firewall::qemu_rule_update,
    ),
    delete(
        "/nodes/{node}/qemu/{vmid}/firewall/rules/{pos}",
        RULE_DELETE,
        firewall::qemu_rule_delete,
    ),
    get(
        "/nodes/{node}/lxc/{vmid}/firewall/rules",
        &[],
        firewall::lxc_rules,
    ),
    post(
        "/nodes/{node}/lxc/{vmid}/firewall/rules",
        RULE_CREATE,
        firewall::lxc_rule_create,
    ),
    put(
        "/nodes/{node}/lxc/{vmid}/firewall/rules/{pos}",
        RULE_UPDATE,
        firewall::lxc_rule_update,
    ),
    delete(
        "/nodes/{node}/lxc/{vmid}/firewall/rules/{pos}",
        RULE_DELETE,
        firewall::lxc_rule_delete,
    ),
    // Kept last: the doctor's permission check may add the same route at the bottom.
    get(
        "/access/permissions",
        &[s("path"), s("userid")],
        access::permissions,
    ),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read;

    use serde_json::Value;

    use super::super::api::Kind;
    use super::*;

    fn endpoints() -> Option<Value> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/pve-api/endpoints-pve-9.1.json.gz");
        let Ok(file) = std::fs::File::open(&path) else {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "{} is missing under CI", path.display());
            eprintln!("SKIP: {} not found", path.display());
            return None;
        };
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .expect("gzip");
        Some(serde_json::from_str(&text).expect("json"))
    }

    fn kind_name(kind: Kind) -> &'static str {
        match kind {
            Kind::Str | Kind::Enum(_) => "string",
            Kind::Int => "integer",
            Kind::Bool => "boolean",
        }
    }

    /// Every route of this table declares exactly the schema's non-path parameters,
    /// with the schema's types, enums and required flags.
    #[test]
    fn routes_declare_exactly_the_schema_parameters() {
        let Some(api) = endpoints() else { return };
        let mut failures = Vec::new();
        for route in ROUTES {
            let method = format!("{:?}", route.method).to_uppercase();
            let Some(schema) = api[route.pattern][&method]["parameters"].as_object() else {
                failures.push(format!("{method} {} is not in the API", route.pattern));
                continue;
            };
            let captures: Vec<&str> = route
                .pattern
                .split('/')
                .filter_map(|p| p.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
                .collect();
            let expected: BTreeMap<&str, &Value> = schema
                .iter()
                .filter(|(k, _)| !captures.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v))
                .collect();
            let ours: BTreeMap<&str, &Param> = route.params.iter().map(|p| (p.name, p)).collect();
            let names = |m: Vec<&str>| m.join(",");
            if names(expected.keys().copied().collect()) != names(ours.keys().copied().collect()) {
                failures.push(format!(
                    "{method} {}: schema {:?} vs route {:?}",
                    route.pattern,
                    expected.keys().collect::<Vec<_>>(),
                    ours.keys().collect::<Vec<_>>()
                ));
                continue;
            }
            for (name, spec) in expected {
                let p = ours[name];
                let api_type = spec["type"].as_str().unwrap_or("string");
                let optional = spec["optional"].as_i64() == Some(1);
                if api_type != kind_name(p.kind) || optional == p.required {
                    failures.push(format!("{method} {}: {name}", route.pattern));
                }
                if let (Some(values), Kind::Enum(ours)) = (spec["enum"].as_array(), p.kind) {
                    let theirs: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                    if theirs != ours {
                        failures.push(format!("{method} {}: {name} enum", route.pattern));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
