//! What a change would do, told before it is made: for the person's approval question and for
//! `dry_run: true`.
//!
//! A preview renders the exact request the call would send (secrets masked), names the
//! target (node, VMID and guest name), and for updates reads the current value of each key it
//! would change plus the config `digest`. Invariant: a preview only ever sends GET requests —
//! it never changes anything — and a failed read only leaves a note, never fails the call.

use regex::Regex;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Backend, HttpMethod, ToolSpec};
use crate::dispatch::build_request;
use crate::gate::Gate;
use crate::pve::{self, ApiRequest};
use crate::redact::{REDACTED, is_secret_field};
use crate::schema::ValidArgs;

/// Longest value shown in a question before it is cut.
const SHOWN_VALUE_CHARS: usize = 160;

/// One key an update would change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Config key.
    pub key: String,
    /// Current value (`None` when unset or unknown).
    pub old: Option<String>,
    /// Value after the call (`None` when the key is deleted).
    pub new: Option<String>,
}

/// The guest a call acts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Node name.
    pub node: String,
    /// `qemu` or `lxc`.
    pub kind: String,
    /// Guest ID.
    pub vmid: String,
    /// Guest name (QEMU `name`, LXC `hostname`), when it could be read.
    pub name: Option<String>,
}

/// Everything known about a call before it is made.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The request as it would be sent, secrets masked.
    pub request: Value,
    /// The guest acted on, if any.
    pub target: Option<Target>,
    /// For updates: each key's current and new value.
    pub changes: Vec<Change>,
    /// For updates: the config digest read (pass it as `digest` to refuse stale changes).
    pub digest: Option<String>,
    /// What could not be read, in words.
    pub notes: Vec<String>,
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
        digest: None,
        notes: Vec::new(),
    };
    let (method, template) = match spec.backend {
        Backend::Rest { method, path } => (method, path),
        Backend::PerNodeList { path } => (HttpMethod::Get, path),
        Backend::Ssh(op) => {
            preview.request =
                json!({"ssh": op.describe(), "arguments": masked_arguments(spec, args)});
            return preview;
        }
        Backend::Composite(op) => {
            preview.request =
                json!({"composite": op.describe(), "arguments": masked_arguments(spec, args)});
            return preview;
        }
    };
    let request = build_request(spec, method, template, args, &[]);
    preview.request = json!({
        "method": method.as_str(),
        "path": request.path,
        "params": request.params.iter().map(|(k, v)| json!([k, shown(k, v)])).collect::<Vec<_>>(),
    });
    let Some(client) = client else {
        preview
            .notes
            .push("no Proxmox connection: current values not read".into());
        return preview;
    };
    let guest = guest_path()
        .and_then(|re| re.captures(&request.path))
        .map(|c| Target {
            node: c[1].to_owned(),
            kind: c[2].to_owned(),
            vmid: c[3].to_owned(),
            name: None,
        });
    let current_path = match (method, &guest) {
        (HttpMethod::Put, _) => Some(request.path.clone()),
        (_, Some(t)) => Some(format!("/nodes/{}/{}/{}/config", t.node, t.kind, t.vmid)),
        _ => None,
    };
    let current = match current_path {
        Some(path) => read(client, &path, cancel, &mut preview.notes).await,
        None => None,
    };
    if let (Some(mut target), Some(config)) = (guest.clone(), current.as_ref()) {
        let name_key = if target.kind == "qemu" {
            "name"
        } else {
            "hostname"
        };
        target.name = config
            .get(name_key)
            .and_then(Value::as_str)
            .map(str::to_owned);
        preview.target = Some(target);
    } else {
        preview.target = guest;
    }
    if method == HttpMethod::Put {
        let config = current.unwrap_or_default();
        preview.digest = config
            .get("digest")
            .and_then(Value::as_str)
            .map(str::to_owned);
        preview.changes = changes(&request, &config);
    }
    preview
}

