//! Access-control and firewall state of the emulated cluster: users, tokens, groups,
//! roles, realms, ACLs, the datacenter firewall and the per-guest rulesets.
//!
//! Invariant: the emulator keeps no password and no token secret — a user only records
//! whether a password was set, and a created token's secret is handed out once and
//! forgotten, as Proxmox shows it only once. Rulesets are plain ordered lists; a rule's
//! `pos` is its index and the ruleset `digest` changes whenever any rule does.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::stamps::digest_of;

/// An API token of a user (metadata only).
#[derive(Debug, Clone)]
pub(super) struct Token {
    /// Token name (the part after `!`).
    pub tokenid: String,
    /// Free-text comment.
    pub comment: Option<String>,
    /// Expiry, epoch seconds (0 = never).
    pub expire: u64,
    /// Privilege separation.
    pub privsep: bool,
}

impl Token {
    /// The row `GET …/token` returns.
    pub fn row(&self) -> Value {
        let mut row = json!({
            "tokenid": self.tokenid,
            "expire": self.expire,
            "privsep": u8::from(self.privsep),
        });
        if let (Some(comment), Some(map)) = (&self.comment, row.as_object_mut()) {
            map.insert("comment".into(), json!(comment));
        }
        row
    }
}

/// A user account.
#[derive(Debug, Clone)]
pub(super) struct User {
    /// `name@realm`.
    pub userid: String,
    /// Whether the account may log in.
    pub enable: bool,
    /// Expiry, epoch seconds (0 = never).
    pub expire: u64,
    /// Optional text fields as Proxmox names them (`email`, `firstname`, `lastname`,
    /// `comment`).
    pub info: Map<String, Value>,
    /// Group memberships.
    pub groups: Vec<String>,
    /// API tokens.
    pub tokens: Vec<Token>,
    /// Whether a password was given at creation (the password itself is not kept).
    pub has_password: bool,
}

impl User {
    /// A fresh enabled user with no details.
    pub fn new(userid: &str) -> User {
        User {
            userid: userid.to_string(),
            enable: true,
            expire: 0,
            info: Map::new(),
            groups: Vec::new(),
            tokens: Vec::new(),
            has_password: false,
        }
    }

    /// The realm part of the userid.
    pub fn realm(&self) -> &str {
        self.userid.rsplit_once('@').map_or("", |(_, realm)| realm)
    }
}

/// A user group.
#[derive(Debug, Clone)]
pub(super) struct Group {
    /// Group id.
    pub groupid: String,
    /// Free-text comment.
    pub comment: String,
}

/// A role: a named set of privileges.
#[derive(Debug, Clone)]
pub(super) struct Role {
    /// Role id (`PVEAdmin`).
    pub roleid: String,
    /// Privileges it grants.
    pub privs: Vec<&'static str>,
    /// Built-in role.
    pub special: bool,
}

/// An authentication realm.
#[derive(Debug, Clone)]
pub(super) struct Realm {
    /// Realm id (`pam`, `pve`).
    pub realm: String,
    /// Realm type.
    pub kind: String,
    /// Free-text comment.
    pub comment: String,
}

/// Who an ACL entry grants to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UgKind {
    /// A user (`name@realm`).
    User,
    /// A group.
    Group,
    /// An API token (`name@realm!tokenid`).
    Token,
}

impl UgKind {
    /// The `type` field of an ACL row.
    pub fn word(self) -> &'static str {
        match self {
            UgKind::User => "user",
            UgKind::Group => "group",
            UgKind::Token => "token",
        }
    }
}

/// One ACL entry: a role for someone on a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Acl {
    /// Path (`/vms/101`).
    pub path: String,
    /// Kind of grantee.
    pub kind: UgKind,
    /// Grantee id.
    pub ugid: String,
    /// Role id.
    pub roleid: String,
    /// Applies below the path too.
    pub propagate: bool,
}

/// An ordered firewall ruleset (rules as Proxmox stores their keys).
#[derive(Debug, Clone, Default)]
pub(super) struct Ruleset {
    /// Rules in evaluation order; a rule's `pos` is its index.
    pub rules: Vec<Map<String, Value>>,
}

impl Ruleset {
    /// The digest of the whole ruleset, as every list row and change carries it.
    pub fn digest(&self) -> String {
        digest_of(&json!(self.rules).to_string())
    }

