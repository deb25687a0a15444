//! The access-control and firewall seed: three users (root, the emulator's own token
//! user, alice), an `admins` group, the usual built-in roles, the `pam` and `pve` realms,
//! a few ACLs, two datacenter firewall rules, one alias, one IP set and one VM rule.
//!
//! Invariant: deterministic; the token the emulator accepts exists as a token of its
//! user (without a secret — the emulator checks the header, not this table).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::stamps::digest_of;
use super::state_security::{Acl, Group, Realm, Role, Ruleset, SecurityState, Token, UgKind, User};

const AUDIT: &[&str] = &[
    "Datastore.Audit",
    "Mapping.Audit",
    "Pool.Audit",
    "SDN.Audit",
    "Sys.Audit",
    "VM.Audit",
    "VM.GuestAgent.Audit",
];

const VM_USER: &[&str] = &[
    "Datastore.AllocateSpace",
    "Datastore.Audit",
    "Pool.Audit",
    "VM.Audit",
    "VM.Backup",
    "VM.Config.CDROM",
    "VM.Config.Cloudinit",
    "VM.Console",
    "VM.GuestAgent.Audit",
    "VM.GuestAgent.Unrestricted",
    "VM.PowerMgmt",
];

const ADMIN: &[&str] = &[
    "Datastore.Allocate",
    "Datastore.AllocateSpace",
    "Datastore.AllocateTemplate",
    "Datastore.Audit",
    "Group.Allocate",
    "Mapping.Audit",
    "Mapping.Use",
    "Pool.Allocate",
    "Pool.Audit",
    "SDN.Audit",
    "SDN.Use",
    "Sys.Audit",
    "Sys.Console",
    "Sys.Syslog",
    "User.Modify",
    "VM.Allocate",
    "VM.Audit",
    "VM.Backup",
    "VM.Clone",
    "VM.Config.CDROM",
    "VM.Config.CPU",
    "VM.Config.Cloudinit",
    "VM.Config.Disk",
    "VM.Config.HWType",
    "VM.Config.Memory",
    "VM.Config.Network",
    "VM.Config.Options",
    "VM.Console",
    "VM.GuestAgent.Audit",
    "VM.GuestAgent.Unrestricted",
    "VM.Migrate",
    "VM.PowerMgmt",
    "VM.Snapshot",
    "VM.Snapshot.Rollback",
];

/// Privileges only `Administrator` has on top of `PVEAdmin`.
const ADMIN_EXTRA: &[&str] = &[
    "Mapping.Modify",
    "Permissions.Modify",
    "Realm.Allocate",
    "Realm.AllocateUser",
    "Sys.Incoming",
    "Sys.Modify",
    "Sys.PowerMgmt",
];

fn role(roleid: &str, privs: &[&'static str]) -> Role {
    Role {
        roleid: roleid.into(),
        privs: privs.to_vec(),
        special: true,
    }
}

fn acl(path: &str, kind: UgKind, ugid: &str, roleid: &str) -> Acl {
    Acl {
        path: path.into(),
        kind,
        ugid: ugid.into(),
        roleid: roleid.into(),
        propagate: true,
    }
}

fn rule(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Builds the seed; `user` / `token_name` are the emulator's accepted token.
pub(super) fn seed(user: &str, token_name: &str) -> SecurityState {
    let mut root = User::new("root@pam");
    root.info
        .insert("comment".into(), json!("Built-in Superuser"));
    root.has_password = true;
    let mut service = User::new(user);
    service
        .info
        .insert("comment".into(), json!("MCP service account"));
    service.tokens.push(Token {
        tokenid: token_name.into(),
        comment: Some("nandi-proxmox-mcp".into()),
        expire: 0,
        privsep: false,
    });
    let mut alice = User::new("alice@pve");
    alice
        .info
        .insert("email".into(), json!("alice@example.com"));
    alice.info.insert("firstname".into(), json!("Alice"));
    alice.groups.push("admins".into());
    alice.has_password = true;

    let mut administrator = role("Administrator", ADMIN);
    administrator.privs.extend_from_slice(ADMIN_EXTRA);
    administrator.privs.sort_unstable();

    let mut guest_rules = BTreeMap::new();
    guest_rules.insert(
        101,
        Ruleset {
            rules: vec![rule(json!({
                "type": "in", "action": "ACCEPT", "macro": "HTTPS", "enable": 1,
                "comment": "public web",
            }))],
        },
    );

    SecurityState {
        users: vec![root, service, alice],
        groups: vec![Group {
            groupid: "admins".into(),
            comment: "Cluster administrators".into(),
        }],
        roles: vec![
            administrator,
            role("NoAccess", &[]),
            role("PVEAdmin", ADMIN),
            role("PVEAuditor", AUDIT),
            role("PVEVMUser", VM_USER),
            // A custom role as `bootstrap` would add: node logs are readable by the
            // service token, which no read-only built-in role allows.
            Role {
                special: false,
                ..role("NandiMcpSyslog", &["Sys.Syslog"])
            },
        ],
        realms: vec![
            Realm {
                realm: "pam".into(),
                kind: "pam".into(),
                comment: "Linux PAM standard authentication".into(),
            },
            Realm {
                realm: "pve".into(),
                kind: "pve".into(),
                comment: "Proxmox VE authentication server".into(),
            },
        ],
        acls: vec![
            acl("/", UgKind::User, user, "PVEAuditor"),
            acl("/vms", UgKind::User, user, "PVEVMUser"),
            acl("/nodes", UgKind::User, user, "NandiMcpSyslog"),
            acl("/", UgKind::Group, "admins", "PVEAdmin"),
        ],
        cluster_rules: Ruleset {
            rules: vec![
                rule(json!({
                    "type": "in", "action": "ACCEPT", "macro": "SSH", "source": "+management",
                    "enable": 1, "comment": "SSH from management",
                })),
                rule(json!({
                    "type": "in", "action": "ACCEPT", "proto": "tcp", "dport": "8006",
                    "source": "+management", "enable": 1, "comment": "Web GUI",
                })),
            ],
        },
        fw_options: rule(json!({"enable": 0, "policy_in": "DROP", "policy_out": "ACCEPT"})),
        aliases: vec![json!({
            "name": "lan", "cidr": "192.168.1.0/24", "comment": "Office LAN",
            "digest": digest_of("aliases:lan"),
        })],
        ipsets: vec![json!({
            "name": "management", "comment": "Admin workstations",
            "digest": digest_of("ipset:management"),
        })],
        guest_rules,
    }
}