/// Current value and new value of every key the request sets or deletes.
fn changes(request: &ApiRequest, current: &Map<String, Value>) -> Vec<Change> {
    let old = |key: &str| {
        current.get(key).map(|v| match v {
            Value::String(s) => shown(key, s),
            other => other.to_string(),
        })
    };
    let mut out = Vec::new();
    for (key, value) in &request.params {
        match key.as_str() {
            "digest" => {}
            "delete" => out.extend(value.split([',', ';', ' ']).filter(|k| !k.is_empty()).map(
                |k| Change {
                    key: k.to_owned(),
                    old: old(k),
                    new: None,
                },
            )),
            _ => out.push(Change {
                key: key.clone(),
                old: old(key),
                new: Some(shown(key, value)),
            }),
        }
    }
    out
}

async fn read(
    client: &pve::Client,
    path: &str,
    cancel: &CancellationToken,
    notes: &mut Vec<String>,
) -> Option<Map<String, Value>> {
    match client.call(ApiRequest::get(path), cancel).await.result {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => None,
        Err(err) => {
            notes.push(format!("current values not read: {err}"));
            None
        }
    }
}

/// A value as shown to people: secrets masked, long values cut.
fn shown(key: &str, value: &str) -> String {
    if is_secret_field(key) {
        return REDACTED.to_owned();
    }
    if value.chars().count() > SHOWN_VALUE_CHARS {
        let cut: String = value.chars().take(SHOWN_VALUE_CHARS).collect();
        return format!("{cut}… ({} characters)", value.chars().count());
    }
    value.to_owned()
}

/// The validated arguments as JSON, secrets masked by the redaction rules at any depth
/// (SSH and composite previews; a JSON-valued argument such as `pve_api_write`'s `params`
/// is masked inside too), long values cut.
fn masked_arguments(spec: &ToolSpec, args: &ValidArgs) -> Value {
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
    let mut masked = crate::redact::mask_arguments(spec, &out);
    cut_long_strings(&mut masked);
    masked
}

fn cut_long_strings(value: &mut Value) {
    match value {
        Value::String(text) => *text = shown("", text),
        Value::Array(items) => items.iter_mut().for_each(cut_long_strings),
        Value::Object(map) => map.values_mut().for_each(cut_long_strings),
        _ => {}
    }
}

impl Preview {
    /// The approval question: what, where, what changes, and why a person is asked.
    pub fn question(&self, spec: &ToolSpec, gate: &Gate) -> String {
        let mut lines = vec![format!("Approve \"{}\" ({})?", spec.title, spec.name)];
        if let Some(target) = &self.target {
            let what = if target.kind == "qemu" {
                "VM"
            } else {
                "container"
            };
            let name = target
                .name
                .as_deref()
                .map(|n| format!(" \"{n}\""))
                .unwrap_or_default();
            lines.push(format!(
                "Target: {what} {}{name} on node {}",
                target.vmid, target.node
            ));
        }
        if let Some(method) = self.request.get("method").and_then(Value::as_str) {
            let path = self
                .request
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("");
            lines.push(format!("Request: {method} {path}"));
        } else if let Some(ssh) = self.request.get("ssh").and_then(Value::as_str) {
            lines.push(format!("Runs over SSH: {ssh}"));
        }
        if !self.changes.is_empty() {
            lines.push("Changes:".into());
            for change in &self.changes {
                lines.push(format!(
                    "  {}: {} → {}",
                    change.key,
                    change.old.as_deref().unwrap_or("(unset)"),
                    change.new.as_deref().unwrap_or("(removed)")
                ));
            }
        } else if let Some(params) = self.request.get("params").and_then(Value::as_array) {
            let shown: Vec<String> = params
                .iter()
                .filter_map(|p| Some(format!("{}={}", p.get(0)?.as_str()?, p.get(1)?.as_str()?)))
                .collect();
            if !shown.is_empty() {
                lines.push(format!("With: {}", shown.join(", ")));
            }
        } else if let Some(args) = self.request.get("arguments").and_then(Value::as_object) {
            let shown: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
            lines.push(format!("With: {}", shown.join(", ")));
        }
        let reasons = gate.reasons();
        if reasons.is_empty() {
            lines.push(if spec.effect.is_destructive() {
                "Why you are asked: this tool may remove or interrupt something.".to_owned()
            } else {
                "Why you are asked: this tool changes the cluster's configuration or access."
                    .to_owned()
            });
        } else {
            lines.push("Why you are asked:".into());
            lines.extend(reasons.into_iter().map(|r| format!("  {r}")));
        }
        lines.join("\n")
    }

