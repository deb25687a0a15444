//! Checks of one generic API call: structural rules that hold with or without a schema,
//! then the cluster's own schema (path for the method, required, unknown keys, types,
//! enum, pattern, ranges, lengths, cheap formats, indexed keys).
//!
//! Invariant: what leaves here is a path whose every segment is percent-encoded by us (the
//! caller cannot pre-encode, so no `%2F` or `%2E%2E` reaches Proxmox) and parameter pairs
//! whose keys are plain names; a call that fails any check produces no request at all.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;

use super::api_call_schema::{ApiSchema, SchemaParam, SchemaType};
use crate::pve::encode_path_segment;

/// One refused argument: the parameter (or `path`/`method`) and what is allowed.
pub type Refusal = (String, String);

/// A call that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedCall {
    /// Encoded path relative to `/api2/json`.
    pub path: String,
    /// Parameters in wire form (booleans normalised to `1`/`0`).
    pub params: Vec<(String, String)>,
    /// The schema's path template, when a schema judged the call.
    pub template: Option<String>,
    /// The cluster's own schema entry for the call, as the effects classifier reads it.
    pub cluster: Option<crate::effects::Endpoint>,
}

/// The longest path accepted (Proxmox paths are far shorter).
const MAX_PATH_LEN: usize = 1024;

/// Splits and checks the path the caller gave (with or without `/api2/json`).
pub fn structural_path(raw: &str) -> Result<Vec<String>, Refusal> {
    let refuse = |why: &str| Err(("path".to_owned(), why.to_owned()));
    let path = raw.strip_prefix("/api2/json").unwrap_or(raw);
    if path.len() > MAX_PATH_LEN {
        return refuse("is longer than 1024 characters");
    }
    if !path.starts_with('/') {
        return refuse("must start with '/' (relative to /api2/json), e.g. /nodes/pve01/status");
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return refuse(&format!(
            "contains the control character {c:?}; paths are plain text"
        ));
    }
    for (c, why) in [
        (
            '?',
            "a query string ('?'); pass parameters in params instead",
        ),
        ('#', "a fragment ('#')"),
        ('\\', "a backslash"),
        (
            '%',
            "a percent sign; give segments unencoded (each is encoded here, so '/' cannot be smuggled into one)",
        ),
    ] {
        if path.contains(c) {
            return refuse(&format!("must not contain {why}"));
        }
    }
    if path.chars().any(char::is_whitespace) {
        return refuse("must not contain whitespace");
    }
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let segments: Vec<String> = trimmed.split('/').skip(1).map(str::to_owned).collect();
    if segments.iter().any(String::is_empty) && !trimmed.is_empty() {
        return refuse("must not contain empty segments ('//')");
    }
    if segments.iter().any(|s| s == "." || s == "..") {
        return refuse("must not contain '.' or '..' segments");
    }
    Ok(segments.into_iter().filter(|s| !s.is_empty()).collect())
}

/// Parses `key=value` items and checks the keys structurally.
pub fn structural_params(items: &[String]) -> Result<Vec<(String, String)>, Vec<Refusal>> {
    let mut pairs = Vec::new();
    let mut refusals = Vec::new();
    for item in items {
        let Some((key, value)) = item.split_once('=') else {
            refusals.push((
                item.clone(),
                "must be written key=value (e.g. \"cores=2\")".to_owned(),
            ));
            continue;
        };
        let key_ok = key.len() <= 128
            && key.starts_with(|c: char| c.is_ascii_alphabetic())
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !key_ok {
            refusals.push((
                key.to_owned(),
                "is not a parameter name (letters, digits, '_', '-', '.'; starting with a letter)"
                    .to_owned(),
            ));
        } else if value.contains('\0') {
            refusals.push((key.to_owned(), "must not contain NUL".to_owned()));
        } else {
            pairs.push((key.to_owned(), value.to_owned()));
        }
    }
    if refusals.is_empty() {
        Ok(pairs)
    } else {
        Err(refusals)
    }
}

/// The encoded path of checked segments.
pub fn encode_path(segments: &[String]) -> String {
    if segments.is_empty() {
        return "/".to_owned();
    }
    segments
        .iter()
        .map(|s| format!("/{}", encode_path_segment(s)))
        .collect()
}

