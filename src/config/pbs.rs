//! Proxmox Backup Server connections: the `pbs` key of an instance file (one object or a list)
//! and the `PBS_*` environment variables (one server), validated into [`PbsConfig`]s.
//!
//! Invariants: every key must be known (an unknown one is an error naming it); the names are
//! unique; the token secret never appears in an error; one TLS mode per server, exactly as
//! for Proxmox VE; the environment's server is read by the same rules as a file's entry (its
//! variables are gathered into one object first).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::fields::{self, Labels, TlsParts};
use super::{ConfigError, EnvSource, Secret, TlsSetting};

/// The instance-file key.
pub(crate) const KEY: &str = "pbs";
/// PBS's API port.
pub const DEFAULT_PBS_PORT: u16 = 8007;
/// The realm a PBS token user is in unless said otherwise (PBS's own user database).
pub const DEFAULT_PBS_REALM: &str = "pbs";
/// The name of a server that does not give one.
pub const DEFAULT_PBS_NAME: &str = "pbs";

/// Keys of one `pbs` entry.
const ENTRY_KEYS: [&str; 10] = [
    "name",
    "host",
    "port",
    "user",
    "realm",
    "tokenName",
    "tokenSecret",
    "allowInsecureTls",
    "tlsCaFile",
    "tlsFingerprint",
];

/// The environment variables of the one server the environment can name, and the entry key
/// each stands for.
pub(crate) const ENV_KEYS: [(&str, &str); 10] = [
    ("PBS_NAME", "name"),
    ("PBS_HOST", "host"),
    ("PBS_PORT", "port"),
    ("PBS_USER", "user"),
    ("PBS_REALM", "realm"),
    ("PBS_TOKEN_NAME", "tokenName"),
    ("PBS_TOKEN_SECRET", "tokenSecret"),
    ("PBS_ALLOW_INSECURE_TLS", "allowInsecureTls"),
    ("PBS_TLS_CA_FILE", "tlsCaFile"),
    ("PBS_TLS_FINGERPRINT", "tlsFingerprint"),
];

/// One Proxmox Backup Server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PbsConfig {
    /// The name tools take in their `pbs` argument (`[a-z0-9-]`, unique).
    pub name: String,
    /// Host name or IP address.
    pub host: String,
    /// API port (default 8007).
    pub port: u16,
    /// API user without realm.
    pub user: String,
    /// Realm of the user (default `pbs`).
    pub realm: String,
    /// Token id (the part after `!`).
    pub token_name: String,
    /// Token secret.
    pub token_secret: Secret,
    /// How the certificate is checked.
    pub tls: TlsSetting,
}

/// The servers of an instance file's `pbs` key (none when it is absent). A project file
/// (`project`) may not name a CA file for a PBS: its content would not be covered by the
/// file's trust.
pub(crate) fn from_file(
    path: &Path,
    map: &Map<String, Value>,
    home: Option<&Path>,
    project: bool,
) -> Result<Vec<PbsConfig>, ConfigError> {
    let place = |suffix: &str| format!("`{KEY}{suffix}` in {}", path.display());
    let entries: Vec<(String, &Map<String, Value>)> = match map.get(KEY) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(one)) => vec![(place(""), one)],
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Object(one) => Ok((place(&format!("[{i}]")), one)),
                other => Err(ConfigError::Invalid {
                    location: place(&format!("[{i}]")),
                    reason: format!(
                        "must be an object like {{\"host\": …}} (got {})",
                        fields::kind(other)
                    ),
                }),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(ConfigError::Invalid {
                location: place(""),
                reason: format!(
                    "must be an object or a list of objects like {{\"host\": …, \"user\": …, \"tokenName\": …, \"tokenSecret\": …}} (got {})",
                    fields::kind(other)
                ),
            });
        }
    };
    let mut out: Vec<PbsConfig> = Vec::new();
    for (location, entry) in entries {
        let server = entry_config(&location, entry, home)?;
        if project && matches!(server.tls, TlsSetting::CaFile(_)) {
            return Err(ConfigError::Invalid {
                location: format!("{location}.tlsCaFile"),
                reason: "a working-directory file may not name a CA file for a PBS; pin `tlsFingerprint` instead".into(),
            });
        }
        if out.iter().any(|s| s.name == server.name) {
            return Err(ConfigError::Invalid {
                location: format!("{location}.name"),
                reason: format!(
                    "two PBS entries are called {:?}; give each its own `name`",
                    server.name
                ),
            });
        }
        out.push(server);
    }
    Ok(out)
}

/// The server the `PBS_*` variables name, if `PBS_HOST` is set.
pub(crate) fn from_env(
    env: &dyn EnvSource,
    home: Option<&Path>,
) -> Result<Option<PbsConfig>, ConfigError> {
    let mut map = Map::new();
    for (var, key) in ENV_KEYS {
        if let Some(value) = env.var(var).filter(|v| !v.trim().is_empty()) {
            let value = match key {
                "allowInsecureTls" => {
                    Value::Bool(fields::flag(value.trim()).map_err(|reason| {
                        ConfigError::Invalid {
                            location: var.to_owned(),
                            reason,
                        }
                    })?)
                }
                _ => Value::String(value),
            };
            map.insert(key.to_owned(), value);
        }
    }
    if !map.contains_key("host") {
        return Ok(None);
    }
    entry_config("the PBS_* variables", &map, home).map(Some)
}

