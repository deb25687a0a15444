//! Every emulator route declares exactly the parameters the official PVE 9.1 schema
//! declares for that method and path (types included), so the emulator's 400s are
//! Proxmox's 400s. Reported as ignored when `../shared/pve-api` is absent (a fresh clone);
//! under CI build.rs does not ignore it, so it fails.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::super::api::Kind;
use super::super::routes;

/// The official schema. The test carries `cfg_attr(no_pve_api, ignore)`, set by build.rs when
/// the file is absent outside CI, so a missing file here means CI lacks it: fail.
fn pve_api_endpoints() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/pve-api/endpoints-pve-9.1.json.gz");
    let file = std::fs::File::open(&path)
        .unwrap_or_else(|e| panic!("{} cannot be read under CI ({e})", path.display()));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .expect("gzip");
    serde_json::from_str(&text).expect("json")
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Str | Kind::Enum(_) => "string",
        Kind::Int => "integer",
        Kind::Bool => "boolean",
        Kind::Num => "number",
    }
}

/// Every route of every table (base, guests, infrastructure, security) declares exactly the
/// schema's non-path parameters, with its types, optionality and enum values.
#[test]
#[cfg_attr(no_pve_api, ignore = "needs ../shared/pve-api beside the project")]
fn every_route_declares_exactly_the_schema_parameters() {
    let endpoints = pve_api_endpoints();
    let mut failures = Vec::new();
    for route in routes::all() {
        let method = format!("{:?}", route.method).to_uppercase();
        let Some(declared) = endpoints
            .get(route.pattern)
            .and_then(|e| e.get(&method))
            .and_then(|e| e["parameters"].as_object())
        else {
            failures.push(format!("{method} {}: not in the API", route.pattern));
            continue;
        };
        let captures: Vec<&str> = route
            .pattern
            .split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect();
        let api: BTreeMap<&str, &Value> = declared
            .iter()
            .filter(|(k, _)| !captures.contains(&k.as_str()))
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        let ours: BTreeMap<String, _> = route
            .params
            .iter()
            .map(|p| {
                let key = match p.max_index {
                    Some(_) => format!("{}[n]", p.name),
                    None => p.name.to_string(),
                };
                (key, p)
            })
            .collect();
        for (name, schema) in &api {
            let Some(p) = ours.get(*name) else {
                failures.push(format!("{method} {}: {name} not declared", route.pattern));
                continue;
            };
            let api_type = schema["type"].as_str().unwrap_or("string");
            // `array` parameters arrive as repeated string keys.
            let api_type = if api_type == "array" {
                "string"
            } else {
                api_type
            };
            if kind_name(p.kind) != api_type {
                failures.push(format!("{method} {}: {name} type", route.pattern));
            }
            let optional = schema["optional"] == 1 || schema["optional"] == true;
            if p.required == optional {
                failures.push(format!("{method} {}: {name} required", route.pattern));
            }
            if let (Kind::Enum(values), Some(api_values)) = (p.kind, schema["enum"].as_array()) {
                let api_values: Vec<&str> = api_values.iter().filter_map(Value::as_str).collect();
                if values != api_values.as_slice() {
                    failures.push(format!("{method} {}: {name} enum", route.pattern));
                }
            }
        }
        for name in ours.keys() {
            if !api.contains_key(name.as_str()) {
                failures.push(format!("{method} {}: {name} not in the API", route.pattern));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
