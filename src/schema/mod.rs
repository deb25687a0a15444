//! JSON input schema and argument validation, both derived from the same `Param` table.
//!
//! Invariant: `validate` enforces every rule of the row — types, required, enums, patterns,
//! lengths, ranges — and runs before any network I/O, so invalid arguments never reach
//! Proxmox. `input_schema` advertises the row's types, descriptions, enums, defaults and what
//! is required, and leaves the value rules and the refusal of unknown keys to `validate` (the
//! server instructions say so once; `input_schema_with_rules` has the whole contract). The
//! schema is a plain top-level object (no `anyOf`/`oneOf`/`allOf`), which every MCP client
//! accepts.

use std::collections::{BTreeMap, HashMap};
use std::sync::{OnceLock, RwLock};

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::catalog::indexed::family_pattern;
use crate::catalog::{Backend, Location, Param, ParamKind, ToolSpec};

mod objects;
mod shape;

pub use shape::{FIELDS, LIMIT, OFFSET, Shape, is_list, shaping_arguments};
use shape::{read_shaping, shaping_schema};

/// Name of the control argument of confirm-gated tools; never sent to Proxmox.
pub const CONFIRM: &str = "confirm";

/// Longest argument name echoed in a validation error; names are short, so a longer one is an
/// attack or a mistake and is cut (the value itself is never echoed).
const ECHOED_NAME_CHARS: usize = 64;

/// An argument name as it may appear in an error: at most [`ECHOED_NAME_CHARS`] characters.
fn echoed_name(key: &str) -> String {
    match key.char_indices().nth(ECHOED_NAME_CHARS) {
        None => key.to_owned(),
        Some((cut, _)) => format!("{}… [{} characters]", &key[..cut], key.chars().count()),
    }
}

/// Name of the control argument that previews a change instead of making it; never sent.
pub const DRY_RUN: &str = "dry_run";

/// Name of the control argument that follows a started Proxmox task to its end; never sent.
pub const WAIT: &str = "wait";

/// Name of the control argument bounding `wait`, in seconds; never sent.
pub const WAIT_TIMEOUT: &str = "wait_timeout";

const WAIT_TIMEOUT_DESCRIPTION: &str = "Seconds to wait.";

/// Largest `wait_timeout` (seconds).
pub const MAX_WAIT_SECS: u64 = 86_400;

/// The control arguments a row accepts besides its parameters: `confirm` where a call can
/// need approval, `dry_run` on every tool that changes something, `wait`/`wait_timeout`
/// on the tools that start a Proxmox task, and the shaping arguments (`fields`, `limit`,
/// `offset`) of list rows.
pub fn control_arguments(spec: &ToolSpec) -> impl Iterator<Item = &'static str> {
    let confirm = spec.can_be_gated().then_some(CONFIRM);
    let dry_run = (!spec.effect.is_read()).then_some(DRY_RUN);
    let wait = spec
        .starts_task
        .then_some([WAIT, WAIT_TIMEOUT])
        .into_iter()
        .flatten();
    confirm
        .into_iter()
        .chain(dry_run)
        .chain(wait)
        .chain(shaping_arguments(spec))
}

/// The rules of the control and shaping arguments, said once for every tool (meant for the
/// server instructions), so each schema carries a few-word description of them.
pub const CONTROL_NOTE: &str = "Arguments outside a tool's schema are refused; values are \
checked here against Proxmox's own formats and ranges (names, IDs, lengths), and a refusal \
names the rule. \
wait_timeout bounds wait=true (seconds, default 300, at most 86400). Lists that grow \
with the cluster take fields (keys to keep per item), limit and offset (paging), applied to the \
answer and never sent to Proxmox; an answer cut at the output cap says which offset comes next.";

/// Builds the JSON Schema of a tool's arguments, as the model sees it: types, descriptions,
/// enums, defaults and what is required. The value rules (`pattern`, `maxLength`, `minimum`,
/// `maximum`) are enforced by [`validate`] and left out; [`input_schema_with_rules`] has them.
pub fn input_schema(spec: &ToolSpec) -> Map<String, Value> {
    build_input_schema(spec, false)
}