    /// The `dry_run: true` answer.
    pub fn dry_run(&self, spec: &ToolSpec, gate: Option<&Gate>, approval_path: &str) -> Value {
        let mut data = Map::new();
        data.insert("dryRun".into(), true.into());
        data.insert("sent".into(), false.into());
        data.insert("request".into(), self.request.clone());
        data.insert(
            "decision".into(),
            json!({
                "tier": spec.tier.as_str(),
                "allowedByPolicy": true,
                "needsApproval": gate.is_some(),
                "gate": gate.map(Gate::kind),
                "reasons": gate.map(Gate::reasons).unwrap_or_default(),
                "approval": if gate.is_some() { Value::from(approval_path) } else { Value::Null },
            }),
        );
        if let Some(target) = &self.target {
            data.insert(
                "target".into(),
                json!({"node": target.node, "type": target.kind, "vmid": target.vmid, "name": target.name}),
            );
        }
        if !self.changes.is_empty() {
            let current: Map<String, Value> = self
                .changes
                .iter()
                .map(|c| {
                    (
                        c.key.clone(),
                        c.old.clone().map_or(Value::Null, Value::from),
                    )
                })
                .collect();
            data.insert("current".into(), Value::Object(current));
        }
        if let Some(digest) = &self.digest {
            data.insert("digest".into(), digest.clone().into());
        }
        if !self.notes.is_empty() {
            data.insert("notes".into(), self.notes.clone().into());
        }
        Value::Object(data)
    }
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
        let shown = masked_arguments(spec, &valid).to_string();
        assert!(!shown.contains("hunter2-secret"), "{shown}");
        assert!(shown.contains("userid=mcp@pve"), "{shown}");
    }

    #[test]
    fn guest_paths_are_recognised() {
        let re = guest_path().expect("pattern compiles");
        assert!(re.is_match("/nodes/pve01/qemu/101/status/stop"));
        assert!(!re.is_match("/nodes/pve01/qemu"));
    }

    #[test]
    fn secrets_are_masked_and_long_values_cut() {
        assert_eq!(shown("cipassword", "hunter2"), REDACTED);
        assert_eq!(shown("cores", "4"), "4");
        let long = "x".repeat(1000);
        let cut = shown("description", &long);
        assert!(cut.len() < 300, "{cut}");
        assert!(cut.ends_with("(1000 characters)"));
    }

    #[test]
    fn changes_list_old_and_new_values_and_deletions() {
        let request = ApiRequest {
            params: vec![
                ("cores".into(), "4".into()),
                ("delete".into(), "tags,onboot".into()),
                ("digest".into(), "abc".into()),
            ],
            ..ApiRequest::new(pve::Method::Put, "/nodes/pve01/qemu/101/config")
        };
        let current = serde_json::json!({"cores": 2, "tags": "web", "digest": "abc"});
        let changes = changes(&request, current.as_object().expect("object"));
        assert_eq!(
            changes,
            vec![
                Change {
                    key: "cores".into(),
                    old: Some("2".into()),
                    new: Some("4".into())
                },
                Change {
                    key: "tags".into(),
                    old: Some("web".into()),
                    new: None
                },
                Change {
                    key: "onboot".into(),
                    old: None,
                    new: None
                },
            ]
        );
    }
}