    /// The list answer: each rule with its `pos` and the ruleset digest.
    pub fn rows(&self) -> Value {
        let digest = self.digest();
        let rows = self
            .rules
            .iter()
            .enumerate()
            .map(|(pos, rule)| {
                let mut row = rule.clone();
                row.insert("pos".into(), json!(pos));
                row.insert("digest".into(), json!(digest));
                Value::Object(row)
            })
            .collect();
        Value::Array(rows)
    }
}

/// Everything about who may do what, and the firewalls.
#[derive(Debug, Clone, Default)]
pub(super) struct SecurityState {
    /// Users, in creation order.
    pub users: Vec<User>,
    /// Groups.
    pub groups: Vec<Group>,
    /// Roles.
    pub roles: Vec<Role>,
    /// Realms.
    pub realms: Vec<Realm>,
    /// ACL entries.
    pub acls: Vec<Acl>,
    /// Datacenter firewall rules.
    pub cluster_rules: Ruleset,
    /// Datacenter firewall options (keys as Proxmox stores them).
    pub fw_options: Map<String, Value>,
    /// Datacenter firewall aliases, as listed.
    pub aliases: Vec<Value>,
    /// Datacenter IP sets, as listed.
    pub ipsets: Vec<Value>,
    /// Per-guest rulesets by vmid (Proxmox keeps one `<vmid>.fw` per guest).
    pub guest_rules: BTreeMap<u32, Ruleset>,
}

impl SecurityState {
    /// A user by id.
    pub fn user(&self, userid: &str) -> Option<&User> {
        self.users.iter().find(|u| u.userid == userid)
    }

    /// A user by id, mutable.
    pub fn user_mut(&mut self, userid: &str) -> Option<&mut User> {
        self.users.iter_mut().find(|u| u.userid == userid)
    }

    /// Whether a full token id (`user@realm!tokenid`) names an existing token.
    pub fn token_exists(&self, full: &str) -> bool {
        full.split_once('!').is_some_and(|(userid, tokenid)| {
            self.user(userid)
                .is_some_and(|u| u.tokens.iter().any(|t| t.tokenid == tokenid))
        })
    }

    /// Digest of the firewall options.
    pub fn options_digest(&self) -> String {
        digest_of(&Value::Object(self.fw_options.clone()).to_string())
    }

    /// Privileges of `ugid` (a user or a full token id) in effect at `path`: every role
    /// granted on the path itself or, when propagating, on a parent. A user gets its own
    /// grants and its groups'; `root@pam` has every privilege. A token without privilege
    /// separation has exactly its user's privileges; a separated one has those granted to
    /// the token that its user also has.
    pub fn privileges_at(&self, ugid: &str, path: &str) -> Vec<&'static str> {
        if let Some((userid, tokenid)) = ugid.split_once('!') {
            let user_privs = self.privileges_at(userid, path);
            let privsep = self
                .user(userid)
                .and_then(|u| u.tokens.iter().find(|t| t.tokenid == tokenid))
                .is_none_or(|t| t.privsep);
            if !privsep {
                return user_privs;
            }
            let mut privs = self.granted(path, |acl| acl.kind == UgKind::Token && acl.ugid == ugid);
            privs.retain(|p| user_privs.contains(p));
            return privs;
        }
        if ugid == "root@pam" {
            let mut all: Vec<&'static str> =
                self.roles.iter().flat_map(|r| r.privs.clone()).collect();
            all.sort_unstable();
            all.dedup();
            return all;
        }
        let groups: &[String] = self.user(ugid).map_or(&[], |u| u.groups.as_slice());
        self.granted(path, |acl| match acl.kind {
            UgKind::User => acl.ugid == ugid,
            UgKind::Group => groups.contains(&acl.ugid),
            UgKind::Token => false,
        })
    }

    /// The privileges of every role granted at `path` (directly or propagated from a
    /// parent) by an ACL entry `who` accepts, sorted and without repeats.
    fn granted(&self, path: &str, who: impl Fn(&Acl) -> bool) -> Vec<&'static str> {
        let on_path = |acl: &Acl| {
            acl.path == path
                || (acl.propagate
                    && (acl.path == "/" || path.starts_with(&format!("{}/", acl.path))))
        };
        let mut privs: Vec<&'static str> = self
            .acls
            .iter()
            .filter(|acl| on_path(acl) && who(acl))
            .filter_map(|acl| self.roles.iter().find(|r| r.roleid == acl.roleid))
            .flat_map(|r| r.privs.clone())
            .collect();
        privs.sort_unstable();
        privs.dedup();
        privs
    }
}