/// Judges a structurally valid call against the schema.
pub fn against_schema(
    schema: &ApiSchema,
    method: &str,
    segments: &[String],
    params: Vec<(String, String)>,
) -> Result<CheckedCall, Vec<Refusal>> {
    let shown = format!("/{}", segments.join("/"));
    let borrowed: Vec<&str> = segments.iter().map(String::as_str).collect();
    let Some(found) = schema.match_path(&borrowed) else {
        return Err(vec![(
            "path".to_owned(),
            format!("{shown} is not an endpoint of this cluster's API"),
        )]);
    };
    let template = found.endpoint.template.clone();
    let Some(spec) = found.endpoint.methods.get(method) else {
        let allowed: Vec<&str> = found.endpoint.methods.keys().map(String::as_str).collect();
        return Err(vec![(
            "method".to_owned(),
            format!(
                "{method} is not defined for {template}; it allows {}",
                allowed.join(", ")
            ),
        )]);
    };
    let mut refusals = Vec::new();
    let captured: BTreeSet<&str> = found.captures.iter().map(|(n, _)| n.as_str()).collect();
    for (name, value) in &found.captures {
        if let Some(param) = spec.params.get(name)
            && let Err(why) = check_value(param, value)
        {
            refusals.push((name.clone(), format!("(path segment {value:?}) {why}")));
        }
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (key, value) in params {
        if captured.contains(key.as_str()) {
            refusals.push((
                key.clone(),
                format!("is part of the path {template}; do not repeat it in params"),
            ));
            continue;
        }
        let Some((schema_name, param)) = resolve(spec.params.iter(), &key) else {
            if spec.open {
                out.push((key, value));
                continue;
            }
            refusals.push((key.clone(), unknown_key(&template, method, spec, &captured)));
            continue;
        };
        let count = seen.entry(key.clone()).or_default();
        *count += 1;
        if *count > 1 && param.kind != SchemaType::Array {
            refusals.push((key.clone(), "is given more than once".to_owned()));
            continue;
        }
        match check_value(param, &value) {
            Ok(wire) => out.push((key, wire)),
            Err(why) => {
                let family = if schema_name == key {
                    String::new()
                } else {
                    format!(" ({schema_name})")
                };
                refusals.push((key, format!("{}{why}", family.trim_start())));
            }
        }
    }
    for (name, param) in &spec.params {
        let given = seen.contains_key(name) || captured.contains(name.as_str());
        if !param.optional && !given && !name.ends_with("[n]") {
            refusals.push((
                name.clone(),
                format!("is required by {method} {template}{}", typetext(param)),
            ));
        }
    }
    if !refusals.is_empty() {
        return Err(refusals);
    }
    Ok(CheckedCall {
        path: encode_path(segments),
        params: out,
        template: Some(template),
        cluster: spec.effects.clone(),
    })
}

/// The schema parameter a key names: itself, or an indexed family (`net0` → `net[n]`).
fn resolve<'a>(
    mut params: impl Iterator<Item = (&'a String, &'a SchemaParam)> + Clone,
    key: &str,
) -> Option<(String, &'a SchemaParam)> {
    if let Some((name, p)) = params.clone().find(|(name, _)| name.as_str() == key) {
        return Some((name.clone(), p));
    }
    let digits = key.len() - key.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits == key.len() {
        return None;
    }
    let family = format!("{}[n]", &key[..key.len() - digits]);
    params
        .find(|(name, _)| **name == family)
        .map(|(name, p)| (name.clone(), p))
}

fn unknown_key(
    template: &str,
    method: &str,
    spec: &super::api_call_schema::SchemaMethod,
    captured: &BTreeSet<&str>,
) -> String {
    // Indexed families first: a mistyped `net0` is most likely meant for one of them.
    let mut names: Vec<&str> = spec
        .params
        .keys()
        .map(String::as_str)
        .filter(|n| !captured.contains(n))
        .collect();
    names.sort_by_key(|n| !n.ends_with("[n]"));
    if names.is_empty() {
        return format!("is not a parameter of {method} {template}, which takes none");
    }
    let shown = if names.len() > 60 {
        format!("{}, … ({} in all)", names[..60].join(", "), names.len())
    } else {
        names.join(", ")
    };
    format!("is not a parameter of {method} {template}; it accepts: {shown}")
}

fn typetext(param: &SchemaParam) -> String {
    param
        .typetext
        .as_deref()
        .map(|t| format!(" ({t})"))
        .unwrap_or_default()
}