/// [`input_schema`] plus every value rule [`validate`] enforces (`pattern`, `maxLength`,
/// `minimum`, `maximum`):
/// the whole contract, for tools that check or generate arguments (fuzzing, documentation).
pub fn input_schema_with_rules(spec: &ToolSpec) -> Map<String, Value> {
    build_input_schema(spec, true)
}

fn build_input_schema(spec: &ToolSpec, rules: bool) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut families = Map::new();
    for param in spec.params.iter().filter(|p| !p.fixed) {
        match param.index {
            Some((lo, hi)) => {
                families.insert(
                    family_pattern(param.name, lo, hi),
                    property_schema(param, rules),
                );
            }
            None => {
                properties.insert(param.name.to_owned(), property_schema(param, rules));
            }
        }
    }
    // No description, as for `dry_run`: the server instructions say once what `confirm`
    // means under the approval mode in force (repeated, it cost ~2.7 KB of the full listing).
    if spec.can_be_gated() {
        properties.insert(CONFIRM.to_owned(), json!({"type": "boolean"}));
    }
    if !spec.effect.is_read() {
        properties.insert(DRY_RUN.to_owned(), json!({"type": "boolean"}));
    }
    if spec.starts_task {
        properties.insert(WAIT.to_owned(), json!({"type": "boolean"}));
        properties.insert(
            WAIT_TIMEOUT.to_owned(),
            json!({"type": "integer", "description": WAIT_TIMEOUT_DESCRIPTION}),
        );
    }
    for name in shaping_arguments(spec) {
        properties.insert(name.to_owned(), shaping_schema(name));
    }
    let required: Vec<Value> = spec
        .params
        .iter()
        .filter(|p| p.required)
        .map(|p| Value::from(p.name))
        .collect();
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if !families.is_empty() {
        schema.insert("patternProperties".into(), Value::Object(families));
    }
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    // No `additionalProperties: false`: `validate` refuses unknown keys all the same (the
    // server instructions say so once), and the keyword would cost every tool 28 bytes.
    schema
}

/// The argument that names the cluster of a call when the process serves several.
pub const CLUSTER: &str = "cluster";

/// Adds the `cluster` argument to a tool's input schema: a string, one of `names`, listed in
/// `required` when no default cluster is configured. Only a process serving several
/// clusters calls it, so the plain case's schema is untouched.
pub fn add_cluster_property(schema: &mut Map<String, Value>, names: &[&str], required: bool) {
    // No description: the name and the enum say it, and the server instructions explain it
    // once (a sentence here would cost every tool of the listing ~30 bytes).
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(CLUSTER.to_owned(), json!({"type": "string", "enum": names}));
    }
    if required {
        match schema.get_mut("required") {
            Some(Value::Array(list)) => list.push(CLUSTER.into()),
            _ => {
                schema.insert("required".into(), json!([CLUSTER]));
            }
        }
    }
}

fn property_schema(param: &Param, rules: bool) -> Value {
    let mut prop = Map::new();
    prop.insert("type".into(), param.kind.json_type().into());
    if param.kind == ParamKind::StringArray {
        prop.insert("items".into(), json!({"type": "string"}));
        prop.insert("minItems".into(), 1.into());
    }
    if param.kind == ParamKind::ObjectArray {
        prop.insert("items".into(), json!({"type": "object"}));
        prop.insert("minItems".into(), 1.into());
    }
    prop.insert("description".into(), param.description.into());
    if let Some(default) = param.default {
        prop.insert("default".into(), default_value(param, default));
    }
    // The value rules (`pattern`, `maxLength`, `minimum`, `maximum`) stay on the server for
    // the model: `validate` enforces them and names the rule in a refusal, while listing them
    // cost ~16 KB of the full listing (regular expressions, the VMID range on 65 tools) and
    // told the model nothing its description does not. A row's `lists_maximum` is the
    // exception: a cap the model could only learn by being refused.
    if rules && let Some(min) = param.minimum {
        prop.insert("minimum".into(), min.into());
    }
    if (rules || param.lists_maximum)
        && let Some(max) = param.maximum
    {
        prop.insert("maximum".into(), max.into());
    }
    if rules {
        if let Some(max_len) = param.max_length {
            prop.insert("maxLength".into(), max_len.into());
        }
        if let Some(pattern) = param.pattern {
            prop.insert("pattern".into(), pattern.into());
        }
    }
    if !param.one_of.is_empty() {
        prop.insert("enum".into(), param.one_of.iter().copied().collect());
    }
    Value::Object(prop)
}

