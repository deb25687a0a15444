//! Facts about one API endpoint, derived from Proxmox's own schema entry for it.
//!
//! Input: one method entry of the API schema (`permissions`, `parameters`), as in
//! `apidata.js` / `../shared/pve-api/endpoints-pve-9.1.json.gz`. Output: whether an auditor's
//! privileges satisfy its permission check, the privileges it names, the effects the endpoint
//! has whatever the arguments, and the parameters whose *values* can add an effect (URLs,
//! servers, mail addresses, guest lists, volumes). The generated `endpoints.tsv` is this
//! function's output over the 9.1 schema; `tests/effects_schema.rs` keeps it current.
//!
//! Invariant: nothing here is a list of endpoints — every fact is read from the entry, so a
//! new endpoint is placed by the same rules as the old ones.

use serde_json::Value;

use super::Effect;

/// Privileges that only let their holder look: a permission check satisfied by these alone
/// makes an endpoint a read.
pub const READ_PRIVILEGES: &[&str] = &[
    "Sys.Audit",
    "Sys.Syslog",
    "Pool.Audit",
    "VM.Audit",
    "Datastore.Audit",
    "SDN.Audit",
    "Mapping.Audit",
    "VM.GuestAgent.Audit",
];

/// What a parameter's value can add to a request's effects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A URL the node will fetch or post to (`^https?://` patterns, `url`).
    Url,
    /// A host the node will connect to (`pve-storage-server`, portals, remotes).
    Server,
    /// Mail addresses the node will send to.
    Mail,
    /// A list of guest IDs.
    Vmids,
    /// A volume or disk spec that may name another guest's volume or `import-from`.
    Volume,
}

impl ParamKind {
    /// The name used in `endpoints.tsv`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ParamKind::Url => "url",
            ParamKind::Server => "server",
            ParamKind::Mail => "mail",
            ParamKind::Vmids => "vmids",
            ParamKind::Volume => "volume",
        }
    }

    /// Parses the `endpoints.tsv` name.
    pub fn parse(name: &str) -> Option<ParamKind> {
        [
            ParamKind::Url,
            ParamKind::Server,
            ParamKind::Mail,
            ParamKind::Vmids,
            ParamKind::Volume,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

/// Disk and mount families whose values name volumes.
const VOLUME_FAMILIES: &[&str] = &[
    "scsi", "sata", "ide", "virtio", "efidisk", "tpmstate", "rootfs", "mp", "unused",
];

/// Everything the schema says about one method of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// An auditor's privileges satisfy the permission check (for a GET: also no check at all).
    pub read_satisfies: bool,
    /// Every privilege the check names, sorted.
    pub privileges: Vec<String>,
    /// Effects the endpoint has whatever its arguments (empty: a read).
    pub effects: Vec<Effect>,
    /// Parameters whose values can add effects, sorted by name.
    pub params: Vec<(String, ParamKind)>,
    /// Every parameter the entry declares, sorted (indexed ones once, as `net[n]`): a request
    /// carrying any other cannot be placed.
    pub names: Vec<String>,
}

/// Derives the facts of `method` on `path` from its schema `entry`.
pub fn facts(method: &str, path: &str, entry: &Value) -> Facts {
    let is_get = method.eq_ignore_ascii_case("GET");
    let check = entry.pointer("/permissions/check");
    let mut privileges = Vec::new();
    if let Some(check) = check {
        collect_privileges(check, &mut privileges);
    }
    privileges.sort();
    privileges.dedup();
    let read_satisfies = match check {
        Some(check) => satisfiable_by_reads(check, is_get),
        // No check: open to every user (or `world`). A GET is then a read; a write is not.
        None => is_get,
    };
    let mut effects = Vec::new();
    let mut add = |e: Effect| {
        if !effects.contains(&e) {
            effects.push(e);
        }
    };
    // A read is proven, never presumed: a method other than GET acts, whatever privilege its
    // check names (`monitor` takes `Sys.Audit`, and its commands quit or reset the guest). The
    // few that only look are reviewed by hand (`reviewed.tsv`, verdict `read`).
    if !is_get {
        add(Effect::Change);
    }
    if !read_satisfies {
        if is_get {
            add(Effect::SensitiveRead);
        } else {
            add(Effect::Change);
        }
        for privilege in &privileges {
            let effects = privilege_effects(privilege, path);
            // A read that needs a stronger privilege is a sensitive read, not what the
            // privilege does when written to (reading a guest file is not running one).
            for effect in effects
                .into_iter()
                .filter(|e| !is_get || *e == Effect::Egress)
            {
                add(effect);
            }
        }
        if !is_get && method.eq_ignore_ascii_case("DELETE") {
            add(Effect::Destroy);
        }
        if !is_get && (path.starts_with("/access") || check_names(check, "perm-modify")) {
            add(Effect::Access);
        }
    }
    let declared = declared_params(entry);
    let mut params: Vec<(String, ParamKind)> = declared
        .iter()
        .filter_map(|(name, p)| param_kind(name, p).map(|k| ((*name).clone(), k)))
        .collect();
    params.sort_by(|a, b| a.0.cmp(&b.0));
    let mut names: Vec<String> = declared.iter().map(|(n, _)| (*n).clone()).collect();
    names.sort();
    Facts {
        read_satisfies,
        privileges,
        effects,
        params,
        names,
    }
}

/// The parameters an entry declares: the flattened form (`parameters: {name: …}`) or
/// `apidata.js`'s own (`parameters: {properties: {name: …}}`), so the embedded table and a
/// cluster's schema are read by the same rules.
fn declared_params(entry: &Value) -> Vec<(&String, &Value)> {
    let parameters = entry.get("parameters");
    let properties = parameters
        .and_then(|p| p.get("properties"))
        .filter(|p| p.is_object())
        .or(parameters);
    properties
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, p)| p.is_object())
        .collect()
}