/// Checks one value; returns its wire form.
pub fn check_value(param: &SchemaParam, value: &str) -> Result<String, String> {
    let wire = match param.kind {
        SchemaType::Integer => {
            let n: i64 = value
                .parse()
                .map_err(|_| format!("must be an integer{}", range_text(param)))?;
            check_range(param, n as f64)?;
            value.to_owned()
        }
        SchemaType::Number => {
            let n: f64 = value
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| format!("must be a number{}", range_text(param)))?;
            check_range(param, n)?;
            value.to_owned()
        }
        SchemaType::Boolean => match value {
            "1" | "true" => "1".to_owned(),
            "0" | "false" => "0".to_owned(),
            _ => return Err("must be a boolean: 0/1 or false/true".to_owned()),
        },
        SchemaType::String | SchemaType::Array | SchemaType::Other => value.to_owned(),
    };
    if !param.allowed.is_empty() && !param.allowed.iter().any(|a| a == value) {
        return Err(format!("must be one of: {}", param.allowed.join(", ")));
    }
    let length = value.chars().count() as u64;
    if let Some(max) = param.max_length
        && length > max
    {
        return Err(format!("must be at most {max} characters (is {length})"));
    }
    if let Some(min) = param.min_length
        && length < min
    {
        return Err(format!("must be at least {min} characters (is {length})"));
    }
    if let Some(pattern) = &param.pattern
        && let Some(re) = perl_regex(pattern)
        && !re.is_match(value)
    {
        return Err(format!("must match the pattern {pattern}"));
    }
    if let Some(format) = &param.format
        && let Some(why) = check_format(format, value)
    {
        return Err(why);
    }
    Ok(wire)
}

fn check_range(param: &SchemaParam, n: f64) -> Result<(), String> {
    let low = param.minimum.is_some_and(|min| n < min);
    let high = param.maximum.is_some_and(|max| n > max);
    if low || high {
        return Err(format!("is out of range{}", range_text(param)));
    }
    Ok(())
}

fn range_text(param: &SchemaParam) -> String {
    let show = |n: f64| {
        if n.fract() == 0.0 {
            format!("{}", n as i64)
        } else {
            n.to_string()
        }
    };
    match (param.minimum, param.maximum) {
        (Some(min), Some(max)) => format!(": {} to {}", show(min), show(max)),
        (Some(min), None) => format!(": at least {}", show(min)),
        (None, Some(max)) => format!(": at most {}", show(max)),
        (None, None) => String::new(),
    }
}

/// Compiles a Perl pattern as Proxmox applies it (whole value); `None` when the Rust regex
/// engine cannot express it (look-arounds, back-references), and then Proxmox judges.
fn perl_regex(pattern: &str) -> Option<Regex> {
    let translated = pattern.replace("(?^i:", "(?i:").replace("(?^:", "(?:");
    regex::RegexBuilder::new(&format!("^(?:{translated})$"))
        .size_limit(1 << 20)
        .build()
        .ok()
}

