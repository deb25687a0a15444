//! The PBS API conventions every route shares: plain-text error bodies, the `{"data": …}`
//! envelope, declared parameters checked the way `proxmox-schema` checks them, the route
//! table types and the `Call` context a handler works with.
//!
//! Invariant: a handler only ever sees parameters its route declares, each of the declared
//! type, with every required one present; every answer is either status 200 with
//! `{"data": …}` (plus attributes such as `total`) or the error status with the bare message
//! as body — both as `application/json;charset=UTF-8`, exactly as proxmox-rest-server does.

use serde_json::{Map, Value};

pub(super) use super::error::{PbsError, text_response};
use super::state::PbsState;

/// The type a declared parameter must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Any string.
    Str,
    /// An integer.
    Int,
    /// A boolean (`1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`).
    Bool,
    /// One of a fixed set of strings.
    Enum(&'static [&'static str]),
}

/// One parameter a route accepts besides its path captures.
#[derive(Debug, Clone, Copy)]
pub(super) struct Param {
    /// Name on the wire.
    pub name: &'static str,
    /// Value type.
    pub kind: Kind,
    /// Whether the request must carry it.
    pub required: bool,
    /// Smallest integer value allowed.
    pub min: Option<i64>,
    /// Largest integer value allowed.
    pub max: Option<i64>,
}

impl Param {
    /// Marks the parameter as mandatory.
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Sets the smallest integer value allowed.
    pub const fn at_least(mut self, min: i64) -> Self {
        self.min = Some(min);
        self
    }

    /// Sets the largest integer value allowed.
    pub const fn at_most(mut self, max: i64) -> Self {
        self.max = Some(max);
        self
    }
}

/// Optional string parameter.
pub(super) const fn s(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Str,
        required: false,
        min: None,
        max: None,
    }
}

/// Optional integer parameter.
pub(super) const fn int(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Int,
        required: false,
        min: None,
        max: None,
    }
}

/// Optional boolean parameter.
pub(super) const fn flag(name: &'static str) -> Param {
    Param {
        name,
        kind: Kind::Bool,
        required: false,
        min: None,
        max: None,
    }
}

