//! The compact surface (`PVE_TOOL_SURFACE=compact`): three meta-tools instead of the whole
//! listing — find tools by words or category, describe one, call one by name.
//!
//! Invariant: the meta-tools see exactly the registry, so a tool the policy hides (tier,
//! module, lists, missing backend) is neither found, described nor callable; a caller whose
//! credentials reach a lower tier (OAuth scopes) is neither shown nor described the tools
//! above it (a call of one is refused by the pipeline's tier gate, and audited); a call made
//! through `pve_call_tool` runs the same pipeline as a direct call: the inner request
//! carries the inner tool's name and arguments (which the approval binding seals) and the
//! outer request's MRTR state and answers, so validation, the gate, approval, dry-run,
//! dispatch and the envelope apply unchanged.

// Failures are the cold path and are rendered once, as in `dispatch`.
#![allow(clippy::result_large_err)]

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::catalog::{Category, Tier, ToolSpec};
use crate::envelope::{CallMeta, ToolFailure, codes, render};
use crate::registry::{Entry, Registry};

/// Finds tools by words and category.
pub const FIND: &str = "pve_find_tools";
/// Shows one tool's arguments and approval rule.
pub const DESCRIBE: &str = "pve_describe_tool";
/// Calls one tool by name.
pub const CALL: &str = "pve_call_tool";

/// The two sentences that explain the flow, for the server instructions and prompts.
pub const FLOW: &str = "The Proxmox tools are reached through three meta-tools: pve_find_tools (words or category → names), pve_describe_tool (a tool's arguments and approval rule), pve_call_tool (name + arguments). \
Wherever a tool name such as pve_list_nodes is mentioned, call it as pve_call_tool {\"name\": \"pve_list_nodes\", \"arguments\": {...}}; approval and dry_run work as for a direct call.";

/// The compact `tools/list`: the three meta-tools; the category enum lists only the
/// categories that have an exposed tool.
pub fn tools(registry: &Registry) -> Vec<Tool> {
    let categories: Vec<&str> = Category::ALL
        .iter()
        .filter(|c| registry.entries().iter().any(|e| e.spec.category == **c))
        .map(|c| c.as_str())
        .collect();
    let read_only = ToolAnnotations::new().read_only(true).open_world(false);
    vec![
        Tool::new(
            FIND,
            "Search the permitted Proxmox VE tools; returns name + one line each. No arguments: the categories.",
            object(json!({
                "properties": {
                    "query": {"type": "string", "description": "Words to match, e.g. \"clone vm\"."},
                    "category": {"type": "string", "enum": categories, "description": "Only this category."},
                },
            })),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            DESCRIBE,
            "One tool's description, argument schema and approval rule.",
            object(json!({
                "properties": {"name": {"type": "string", "description": "Tool name."}},
                "required": ["name"],
            })),
        )
        .with_annotations(read_only),
        Tool::new(
            CALL,
            "Run a tool by name with its arguments; same validation, approval and dry_run as a direct call.",
            object(json!({
                "properties": {
                    "name": {"type": "string", "description": "Tool name."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "required": ["name"],
            })),
        ),
    ]
}

fn object(body: Value) -> Arc<Map<String, Value>> {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    if let Value::Object(fields) = body {
        schema.extend(fields);
    }
    schema.insert("additionalProperties".into(), false.into());
    Arc::new(schema)
}

/// What a meta-tool call becomes.
#[derive(Debug)]
pub enum Routed<'a> {
    /// Answered here (find, describe, or a bad call of `pve_call_tool`).
    Answer(CallToolResult),
    /// A call of a registered tool, to run through the pipeline.
    Inner(&'a Entry, CallToolRequestParams),
}

/// Routes a call on the compact surface; `None` when `request` names no meta-tool. `tier` is
/// the tier in force for this caller (the server's, narrowed by its credentials): finding and
/// describing show no tool above it.
pub fn route<'a>(
    registry: &'a Registry,
    tier: Tier,
    request: &CallToolRequestParams,
) -> Option<Routed<'a>> {
    let started = Instant::now();
    let args = request.arguments.clone().unwrap_or_default();
    let (tool, outcome) = match request.name.as_ref() {
        FIND => (FIND, find(registry, tier, &args)),
        DESCRIBE => (
            DESCRIBE,
            lookup(registry, &args)
                .and_then(|entry| within(entry, tier, &args))
                .map(|entry| describe(registry, entry)),
        ),
        CALL => match lookup(registry, &args).and_then(|entry| inner(entry, &args, request)) {
            Ok((entry, inner)) => return Some(Routed::Inner(entry, inner)),
            Err(failure) => (CALL, Err(failure)),
        },
        _ => return None,
    };
    let meta = CallMeta {
        tool,
        alias_for: None,
        duration: started.elapsed(),
        attempts: 0,
        retries: 0,
        approval: None,
        cluster: None,
    };
    Some(Routed::Answer(render(outcome, &meta)))
}