/// The effects a privilege the check demands stands for when written to (beyond `change`);
/// a read keeps only their egress (see [`facts`]).
fn privilege_effects(privilege: &str, path: &str) -> Vec<Effect> {
    let interrupts = [
        "/status/stop",
        "/status/reset",
        "/status/shutdown",
        "/status/reboot",
        "/status/suspend",
        "/agent/shutdown",
        "/agent/suspend-disk",
        "/agent/suspend-ram",
        "/agent/suspend-hybrid",
    ];
    match privilege {
        "VM.Snapshot.Rollback" => vec![Effect::Destroy],
        "VM.PowerMgmt" | "Sys.PowerMgmt" if interrupts.iter().any(|s| path.ends_with(s)) => {
            vec![Effect::Destroy]
        }
        "Sys.PowerMgmt" => vec![Effect::Destroy],
        "User.Modify" | "Realm.Allocate" | "Realm.AllocateUser" | "Group.Allocate"
        | "Permissions.Modify" => vec![Effect::Access],
        "VM.GuestAgent.Unrestricted" | "VM.GuestAgent.FileWrite" | "Sys.Console" | "VM.Console" => {
            vec![Effect::Exec]
        }
        "Sys.AccessNetwork" => vec![Effect::Egress],
        _ => Vec::new(),
    }
}

/// The kind of a parameter whose value can add an effect, from its format, pattern and name.
pub(super) fn param_kind(name: &str, param: &Value) -> Option<ParamKind> {
    let format = param.get("format").and_then(Value::as_str).unwrap_or("");
    let pattern = param.get("pattern").and_then(Value::as_str).unwrap_or("");
    // `scsi[n]` and `efidisk0` alike: the family is the name without its index.
    let family = name
        .strip_suffix("[n]")
        .unwrap_or(name)
        .trim_end_matches(|c: char| c.is_ascii_digit());
    if pattern.to_ascii_lowercase().contains("http") || name == "url" {
        Some(ParamKind::Url)
    } else if matches!(
        format,
        "pve-storage-server" | "pve-storage-portal-dns" | "proxmox-remote"
    ) || matches!(name, "server" | "portal" | "target-endpoint")
    {
        Some(ParamKind::Server)
    } else if name == "mailto" || (format.contains("email") && format.contains("list")) {
        // Where the node sends mail; a user's own `email` attribute is not a send.
        Some(ParamKind::Mail)
    } else if format == "pve-vmid-list" {
        Some(ParamKind::Vmids)
    } else if format == "pve-volume-id"
        || VOLUME_FAMILIES.contains(&family)
        || matches!(name, "archive" | "import-from")
    {
        Some(ParamKind::Volume)
    } else {
        None
    }
}

