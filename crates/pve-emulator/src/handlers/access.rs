//! Access-control endpoints: users, groups, roles, realms, ACLs, API tokens and the
//! effective-permissions read.
//!
//! Invariant: a change either fails with Proxmox's message and leaves the state as it
//! was (every check runs before the first mutation), or is visible to the next read.
//! No password is stored and a new token's secret is returned once, never kept.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};
use super::super::state_security::{Acl, SecurityState, Token, UgKind, User};

/// Text fields a user carries, as Proxmox names them.
const USER_TEXT: &[&str] = &["email", "firstname", "lastname", "comment"];

fn no_such_user(userid: &str) -> ApiError {
    ApiError::server(format!("no such user ('{userid}')"))
}

fn check_userid(userid: &str) -> Result<(), ApiError> {
    let valid = userid.split_once('@').is_some_and(|(name, realm)| {
        !name.is_empty()
            && !name.contains(|c: char| c.is_whitespace() || ":/!".contains(c))
            && realm.starts_with(|c: char| c.is_ascii_alphabetic())
    });
    if valid {
        Ok(())
    } else {
        Err(ApiError::param(
            "userid",
            format!("value '{userid}' does not look like a valid user name"),
        ))
    }
}

fn split_list(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or("")
        .split([',', ';', ' '])
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn check_groups(sec: &SecurityState, groups: &[String]) -> Result<(), ApiError> {
    match groups
        .iter()
        .find(|g| !sec.groups.iter().any(|x| &x.groupid == *g))
    {
        Some(missing) => Err(ApiError::server(format!("no such group '{missing}'"))),
        None => Ok(()),
    }
}

fn user_row(sec: &SecurityState, user: &User, full: bool) -> Value {
    let mut row = Map::new();
    row.insert("userid".into(), json!(user.userid));
    row.insert("enable".into(), json!(u8::from(user.enable)));
    row.insert("expire".into(), json!(user.expire));
    for (key, value) in &user.info {
        row.insert(key.clone(), value.clone());
    }
    if !user.groups.is_empty() {
        row.insert("groups".into(), json!(user.groups.join(",")));
    }
    if let Some(realm) = sec.realms.iter().find(|r| r.realm == user.realm()) {
        row.insert("realm-type".into(), json!(realm.kind));
    }
    if full {
        let tokens: Vec<Value> = user.tokens.iter().map(Token::row).collect();
        row.insert("tokens".into(), Value::Array(tokens));
    }
    Value::Object(row)
}

/// `GET /access/users`.
pub(in super::super) fn users(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let full = call.flag("full");
    let enabled = call.str("enabled").map(|_| call.flag("enabled"));
    let sec = &call.st.security;
    let rows = sec
        .users
        .iter()
        .filter(|u| enabled.is_none_or(|want| u.enable == want))
        .map(|u| user_row(sec, u, full))
        .collect();
    Ok(Value::Array(rows))
}

/// `POST /access/users`.
pub(in super::super) fn user_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let userid = call.str("userid").unwrap_or_default().to_string();
    check_userid(&userid)?;
    let groups = split_list(call.str("groups"));
    let mut user = User::new(&userid);
    let sec = &call.st.security;
    if !sec.realms.iter().any(|r| r.realm == user.realm()) {
        return Err(ApiError::server(format!(
            "create user failed: domain '{}' does not exist",
            user.realm()
        )));
    }
    if sec.user(&userid).is_some() {
        return Err(ApiError::server(format!(
            "create user failed: user '{userid}' already exists"
        )));
    }
    check_groups(sec, &groups)?;
    if let Some(password) = call.str("password")
        && password.chars().count() < 8
    {
        return Err(ApiError::param(
            "password",
            "value must be at least 8 characters long",
        ));
    }
    for key in USER_TEXT {
        if let Some(v) = call.str(key) {
            user.info.insert((*key).into(), json!(v));
        }
    }
    user.groups = groups;
    user.expire = call.int("expire").unwrap_or(0).max(0) as u64;
    user.enable = call.str("enable").is_none() || call.flag("enable");
    user.has_password = call.str("password").is_some();
    call.st.security.users.push(user);
    Ok(Value::Null)
}

