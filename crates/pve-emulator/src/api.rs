//! The Proxmox API conventions shared by every route: the JSON envelope,
//! error bodies, declared parameters and their validation, and the `Call`
//! context a handler works with.
//!
//! Invariant: every answer of a route is either `{"data": ...}` (plus
//! optional top-level attributes such as `total`) with status 200, or
//! `{"data": null, "message": "...\n"}` (plus `errors` for parameter
//! failures) with the error status, always as `application/json;charset=UTF-8`
//! — the exact shapes pveproxy produces.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::state::EmuState;

/// The content type pveproxy uses for every JSON answer.
pub(super) const JSON_CONTENT_TYPE: &str = "application/json;charset=UTF-8";

/// An API-level failure, rendered the way Proxmox renders it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub(super) struct ApiError {
    /// HTTP status to answer with.
    pub status: u16,
    /// The `message` field; Proxmox's die messages end with a newline.
    pub message: String,
    /// Per-parameter reasons, only for "Parameter verification failed.".
    pub errors: Option<BTreeMap<String, String>>,
}

impl ApiError {
    /// An error with a status and message (a trailing newline is added, as
    /// Perl's `die "...\n"` leaves one in every Proxmox message).
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        let mut message = message.into();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        Self {
            status,
            message,
            errors: None,
        }
    }

    /// The common case: the handler died, pveproxy answers 500.
    pub fn server(message: impl Into<String>) -> Self {
        Self::new(500, message)
    }

    /// A 400 parameter failure for one parameter.
    pub fn param(name: &str, reason: impl Into<String>) -> Self {
        let mut errors = BTreeMap::new();
        errors.insert(name.to_string(), reason.into());
        Self::params(errors)
    }

    /// A 400 parameter failure for several parameters.
    pub fn params(errors: BTreeMap<String, String>) -> Self {
        Self {
            status: 400,
            message: "Parameter verification failed.\n".to_string(),
            errors: Some(errors),
        }
    }

    /// The refusal for a missing or wrong API token. Proxmox puts the text in
    /// the HTTP reason phrase; the body carries it as `message` as well so
    /// clients that only read bodies can report it.
    pub fn auth_failure() -> Self {
        Self {
            status: 401,
            message: "authentication failure".to_string(),
            errors: None,
        }
    }

    /// The answer for a method/path pair no route implements.
    pub fn not_implemented(method: &str, path: &str) -> Self {
        Self::new(501, format!("Method '{method} {path}' not implemented"))
    }

    /// Renders the error as pveproxy does: the message travels in the HTTP reason
    /// phrase (`HTTP/1.1 500 Configuration file ... does not exist`), the body is
    /// `{"data":null}` plus `errors` for parameter failures. Clients that only read
    /// bodies never see Proxmox's text, so the real client must read the reason phrase.
    pub fn into_response(self) -> Response {
        let mut body = Map::new();
        body.insert("data".into(), Value::Null);
        if let Some(errors) = self.errors {
            body.insert("errors".into(), json!(errors));
        }
        let mut response = json_response(self.status, &Value::Object(body));
        if let Some(reason) = reason_phrase(&self.message) {
            response.extensions_mut().insert(reason);
        }
        response
    }
}

/// One line of text usable as an HTTP reason phrase (control characters become spaces).
fn reason_phrase(message: &str) -> Option<hyper::ext::ReasonPhrase> {
    let line: String = message
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    hyper::ext::ReasonPhrase::try_from(line.into_bytes()).ok()
}

/// A JSON response with pveproxy's content type.
pub(super) fn json_response(status: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_CONTENT_TYPE),
    );
    response
}

/// The type a declared parameter must have.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// Any string.
    Str,
    /// An integer (`-?[0-9]+`).
    Int,
    /// A Perl-style boolean: 0/1 (also true/false, yes/no, on/off).
    Bool,
    /// One of a fixed set of strings.
    Enum(&'static [&'static str]),
    /// A decimal number (`cpulimit`, `bwlimit`).
    Num,
}