/// Optional enumerated parameter.
pub(super) const fn one_of(name: &'static str, values: &'static [&'static str]) -> Param {
    Param {
        name,
        kind: Kind::Enum(values),
        required: false,
        min: None,
        max: None,
    }
}

/// The backup types PBS knows.
pub(super) const BACKUP_TYPES: &[&str] = &["vm", "ct", "host"];

/// Parses a boolean as `proxmox-schema`'s `parse_boolean` does.
pub(super) fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Checks one value, giving `proxmox-schema`'s reason on failure.
fn check_value(param: &Param, value: &str) -> Result<(), String> {
    match param.kind {
        Kind::Str => Ok(()),
        Kind::Int => {
            let n = value.parse::<i64>().map_err(|e| e.to_string())?;
            if let Some(min) = param.min.filter(|min| n < *min) {
                return Err(format!(
                    "value must have a minimum value of {min} (got {n})"
                ));
            }
            if let Some(max) = param.max.filter(|max| n > *max) {
                return Err(format!(
                    "value must have a maximum value of {max} (got {n})"
                ));
            }
            Ok(())
        }
        Kind::Bool => parse_bool(value)
            .map(drop)
            .ok_or_else(|| "Unable to parse boolean option.".to_owned()),
        Kind::Enum(values) if values.contains(&value) => Ok(()),
        Kind::Enum(_) => Err(format!(
            "value '{value}' is not defined in the enumeration."
        )),
    }
}

/// Validates request parameters against a route's declaration, collecting every failure.
/// `implicit` are the path captures, which a request may repeat.
pub(super) fn validate(
    declared: &[Param],
    implicit: &[&str],
    given: &[(String, String)],
) -> Result<(), PbsError> {
    let mut errors: Vec<(String, String)> = Vec::new();
    let mut push = |name: &str, reason: String| {
        if !errors.iter().any(|(n, _)| n == name) {
            errors.push((name.to_owned(), reason));
        }
    };
    for (name, value) in given {
        if implicit.contains(&name.as_str()) {
            continue;
        }
        match declared.iter().find(|p| p.name == name) {
            None => push(name, "schema does not allow additional properties".into()),
            Some(param) => {
                if let Err(reason) = check_value(param, value) {
                    push(name, reason);
                }
            }
        }
    }
    for param in declared.iter().filter(|p| p.required) {
        if !given.iter().any(|(name, _)| name == param.name) {
            push(
                param.name,
                "property is missing and it is not optional".into(),
            );
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(PbsError::params(&errors))
    }
}

/// A route handler: runs with the state locked, returns the `data` value.
pub(super) type Handler = fn(&mut Call<'_>) -> Result<Value, PbsError>;

/// One API endpoint.
pub(super) struct Route {
    /// HTTP method (`GET`, `POST`, `PUT`, `DELETE`).
    pub method: &'static str,
    /// Path after `/api2/json`, with `{name}` captures for whole segments.
    pub pattern: &'static str,
    /// Parameters the schema declares (a subset of them) besides the path captures.
    pub params: &'static [Param],
    /// Privileges of which the token needs one (none: every authenticated token may call).
    pub privs: &'static [&'static str],
    /// What answers it.
    pub handler: Handler,
}

/// Everything a handler needs for one request.
pub(super) struct Call<'a> {
    /// The emulated server, locked for the duration of the handler.
    pub st: &'a mut PbsState,
    /// The authenticated token (`user@realm!name`).
    pub caller: String,
    captures: Vec<(&'static str, String)>,
    params: Vec<(String, String)>,
    /// Extra top-level attributes of the envelope (e.g. `total`).
    pub attribs: Map<String, Value>,
}

impl<'a> Call<'a> {
    /// The context of one handler invocation.
    pub fn new(
        st: &'a mut PbsState,
        caller: String,
        captures: Vec<(&'static str, String)>,
        params: Vec<(String, String)>,
    ) -> Self {
        Self {
            st,
            caller,
            captures,
            params,
            attribs: Map::new(),
        }
    }

    /// A path capture (`{store}`, `{upid}`, …); "" for a name the pattern lacks.
    pub fn cap(&self, name: &str) -> &str {
        self.captures
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// A parameter as sent (the last one wins when repeated).
    pub fn str(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// An integer parameter (already type-checked).
    pub fn int(&self, name: &str) -> Option<i64> {
        self.str(name).and_then(|v| v.parse().ok())
    }

    /// A boolean parameter, `None` when absent.
    pub fn opt_flag(&self, name: &str) -> Option<bool> {
        self.str(name).and_then(parse_bool)
    }

    /// The `ns` parameter: the root namespace ("") when absent.
    pub fn ns(&self) -> String {
        self.str("ns").unwrap_or("").trim_matches('/').to_owned()
    }

    /// Sets an extra top-level attribute of the success envelope.
    pub fn attrib(&mut self, name: &str, value: Value) {
        self.attribs.insert(name.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn one_failure_is_inline_and_several_are_listed() {
        let declared = [int("keep-last"), flag("dry-run"), s("x").required()];
        let err =
            validate(&declared, &["store"], &pairs(&[("x", "1"), ("bogus", "1")])).unwrap_err();
        assert_eq!(
            err.message,
            "parameter verification failed - 'bogus': schema does not allow additional properties"
        );
        let err = validate(
            &declared,
            &[],
            &pairs(&[("keep-last", "x"), ("dry-run", "maybe")]),
        )
        .unwrap_err();
        assert!(err.message.starts_with("parameter verification errors\n\n"));
        assert!(
            err.message
                .contains("'keep-last': invalid digit found in string")
        );
        assert!(
            err.message
                .contains("'dry-run': Unable to parse boolean option.")
        );
        assert!(
            err.message
                .contains("'x': property is missing and it is not optional")
        );
    }

    #[test]
    fn booleans_and_enums_follow_proxmox_schema() {
        for v in ["1", "0", "true", "False", "yes", "off"] {
            assert!(check_value(&flag("f"), v).is_ok(), "{v}");
        }
        assert!(check_value(&flag("f"), "2").is_err());
        let types = one_of("backup-type", BACKUP_TYPES);
        assert!(check_value(&types, "vm").is_ok());
        let depth = int("max-depth").at_least(0).at_most(7);
        assert_eq!(
            check_value(&depth, "8").unwrap_err(),
            "value must have a maximum value of 7 (got 8)"
        );
        assert!(
            check_value(&depth, "-1")
                .unwrap_err()
                .contains("minimum value of 0")
        );
        assert_eq!(
            check_value(&types, "lxc").unwrap_err(),
            "value 'lxc' is not defined in the enumeration."
        );
    }
}