/// `PUT /access/users/{userid}`.
pub(in super::super) fn user_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let userid = call.cap("userid").to_string();
    let groups = call.str("groups").map(|g| split_list(Some(g)));
    let append = call.flag("append");
    if append && groups.is_none() {
        return Err(ApiError::param(
            "append",
            "missing property - 'groups' is required by 'append'",
        ));
    }
    let sec = &call.st.security;
    if sec.user(&userid).is_none() {
        return Err(no_such_user(&userid));
    }
    if let Some(groups) = &groups {
        check_groups(sec, groups)?;
    }
    let text: Vec<(&str, String)> = USER_TEXT
        .iter()
        .filter_map(|k| call.str(k).map(|v| (*k, v.to_string())))
        .collect();
    let expire = call.int("expire");
    let enable = call.str("enable").map(|_| call.flag("enable"));
    let Some(user) = call.st.security.user_mut(&userid) else {
        return Err(no_such_user(&userid));
    };
    for (key, value) in text {
        user.info.insert(key.into(), json!(value));
    }
    if let Some(expire) = expire {
        user.expire = expire.max(0) as u64;
    }
    if let Some(enable) = enable {
        user.enable = enable;
    }
    if let Some(groups) = groups {
        if append {
            for g in groups {
                if !user.groups.contains(&g) {
                    user.groups.push(g);
                }
            }
        } else {
            user.groups = groups;
        }
    }
    Ok(Value::Null)
}

/// `DELETE /access/users/{userid}`: the user, its tokens and every ACL naming them.
pub(in super::super) fn user_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let userid = call.cap("userid").to_string();
    let sec = &mut call.st.security;
    if sec.user(&userid).is_none() {
        return Err(no_such_user(&userid));
    }
    sec.users.retain(|u| u.userid != userid);
    let token_prefix = format!("{userid}!");
    sec.acls.retain(|acl| match acl.kind {
        UgKind::User => acl.ugid != userid,
        UgKind::Token => !acl.ugid.starts_with(&token_prefix),
        UgKind::Group => true,
    });
    Ok(Value::Null)
}

/// `GET /access/groups`.
pub(in super::super) fn groups(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let sec = &call.st.security;
    let rows = sec
        .groups
        .iter()
        .map(|g| {
            let members: Vec<&str> = sec
                .users
                .iter()
                .filter(|u| u.groups.contains(&g.groupid))
                .map(|u| u.userid.as_str())
                .collect();
            json!({"groupid": g.groupid, "comment": g.comment, "users": members.join(",")})
        })
        .collect();
    Ok(Value::Array(rows))
}

/// `GET /access/roles`.
pub(in super::super) fn roles(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let rows = call
        .st
        .security
        .roles
        .iter()
        .map(|r| json!({"roleid": r.roleid, "privs": r.privs.join(","), "special": u8::from(r.special)}))
        .collect();
    Ok(Value::Array(rows))
}

/// `GET /access/domains`.
pub(in super::super) fn domains(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let rows = call
        .st
        .security
        .realms
        .iter()
        .map(|r| json!({"realm": r.realm, "type": r.kind, "comment": r.comment}))
        .collect();
    Ok(Value::Array(rows))
}

/// `GET /access/acl`.
pub(in super::super) fn acls(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let rows = call
        .st
        .security
        .acls
        .iter()
        .map(|a| {
            json!({
                "path": a.path, "type": a.kind.word(), "ugid": a.ugid,
                "roleid": a.roleid, "propagate": u8::from(a.propagate),
            })
        })
        .collect();
    Ok(Value::Array(rows))
}

/// `PUT /access/acl`: grant (or with `delete=1` revoke) roles on a path.
pub(in super::super) fn acl_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let path = call.str("path").unwrap_or_default().to_string();
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        return Err(ApiError::server(format!("invalid ACL path '{path}'")));
    }
    // Proxmox stores paths without a trailing slash (except the root).
    let path = if path.len() > 1 {
        path.trim_end_matches('/').to_string()
    } else {
        path
    };
    let roles = split_list(call.str("roles"));
    let propagate = call.str("propagate").is_none() || call.flag("propagate");
    let remove = call.flag("delete");
    let mut grantees: Vec<(UgKind, String)> = Vec::new();
    for (key, kind) in [
        ("users", UgKind::User),
        ("groups", UgKind::Group),
        ("tokens", UgKind::Token),
    ] {
        grantees.extend(split_list(call.str(key)).into_iter().map(|id| (kind, id)));
    }
    let sec = &call.st.security;
    if let Some(role) = roles
        .iter()
        .find(|r| !sec.roles.iter().any(|x| &x.roleid == *r))
    {
        return Err(ApiError::server(format!("role '{role}' does not exist")));
    }
    if !remove {
        for (kind, id) in &grantees {
            let exists = match kind {
                UgKind::User => sec.user(id).is_some(),
                UgKind::Group => sec.groups.iter().any(|g| &g.groupid == id),
                UgKind::Token => sec.token_exists(id),
            };
            if !exists {
                return Err(ApiError::server(format!(
                    "{} '{id}' does not exist",
                    kind.word()
                )));
            }
        }
    }
    let acls = &mut call.st.security.acls;
    for (kind, ugid) in grantees {
        for roleid in &roles {
            acls.retain(|a| {
                !(a.path == path && a.kind == kind && a.ugid == ugid && &a.roleid == roleid)
            });
            if !remove {
                acls.push(Acl {
                    path: path.clone(),
                    kind,
                    ugid: ugid.clone(),
                    roleid: roleid.clone(),
                    propagate,
                });
            }
        }
    }
    Ok(Value::Null)
}

