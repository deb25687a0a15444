//! What a Proxmox Backup Server request does, by the same rules as a Proxmox VE one: the facts
//! come from PBS's own API schema (the API viewer's `apidoc.js`, carried pinned as
//! `tests/data/apidoc-pbs-4.js.gz`), rendered into the committed `pbs-endpoints.tsv`.
//!
//! PBS writes its permission checks differently from PVE: `{"check": {"path", "privs",
//! "partial"}}` (partial: any one privilege of the list; else all), `{"or": […]}` and
//! `{"and": […]}`, or `{"user": "all"}` with the real check in code and described in words
//! ("either DATASTORE_AUDIT for any or DATASTORE_BACKUP and being the owner"). Invariants:
//! - a read is proven, never presumed: a GET is a read only when an auditor's privileges pass
//!   its check, or its description names an auditor's privilege, or it names none and the
//!   entry is open to every user; an entry with no permissions at all is the superuser's, so
//!   never a read; every other method changes something;
//! - an endpoint missing from the table, or a parameter it does not declare, is
//!   [`Effect::Unplaced`];
//! - the few facts the schema cannot say are hand rules here, each with its reason: garbage
//!   collection destroys (it removes the chunks a prune left unreferenced), and a prune with
//!   `dry-run` set only reads.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::derive::{self, Facts, ParamKind};
use super::table::{self, Endpoint, Table};
use super::{Classified, Effect};

/// The generated table.
const TSV: &str = include_str!("pbs-endpoints.tsv");

/// Privileges that only let their holder look, in PBS's permission model.
pub const PBS_READ_PRIVILEGES: &[&str] =
    &["Sys.Audit", "Datastore.Audit", "Remote.Audit", "Tape.Audit"];

fn pbs() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| Table::parse(TSV))
}

/// Every endpoint of the PBS table.
pub fn pbs_endpoints() -> &'static [Endpoint] {
    pbs().all()
}

/// The PBS endpoint a request's method and rendered path reach, if the table knows it.
pub fn pbs_endpoint(method: &str, path: &str) -> Option<&'static Endpoint> {
    pbs().endpoint(method, path)
}

/// Every PBS endpoint a path template can reach.
pub fn pbs_endpoints_for_template(method: &str, template: &str) -> Vec<&'static Endpoint> {
    pbs().for_template(method, template)
}

/// Renders `pbs-endpoints.tsv` from the flattened PBS schema (`{path: {METHOD: entry}}`).
pub fn render_pbs(schema: &Value) -> String {
    table::render_with(schema, facts)
}

/// Derives the facts of `method` on `path` from its PBS schema `entry`.
pub fn facts(method: &str, path: &str, entry: &Value) -> Facts {
    let is_get = method.eq_ignore_ascii_case("GET");
    let permissions = entry
        .get("permissions")
        .filter(|p| p.as_object().is_some_and(|o| !o.is_empty()));
    let mut privileges = Vec::new();
    if let Some(p) = permissions {
        collect_checked(p, &mut privileges);
        if let Some(text) = p.get("description").and_then(Value::as_str) {
            privileges.extend(described_privileges(text));
        }
    }
    privileges.sort();
    privileges.dedup();
    let read_satisfies = match permissions {
        // No permissions at all: the superuser's.
        None => false,
        Some(p) => satisfied_by_reads(p),
    };
    let mut effects = Vec::new();
    let mut add = |e: Effect| {
        if !effects.contains(&e) {
            effects.push(e);
        }
    };
    if !is_get {
        add(Effect::Change);
    }
    if is_get && !read_satisfies {
        add(Effect::SensitiveRead);
    }
    if !is_get {
        for privilege in &privileges {
            match privilege.as_str() {
                "Datastore.Prune" | "Sys.PowerMgmt" => add(Effect::Destroy),
                "Permissions.Modify" => add(Effect::Access),
                "Sys.Console" => add(Effect::Exec),
                _ => {}
            }
        }
        if method.eq_ignore_ascii_case("DELETE") {
            add(Effect::Destroy);
        }
        if path.starts_with("/access") || path.starts_with("/config/access") {
            add(Effect::Access);
        }
    } else if privileges.iter().any(|p| p == "Sys.Console") {
        add(Effect::Exec);
    }
    let properties = entry
        .pointer("/parameters/properties")
        .or_else(|| entry.get("parameters"))
        .and_then(Value::as_object);
    let mut params: Vec<(String, ParamKind)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (name, spec) in properties.into_iter().flatten() {
        if !spec.is_object() {
            continue;
        }
        names.push(name.clone());
        let kind = derive::param_kind(name, spec)
            .or_else(|| (name == "host" && !is_get).then_some(ParamKind::Server));
        if let Some(kind) = kind.filter(|k| !matches!(k, ParamKind::Volume | ParamKind::Vmids)) {
            params.push((name.clone(), kind));
        }
    }
    params.sort_by(|a, b| a.0.cmp(&b.0));
    names.sort();
    Facts {
        read_satisfies,
        privileges,
        effects,
        params,
        names,
    }
}