/// One parameter a route's schema accepts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Param {
    /// Parameter name as sent on the wire.
    pub name: &'static str,
    /// Value type.
    pub kind: Kind,
    /// Whether the request must carry it.
    pub required: bool,
    /// For an indexed family (`net[n]`): the highest index, so `name` is the prefix
    /// and `net0`…`net<max>` are accepted (as the schema lists `net0`…`net31`).
    pub max_index: Option<u16>,
}

impl Param {
    /// Marks the parameter as mandatory.
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }
}

/// Optional string parameter.
pub(super) const fn s(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Str,
        required: false,
        max_index: None,
    }
}

/// Optional integer parameter.
pub(super) const fn int(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Int,
        required: false,
        max_index: None,
    }
}

/// Optional boolean parameter.
pub(super) const fn bool(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Bool,
        required: false,
        max_index: None,
    }
}

/// Optional enumerated parameter.
pub(super) const fn one_of(name: &'static str, values: &'static [&'static str]) -> Param {
    Param {
        name,
        kind: Kind::Enum(values),
        required: false,
        max_index: None,
    }
}

/// Optional number parameter.
pub(super) const fn num(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Num,
        required: false,
        max_index: None,
    }
}

/// Optional indexed string family: `prefix0`…`prefix<max>` (the schema's `prefix[n]`).
pub(super) const fn idx(prefix: &'static str, max: u16) -> Param {
    Param {
        name: prefix,
        kind: Kind::Str,
        required: false,
        max_index: Some(max),
    }
}

impl Param {
    /// Whether a request key is this parameter (or one index of this family).
    pub fn matches(&self, key: &str) -> bool {
        match self.max_index {
            None => self.name == key,
            Some(max) => key.strip_prefix(self.name).is_some_and(|n| {
                !n.is_empty()
                    && n.bytes().all(|b| b.is_ascii_digit())
                    && (n == "0" || !n.starts_with('0'))
                    && n.parse::<u16>().is_ok_and(|i| i <= max)
            }),
        }
    }
}