/// A row's wire default, typed as the property is (`"1"` of an integer → `1`).
fn default_value(param: &Param, default: &str) -> Value {
    match param.kind {
        ParamKind::Integer => default
            .parse::<i64>()
            .map_or_else(|_| default.into(), Value::from),
        ParamKind::Boolean => Value::Bool(default == "1"),
        _ => default.into(),
    }
}

/// A validated argument value, typed as the row declares it.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// A string argument.
    Str(String),
    /// An integer argument.
    Int(i64),
    /// A non-integer number.
    Num(f64),
    /// A boolean (sent to Proxmox as `1`/`0`).
    Bool(bool),
    /// A list of strings (sent as one repeated form key per item).
    List(Vec<String>),
    /// A list of JSON objects (a plan's steps), read by the server, never sent as such.
    Objects(Vec<Map<String, Value>>),
}

impl ArgValue {
    /// The wire form Proxmox expects: Perl-style `1`/`0` booleans, decimal numbers.
    pub fn to_wire(&self) -> String {
        match self {
            ArgValue::Str(s) => s.clone(),
            ArgValue::Int(i) => i.to_string(),
            ArgValue::Num(n) => n.to_string(),
            ArgValue::Bool(b) => if *b { "1" } else { "0" }.to_owned(),
            ArgValue::List(items) => items.join(" "),
            ArgValue::Objects(items) => Value::from(items.clone()).to_string(),
        }
    }

    /// Every wire value: one per list item, else exactly one.
    pub fn wire_values(&self) -> Vec<String> {
        match self {
            ArgValue::List(items) => items.clone(),
            other => vec![other.to_wire()],
        }
    }
}

/// Arguments that passed validation, keyed by parameter name (control args excluded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidArgs {
    /// Declared parameters that were given.
    pub values: BTreeMap<&'static str, ArgValue>,
    /// Keys of indexed families that were given (`net1` → its family row and value).
    pub indexed: BTreeMap<String, (&'static Param, ArgValue)>,
    /// Whether `confirm` was exactly `true`.
    pub confirmed: bool,
    /// Whether `dry_run` was exactly `true`.
    pub dry_run: bool,
    /// Whether `wait` was exactly `true` (task-starting tools).
    pub wait: bool,
    /// `wait_timeout` in seconds, when given.
    pub wait_timeout: Option<u64>,
    /// Projection and paging of a list result (`fields`, `limit`, `offset`).
    pub shape: Shape,
}

impl ValidArgs {
    /// Whether a parameter was given; for an indexed family, any of its keys.
    pub fn has(&self, name: &str) -> bool {
        self.values.contains_key(name) || self.indexed.values().any(|(p, _)| p.name == name)
    }

    /// A string argument by name.
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.values.get(name) {
            Some(ArgValue::Str(s)) => Some(s),
            _ => None,
        }
    }
}

/// Why arguments were rejected: one message per offending parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct InputErrors {
    /// Parameter name → what is wrong with it.
    pub errors: BTreeMap<String, String>,
}