fn entry_config(
    location: &str,
    map: &Map<String, Value>,
    home: Option<&Path>,
) -> Result<PbsConfig, ConfigError> {
    let invalid = |key: &str, reason: String| ConfigError::Invalid {
        location: format!("{location}.{key}"),
        reason,
    };
    if let Some(unknown) = map.keys().find(|k| !ENTRY_KEYS.contains(&k.as_str())) {
        return Err(invalid(
            unknown,
            format!("is not a PBS key; the keys are {}", ENTRY_KEYS.join(", ")),
        ));
    }
    let text =
        |key: &str, rule: fn(&str) -> Result<(), String>| -> Result<Option<String>, ConfigError> {
            match map.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
                Some(Value::String(s)) => {
                    rule(s.trim()).map_err(|r| invalid(key, r))?;
                    Ok(Some(s.trim().to_owned()))
                }
                Some(other) => Err(invalid(
                    key,
                    format!("must be a string (got {})", fields::kind(other)),
                )),
            }
        };
    let required = |key: &str, rule| {
        text(key, rule)?.ok_or_else(|| invalid(key, "is required for a PBS".to_owned()))
    };
    let host = required("host", fields::host)?;
    let user = required("user", fields::user)?;
    let token_name = required("tokenName", fields::token_name)?;
    let token_secret = required("tokenSecret", fields::token_secret)?;
    let realm = text("realm", fields::realm)?.unwrap_or_else(|| DEFAULT_PBS_REALM.to_owned());
    let name = text("name", name_rule)?.unwrap_or_else(|| DEFAULT_PBS_NAME.to_owned());
    let port = match map.get("port") {
        None | Some(Value::Null) => DEFAULT_PBS_PORT,
        Some(Value::Number(n)) => fields::port_number(n).map_err(|r| invalid("port", r))?,
        Some(Value::String(s)) => fields::port_text(s.trim()).map_err(|r| invalid("port", r))?,
        Some(other) => {
            return Err(invalid(
                "port",
                format!("must be a number (got {})", fields::kind(other)),
            ));
        }
    };
    let insecure = match map.get("allowInsecureTls") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(invalid(
                "allowInsecureTls",
                format!(
                    "must be true or false without quotes (got {})",
                    fields::kind(other)
                ),
            ));
        }
    };
    let ca_file: Option<PathBuf> =
        text("tlsCaFile", fields::path)?.map(|p| fields::expand_home(&p, home));
    let fingerprint = match text("tlsFingerprint", |_| Ok(()))? {
        Some(fp) => Some(fields::tls_fingerprint(&fp).map_err(|r| invalid("tlsFingerprint", r))?),
        None => None,
    };
    let tls = fields::tls_mode(
        TlsParts {
            insecure,
            ca_file,
            fingerprint,
        },
        &Labels {
            place: location.to_owned(),
            insecure: "allowInsecureTls",
            ca_file: "tlsCaFile",
            fingerprint: "tlsFingerprint",
            strategy: "",
            key_path: "",
        },
    )?;
    Ok(PbsConfig {
        name,
        host,
        port,
        user,
        realm,
        token_name,
        token_secret: Secret::new(token_secret),
        tls,
    })
}

/// A PBS's name: lower-case letters, digits and `-`, 1–32 characters, as tools are called
/// with it.
fn name_rule(value: &str) -> Result<(), String> {
    let ok = (1..=32).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err("must be 1–32 lower-case letters, digits or '-'".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> Result<Vec<PbsConfig>, ConfigError> {
        let map = json!({ "pbs": v });
        from_file(Path::new("/x.json"), map.as_object().unwrap(), None, false)
    }

    #[test]
    fn an_entry_gets_pbs_defaults_and_names_must_differ() {
        let one = parse(json!({"host": "pbs.lan", "user": "mcp", "tokenName": "mcp", "tokenSecret": "0123456789abcdef"})).unwrap();
        assert_eq!(one[0].port, 8007);
        assert_eq!(one[0].realm, "pbs");
        assert_eq!(one[0].name, "pbs");
        assert_eq!(one[0].tls, TlsSetting::Verify);
        let entry = json!({"host": "pbs.lan", "user": "mcp", "tokenName": "mcp", "tokenSecret": "0123456789abcdef"});
        let err = parse(json!([entry.clone(), entry]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("two PBS entries"), "{err}");
    }

    #[test]
    fn errors_name_the_key_and_never_the_secret() {
        let err = parse(json!({"host": "pbs.lan", "user": "mcp", "tokenName": "mcp", "tokenSecret": "0123456789abcdef", "tokenSecert": "x"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("tokenSecert"), "{err}");
        let err =
            parse(json!({"host": "pbs.lan", "user": "mcp", "tokenSecret": "0123456789abcdef"}))
                .unwrap_err()
                .to_string();
        assert!(
            err.contains("tokenName") && !err.contains("0123456789abcdef"),
            "{err}"
        );
        let err = parse(json!({"host": "pbs.lan", "user": "mcp", "tokenName": "mcp", "tokenSecret": "0123456789abcdef", "tlsFingerprint": "ab".repeat(32), "allowInsecureTls": true}))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("allowInsecureTls") && err.contains("tlsFingerprint"),
            "{err}"
        );
    }
}