/// The inner request: the inner tool's name and arguments, the outer MRTR state and answers.
fn inner<'a>(
    entry: &'a Entry,
    args: &Map<String, Value>,
    outer: &CallToolRequestParams,
) -> Result<(&'a Entry, CallToolRequestParams), ToolFailure> {
    let mut inner = outer.clone();
    inner.name = entry.wire_name.into();
    inner.arguments = match args.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => {
            return Err(rejected(
                "`arguments` must be an object of the tool's arguments.".into(),
            ));
        }
    };
    Ok((entry, inner))
}

/// The registered tool named by the `name` argument.
fn lookup<'a>(registry: &'a Registry, args: &Map<String, Value>) -> Result<&'a Entry, ToolFailure> {
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return Err(rejected("`name` (a tool name) is required.".into()));
    };
    registry.get(name).ok_or_else(|| {
        rejected(format!(
            "No permitted tool is named '{name}' (unknown, or hidden by the access tier, module mode or tool lists)."
        ))
    })
}

/// `entry` when the caller's tier reaches it; else the same refusal as an unknown name.
fn within<'a>(
    entry: &'a Entry,
    tier: Tier,
    args: &Map<String, Value>,
) -> Result<&'a Entry, ToolFailure> {
    if entry.spec.tier <= tier {
        return Ok(entry);
    }
    let name = args.get("name").and_then(Value::as_str).unwrap_or_default();
    Err(rejected(format!(
        "No permitted tool is named '{name}' (unknown, or hidden by the access tier, module mode or tool lists)."
    )))
}

fn rejected(message: String) -> ToolFailure {
    ToolFailure::new(codes::TOOL_INPUT_REJECTED, message)
        .with_hint("pve_find_tools lists the permitted tool names. Nothing was sent to Proxmox.")
}

/// `pve_find_tools`: the matching canonical tools, best first, or the categories.
fn find(registry: &Registry, tier: Tier, args: &Map<String, Value>) -> Result<Value, ToolFailure> {
    let category = match args.get("category") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(
            Category::parse(name).ok_or_else(|| rejected(format!("Unknown category '{name}'.")))?,
        ),
        Some(_) => return Err(rejected("`category` must be a string.".into())),
    };
    let query = match args.get("query") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(q)) => q.to_lowercase(),
        Some(_) => return Err(rejected("`query` must be a string.".into())),
    };
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(stem)
        .collect();
    let canonical = registry
        .entries()
        .iter()
        .filter(|e| e.alias_for.is_none() && e.spec.tier <= tier);
    if words.is_empty() && category.is_none() {
        let categories: Vec<Value> = Category::ALL
            .iter()
            .filter_map(|c| {
                let count = canonical.clone().filter(|e| e.spec.category == *c).count();
                (count > 0).then(|| json!({"category": c.as_str(), "tools": count}))
            })
            .collect();
        return Ok(json!({
            "categories": categories,
            "hint": "Pass query (words) or category to list tools.",
        }));
    }
    let exact = query.trim();
    let mut hits: Vec<(usize, &ToolSpec)> = canonical
        .filter(|e| category.is_none_or(|c| e.spec.category == c))
        .map(|e| {
            let bonus = if e.spec.name == exact { 1000 } else { 0 };
            (score(e.spec, &words) + bonus, e.spec)
        })
        .filter(|(score, _)| words.is_empty() || *score > 0)
        .collect();
    // Best score first; among equals the shorter (more general) name, then by name.
    hits.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.name.len().cmp(&b.1.name.len()))
            .then(a.1.name.cmp(b.1.name))
    });
    let tools: Vec<Value> = hits
        .iter()
        .map(|(_, spec)| json!({"name": spec.name, "summary": summary(spec.description)}))
        .collect();
    if tools.is_empty() {
        return Ok(json!({
            "tools": [],
            "hint": "No permitted tool matches; try other words, or no arguments for the categories.",
        }));
    }
    Ok(json!({"tools": tools}))
}

