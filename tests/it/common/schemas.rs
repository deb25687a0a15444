//! The Proxmox VE API schemas the tests carry, pinned by SHA-256, flattened to
//! `{path: {METHOD: entry}}` with each entry's parameters as `{name: spec}` (the form of
//! `../shared/pve-api/endpoints-pve-9.1.json.gz`).
//!
//! - `tests/data/apidata-pve-9.1.3.js.gz`: `api-viewer/apidata.js` of the public pve-docs
//!   repository at "bump version to 9.1.3" (schema updated 2026-04-30), gzipped.
//! - `tests/data/apidoc-pbs-4.js.gz`: Proxmox Backup Server 4's API viewer schema (below).
//! - `tests/data/pve-9.2-ops.json`: the PVE 9.2 operations (path and method only), a public
//!   list fetched 2026-09-19; no 9.2 schema with permissions is public.

use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// SHA-256 of `tests/data/apidata-pve-9.1.3.js.gz`.
pub const APIDATA_9_1_3_SHA256: &str =
    "7cfe14b1c09c9555efd877f2d2a4c626715a9f027836c34a2618c999482c8e28";
/// SHA-256 of `tests/data/apidoc-pbs-4.js.gz`: the Proxmox Backup Server 4 API viewer's
/// `apidoc.js` (public repository basher83/Proxmox-OpenAPI, `proxmox-backup-server/apidoc.js`
/// at 17d1f4b, 2026-07-05; the file itself has SHA-256
/// c62063edd60fbc288c376ec1a71efd1b16239cdf9ff88cb8f873ae1a7410f64a), gzipped (`gzip -9 -n`).
pub const APIDOC_PBS_4_SHA256: &str =
    "8aae026713df8d04c6f148d291464f8b35b142118e3985fac8a5f9b1710c9ede";
/// SHA-256 of `tests/data/pve-9.2-ops.json`.
pub const OPS_9_2_SHA256: &str = "7767dfcc88c03d8c90c7bca24ece5107b69a49857db4af32c1e112e15fac4c3b";

fn data(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Hex SHA-256 of a carried data file.
pub fn sha256_of(name: &str) -> String {
    Sha256::digest(data(name))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The 9.1.3 `apidata.js` array, as a node serves it (the tree with `children`).
pub fn apidata_9_1_3() -> Value {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(data("apidata-pve-9.1.3.js.gz").as_slice()),
        &mut text,
    )
    .expect("gzip text");
    nandi_proxmox_mcp::composite::api_call_schema::extract_array(&text).expect("apidata.js array")
}

/// The PBS 4 `apidoc.js` array (the tree with `children`).
pub fn apidoc_pbs_4() -> Value {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(data("apidoc-pbs-4.js.gz").as_slice()),
        &mut text,
    )
    .expect("gzip text");
    nandi_proxmox_mcp::composite::api_call_schema::extract_array(&text).expect("apidoc.js array")
}

/// The PBS 4 schema, flattened like the PVE ones.
pub fn pbs_4() -> Value {
    flatten(&apidoc_pbs_4())
}

/// The 9.1.3 schema, flattened.
pub fn pve_9_1_3() -> Value {
    flatten(&apidata_9_1_3())
}

/// The tree node of `path` in an `apidata.js` array, to edit a copy (a newer schema).
pub fn node_mut<'a>(tree: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    fn find<'a>(nodes: &'a mut Value, path: &str) -> Option<&'a mut Value> {
        for node in nodes.as_array_mut()? {
            if node.get("path").and_then(Value::as_str) == Some(path) {
                return Some(node);
            }
            let prefix = node
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| path.starts_with(&format!("{p}/")));
            if prefix && let Some(children) = node.get_mut("children") {
                return find(children, path);
            }
        }
        None
    }
    find(tree, path)
}

/// The 9.2 operations: `(METHOD, path template)`.
pub fn pve_9_2_ops() -> Vec<(String, String)> {
    let ops: Vec<(String, String)> =
        serde_json::from_slice(&data("pve-9.2-ops.json")).expect("JSON list");
    ops.into_iter()
        .map(|(path, method)| (method, path))
        .collect()
}

/// `apidata.js`'s tree (`path`, `info`, `children`) as `{path: {METHOD: entry}}`.
pub fn flatten(tree: &Value) -> Value {
    fn walk(node: &Value, out: &mut Map<String, Value>) {
        if let (Some(path), Some(info)) = (
            node.get("path").and_then(Value::as_str),
            node.get("info").and_then(Value::as_object),
        ) {
            let methods = out
                .entry(path.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            for (method, entry) in info {
                let mut entry = entry.clone();
                let properties = entry
                    .pointer("/parameters/properties")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                entry["parameters"] = properties;
                methods[method.as_str()] = entry;
            }
        }
        for child in node
            .get("children")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(child, out);
        }
    }
    let mut out = Map::new();
    for node in tree.as_array().into_iter().flatten() {
        walk(node, &mut out);
    }
    Value::Object(out)
}