/// Checks `args` against the row: types, required, ranges, patterns, enums, unknown keys.
pub fn validate(
    spec: &ToolSpec,
    args: Option<&Map<String, Value>>,
) -> Result<ValidArgs, InputErrors> {
    let empty = Map::new();
    let args = args.unwrap_or(&empty);
    let mut errors = BTreeMap::new();
    let mut valid = ValidArgs::default();
    // Proxmox's body limit binds what is POSTed to it; an SSH tool's content goes over SFTP
    // under its own caps.
    let to_proxmox = !matches!(spec.backend, Backend::Ssh(_));

    for (key, value) in args {
        if key == CONFIRM && spec.can_be_gated() {
            match value {
                Value::Bool(b) => valid.confirmed = *b,
                Value::Null => {}
                _ => {
                    errors.insert(key.clone(), "must be a boolean (true to confirm)".into());
                }
            }
            continue;
        }
        if key == DRY_RUN && !spec.effect.is_read() {
            match value {
                Value::Bool(b) => valid.dry_run = *b,
                Value::Null => {}
                _ => {
                    errors.insert(key.clone(), "must be a boolean (true to preview)".into());
                }
            }
            continue;
        }
        if shaping_arguments(spec).any(|name| name == key) {
            if let Err(message) = read_shaping(key, value, &mut valid.shape) {
                errors.insert(key.clone(), message);
            }
            continue;
        }
        if spec.starts_task && (key == WAIT || key == WAIT_TIMEOUT) {
            if let Err(message) = wait_argument(&mut valid, key, value) {
                errors.insert(key.clone(), message);
            }
            continue;
        }
        if let Some(family) = spec.family_of(key) {
            match check_family_key(family, key)
                .and_then(|()| check_value(family, value, to_proxmox))
            {
                Ok(v) => {
                    valid.indexed.insert(key.clone(), (family, v));
                }
                Err(message) => {
                    errors.insert(echoed_name(key), message);
                }
            }
            continue;
        }
        if spec.param(key).is_none_or(|p| p.fixed || p.index.is_some()) {
            errors.insert(echoed_name(key), "unknown parameter".into());
        }
    }

    for param in spec.params.iter().filter(|p| !p.fixed && p.index.is_none()) {
        match args.get(param.name) {
            None | Some(Value::Null) => {
                if param.required {
                    errors.insert(param.name.into(), "required parameter is missing".into());
                }
            }
            Some(value) => match check_value(param, value, to_proxmox) {
                Ok(v) => {
                    valid.values.insert(param.name, v);
                }
                Err(message) => {
                    errors.insert(param.name.into(), message);
                }
            },
        }
    }

    if errors.is_empty() {
        Ok(valid)
    } else {
        Err(InputErrors { errors })
    }
}

/// An indexed key must match its family's pattern (the one the schema advertises).
fn check_family_key(family: &'static Param, key: &str) -> Result<(), String> {
    let Some((lo, hi)) = family.index else {
        return Ok(());
    };
    let pattern = family_pattern(family.name, lo, hi);
    if pattern_matches(&pattern, key) {
        Ok(())
    } else {
        Err(format!(
            "unknown parameter: {}{lo}…{}{hi} exist (key pattern {pattern})",
            family.name, family.name
        ))
    }
}

/// The agent's `command` may also come as one string, split on whitespace, which is
/// what a caller of the reference (which took a string) means by "ls -la".
fn string_list(value: &Value) -> Result<ArgValue, String> {
    match value {
        Value::String(s) => {
            let items: Vec<String> = s.split_whitespace().map(str::to_owned).collect();
            if items.is_empty() {
                return Err("must not be empty".into());
            }
            Ok(ArgValue::List(items))
        }
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| match item {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                _ => Err("every item must be a non-empty string".to_owned()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ArgValue::List),
        Value::Array(_) => Err("must not be empty".into()),
        other => Err(format!(
            "must be of type array, got {}",
            json_type_name(other)
        )),
    }
}

fn check_value(param: &Param, value: &Value, to_proxmox: bool) -> Result<ArgValue, String> {
    let parsed = match (param.kind, value) {
        (ParamKind::StringArray, value) => return string_list(value),
        (ParamKind::ObjectArray, value) => return objects::object_list(param, value),
        (ParamKind::String, Value::String(s)) => ArgValue::Str(s.clone()),
        (ParamKind::Integer, Value::Number(n)) => match n.as_i64() {
            Some(i) => ArgValue::Int(i),
            None => return Err(format!("must be an integer, got {n}")),
        },
        (ParamKind::Number, Value::Number(n)) => ArgValue::Num(n.as_f64().unwrap_or(f64::NAN)),
        (ParamKind::Boolean, Value::Bool(b)) => ArgValue::Bool(*b),
        (kind, other) => {
            return Err(format!(
                "must be of type {}, got {}",
                kind.json_type(),
                json_type_name(other)
            ));
        }
    };
    check_rules(param, &parsed, to_proxmox)?;
    Ok(parsed)
}

/// The largest request body pveproxy reads (`$limit_max_post`, 512 KiB since
/// libpve-http-server-perl 5.2.1): a larger one is refused before Proxmox looks at it.
pub const PVE_MAX_POST_BYTES: usize = 512 * 1024;

/// Bytes `value` takes in an `application/x-www-form-urlencoded` body, as the REST client
/// sends it: alphanumerics, `*-._` and space one byte each, every other byte `%XX`.
pub fn form_encoded_len(value: &str) -> usize {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'*' | b'-' | b'.' | b'_' | b' ') {
                1
            } else {
                3
            }
        })
        .sum()
}