/// Privilege names of the structured checks (`check`, `or`, `and`).
fn collect_checked(p: &Value, out: &mut Vec<String>) {
    if let Some(privs) = p.pointer("/check/privs").and_then(Value::as_array) {
        out.extend(privs.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    for op in ["or", "and"] {
        for item in p.get(op).and_then(Value::as_array).into_iter().flatten() {
            collect_checked(item, out);
        }
    }
}

/// Privileges a prose description names, as `Datastore.Audit` or as PBS's constant
/// `DATASTORE_AUDIT`, in the `Datastore.Audit` spelling.
fn described_privileges(text: &str) -> Vec<String> {
    static DOTTED: OnceLock<Option<Regex>> = OnceLock::new();
    static CONSTANT: OnceLock<Option<Regex>> = OnceLock::new();
    let dotted = DOTTED.get_or_init(|| {
        Regex::new(r"\b(Sys|Datastore|Remote|Tape|Permissions|Realm)\.[A-Z][A-Za-z]+\b").ok()
    });
    let constant = CONSTANT.get_or_init(|| {
        Regex::new(r"\b(SYS|DATASTORE|REMOTE|TAPE|PERMISSIONS|REALM)_([A-Z]+)\b").ok()
    });
    let mut out: Vec<String> = dotted
        .iter()
        .flat_map(|re| re.find_iter(text).map(|m| m.as_str().to_owned()))
        .collect();
    if let Some(re) = constant {
        for c in re.captures_iter(text) {
            out.push(format!("{}.{}", title(&c[1]), title(&c[2])));
        }
    }
    out
}

fn title(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Whether holding an auditor's privileges passes the permission entry.
fn satisfied_by_reads(p: &Value) -> bool {
    if let Some(check) = p.get("check") {
        let privs: Vec<&str> = check
            .get("privs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let partial = check
            .get("partial")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let reads = |x: &&str| PBS_READ_PRIVILEGES.contains(x);
        return !privs.is_empty()
            && if partial {
                privs.iter().any(reads)
            } else {
                privs.iter().all(reads)
            };
    }
    if let Some(items) = p.get("or").and_then(Value::as_array) {
        return items.iter().any(satisfied_by_reads);
    }
    if let Some(items) = p.get("and").and_then(Value::as_array) {
        return !items.is_empty() && items.iter().all(satisfied_by_reads);
    }
    if p.get("user").and_then(Value::as_str).is_some() {
        // Checked in code: a described check passes an auditor when it names an auditor's
        // privilege, or names none at all (the user's own objects).
        let named = p
            .get("description")
            .and_then(Value::as_str)
            .map(described_privileges)
            .unwrap_or_default();
        return named.is_empty()
            || named
                .iter()
                .any(|n| PBS_READ_PRIVILEGES.contains(&n.as_str()));
    }
    false
}

/// Classifies a PBS request: method, rendered path (no `/api2/json`), parameters.
pub fn classify_pbs(method: &str, path: &str, params: &[(String, String)]) -> Classified {
    let mut out = Classified::read();
    let Some(endpoint) = pbs_endpoint(method, path) else {
        out.add(
            Effect::Unplaced,
            format!("{method} {path} is not in the Proxmox Backup Server API this server knows"),
        );
        if !method.eq_ignore_ascii_case("GET") {
            out.add(Effect::Change, format!("{method} {path}"));
        }
        return out;
    };
    let at = format!("PBS {} {}", endpoint.method, endpoint.path);
    let value = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let truthy = |name: &str| value(name).is_some_and(|v| v == "1" || v == "true");
    let prune = endpoint.method == "POST"
        && (endpoint.path.ends_with("/prune") || endpoint.path.ends_with("/prune-datastore"));
    // A prune's dry run lists what it would remove and touches nothing.
    let only_looks = prune && truthy("dry-run");
    if !only_looks {
        for effect in &endpoint.effects {
            let because = match effect {
                Effect::SensitiveRead | Effect::Destroy | Effect::Access | Effect::Exec
                    if !endpoint.privileges.is_empty() =>
                {
                    format!("{at} needs {}", endpoint.privileges.join(" or "))
                }
                _ => at.clone(),
            };
            out.add(*effect, because);
        }
        if endpoint.method == "POST" && endpoint.path == "/admin/datastore/{store}/gc" {
            out.add(
                Effect::Destroy,
                format!("{at}: garbage collection removes every chunk no backup references"),
            );
        }
    }
    for (key, value) in params {
        if !endpoint.declares(key) {
            out.add(
                Effect::Unplaced,
                format!(
                    "{key}: not a parameter of {at} in the PBS schema, so this server cannot place it"
                ),
            );
        }
        match endpoint.param_kind(key) {
            Some(ParamKind::Url) => out.add(Effect::Egress, format!("{key}: PBS fetches this URL")),
            Some(ParamKind::Server) => {
                out.add(Effect::Egress, format!("{key}: PBS connects to {value}"))
            }
            Some(ParamKind::Mail) => {
                out.add(Effect::Egress, format!("{key}: PBS sends mail to it"))
            }
            _ => {}
        }
        if !endpoint.method.eq_ignore_ascii_case("GET")
            && matches!(key.as_str(), "password" | "secret-key")
        {
            out.add(Effect::Access, format!("{key}: sets a credential"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn described_privileges_are_read_in_both_spellings() {
        let text = "Requires on /datastore/{store} either DATASTORE_AUDIT for any or \
                    Datastore.Backup and being the owner";
        let mut got = described_privileges(text);
        got.sort();
        assert_eq!(got, ["Datastore.Audit", "Datastore.Backup"]);
    }

    #[test]
    fn reads_are_proven_from_the_entry() {
        let audit = json!({"permissions": {"check": {"partial": false, "path": ["datastore", "{store}"], "privs": ["Datastore.Audit"]}}});
        assert!(facts("GET", "/x", &audit).effects.is_empty());
        let download = json!({"permissions": {"user": "all", "description": "either DATASTORE_READ for any or DATASTORE_BACKUP and being the owner"}});
        assert_eq!(
            facts("GET", "/x", &download).effects,
            [Effect::SensitiveRead]
        );
        let superuser = json!({"parameters": {"properties": {}}});
        assert_eq!(
            facts("GET", "/nodes", &superuser).effects,
            [Effect::SensitiveRead]
        );
        let all_of = json!({"permissions": {"check": {"partial": false, "path": [], "privs": ["Datastore.Audit", "Datastore.Read"]}}});
        assert!(!facts("GET", "/x", &all_of).read_satisfies);
        let any_of = json!({"permissions": {"check": {"partial": true, "path": [], "privs": ["Datastore.Audit", "Datastore.Read"]}}});
        assert!(facts("GET", "/x", &any_of).read_satisfies);
        let prune = json!({"permissions": {"user": "all", "description": "either DATASTORE_MODIFY for any or DATASTORE_PRUNE and being the owner"}});
        assert_eq!(
            facts("POST", "/admin/datastore/{store}/prune", &prune).effects,
            [Effect::Change, Effect::Destroy]
        );
        // An auditor's check never makes a POST a read.
        assert_eq!(facts("POST", "/x", &audit).effects, [Effect::Change]);
    }
}
