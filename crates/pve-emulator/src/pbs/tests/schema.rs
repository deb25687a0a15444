//! The pinned PBS 4 API viewer schema (`tests/data/apidoc-pbs-4.js.gz`) is the oracle of the
//! route table: every route exists there with its method and path template, and every
//! parameter a route accepts is declared there for that method, with the same type, the
//! same optionality and (for enumerations) only values the schema allows.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::super::api::Kind;
use super::super::routes::ROUTES;

/// The `apiSchema` array of the pinned `apidoc.js`.
fn pbs_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/apidoc-pbs-4.js.gz");
    let file = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read ({e})", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzip");
    let start = text.find("var apiSchema = ").expect("apiSchema") + "var apiSchema = ".len();
    let end = start + text[start..].find("\n];").expect("end of the array") + 2;
    serde_json::from_str(&text[start..end]).expect("the schema array is JSON")
}

/// Every node of the tree by its path.
fn index(nodes: &Value, out: &mut BTreeMap<String, Value>) {
    for node in nodes.as_array().into_iter().flatten() {
        if let Some(path) = node["path"].as_str() {
            out.insert(path.to_owned(), node.clone());
        }
        index(&node["children"], out);
    }
}

fn type_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Str | Kind::Enum(_) => "string",
        Kind::Int => "integer",
        Kind::Bool => "boolean",
    }
}

#[test]
fn every_route_and_parameter_is_in_the_pinned_pbs_schema() {
    let mut nodes = BTreeMap::new();
    index(&pbs_schema(), &mut nodes);
    assert!(nodes.len() > 200, "only {} schema paths", nodes.len());
    assert!(ROUTES.len() >= 20, "only {} routes", ROUTES.len());
    let mut failures = Vec::new();
    for route in ROUTES {
        let where_ = format!("{} {}", route.method, route.pattern);
        let Some(info) = nodes
            .get(route.pattern)
            .and_then(|n| n["info"].get(route.method))
        else {
            failures.push(format!("{where_}: not in the schema"));
            continue;
        };
        let props = &info["parameters"]["properties"];
        // Every path capture is a declared, required parameter.
        for capture in route
            .pattern
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        {
            if props.get(capture).is_none() {
                failures.push(format!("{where_}: capture {capture} not declared"));
            }
        }
        for param in route.params {
            let Some(schema) = props.get(param.name) else {
                failures.push(format!("{where_}: {} not declared", param.name));
                continue;
            };
            let ty = schema["type"].as_str().unwrap_or("string");
            if ty != type_name(param.kind) {
                failures.push(format!(
                    "{where_}: {} is {ty}, the route says {}",
                    param.name,
                    type_name(param.kind)
                ));
            }
            let optional =
                schema["optional"].as_i64() == Some(1) || schema.get("default").is_some();
            if optional == param.required {
                failures.push(format!(
                    "{where_}: {} optional={optional} in the schema",
                    param.name
                ));
            }
            if param.kind == Kind::Int
                && (schema["minimum"].as_i64() != param.min
                    || schema["maximum"].as_i64() != param.max)
            {
                failures.push(format!(
                    "{where_}: {} range {:?}..{:?}, the schema says {}..{}",
                    param.name, param.min, param.max, schema["minimum"], schema["maximum"]
                ));
            }
            if let Kind::Enum(values) = param.kind {
                let allowed: Vec<&str> = schema["enum"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                for v in values {
                    if !allowed.contains(v) {
                        failures.push(format!("{where_}: {} value {v} not allowed", param.name));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_oracle_refuses_what_the_schema_lacks() {
    let mut nodes = BTreeMap::new();
    index(&pbs_schema(), &mut nodes);
    // The PVE-only path and a parameter PBS does not know are absent, so the check above
    // would catch a route or parameter copied from the PVE emulator.
    assert!(!nodes.contains_key("/nodes/{node}/qemu"));
    let prune = &nodes["/admin/datastore/{store}/prune"]["info"]["POST"]["parameters"];
    assert!(prune["properties"].get("keep-all").is_none());
    assert!(prune["properties"].get("keep-daily").is_some());
}