fn check_rules(param: &Param, value: &ArgValue, to_proxmox: bool) -> Result<(), String> {
    let numeric = match value {
        ArgValue::Int(i) => Some(*i as f64),
        ArgValue::Num(n) if n.is_finite() => Some(*n),
        ArgValue::Num(_) => return Err("must be a finite number".into()),
        _ => None,
    };
    if let Some(n) = numeric {
        if let Some(min) = param.minimum.filter(|min| n < *min as f64) {
            return Err(format!("must be at least {min}"));
        }
        if let Some(max) = param.maximum.filter(|max| n > *max as f64) {
            return Err(format!("must be at most {max}"));
        }
    }
    if let ArgValue::Str(s) = value {
        if s.chars().any(char::is_control) && param.pattern.is_some() {
            return Err("must not contain control characters".into());
        }
        if let Some(max) = param
            .max_length
            .filter(|max| s.chars().count() > *max as usize)
        {
            return Err(format!("must be at most {max} characters"));
        }
        // Proxmox's own limit is on the request body as it arrives (form-encoded bytes, a
        // multi-byte character three bytes per UTF-8 byte), not on characters.
        let sent = if to_proxmox { form_encoded_len(s) } else { 0 };
        if sent > PVE_MAX_POST_BYTES {
            return Err(format!(
                "is {sent} bytes form-encoded as sent to Proxmox, over its {} KiB request \
                 body limit (multi-byte characters count 3 bytes per UTF-8 byte)",
                PVE_MAX_POST_BYTES / 1024
            ));
        }
        if !param.one_of.is_empty() && !param.one_of.contains(&s.as_str()) {
            return Err(format!("must be one of: {}", param.one_of.join(", ")));
        }
        if let Some(pattern) = param.pattern.filter(|p| !pattern_matches(p, s)) {
            return Err(format!("must match the pattern {pattern}"));
        }
        // After the pattern, so a value the pattern already refuses keeps that reason.
        if param.location == Location::Path && s.contains('/') {
            return Err(
                "must not contain '/': Proxmox decodes it before routing, so the \
                        request would reach another endpoint"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Patterns are compiled once per process and shared; a row with an invalid pattern is
/// caught by the catalog tests, and at run time rejects every value (fail closed).
fn pattern_matches(pattern: &str, value: &str) -> bool {
    type Cache = RwLock<HashMap<String, Option<Regex>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    // Calls run concurrently (HTTP sessions): after the first use of a pattern every check
    // is a shared read, never a global exclusive lock.
    {
        let read = cache
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(compiled) = read.get(pattern) {
            return compiled.as_ref().is_some_and(|re| re.is_match(value));
        }
    }
    let mut write = cache
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    write
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(value))
}

/// Reads `wait` or `wait_timeout` into `valid`.
fn wait_argument(valid: &mut ValidArgs, key: &str, value: &Value) -> Result<(), String> {
    match (key, value) {
        (_, Value::Null) => Ok(()),
        (WAIT, Value::Bool(b)) => {
            valid.wait = *b;
            Ok(())
        }
        (WAIT, _) => Err("must be a boolean (true to wait for the task)".into()),
        (_, Value::Number(n)) => match n.as_u64().filter(|s| (1..=MAX_WAIT_SECS).contains(s)) {
            Some(seconds) => {
                valid.wait_timeout = Some(seconds);
                Ok(())
            }
            None => Err(format!(
                "must be a whole number of seconds from 1 to {MAX_WAIT_SECS}"
            )),
        },
        _ => Err(format!(
            "must be of type integer, got {}",
            json_type_name(value)
        )),
    }
}

fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests;