/// The named formats cheap to check here; others are left to Proxmox.
fn check_format(format: &str, value: &str) -> Option<String> {
    let (ok, allows) = match format {
        "pve-node" => (
            !value.is_empty()
                && value.len() <= 63
                && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !value.starts_with('-')
                && !value.ends_with('-'),
            "a node name (letters, digits and inner hyphens)",
        ),
        "pve-vmid" => (
            value
                .parse::<u64>()
                .is_ok_and(|n| (100..=999_999_999).contains(&n)),
            "a guest ID from 100 to 999999999",
        ),
        "pve-storage-id" => (
            value.len() >= 2
                && value.starts_with(|c: char| c.is_ascii_alphabetic())
                && value.ends_with(|c: char| c.is_ascii_alphanumeric())
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
            "a storage ID (letter first; letters, digits, '-', '_', '.')",
        ),
        "pve-configid" => (
            value.len() >= 2
                && value.starts_with(|c: char| c.is_ascii_alphabetic())
                && value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')),
            "a configuration ID (letter first; letters, digits, '-', '_')",
        ),
        "ip" => (value.parse::<std::net::IpAddr>().is_ok(), "an IP address"),
        "ipv4" => (
            value.parse::<std::net::Ipv4Addr>().is_ok(),
            "an IPv4 address",
        ),
        "ipv6" => (
            value.parse::<std::net::Ipv6Addr>().is_ok(),
            "an IPv6 address",
        ),
        _ => return None,
    };
    (!ok).then(|| format!("must be {allows} (format {format})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_rules_refuse_traversal_smuggling_and_queries() {
        assert_eq!(
            structural_path("/api2/json/nodes/pve01/status").unwrap(),
            ["nodes", "pve01", "status"]
        );
        assert_eq!(structural_path("/version/").unwrap(), ["version"]);
        for bad in [
            "nodes",
            "/nodes/../access",
            "/nodes/./x",
            "/nodes/pve01%2Fx",
            "/nodes?x=1",
            "/nodes#x",
            "/nodes//x",
            "/nodes/a\nb",
            "/nodes/a b",
            "/nodes\\x",
        ] {
            assert!(structural_path(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            encode_path(&["nodes".into(), "UPID:pve01:1:".into()]),
            "/nodes/UPID%3Apve01%3A1%3A"
        );
        assert!(structural_params(&["a=1".into(), "b==2".into()]).is_ok());
        assert!(structural_params(&["novalue".into()]).is_err());
        assert!(structural_params(&["a b=1".into()]).is_err());
        assert!(structural_params(&["x=a\0".into()]).is_err());
    }

    fn schema() -> ApiSchema {
        ApiSchema::parse(
            &serde_json::json!([{"path": "/nodes/{node}/qemu/{vmid}/config", "info": {
                "PUT": {"parameters": {"properties": {
                    "node": {"type": "string", "format": "pve-node"},
                    "vmid": {"type": "integer", "minimum": 100, "maximum": 999_999_999},
                    "net[n]": {"type": "string", "optional": 1},
                    "onboot": {"type": "boolean", "optional": 1},
                    "tags": {"type": "array", "optional": 1},
                    "name": {"type": "string", "maxLength": 5}
                }}},
                "GET": {"parameters": {"additionalProperties": 1, "properties": {}}}
            }}])
            .to_string(),
        )
        .unwrap()
    }

    fn segs(path: &str) -> Vec<String> {
        structural_path(path).unwrap()
    }

    #[test]
    fn schema_checks_name_the_parameter() {
        let s = schema();
        let path = segs("/nodes/pve01/qemu/101/config");
        let pairs = |p: &[(&str, &str)]| -> Vec<(String, String)> {
            p.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
        };
        let ok = against_schema(
            &s,
            "PUT",
            &path,
            pairs(&[
                ("net12", "virtio"),
                ("onboot", "true"),
                ("name", "web"),
                ("tags", "a"),
                ("tags", "b"),
            ]),
        )
        .unwrap();
        assert!(
            ok.params.contains(&("onboot".into(), "1".into())),
            "booleans normalised"
        );
        assert_eq!(
            ok.template.as_deref(),
            Some("/nodes/{node}/qemu/{vmid}/config")
        );
        let errors = |p: &[(&str, &str)]| against_schema(&s, "PUT", &path, pairs(p)).unwrap_err();
        let e = errors(&[("name", "a"), ("name", "b")]);
        assert!(
            e.iter()
                .any(|(k, why)| k == "name" && why.contains("more than once")),
            "{e:?}"
        );
        let e = errors(&[("name", "toolong")]);
        assert!(e[0].1.contains("at most 5"), "{e:?}");
        let e = errors(&[]);
        assert_eq!(
            e,
            vec![(
                "name".to_owned(),
                "is required by PUT /nodes/{node}/qemu/{vmid}/config".to_owned()
            )]
        );
        let e = errors(&[("name", "a"), ("vmid", "5")]);
        assert!(e[0].1.contains("part of the path"), "{e:?}");
        let e = errors(&[("name", "a"), ("net", "x"), ("12", "x")]);
        assert_eq!(e.len(), 2, "{e:?}");
        let e = against_schema(
            &s,
            "PUT",
            &segs("/nodes/pve01/qemu/42/config"),
            pairs(&[("name", "a")]),
        )
        .unwrap_err();
        assert!(
            e[0].0 == "vmid" && e[0].1.contains("100 to 999999999"),
            "{e:?}"
        );
        // additionalProperties lets unknown keys through.
        assert!(against_schema(&s, "GET", &path, pairs(&[("anything", "x")])).is_ok());
    }

    #[test]
    fn perl_patterns_translate() {
        let re = perl_regex("(?^:[A-Za-z][A-Za-z0-9\\.\\-_]+)").unwrap();
        assert!(re.is_match("tok-1"));
        assert!(!re.is_match("1tok"));
        assert!(!re.is_match("tok x"));
    }
}
