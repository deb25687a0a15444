//! The emulator's `/pve-docs/api-viewer/apidata.js`: the API schema a node serves for its
//! own version, which the generic API call validates against.
//!
//! By default it is generated from the emulator's own route table (path captures, declared
//! parameters and their kinds), so it describes exactly what the emulator answers and marks
//! itself as such; a test may install the official PVE schema instead
//! ([`super::Emulator::serve_api_schema`]) or make the file unavailable. Invariant: the
//! served text has the real file's shape — `const apiSchema = [...];` followed by more
//! JavaScript — so a client that only reads a bare array fails here as it would on a node.
//! An installed schema also names the privilege each endpoint's permission check wants,
//! which the emulator's refusals then quote ([`ApiDocs::privilege`]).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value, json};

use super::api::Kind;
use super::routes;

/// What the emulator serves at the apidata.js URL.
#[derive(Debug, Clone, Default)]
pub(super) enum ApiDocs {
    /// Generated from the route table (default).
    #[default]
    Generated,
    /// A schema array installed by a test.
    Custom(Arc<CustomSchema>),
    /// 404, as a node without the pve-docs package answers.
    Missing,
}

impl ApiDocs {
    /// The whole JavaScript file, or `None` for a 404.
    pub(super) fn script(&self) -> Option<String> {
        let array: &str = match self {
            ApiDocs::Generated => generated_array(),
            ApiDocs::Custom(schema) => schema.text.as_str(),
            ApiDocs::Missing => return None,
        };
        Some(format!(
            "const apiSchema = {array};\n\nlet method2cmd = {{\n    GET: 'get',\n    POST: 'create',\n    PUT: 'set',\n    DELETE: 'delete',\n}};\n"
        ))
    }
}

/// A schema installed by a test: its text, and the privileges its permission checks name
/// (indexed on first use: the official schema is large and most tests never need it).
#[derive(Debug)]
pub(super) struct CustomSchema {
    /// JSON text of the array.
    text: String,
    /// (path template segments, method, privilege text) per `perm` check.
    privileges: OnceLock<Vec<(Vec<String>, String, String)>>,
}

impl CustomSchema {
    /// A schema from the JSON text of its array.
    pub(super) fn new(text: String) -> Self {
        Self {
            text,
            privileges: OnceLock::new(),
        }
    }
}

impl ApiDocs {
    /// The privilege the installed schema's permission check names for `method` on the
    /// decoded path `path` (`VM.PowerMgmt`; several joined by `|` for an "any" check, as
    /// PVE's refusal lists them); `None` without a custom schema or a simple `perm` check.
    pub(super) fn privilege(&self, method: &str, path: &str) -> Option<String> {
        let ApiDocs::Custom(schema) = self else {
            return None;
        };
        let index = schema
            .privileges
            .get_or_init(|| privilege_index(&schema.text));
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        index
            .iter()
            .filter(|(template, m, _)| m == method && template.len() == segments.len())
            .filter(|(template, _, _)| {
                template
                    .iter()
                    .zip(&segments)
                    .all(|(t, s)| t.starts_with('{') || t == s)
            })
            // The most literal template wins (`status/current` over `status/{op}`).
            .max_by_key(|(template, _, _)| template.iter().filter(|t| !t.starts_with('{')).count())
            .map(|(_, _, privilege)| privilege.clone())
    }
}

/// Every `["perm", path, [privileges], ("any", 1)?]` check of a schema array (a tree with
/// `children`, or flat), by path template and method.
fn privilege_index(text: &str) -> Vec<(Vec<String>, String, String)> {
    fn walk(node: &Value, out: &mut Vec<(Vec<String>, String, String)>) {
        if let (Some(path), Some(info)) = (node["path"].as_str(), node["info"].as_object()) {
            for (method, entry) in info {
                if let Some(privilege) = perm_check(&entry["permissions"]["check"]) {
                    let template = path
                        .split('/')
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect();
                    out.push((template, method.clone(), privilege));
                }
            }
        }
        for child in node["children"].as_array().into_iter().flatten() {
            walk(child, out);
        }
    }
    let mut out = Vec::new();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(nodes)) => nodes.iter().for_each(|n| walk(n, &mut out)),
        Ok(_) | Err(_) => tracing::debug!("installed API schema is not an array"),
    }
    out
}

/// The privilege text of a simple `perm` check.
fn perm_check(check: &Value) -> Option<String> {
    let check = check.as_array()?;
    if check.first()?.as_str()? != "perm" {
        return None;
    }
    let privs: Vec<&str> = check
        .get(2)?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let any = check.get(3).and_then(Value::as_str) == Some("any");
    match (any, privs.first()) {
        (_, None) => None,
        (true, Some(_)) => Some(privs.join("|")),
        (false, Some(first)) => Some((*first).to_owned()),
    }
}

