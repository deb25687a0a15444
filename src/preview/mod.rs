//! What a change would do, told before it is made: for the person's approval question and for
//! `dry_run: true`.
//!
//! A preview renders the exact request the call would send (secrets masked), names the
//! target (node, VMID and guest name — the node the guest really lives on, from
//! `/cluster/resources`), and for updates reads the current value of each key it would change
//! plus the config `digest`. Invariant: a preview only ever sends GET requests — it never
//! changes anything — and a failed read only leaves a note, never fails the call. The
//! question is rendered in `render` with every value escaped by `escape`.

mod current;
mod escape;
mod render;
pub mod risk;

use regex::Regex;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;
use tokio_util::sync::CancellationToken;

use crate::backends::build_request;
use crate::catalog::{Backend, HttpMethod, ParamKind, ToolSpec};
use crate::pve::{self, ApiRequest};
use crate::redact::{REDACTED, is_secret_field};
use crate::schema::ValidArgs;

pub use current::{Before, Change};
pub use escape::{BOUND, bounded, escape, quoted, short_digest, whole};

/// The guest a call acts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Node the guest lives on (from `/cluster/resources` when it could be read).
    pub node: String,
    /// `qemu` or `lxc`.
    pub kind: String,
    /// Guest ID.
    pub vmid: String,
    /// Guest name (QEMU `name`, LXC `hostname`), when it could be read.
    pub name: Option<String>,
    /// The node the request names, when the cluster says the guest lives elsewhere.
    pub requested_node: Option<String>,
}

/// Everything known about a call before it is made.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The request as it would be sent, secrets masked.
    pub request: Value,
    /// The guest acted on, if any.
    pub target: Option<Target>,
    /// For updates: each key whose value changes, with its current and new value.
    pub changes: Vec<Change>,
    /// For updates: keys given with the value they already have.
    pub unchanged: Vec<String>,
    /// The call is an update (its changes were worked out, even if none remain).
    pub update: bool,
    /// For updates: the config digest read (pass it as `digest` to refuse stale changes).
    pub digest: Option<String>,
    /// The task a call acts on (`upid`), percent-decoded.
    pub task: Option<String>,
    /// What could not be read, in words.
    pub notes: Vec<String>,
    /// The cluster acted on, when the server serves several (named in the question).
    pub cluster: Option<&'static str>,
}

impl Preview {
    /// The same preview, naming `cluster` (several clusters only).
    pub fn in_cluster(mut self, cluster: Option<&'static str>) -> Preview {
        self.cluster = cluster;
        self
    }
}

/// `/nodes/<node>/<qemu|lxc>/<vmid>…` of a rendered path (`None` only if the constant
/// pattern failed to compile, which its unit test rules out).
fn guest_path() -> Option<&'static Regex> {
    static GUEST: OnceLock<Option<Regex>> = OnceLock::new();
    GUEST
        .get_or_init(|| Regex::new(r"^/nodes/([^/]+)/(qemu|lxc)/([0-9]+)").ok())
        .as_ref()
}