/// Parses a Perl-style boolean the way Proxmox's JSON schema does.
pub(super) fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn is_integer(value: &str) -> bool {
    let digits = value.strip_prefix('-').unwrap_or(value);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Checks a value against a kind, giving Proxmox's reason on failure.
pub(super) fn check_value(kind: Kind, value: &str) -> Result<(), String> {
    match kind {
        Kind::Str => Ok(()),
        Kind::Int if is_integer(value) => Ok(()),
        Kind::Int => Err(format!("type check ('integer') failed - got '{value}'")),
        Kind::Bool if parse_bool(value).is_some() => Ok(()),
        Kind::Bool => Err(format!("type check ('boolean') failed - got '{value}'")),
        Kind::Enum(values) if values.contains(&value) => Ok(()),
        Kind::Enum(values) => Err(format!(
            "value '{value}' does not have a value in the enumeration '{}'",
            values.join(", ")
        )),
        Kind::Num if value.parse::<f64>().is_ok_and(f64::is_finite) => Ok(()),
        Kind::Num => Err(format!("type check ('number') failed - got '{value}'")),
    }
}

/// Validates request parameters against a route's declaration, collecting
/// every failure the way Proxmox reports them all at once. `implicit` are
/// the path capture names, which are always accepted.
pub(super) fn validate(
    declared: &[Param],
    implicit: &[&str],
    given: &[(String, String)],
) -> Result<(), ApiError> {
    let mut errors = BTreeMap::new();
    for (name, value) in given {
        if implicit.contains(&name.as_str()) {
            continue;
        }
        match declared.iter().find(|p| p.matches(name)) {
            None => {
                errors.insert(
                    name.clone(),
                    "property is not defined in schema and the schema does not allow \
                     additional properties"
                        .to_string(),
                );
            }
            Some(param) => {
                if let Err(reason) = check_value(param.kind, value) {
                    errors.insert(name.clone(), reason);
                }
            }
        }
    }
    for param in declared.iter().filter(|p| p.required) {
        if !given.iter().any(|(name, _)| name == param.name) {
            errors.insert(
                param.name.to_string(),
                "property is missing and it is not optional".to_string(),
            );
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::params(errors))
    }
}

/// A non-JSON answer a handler may choose (task log downloads).
pub(super) struct RawBody {
    /// Content-Type header value.
    pub content_type: &'static str,
    /// Body text.
    pub body: String,
}

/// Everything a handler needs for one request. Handlers run synchronously
/// with the state lock held, which is why they cannot await.
pub(super) struct Call<'a> {
    /// The emulated cluster, locked for the duration of the handler.
    pub st: &'a mut EmuState,
    captures: Vec<(&'static str, String)>,
    params: Vec<(String, String)>,
    /// Extra top-level attributes of the envelope (e.g. `total`).
    pub attribs: Map<String, Value>,
    /// Set to answer with a raw body instead of the JSON envelope.
    pub raw: Option<RawBody>,
}

impl<'a> Call<'a> {
    /// Creates the context for one handler invocation.
    pub fn new(
        st: &'a mut EmuState,
        captures: Vec<(&'static str, String)>,
        params: Vec<(String, String)>,
    ) -> Self {
        Self {
            st,
            captures,
            params,
            attribs: Map::new(),
            raw: None,
        }
    }

    /// A path capture, e.g. `cap("node")` for `/nodes/{node}`. An unknown
    /// name yields "" — a bug in a route's pattern, caught by its tests.
    pub fn cap(&self, name: &str) -> &str {
        self.captures
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The `{vmid}` capture; validated as an integer before the handler runs.
    pub fn vmid(&self) -> u32 {
        self.cap("vmid").parse().unwrap_or(0)
    }

    /// A request parameter as sent (the last one wins if repeated).
    pub fn str(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a repeated parameter (an `array` parameter such as the agent's
    /// `command` arrives as one form key per item), in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Every request parameter, in order (config updates copy them).
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    /// An integer parameter (already type-checked).
    pub fn int(&self, name: &str) -> Option<i64> {
        self.str(name).and_then(|v| v.parse().ok())
    }

    /// A boolean parameter; absent means false.
    pub fn flag(&self, name: &str) -> bool {
        self.str(name).and_then(parse_bool).unwrap_or(false)
    }

    /// Sets an extra top-level attribute of the success envelope.
    pub fn attrib(&mut self, name: &str, value: Value) {
        self.attribs.insert(name.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn validation_reports_every_problem() {
        let declared = [int("timeout"), bool("skiplock"), one_of("t", &["a", "b"])];
        let err = validate(
            &declared,
            &["node"],
            &pairs(&[
                ("node", "pve01"),
                ("timeout", "x"),
                ("skiplock", "maybe"),
                ("t", "c"),
                ("bogus", "1"),
            ]),
        )
        .unwrap_err();
        let errors = err.errors.unwrap();
        assert_eq!(errors["timeout"], "type check ('integer') failed - got 'x'");
        assert_eq!(
            errors["skiplock"],
            "type check ('boolean') failed - got 'maybe'"
        );
        assert!(errors["t"].contains("enumeration 'a, b'"));
        assert!(errors["bogus"].starts_with("property is not defined in schema"));
        assert!(!errors.contains_key("node"));
    }

    #[test]
    fn required_parameters_are_enforced() {
        let err = validate(&[s("vmid").required()], &[], &[]).unwrap_err();
        assert_eq!(
            err.errors.unwrap()["vmid"],
            "property is missing and it is not optional"
        );
        assert!(validate(&[s("vmid").required()], &[], &pairs(&[("vmid", "1")])).is_ok());
    }

    #[test]
    fn booleans_are_perl_style() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("TRUE"), Some(true));
        assert_eq!(parse_bool("2"), None);
    }
}