/// Whether a check expression names `word` as an operator anywhere.
fn check_names(check: Option<&Value>, word: &str) -> bool {
    fn walk(v: &Value, word: &str) -> bool {
        match v {
            Value::Array(items) => {
                items.first().and_then(Value::as_str) == Some(word)
                    || items.iter().any(|i| walk(i, word))
            }
            _ => false,
        }
    }
    check.is_some_and(|c| walk(c, word))
}

/// Privilege names (`Vendor.Name`) anywhere in a check expression.
fn collect_privileges(check: &Value, out: &mut Vec<String>) {
    match check {
        Value::Array(items) => items.iter().for_each(|i| collect_privileges(i, out)),
        Value::String(s) if is_privilege(s) => out.push(s.clone()),
        _ => {}
    }
}

fn is_privilege(s: &str) -> bool {
    s.contains('.')
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && !s.contains('/')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
}

/// Whether the check can be satisfied by holding auditor privileges only. For a GET, a
/// check a user passes for themselves (`userid-param self`) also counts; for a write it
/// never does (changing one's own password is a change).
fn satisfiable_by_reads(check: &Value, is_get: bool) -> bool {
    let Some(items) = check.as_array() else {
        return false;
    };
    let op = items.first().and_then(Value::as_str).unwrap_or("");
    let any_flag = items
        .windows(2)
        .any(|w| w[0].as_str() == Some("any") && w[1].as_i64() == Some(1));
    let reads = |privs: &[&str]| -> bool {
        if privs.is_empty() {
            return false;
        }
        if any_flag {
            privs.iter().any(|p| READ_PRIVILEGES.contains(p))
        } else {
            privs.iter().all(|p| READ_PRIVILEGES.contains(p))
        }
    };
    match op {
        "perm" => reads(&privileges_at(items.get(2))),
        "userid-group" => {
            let privs = privileges_at(items.get(1));
            !privs.is_empty() && privs.iter().any(|p| READ_PRIVILEGES.contains(p))
        }
        "or" => items[1..].iter().any(|c| satisfiable_by_reads(c, is_get)),
        "and" => items[1..].iter().all(|c| satisfiable_by_reads(c, is_get)),
        "userid-param" => is_get,
        _ => false,
    }
}