/// The schema array generated from the route table (computed once).
pub(super) fn generated_array() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| Value::Array(generate()).to_string())
}

fn generate() -> Vec<Value> {
    let mut by_path: BTreeMap<&'static str, Map<String, Value>> = BTreeMap::new();
    for route in routes::all() {
        let mut properties = Map::new();
        for capture in route
            .pattern
            .split('/')
            .filter_map(|p| p.strip_prefix('{').and_then(|p| p.strip_suffix('}')))
        {
            properties.insert(capture.to_owned(), capture_schema(capture));
        }
        for param in route.params {
            let name = match param.max_index {
                Some(_) => format!("{}[n]", param.name),
                None => param.name.to_owned(),
            };
            let mut spec = match param.kind {
                Kind::Str => json!({"type": "string"}),
                Kind::Int => json!({"type": "integer"}),
                Kind::Bool => json!({"type": "boolean"}),
                Kind::Num => json!({"type": "number"}),
                Kind::Enum(values) => json!({"type": "string", "enum": values}),
            };
            if !param.required {
                spec["optional"] = json!(1);
            }
            properties.insert(name, spec);
        }
        by_path.entry(route.pattern).or_default().insert(
            route.method.name().to_owned(),
            json!({
                "description": "emulator route",
                "parameters": {"additionalProperties": 0, "properties": properties},
            }),
        );
    }
    by_path
        .into_iter()
        .map(|(path, info)| {
            json!({
                "path": path,
                "text": path.rsplit('/').next().unwrap_or(path),
                "leaf": 1,
                "info": info,
            })
        })
        .collect()
}

fn capture_schema(name: &str) -> Value {
    match name {
        "node" => json!({"type": "string", "format": "pve-node"}),
        "vmid" => json!({
            "type": "integer", "format": "pve-vmid", "minimum": 100, "maximum": 999_999_999
        }),
        "storage" => json!({"type": "string", "format": "pve-storage-id"}),
        _ => json!({"type": "string"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_schema_lists_every_route_with_its_parameters() {
        let script = ApiDocs::Generated.script().unwrap();
        assert!(script.starts_with("const apiSchema = ["));
        assert!(script.contains("method2cmd"));
        let array: Vec<Value> = serde_json::from_str(generated_array()).unwrap();
        let resources = array
            .iter()
            .find(|n| n["path"] == "/cluster/resources")
            .unwrap();
        let kind = &resources["info"]["GET"]["parameters"]["properties"]["type"];
        assert_eq!(kind["enum"], json!(["vm", "storage", "node", "sdn"]));
        let paths: std::collections::BTreeSet<&str> = routes::all().map(|r| r.pattern).collect();
        assert_eq!(array.len(), paths.len());
        assert!(ApiDocs::Missing.script().is_none());
    }

    #[test]
    fn an_installed_schema_names_its_privileges() {
        let tree = json!([{"path": "/nodes", "info": {}, "children": [
            {"path": "/nodes/{node}/qemu/{vmid}/status/{op}", "info": {
                "POST": {"permissions": {"check": ["perm", "/vms/{vmid}", ["VM.X"]]}}}},
            {"path": "/nodes/{node}/qemu/{vmid}/status/start", "info": {
                "POST": {"permissions": {"check": ["perm", "/vms/{vmid}", ["VM.PowerMgmt"]]}}}},
            {"path": "/nodes/{node}/qemu/{vmid}/config", "info": {
                "PUT": {"permissions": {"check":
                    ["perm", "/vms/{vmid}", ["VM.Config.Disk", "VM.Config.CPU"], "any", 1]}},
                "GET": {"permissions": {"user": "all"}}}}
        ]}]);
        let docs = ApiDocs::Custom(Arc::new(CustomSchema::new(tree.to_string())));
        let start = "/nodes/pve01/qemu/101/status/start";
        assert_eq!(
            docs.privilege("POST", start).as_deref(),
            Some("VM.PowerMgmt")
        );
        assert_eq!(
            docs.privilege("PUT", "/nodes/pve01/qemu/101/config")
                .as_deref(),
            Some("VM.Config.Disk|VM.Config.CPU")
        );
        assert_eq!(docs.privilege("GET", "/nodes/pve01/qemu/101/config"), None);
        assert_eq!(docs.privilege("GET", start), None);
        assert_eq!(ApiDocs::Generated.privilege("POST", start), None);
    }
}
