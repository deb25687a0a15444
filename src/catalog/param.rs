//! A tool parameter: its JSON type, where it travels, and the rules validation applies.
//!
//! Invariant: every constructor is `const`, so rows stay static data; the same fields feed
//! the advertised JSON Schema and the validator (`schema.rs`), which therefore agree.

/// JSON type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ParamKind {
    String,
    Integer,
    Number,
    Boolean,
    /// A JSON array of strings, sent as the same form key repeated once per item
    /// (how Proxmox reads `type: array` parameters such as the guest-agent `command`).
    StringArray,
    /// A JSON array of objects, read by the server itself (a plan's steps); never sent to
    /// Proxmox as such.
    ObjectArray,
}

impl ParamKind {
    /// JSON Schema `type` keyword.
    pub const fn json_type(self) -> &'static str {
        match self {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Number => "number",
            ParamKind::Boolean => "boolean",
            ParamKind::StringArray | ParamKind::ObjectArray => "array",
        }
    }
}

/// Where a parameter goes in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Substituted (percent-encoded) into the path template.
    Path,
    /// Query string (GET/DELETE).
    Query,
    /// Form-encoded body (POST/PUT).
    Body,
    /// An input of an SSH-backed tool, validated and placed by its argv template.
    Argument,
}

/// One tool parameter. Names are Proxmox's own, so rows can be checked against the
/// official API schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Wire name (Proxmox's parameter name).
    pub name: &'static str,
    /// JSON type.
    pub kind: ParamKind,
    /// Description written for a model: meaning, unit, format, example.
    pub description: &'static str,
    /// Whether the call is rejected without it.
    pub required: bool,
    /// Where it is sent.
    pub location: Location,
    /// Inclusive lower bound (integers and numbers).
    pub minimum: Option<i64>,
    /// Inclusive upper bound (integers and numbers).
    pub maximum: Option<i64>,
    /// Maximum length in characters (strings).
    pub max_length: Option<u32>,
    /// Anchored regular expression the value must match (strings).
    pub pattern: Option<&'static str>,
    /// Allowed values (strings); empty = any.
    pub one_of: &'static [&'static str],
    /// An indexed family (`net0`…`net31`): `name` is the prefix and this the inclusive
    /// index range. Clients pass `net1`, `net5`…; the schema advertises the family with
    /// `patternProperties` and validation uses the same pattern (see `indexed.rs`).
    pub index: Option<(u16, u16)>,
    /// Wire value sent when the client omits the parameter (advertised as `default`).
    pub default: Option<&'static str>,
    /// Not a client parameter: `default` is always sent and the client cannot set it
    /// (e.g. `content=iso` of the ISO list). Hidden from the schema; checked against the API.
    pub fixed: bool,
    /// Proxmox's name when it differs from the name clients use (kept for compatibility,
    /// e.g. the restore tools' `archive` sent as LXC's `ostemplate`).
    pub wire_name: Option<&'static str>,
    /// Proxmox declares the value `format: urlencoded` (cloud-init `sshkeys`): it is
    /// percent-encoded before it goes into the form body, which encodes it once more.
    pub urlencoded: bool,
    /// The upper bound is listed in the model's schema (`maximum`), not only enforced: a
    /// count whose cap a model could not guess and would otherwise learn by being refused
    /// (the cluster log's `max`). Other value rules stay out of the listing (its budget).
    pub lists_maximum: bool,
}

impl Param {
    const fn new(
        name: &'static str,
        kind: ParamKind,
        location: Location,
        description: &'static str,
    ) -> Param {
        Param {
            name,
            kind,
            description,
            required: location_is_path(location),
            location,
            minimum: None,
            maximum: None,
            max_length: None,
            pattern: None,
            one_of: &[],
            index: None,
            default: None,
            fixed: false,
            wire_name: None,
            urlencoded: false,
            lists_maximum: false,
        }
    }