/// The privilege names of a check's list argument.
fn privileges_at(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_auditor_check_is_a_read_and_a_stronger_one_is_not() {
        let audit = json!({"permissions": {"check": ["perm", "/vms/{vmid}", ["VM.Audit"]]}});
        assert!(facts("GET", "/x", &audit).effects.is_empty());
        let either = json!({"permissions": {"check": ["perm", "/storage/{storage}", ["Datastore.Audit", "Datastore.AllocateSpace"], "any", 1]}});
        assert!(facts("GET", "/x", &either).read_satisfies);
        let file = json!({"permissions": {"check": ["perm", "/vms/{vmid}", ["VM.GuestAgent.FileRead", "VM.GuestAgent.Unrestricted"], "any", 1]}});
        assert_eq!(
            facts("GET", "/x", &file).effects,
            vec![Effect::SensitiveRead]
        );
        // `any => 0` is Proxmox's spelled-out default: every privilege of the list is needed.
        let all_of = json!({"permissions": {"check": ["perm", "/vms/{vmid}", ["VM.Audit", "VM.Console"], "any", 0]}});
        assert!(!facts("GET", "/x", &all_of).read_satisfies);
        let modify_or_network = json!({"permissions": {"check": ["or", ["perm", "/", ["Sys.Audit", "Sys.Modify"]], ["perm", "/nodes/{node}", ["Sys.AccessNetwork"]]]}});
        let got = facts(
            "GET",
            "/nodes/{node}/query-url-metadata",
            &modify_or_network,
        );
        assert!(!got.read_satisfies);
        assert!(got.effects.contains(&Effect::Egress));
    }

    #[test]
    fn open_gets_are_reads_and_open_writes_are_not() {
        let open = json!({"permissions": {"user": "all"}});
        assert!(facts("GET", "/version", &open).effects.is_empty());
        assert_eq!(
            facts("POST", "/access/ticket", &open).effects,
            vec![Effect::Change, Effect::Access]
        );
        // An auditor's check does not make a POST a read: only the reviewed table does.
        let ping = json!({"permissions": {"check": ["perm", "/vms/{vmid}", ["VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"], "any", 1]}});
        let got = facts("POST", "/nodes/{node}/qemu/{vmid}/agent/ping", &ping);
        assert!(got.read_satisfies);
        assert_eq!(got.effects, vec![Effect::Change]);
        let monitor = json!({"permissions": {"check": ["perm", "/vms/{vmid}", ["Sys.Audit", "Sys.Modify"], "any", 1]}});
        assert_eq!(
            facts("POST", "/nodes/{node}/qemu/{vmid}/monitor", &monitor).effects,
            vec![Effect::Change]
        );
    }

    /// Privileges are `Vendor.Name` words; paths, flags and lower-case words are not.
    #[test]
    fn only_privilege_names_are_collected() {
        let check = json!([
            "and",
            ["perm", "/storage/{storage}/file.img", ["Datastore.Audit"]],
            ["perm", "/vms", ["VM", "sys.audit", "VM.Audit"], "any", 1]
        ]);
        let mut found = Vec::new();
        collect_privileges(&check, &mut found);
        assert_eq!(found, ["Datastore.Audit", "VM.Audit"]);
    }

    /// `perm-modify` is Proxmox's check for changing who may do what: a write behind it is
    /// an access change wherever its path lies, at the top of the check or nested in it.
    #[test]
    fn a_write_behind_a_perm_modify_check_changes_access() {
        let plain = json!({"permissions": {"check": ["perm-modify", "/pool/{poolid}"]}});
        let nested = json!({"permissions": {"check": ["and", ["perm", "/pool/{poolid}", ["Pool.Allocate"]], ["perm-modify", "/pool/{poolid}"]]}});
        for entry in [&plain, &nested] {
            assert_eq!(
                facts("PUT", "/pools/{poolid}", entry).effects,
                vec![Effect::Change, Effect::Access],
                "{entry}"
            );
        }
        let named_only = json!({"permissions": {"check": ["perm", "/pool/{poolid}", ["Pool.Allocate"]], "description": "perm-modify"}});
        assert_eq!(
            facts("PUT", "/pools/{poolid}", &named_only).effects,
            vec![Effect::Change]
        );
    }

    /// `apidata.js` nests parameters under `properties`; the flattened form does not. Both
    /// give the same facts, and every declared name is kept.
    #[test]
    fn both_schema_forms_give_the_same_facts() {
        let flat = json!({"permissions": {"user": "all"}, "parameters": {
            "url": {"type": "string"}, "node": {"type": "string"}, "efidisk0": {"type": "string"}}});
        let nested = json!({"permissions": {"user": "all"}, "parameters": {"additionalProperties": 0, "properties": {
            "url": {"type": "string"}, "node": {"type": "string"}, "efidisk0": {"type": "string"}}}});
        let (a, b) = (facts("GET", "/x", &flat), facts("GET", "/x", &nested));
        assert_eq!(a, b);
        assert_eq!(a.names, ["efidisk0", "node", "url"]);
        assert_eq!(
            a.params,
            vec![
                ("efidisk0".into(), ParamKind::Volume),
                ("url".into(), ParamKind::Url)
            ]
        );
    }

    #[test]
    fn parameter_kinds_come_from_formats_patterns_and_names() {
        let entry = json!({"permissions": {"user": "all"}, "parameters": {
            "directory": {"pattern": "^https?://.*", "type": "string"},
            "server": {"format": "pve-storage-server", "type": "string"},
            "mailto": {"format": "email-or-username-list", "type": "string"},
            "vmid": {"format": "pve-vmid-list", "type": "string"},
            "scsi[n]": {"format": {}, "type": "string"},
            "node": {"format": "pve-node", "type": "string"}}});
        let kinds = facts("GET", "/x", &entry).params;
        assert_eq!(
            kinds,
            vec![
                ("directory".into(), ParamKind::Url),
                ("mailto".into(), ParamKind::Mail),
                ("scsi[n]".into(), ParamKind::Volume),
                ("server".into(), ParamKind::Server),
                ("vmid".into(), ParamKind::Vmids),
            ]
        );
    }
}
