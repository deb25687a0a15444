//! The cluster's own API schema (`/pve-docs/api-viewer/apidata.js`), parsed into an index
//! the generic API call checks its method, path and parameters against.
//!
//! Invariant: the index is built only from the JSON array of `apidata.js` (the JavaScript
//! around it is never evaluated), and a path matches an endpoint only segment by segment —
//! a literal segment exactly, a `{name}` segment any one segment — so a call can never reach
//! an endpoint other than the one the index reports.

use std::collections::BTreeMap;

use serde_json::Value;

/// JSON type of one schema parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaType {
    /// Any string (formats and patterns checked separately).
    String,
    /// An integer.
    Integer,
    /// A decimal number.
    Number,
    /// A Perl-style boolean (`0`/`1`, also `true`/`false`).
    Boolean,
    /// A list, sent as the key repeated.
    Array,
    /// Anything else the schema declares (`object`, `null`): passed as a string.
    Other,
}

/// One parameter of one method, as the schema declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaParam {
    /// JSON type.
    pub kind: SchemaType,
    /// Whether the call may leave it out.
    pub optional: bool,
    /// Allowed values (empty = any).
    pub allowed: Vec<String>,
    /// Perl regular expression the value must match in full.
    pub pattern: Option<String>,
    /// Named format (`pve-node`, `pve-vmid`, …); property-string formats are not named.
    pub format: Option<String>,
    /// Inclusive lower bound.
    pub minimum: Option<f64>,
    /// Inclusive upper bound.
    pub maximum: Option<f64>,
    /// Longest string allowed.
    pub max_length: Option<u64>,
    /// Shortest string allowed.
    pub min_length: Option<u64>,
    /// The schema's own short rendering (`<integer> (1 - N)`), quoted in errors.
    pub typetext: Option<String>,
}

/// One HTTP method of one endpoint.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchemaMethod {
    /// Declared parameters, path captures included (as Proxmox lists them).
    pub params: BTreeMap<String, SchemaParam>,
    /// The schema allows keys it does not list (`additionalProperties`).
    pub open: bool,
    /// What the effects classifier makes of this entry (its permission check, parameter
    /// formats and patterns), by the rules that build the embedded table.
    pub effects: Option<crate::effects::Endpoint>,
}

/// One endpoint path.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaEndpoint {
    /// The template, e.g. `/nodes/{node}/qemu/{vmid}/config`.
    pub template: String,
    /// Per-method parameters (`GET`, `POST`, …).
    pub methods: BTreeMap<String, SchemaMethod>,
}

/// The whole API, indexed by path template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApiSchema {
    endpoints: Vec<SchemaEndpoint>,
}

/// A concrete path matched to an endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct PathMatch<'a> {
    /// The endpoint.
    pub endpoint: &'a SchemaEndpoint,
    /// `{name}` → the segment that filled it.
    pub captures: Vec<(String, String)>,
}

/// Why `apidata.js` could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaParseError {
    /// No `[` where the JSON array should start.
    #[error("apidata.js holds no JSON array")]
    NoArray,
    /// The array is not valid JSON.
    #[error("apidata.js is not valid JSON: {0}")]
    Json(String),
    /// The array holds no endpoint.
    #[error("apidata.js lists no endpoint")]
    Empty,
}

/// The JSON array out of `apidata.js` (`const apiSchema = [...];` plus trailing code), or
/// the text itself when it already is a bare array (the cache file).
pub fn extract_array(script: &str) -> Result<Value, SchemaParseError> {
    let start = match script.find("apiSchema") {
        Some(at) => script[at..].find('[').map(|i| at + i),
        None => script.find('['),
    }
    .ok_or(SchemaParseError::NoArray)?;
    let mut stream = serde_json::Deserializer::from_str(&script[start..]).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value @ Value::Array(_))) => Ok(value),
        Some(Ok(_)) | None => Err(SchemaParseError::NoArray),
        Some(Err(e)) => Err(SchemaParseError::Json(e.to_string())),
    }
}

impl ApiSchema {
    /// Builds the index from the `apidata.js` array (nested `children` or a flat list).
    pub fn from_array(array: &Value) -> Result<ApiSchema, SchemaParseError> {
        let mut endpoints = Vec::new();
        if let Value::Array(nodes) = array {
            collect(nodes, &mut endpoints);
        }
        if endpoints.is_empty() {
            return Err(SchemaParseError::Empty);
        }
        Ok(ApiSchema { endpoints })
    }

    /// Parses `apidata.js` text (or a bare array).
    pub fn parse(script: &str) -> Result<ApiSchema, SchemaParseError> {
        ApiSchema::from_array(&extract_array(script)?)
    }

    /// Number of endpoint paths indexed.
    pub fn len(&self) -> usize {
        self.endpoints.len()
    }

    /// Whether the index is empty (never, for a parsed schema).
    pub fn is_empty(&self) -> bool {
        self.endpoints.is_empty()
    }