    /// An optional form-body family of indexed keys `<prefix><n>` for `n` in `range`
    /// (e.g. `net0`…`net31`), declared once per row.
    pub const fn indexed(
        prefix: &'static str,
        range: std::ops::RangeInclusive<u16>,
        kind: ParamKind,
        description: &'static str,
    ) -> Param {
        Param {
            index: Some((*range.start(), *range.end())),
            ..Param::new(prefix, kind, Location::Body, description)
        }
    }

    /// A parameter the tool always sends with `value` and clients cannot set.
    pub const fn fixed(
        name: &'static str,
        kind: ParamKind,
        location: Location,
        value: &'static str,
        description: &'static str,
    ) -> Param {
        Param {
            default: Some(value),
            fixed: true,
            ..Param::new(name, kind, location, description)
        }
    }

    /// Sets the wire value sent when the client omits the parameter.
    pub const fn default(self, value: &'static str) -> Param {
        Param {
            default: Some(value),
            ..self
        }
    }

    /// Sends the value to Proxmox under another name.
    pub const fn sent_as(self, wire_name: &'static str) -> Param {
        Param {
            wire_name: Some(wire_name),
            ..self
        }
    }

    /// Percent-encodes the value before form encoding (`format: urlencoded`).
    pub const fn urlencoded(self) -> Param {
        Param {
            urlencoded: true,
            ..self
        }
    }

    /// The name Proxmox knows the parameter by.
    pub const fn api_name(&self) -> &'static str {
        match self.wire_name {
            Some(name) => name,
            None => self.name,
        }
    }

    /// A path parameter (always required).
    pub const fn path(name: &'static str, kind: ParamKind, description: &'static str) -> Param {
        Param::new(name, kind, Location::Path, description)
    }

    /// An optional query-string parameter.
    pub const fn query(name: &'static str, kind: ParamKind, description: &'static str) -> Param {
        Param::new(name, kind, Location::Query, description)
    }

    /// An optional form-body parameter.
    pub const fn body(name: &'static str, kind: ParamKind, description: &'static str) -> Param {
        Param::new(name, kind, Location::Body, description)
    }

    /// An optional input of an SSH-backed tool.
    pub const fn arg(name: &'static str, kind: ParamKind, description: &'static str) -> Param {
        Param::new(name, kind, Location::Argument, description)
    }

    /// Marks the parameter required.
    pub const fn required(self) -> Param {
        Param {
            required: true,
            ..self
        }
    }

    /// Marks the parameter optional (used for the legacy per-node lists' `node`).
    pub const fn optional(self) -> Param {
        Param {
            required: false,
            ..self
        }
    }

    /// Sets an inclusive numeric range.
    pub const fn range(self, minimum: i64, maximum: i64) -> Param {
        Param {
            minimum: Some(minimum),
            maximum: Some(maximum),
            ..self
        }
    }

    /// [`Param::range`] whose upper bound the model's schema lists as `maximum` too.
    pub const fn capped(self, minimum: i64, maximum: i64) -> Param {
        Param {
            lists_maximum: true,
            ..self.range(minimum, maximum)
        }
    }

    /// Sets an inclusive lower bound only.
    pub const fn min(self, minimum: i64) -> Param {
        Param {
            minimum: Some(minimum),
            ..self
        }
    }

    /// Sets an anchored pattern whose quantifiers already bound the length (so no
    /// separate `maxLength` is needed or advertised).
    pub const fn matching(self, pattern: &'static str) -> Param {
        Param {
            pattern: Some(pattern),
            ..self
        }
    }

    /// Sets an anchored pattern and a length cap.
    pub const fn pattern(self, pattern: &'static str, max_length: u32) -> Param {
        Param {
            pattern: Some(pattern),
            max_length: Some(max_length),
            ..self
        }
    }

    /// Restricts the value to a fixed set.
    pub const fn one_of(self, values: &'static [&'static str]) -> Param {
        Param {
            one_of: values,
            ..self
        }
    }
}

const fn location_is_path(location: Location) -> bool {
    matches!(location, Location::Path)
}
