//! The emulator's `/pve-docs/api-viewer/apidata.js`: the API schema a node serves for its
//! own version, which the generic API call validates against.
//!
//! By default it is generated from the emulator's own route table (path captures, declared
//! parameters and their kinds), so it describes exactly what the emulator answers and marks
//! itself as such; a test may install the official PVE schema instead
//! ([`super::Emulator::serve_api_schema`]) or make the file unavailable. Invariant: the
//! served text has the real file's shape — `const apiSchema = [...];` followed by more
//! JavaScript — so a client that only reads a bare array fails here as it would on a node.

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
    /// A schema array installed by a test (JSON text of the array).
    Custom(Arc<String>),
    /// 404, as a node without the pve-docs package answers.
    Missing,
}

impl ApiDocs {
    /// The whole JavaScript file, or `None` for a 404.
    pub(super) fn script(&self) -> Option<String> {
        let array: &str = match self {
            ApiDocs::Generated => generated_array(),
            ApiDocs::Custom(array) => array.as_str(),
            ApiDocs::Missing => return None,
        };
        Some(format!(
            "const apiSchema = {array};\n\nlet method2cmd = {{\n    GET: 'get',\n    POST: 'create',\n    PUT: 'set',\n    DELETE: 'delete',\n}};\n"
        ))
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
}