/// `GET /access/users/{userid}/token`.
pub(in super::super) fn tokens(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let userid = call.cap("userid");
    let user = call
        .st
        .security
        .user(userid)
        .ok_or_else(|| no_such_user(userid))?;
    Ok(Value::Array(user.tokens.iter().map(Token::row).collect()))
}

/// A fresh token secret in Proxmox's UUID form.
fn fresh_secret() -> String {
    let b: [u8; 16] = rand::random();
    let hex = hex::encode(b);
    format!(
        "{}-{}-4{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `POST /access/users/{userid}/token/{tokenid}`: returns the secret once.
pub(in super::super) fn token_create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let userid = call.cap("userid").to_string();
    let tokenid = call.cap("tokenid").to_string();
    let valid = tokenid.len() >= 2
        && tokenid.starts_with(|c: char| c.is_ascii_alphabetic())
        && tokenid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !valid {
        return Err(ApiError::param(
            "tokenid",
            format!("value does not match the regex pattern - got '{tokenid}'"),
        ));
    }
    let token = Token {
        tokenid: tokenid.clone(),
        comment: call.str("comment").map(String::from),
        expire: call.int("expire").unwrap_or(0).max(0) as u64,
        privsep: call.str("privsep").is_none() || call.flag("privsep"),
    };
    let user = call
        .st
        .security
        .user_mut(&userid)
        .ok_or_else(|| no_such_user(&userid))?;
    if user.tokens.iter().any(|t| t.tokenid == tokenid) {
        return Err(ApiError::server("Token already exists."));
    }
    let mut info = json!({"privsep": u8::from(token.privsep), "expire": token.expire});
    if let (Some(comment), Some(map)) = (&token.comment, info.as_object_mut()) {
        map.insert("comment".into(), json!(comment));
    }
    user.tokens.push(token);
    Ok(json!({
        "full-tokenid": format!("{userid}!{tokenid}"),
        "info": info,
        "value": fresh_secret(),
    }))
}

/// `DELETE /access/users/{userid}/token/{tokenid}`: the token and its ACLs.
pub(in super::super) fn token_delete(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let userid = call.cap("userid").to_string();
    let tokenid = call.cap("tokenid").to_string();
    let sec = &mut call.st.security;
    let user = sec.user_mut(&userid).ok_or_else(|| no_such_user(&userid))?;
    let before = user.tokens.len();
    user.tokens.retain(|t| t.tokenid != tokenid);
    if user.tokens.len() == before {
        return Err(ApiError::server(format!(
            "no such token '{tokenid}' for user '{userid}'"
        )));
    }
    let full = format!("{userid}!{tokenid}");
    sec.acls
        .retain(|a| !(a.kind == UgKind::Token && a.ugid == full));
    Ok(Value::Null)
}

/// `GET /access/permissions`: path → {privilege: 1} for `userid` (default: the
/// API token making the request), at `path` only or at every path an ACL names.
pub(in super::super) fn permissions(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let st = &*call.st;
    let ugid = call.str("userid").unwrap_or(&st.caller).to_string();
    let sec = &st.security;
    let userid = ugid.split_once('!').map_or(ugid.as_str(), |(u, _)| u);
    if sec.user(userid).is_none() {
        return Err(no_such_user(userid));
    }
    let paths: Vec<String> = match call.str("path") {
        Some(path) => vec![path.to_string()],
        None => {
            let mut paths: Vec<String> = std::iter::once("/".to_string())
                .chain(sec.acls.iter().map(|a| a.path.clone()))
                .collect();
            paths.sort();
            paths.dedup();
            paths
        }
    };
    let mut out = Map::new();
    for path in paths {
        let privs = sec.privileges_at(&ugid, &path);
        if privs.is_empty() && call.str("path").is_none() {
            continue;
        }
        let map: Map<String, Value> = privs.into_iter().map(|p| (p.into(), json!(1))).collect();
        out.insert(path, Value::Object(map));
    }
    Ok(Value::Object(out))
}