/// Builds the preview of `spec` with `args`; reads through `client` when there is one.
pub async fn build(
    client: Option<&pve::Client>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Preview {
    let mut preview = Preview {
        request: Value::Null,
        target: None,
        changes: Vec::new(),
        unchanged: Vec::new(),
        update: false,
        digest: None,
        task: args.str("upid").map(escape::percent_decoded),
        notes: Vec::new(),
        cluster: None,
    };
    let (method, template) = match spec.backend {
        Backend::Rest { method, path } => (method, path),
        Backend::PerNodeList { path } => (HttpMethod::Get, path),
        Backend::Ssh(op) => {
            preview.request = json!({"ssh": op.describe(), "arguments": masked_arguments(args)});
            return preview;
        }
        // A PBS request: shown exactly; PBS holds no guest config to compare against.
        Backend::Pbs { method, path } => {
            let request = build_request(spec, method, path, args, &[]);
            preview.request = json!({
                "pbs": args.str("pbs"),
                "method": method.as_str(),
                "path": request.path,
                "params": request.params.iter().map(|(k, v)| json!([k, masked(k, v)])).collect::<Vec<_>>(),
            });
            return preview;
        }
        Backend::Composite(op) => {
            preview.request =
                json!({"composite": op.describe(), "arguments": masked_arguments(args)});
            return preview;
        }
    };
    let request = build_request(spec, method, template, args, &[]);
    preview.request = json!({
        "method": method.as_str(),
        "path": request.path,
        "params": request.params.iter().map(|(k, v)| json!([k, masked(k, v)])).collect::<Vec<_>>(),
    });
    preview.update = method == HttpMethod::Put;
    let delete_is_list = spec
        .param("delete")
        .is_none_or(|p| p.kind != ParamKind::Boolean);
    let Some(client) = client else {
        preview
            .notes
            .push("no Proxmox connection: current values not read".into());
        if preview.update {
            let diff = current::config_diff(&request.params, None, delete_is_list);
            preview.changes = diff.changes;
        }
        return preview;
    };
    let mut target = guest_path()
        .and_then(|re| re.captures(&request.path))
        .map(|c| Target {
            node: c[1].to_owned(),
            kind: c[2].to_owned(),
            vmid: c[3].to_owned(),
            name: None,
            requested_node: None,
        });
    if let Some(target) = target.as_mut() {
        locate(client, target, cancel, &mut preview.notes).await;
    }
    // Reads go to the node the guest lives on.
    let on_real_node = |path: &str| match &target {
        Some(Target {
            requested_node: Some(asked),
            node,
            ..
        }) => path.replacen(&format!("/nodes/{asked}/"), &format!("/nodes/{node}/"), 1),
        _ => path.to_owned(),
    };
    let config_path = target
        .as_ref()
        .map(|t| format!("/nodes/{}/{}/{}/config", t.node, t.kind, t.vmid));
    let notes = &mut preview.notes;
    let object = |v: Option<Value>| match v {
        Some(Value::Object(map)) => Some(map),
        _ => None,
    };
    let mut config: Option<Map<String, Value>> = None;
    let diff = if !preview.update {
        if let Some(path) = &config_path {
            config = object(current::read(client, path, Vec::new(), cancel, notes).await);
        }
        None
    } else if template == "/pools" {
        let poolid = param(&request, "poolid").unwrap_or_default();
        let answer = current::read(
            client,
            "/pools",
            vec![("poolid".into(), poolid.clone())],
            cancel,
            notes,
        )
        .await;
        let pool = answer
            .as_ref()
            .and_then(|a| current::pool_entry(a, &poolid));
        Some(current::pool_diff(&request.params, pool))
    } else if template == "/access/acl" {
        let answer = current::read(client, "/access/acl", Vec::new(), cancel, notes).await;
        let rows = answer.as_ref().and_then(Value::as_array).map(Vec::as_slice);
        Some(current::acl_diff(&request.params, rows))
    } else if template.ends_with("/resize") && config_path.is_some() {
        let path = config_path.clone().unwrap_or_default();
        config = object(current::read(client, &path, Vec::new(), cancel, notes).await);
        Some(current::resize_diff(&request.params, config.as_ref()))
    } else {
        let path = on_real_node(&request.path);
        let answer = current::read(client, &path, Vec::new(), cancel, notes).await;
        if answer.as_ref().is_some_and(|a| !a.is_object()) {
            notes.push(format!(
                "{path} answers a list; current values not matched to keys"
            ));
        }
        let read = object(answer);
        preview.digest = read
            .as_ref()
            .and_then(|c| c.get("digest"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let diff = current::config_diff(&request.params, read.as_ref(), delete_is_list);
        if config_path.as_deref() == Some(path.as_str()) {
            config = read;
        }
        Some(diff)
    };
    if let Some(diff) = diff {
        preview.changes = diff.changes;
        preview.unchanged = diff.unchanged;
    }
    if let (Some(t), Some(config)) = (target.as_mut(), config.as_ref()) {
        let name_key = if t.kind == "qemu" { "name" } else { "hostname" };
        if let Some(name) = config.get(name_key).map(current::text) {
            t.name = Some(name);
        }
    }
    preview.target = target;
    preview
}

fn param(request: &ApiRequest, key: &str) -> Option<String> {
    request
        .params
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// Finds the guest in `/cluster/resources`: its name, and the node it really lives on (the
/// request's node is kept as `requested_node` when they differ).
async fn locate(
    client: &pve::Client,
    target: &mut Target,
    cancel: &CancellationToken,
    notes: &mut Vec<String>,
) {
    let params = vec![("type".to_owned(), "vm".to_owned())];
    let Some(Value::Array(rows)) =
        current::read(client, "/cluster/resources", params, cancel, notes).await
    else {
        return;
    };
    let found = rows
        .iter()
        .find(|row| row.get("vmid").map(current::text).as_deref() == Some(target.vmid.as_str()));
    let Some(row) = found else {
        notes.push(format!(
            "guest {} is not listed in /cluster/resources",
            target.vmid
        ));
        return;
    };
    target.name = row.get("name").map(current::text);
    if let Some(kind) = row.get("type").and_then(Value::as_str)
        && kind != target.kind
    {
        notes.push(format!(
            "/cluster/resources lists guest {} as {kind}, the request addresses it as {}",
            target.vmid, target.kind
        ));
    }
    if let Some(node) = row.get("node").and_then(Value::as_str)
        && node != target.node
    {
        target.requested_node = Some(std::mem::replace(&mut target.node, node.to_owned()));
    }
}

/// A value as sent, secrets masked (never cut: the question bounds what it shows).
fn masked(key: &str, value: &str) -> String {
    if is_secret_field(key) {
        REDACTED.to_owned()
    } else {
        value.to_owned()
    }
}

/// The validated arguments as JSON, secrets masked by the redaction rules at any depth
/// (SSH and composite previews; a JSON-valued argument such as `pve_api_write`'s `params`
/// is masked inside too). Nothing is cut here.
fn masked_arguments(args: &ValidArgs) -> Value {
    let as_json = |wire: String| match serde_json::from_str::<Value>(&wire) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
        _ => Value::String(wire),
    };
    // `key=value` items (the generic API call's `params`): the key decides.
    let item = |text: &String| match text.split_once('=') {
        Some((key, _)) if is_secret_field(key) => Value::String(format!("{key}={REDACTED}")),
        _ => Value::String(text.clone()),
    };
    let mut out = Map::new();
    for (name, value) in &args.values {
        let shown = match value {
            crate::schema::ArgValue::List(items) => Value::Array(items.iter().map(item).collect()),
            other => as_json(other.to_wire()),
        };
        out.insert((*name).to_owned(), shown);
    }
    for (key, (_, value)) in &args.indexed {
        out.insert(key.clone(), as_json(value.to_wire()));
    }
    crate::redact::mask_arguments(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_write_params_and_json_arguments_are_masked() {
        let spec = crate::catalog::find("pve_api_write").expect("row");
        let args = serde_json::json!({"method": "PUT", "path": "/access/password",
            "params": ["userid=mcp@pve", "password=hunter2-secret"]});
        let valid = crate::schema::validate(spec, args.as_object()).expect("valid");
        let shown = masked_arguments(&valid).to_string();
        assert!(!shown.contains("hunter2-secret"), "{shown}");
        assert!(shown.contains("userid=mcp@pve"), "{shown}");
        // A secret field no text rule knows as `key=value` is masked by its key.
        let args = serde_json::json!({"method": "PUT", "path": "/storage/pbs1",
            "params": ["encryption-key=a1b2c3d4e5f6", "keyring=AQBx9z", "content=backup"]});
        let valid = crate::schema::validate(spec, args.as_object()).expect("valid");
        let shown = masked_arguments(&valid);
        assert_eq!(
            shown["params"],
            serde_json::json!([
                format!("encryption-key={REDACTED}"),
                format!("keyring={REDACTED}"),
                "content=backup"
            ])
        );
    }

    #[test]
    fn json_text_in_a_string_argument_is_masked_inside() {
        let spec = crate::catalog::find("pve_node_file_write").expect("row");
        let args = serde_json::json!({"node": "pve01", "path": "/etc/app/config.json",
            "content": r#"{"user": "app", "password": "hunter2-secret", "hosts": ["a"]}"#});
        let valid = crate::schema::validate(spec, args.as_object()).expect("valid");
        let shown = masked_arguments(&valid);
        assert_eq!(shown["content"]["password"], REDACTED, "{shown}");
        assert_eq!(shown["content"]["user"], "app", "{shown}");
        assert_eq!(
            shown["content"]["hosts"],
            serde_json::json!(["a"]),
            "{shown}"
        );
        // Text that is no JSON object or array stays text.
        let args = serde_json::json!({"node": "pve01", "path": "/etc/motd", "content": "42"});
        let valid = crate::schema::validate(spec, args.as_object()).expect("valid");
        assert_eq!(masked_arguments(&valid)["content"], "42");
    }

    #[test]
    fn guest_paths_are_recognised() {
        let re = guest_path().expect("pattern compiles");
        assert!(re.is_match("/nodes/pve01/qemu/101/status/stop"));
        assert!(!re.is_match("/nodes/pve01/qemu"));
    }

    #[test]
    fn secrets_are_masked_and_long_values_kept_whole() {
        assert_eq!(masked("cipassword", "hunter2"), REDACTED);
        let long = "x".repeat(10_000);
        assert_eq!(masked("description", &long), long);
    }
}