    /// The endpoint a concrete path (segments already split) belongs to. Several templates
    /// can match (`/nodes/{node}/qemu/{vmid}/status/current` and `…/status/{x}`): the one
    /// with the most literal segments wins, as pveproxy resolves it.
    pub fn match_path(&self, segments: &[&str]) -> Option<PathMatch<'_>> {
        self.endpoints
            .iter()
            .filter_map(|endpoint| {
                let captures = match_template(&endpoint.template, segments)?;
                Some((segments.len() - captures.len(), endpoint, captures))
            })
            .max_by_key(|(literals, _, _)| *literals)
            .map(|(_, endpoint, captures)| PathMatch { endpoint, captures })
    }
}

fn collect(nodes: &[Value], out: &mut Vec<SchemaEndpoint>) {
    for node in nodes {
        if let Some(path) = node.get("path").and_then(Value::as_str) {
            let methods: BTreeMap<String, SchemaMethod> = node
                .get("info")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(method, info)| {
                    let mut parsed = parse_method(info);
                    parsed.effects =
                        Some(crate::effects::Endpoint::from_schema(method, path, info));
                    (method.to_ascii_uppercase(), parsed)
                })
                .collect();
            if !methods.is_empty() {
                out.push(SchemaEndpoint {
                    template: path.to_owned(),
                    methods,
                });
            }
        }
        if let Some(Value::Array(children)) = node.get("children") {
            collect(children, out);
        }
    }
}

fn parse_method(info: &Value) -> SchemaMethod {
    let parameters = info.get("parameters");
    let open = parameters
        .and_then(|p| p.get("additionalProperties"))
        .is_some_and(truthy);
    let params = parameters
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, spec)| (name.clone(), parse_param(spec)))
        .collect();
    SchemaMethod {
        params,
        open,
        effects: None,
    }
}

fn parse_param(spec: &Value) -> SchemaParam {
    let kind = match spec.get("type").and_then(Value::as_str) {
        Some("string") | None => SchemaType::String,
        Some("integer") => SchemaType::Integer,
        Some("number") => SchemaType::Number,
        Some("boolean") => SchemaType::Boolean,
        Some("array") => SchemaType::Array,
        Some(_) => SchemaType::Other,
    };
    let text = |key: &str| spec.get(key).and_then(Value::as_str).map(str::to_owned);
    let number = |key: &str| match spec.get(key) {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    SchemaParam {
        kind,
        optional: spec.get("optional").is_some_and(truthy),
        allowed: spec
            .get("enum")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        pattern: text("pattern"),
        // A property-string format is an object; only named formats are checked.
        format: text("format"),
        minimum: number("minimum"),
        maximum: number("maximum"),
        max_length: number("maxLength").map(|n| n as u64),
        min_length: number("minLength").map(|n| n as u64),
        typetext: text("typetext"),
    }
}

/// Perl truth as the schema writes it: `1`, `true`, `"1"`.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty() && s != "0",
        _ => false,
    }
}

fn match_template(template: &str, segments: &[&str]) -> Option<Vec<(String, String)>> {
    let parts: Vec<&str> = template.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut captures = Vec::new();
    for (part, segment) in parts.iter().zip(segments) {
        match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => captures.push((name.to_owned(), (*segment).to_owned())),
            None if part == segment => {}
            None => return None,
        }
    }
    Some(captures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> ApiSchema {
        let script = format!(
            "const apiSchema = {};\nlet method2cmd = {{ GET: 'get' }};\n",
            json!([{ "path": "/nodes", "info": {"GET": {"parameters": {"properties": {}}}},
            "children": [{ "path": "/nodes/{node}",
              "info": {"GET": {"parameters": {"properties": {"node": {"type": "string", "format": "pve-node"}}}}},
              "children": [
                {"path": "/nodes/{node}/status", "info": {"GET": {}, "POST": {"parameters": {"additionalProperties": 0, "properties": {"command": {"type": "string", "enum": ["reboot", "shutdown"]}}}}}},
                {"path": "/nodes/{node}/{other}", "info": {"GET": {}}}
              ]}]}])
        );
        ApiSchema::parse(&script).unwrap()
    }

    #[test]
    fn the_array_is_read_out_of_the_script_and_nested_paths_indexed() {
        let schema = sample();
        assert_eq!(schema.len(), 4);
        let m = schema.match_path(&["nodes", "pve01", "status"]).unwrap();
        assert_eq!(m.endpoint.template, "/nodes/{node}/status");
        assert_eq!(m.captures, vec![("node".to_owned(), "pve01".to_owned())]);
        let post = &m.endpoint.methods["POST"];
        assert_eq!(post.params["command"].allowed, ["reboot", "shutdown"]);
        assert!(!post.open);
        let m = schema.match_path(&["nodes", "pve01", "dns"]).unwrap();
        assert_eq!(m.endpoint.template, "/nodes/{node}/{other}");
        assert!(schema.match_path(&["nodes", "a", "b", "c"]).is_none());
        assert!(schema.match_path(&["cluster"]).is_none());
    }

    #[test]
    fn broken_scripts_are_errors() {
        assert_eq!(
            ApiSchema::parse("const apiSchema = 5;"),
            Err(SchemaParseError::NoArray)
        );
        assert!(matches!(
            ApiSchema::parse("const apiSchema = [{\"path\": ];"),
            Err(SchemaParseError::Json(_))
        ));
        assert_eq!(ApiSchema::parse("[]"), Err(SchemaParseError::Empty));
    }
}