/// `vms` finds `vm`, `snapshots` finds `snapshot`.
fn stem(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 2 => stem.to_owned(),
        _ => word.to_owned(),
    }
}

/// Name matches weigh most, then the title, then the description; every word counts.
fn score(spec: &ToolSpec, words: &[String]) -> usize {
    let name = spec.name.to_lowercase();
    let title = spec.title.to_lowercase();
    let description = spec.description.to_lowercase();
    let category = spec.category.as_str();
    words
        .iter()
        .map(|w| {
            3 * usize::from(name.contains(w.as_str()))
                + 2 * usize::from(title.contains(w.as_str()) || category.contains(w.as_str()))
                + usize::from(description.contains(w.as_str()))
        })
        .sum()
}

/// The first sentence of a description.
fn summary(description: &str) -> &str {
    description
        .find(". ")
        .map_or(description, |end| &description[..=end])
}

/// `pve_describe_tool`: what a model needs to call the tool well.
fn describe(registry: &Registry, entry: &Entry) -> Value {
    let spec = entry.spec;
    let mut out = json!({
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "category": spec.category.as_str(),
        "readOnly": spec.effect.is_read(),
        "destructive": spec.effect.is_destructive(),
        "approval": crate::docs::approval_kind(spec),
        "approvalWhen": spec.gated_when.iter().map(|rule| json!({
            "condition": rule.condition(),
            "why": rule.why,
        })).collect::<Vec<_>>(),
        "inputSchema": registry.input_schema_of(entry),
    });
    if let (Some(canonical), Value::Object(map)) = (entry.alias_for, &mut out) {
        map.insert("aliasOf".into(), canonical.into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Settings;

    fn call(registry: &Registry, name: &str, args: Value) -> Value {
        let request = CallToolRequestParams::new(name.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        match route(registry, Tier::Full, &request) {
            Some(Routed::Answer(result)) => result.structured_content.unwrap_or_default(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn find_ranks_by_words_and_never_shows_a_hidden_tool() {
        let registry = Registry::build(&Settings::default());
        let found = call(&registry, FIND, json!({"query": "clone vm"}));
        let names: Vec<&str> = found["data"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        // The read-only tier hides the clone tool: not found, not describable.
        assert!(!names.contains(&"pve_qemu_clone"), "{names:?}");
        let described = call(&registry, DESCRIBE, json!({"name": "pve_qemu_clone"}));
        assert_eq!(described["ok"], false);
        let full = Registry::build(&Settings {
            tier: crate::catalog::Tier::Full,
            ..Settings::default()
        });
        let found = call(&full, FIND, json!({"query": "clone vm"}));
        assert_eq!(
            found["data"]["tools"][0]["name"], "pve_qemu_clone",
            "{found}"
        );
        let described = call(&full, DESCRIBE, json!({"name": "pve_qemu_clone"}));
        // A clone copies a guest's disks and identity: a person is asked unless it is a
        // linked clone of a template (a routine change, named so in the description).
        assert_eq!(described["data"]["approval"], "routine");
        let stop = call(&full, DESCRIBE, json!({"name": "stopVM"}));
        assert_eq!(stop["data"]["approval"], "always");
        assert_eq!(stop["data"]["aliasOf"], "pve_stop_qemu_vm");
        assert!(described["data"]["inputSchema"]["properties"]["newid"].is_object());
    }

    #[test]
    fn a_lower_caller_tier_hides_the_tools_above_it() {
        let full = Registry::build(&Settings {
            tier: Tier::Full,
            ..Settings::default()
        });
        let ask = |tier: Tier, name: &str, args: Value| {
            let request = CallToolRequestParams::new(name.to_owned())
                .with_arguments(args.as_object().cloned().unwrap_or_default());
            match route(&full, tier, &request) {
                Some(Routed::Answer(result)) => result.structured_content.unwrap_or_default(),
                other => panic!("{other:?}"),
            }
        };
        let found = ask(Tier::ReadOnly, FIND, json!({"query": "clone vm"}));
        let names = found["data"]["tools"].to_string();
        assert!(!names.contains("pve_qemu_clone"), "{names}");
        let described = ask(Tier::ReadOnly, DESCRIBE, json!({"name": "pve_qemu_clone"}));
        assert_eq!(described["ok"], false);
        let described = ask(Tier::ReadOnly, DESCRIBE, json!({"name": "pve_list_nodes"}));
        assert_eq!(described["ok"], true);
        let described = ask(Tier::Full, DESCRIBE, json!({"name": "pve_qemu_clone"}));
        assert_eq!(described["ok"], true);
    }

    #[test]
    fn find_without_words_lists_categories_and_a_category_lists_its_tools() {
        let registry = Registry::build(&Settings::default());
        let overview = call(&registry, FIND, json!({}));
        assert!(overview["data"]["categories"].as_array().unwrap().len() > 3);
        let nodes = call(&registry, FIND, json!({"category": "nodes"}));
        assert!(
            nodes["data"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["name"] == "pve_list_nodes")
        );
    }

    #[test]
    fn every_permitted_tool_is_found_by_its_category_and_by_its_name() {
        let registry = Registry::build(&Settings {
            tier: crate::catalog::Tier::Full,
            module: crate::catalog::Module::Advanced,
            ..Settings::default()
        });
        for entry in registry.entries().iter().filter(|e| e.alias_for.is_none()) {
            let name = entry.wire_name;
            let category = entry.spec.category.as_str();
            let listed = call(&registry, FIND, json!({"category": category}));
            let in_category = listed["data"]["tools"].as_array().unwrap();
            assert!(in_category.iter().any(|t| t["name"] == name), "{name}");
            let by_words = call(&registry, FIND, json!({"query": name}));
            assert_eq!(by_words["data"]["tools"][0]["name"], name, "{name}");
            let described = call(&registry, DESCRIBE, json!({"name": name}));
            assert_eq!(described["ok"], true, "{name}");
        }
    }

    #[test]
    fn call_carries_inner_name_arguments_and_the_outer_state() {
        let registry = Registry::build(&Settings::default());
        let mut request = CallToolRequestParams::new(CALL).with_arguments(
            json!({"name": "pve_list_nodes", "arguments": {}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        request.request_state = Some("sealed".into());
        match route(&registry, Tier::Full, &request) {
            Some(Routed::Inner(entry, inner)) => {
                assert_eq!(entry.wire_name, "pve_list_nodes");
                assert_eq!(inner.name, "pve_list_nodes");
                assert_eq!(inner.arguments, Some(Map::new()));
                assert_eq!(inner.request_state.as_deref(), Some("sealed"));
            }
            other => panic!("{other:?}"),
        }
        let bad = call(
            &registry,
            CALL,
            json!({"name": "pve_list_nodes", "arguments": 3}),
        );
        assert_eq!(bad["error"]["code"], "TOOL_INPUT_REJECTED");
    }
}
