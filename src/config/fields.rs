//! Value rules shared by the file and environment loaders, and the assembly of the TLS mode and
//! the SSH block from validated parts.
//!
//! Invariant: both sources apply exactly the same rules (one function per kind of value), and a
//! rule's failure text never contains the token secret — the secret checker reports lengths only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    ConfigError, DEFAULT_SSH_PORT, DEFAULT_SSH_USER, SshConfig, SshNodeOverride, SshStrategy,
    TlsSetting,
};

/// Longest value accepted for any string setting (the reference's limit).
const MAX_CHARS: usize = 4096;
/// Shortest token secret accepted; Proxmox secrets are UUIDs, so shorter is surely a mistake.
const MIN_SECRET_CHARS: usize = 10;

/// Checks length bounds without echoing the value (so it is safe for secrets).
fn check_len(value: &str, min: usize) -> Result<(), String> {
    let n = value.chars().count();
    if n == 0 {
        return Err("must not be empty".into());
    }
    if n < min {
        return Err(format!("must be at least {min} characters long (got {n})"));
    }
    if n > MAX_CHARS {
        return Err(format!(
            "must be at most {MAX_CHARS} characters long (got {n})"
        ));
    }
    Ok(())
}

fn check_no_control(value: &str) -> Result<(), String> {
    if value.chars().any(char::is_control) {
        return Err("must not contain control characters (such as newlines or tabs)".into());
    }
    Ok(())
}

/// Values that end up as SSH/HTTP arguments must not look like command-line options.
fn check_no_leading_dash(value: &str) -> Result<(), String> {
    if value.starts_with('-') {
        return Err(format!("must not start with `-` (got {value:?})"));
    }
    Ok(())
}

fn check_no_whitespace(value: &str) -> Result<(), String> {
    if value.chars().any(char::is_whitespace) {
        return Err(format!("must not contain spaces (got {value:?})"));
    }
    Ok(())
}

/// Host rule: a bare host name or IP address.
pub(crate) fn host(value: &str) -> Result<(), String> {
    check_len(value, 1)?;
    check_no_control(value)?;
    check_no_leading_dash(value)?;
    if value.contains("://") {
        return Err(format!(
            "must be a bare host name or IP address without scheme, port or path \
             (write `pve.example.com`, not {value:?})"
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_whitespace() || matches!(c, '/' | '?' | '#' | '\\'))
    {
        return Err(format!(
            "must be a bare host name or IP address; {c:?} is not allowed (got {value:?})"
        ));
    }
    Ok(())
}

/// User and realm rule. An `@` in the user means the realm was pasted into it.
pub(crate) fn user(value: &str) -> Result<(), String> {
    realm(value)?;
    if value.contains('@') {
        return Err(format!(
            "must be the user name without realm (got {value:?}); put the part after `@` into \
             the realm setting"
        ));
    }
    Ok(())
}

/// Realm rule (same as the user rule, `@` aside).
pub(crate) fn realm(value: &str) -> Result<(), String> {
    check_len(value, 1)?;
    check_no_control(value)?;
    check_no_leading_dash(value)?;
    check_no_whitespace(value)
}

/// Node-name rule (`sshNodeName` and the keys of `sshNodes`).
pub(crate) fn node_name(value: &str) -> Result<(), String> {
    realm(value)
}

/// Token-name rule.
pub(crate) fn token_name(value: &str) -> Result<(), String> {
    check_len(value, 1)?;
    check_no_control(value)
}

/// Token-secret rule. Never quotes the value.
pub(crate) fn token_secret(value: &str) -> Result<(), String> {
    check_len(value, MIN_SECRET_CHARS)?;
    check_no_control(value)
}

/// File-path rule (key file, CA file, known_hosts).
pub(crate) fn path(value: &str) -> Result<(), String> {
    check_len(value, 1)?;
    check_no_control(value)
}

/// Port given as text (environment, or a quoted number in a file).
pub(crate) fn port_text(value: &str) -> Result<u16, String> {
    let bad = || format!("must be a whole number between 1 and 65535 (got {value:?})");
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match value.parse::<u32>() {
        Ok(n @ 1..=65535) => u16::try_from(n).map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// Port given as a JSON number; `8006.0` is accepted like JavaScript did.
pub(crate) fn port_number(n: &serde_json::Number) -> Result<u16, String> {
    let bad = || format!("must be a whole number between 1 and 65535 (got {n})");
    let int = match (n.as_u64(), n.as_f64()) {
        (Some(u), _) => u,
        (None, Some(f)) if f.fract() == 0.0 && (1.0..=65535.0).contains(&f) => f as u64,
        _ => return Err(bad()),
    };
    match u16::try_from(int) {
        Ok(p) if p >= 1 => Ok(p),
        _ => Err(bad()),
    }
}

/// Boolean flag from the environment: 1/true/yes/on and 0/false/no/off/empty.
pub(crate) fn flag(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "" | "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!(
            "must be one of 1/true/yes/on or 0/false/no/off (got {value:?})"
        )),
    }
}

/// SSH strategy name.
pub(crate) fn strategy(value: &str) -> Result<SshStrategy, String> {
    SshStrategy::parse(value)
        .ok_or_else(|| format!("must be one of auto, direct, hop, disabled (got {value:?})"))
}

/// TLS certificate fingerprint: SHA-256 as `AB:CD:…` or 64 plain hex digits; normalised to the
/// colon form in upper case so comparisons elsewhere are simple.
pub(crate) fn tls_fingerprint(value: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "must be a SHA-256 certificate fingerprint: 32 bytes written as `AB:CD:…` or as 64 \
             hex digits (got {value:?}); Proxmox shows it under Node > System > Certificates"
        )
    };
    let digits: String = if value.contains(':') {
        if !value.split(':').all(|pair| pair.len() == 2) {
            return Err(bad());
        }
        value.split(':').collect()
    } else {
        value.to_owned()
    };
    let bytes = hex::decode(&digits).map_err(|_| bad())?;
    if bytes.len() != 32 {
        return Err(bad());
    }
    Ok(bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":"))
}

/// SSH host key fingerprint as OpenSSH prints it: `SHA256:` + 43 base64 characters (padding
/// optional). Normalised to the unpadded form with the `SHA256:` prefix.
pub(crate) fn host_key_fingerprint(value: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "must be an SSH host key fingerprint as printed by `ssh-keygen -lf <key>`: `SHA256:` \
             followed by 43 base64 characters (got {value:?})"
        )
    };
    let body = match value.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("SHA256:") => &value[7..],
        _ => return Err(bad()),
    };
    let body = body.trim_end_matches('=');
    let base64 = |c: char| c.is_ascii_alphanumeric() || c == '+' || c == '/';
    // 32 bytes = 256 bits = 42 full base64 digits + one digit carrying 4 bits, whose low 2 bits
    // must be zero; checking that catches truncated or mangled copies.
    let last_ok = body
        .chars()
        .last()
        .is_some_and(|c| "AEIMQUYcgkosw048".contains(c));
    if body.len() != 43 || !body.chars().all(base64) || !last_ok {
        return Err(bad());
    }
    Ok(format!("SHA256:{body}"))
}

/// `~` and `~/…` mean the home directory, as OpenSSH does for key paths; other paths are kept
/// as written (relative ones resolve against the working directory, as in the reference).
pub(crate) fn expand_home(value: &str, home: Option<&Path>) -> PathBuf {
    match home {
        Some(home) if value == "~" => home.to_path_buf(),
        Some(home) => match value
            .strip_prefix("~/")
            .or_else(|| value.strip_prefix("~\\"))
        {
            Some(rest) => home.join(rest),
            None => PathBuf::from(value),
        },
        None => PathBuf::from(value),
    }
}

/// Names of the settings as the user wrote them, for error messages.
pub(crate) struct Labels {
    /// `config file <path>` or `the environment`.
    pub place: String,
    pub insecure: &'static str,
    pub ca_file: &'static str,
    pub fingerprint: &'static str,
    pub strategy: &'static str,
    pub key_path: &'static str,
}

/// TLS inputs after value validation.
pub(crate) struct TlsParts {
    pub insecure: bool,
    pub ca_file: Option<PathBuf>,
    pub fingerprint: Option<String>,
}

/// Picks the single TLS mode; two or more modes are ambiguous and rejected.
pub(crate) fn tls_mode(parts: TlsParts, labels: &Labels) -> Result<TlsSetting, ConfigError> {
    let mut set = Vec::new();
    if parts.insecure {
        set.push(labels.insecure);
    }
    if parts.ca_file.is_some() {
        set.push(labels.ca_file);
    }
    if parts.fingerprint.is_some() {
        set.push(labels.fingerprint);
    }
    if set.len() > 1 {
        return Err(ConfigError::AmbiguousTls {
            place: labels.place.clone(),
            set,
        });
    }
    Ok(match (parts.insecure, parts.ca_file, parts.fingerprint) {
        (true, _, _) => TlsSetting::Insecure,
        (_, Some(ca), _) => TlsSetting::CaFile(ca),
        (_, _, Some(fp)) => TlsSetting::Fingerprint(fp),
        _ => TlsSetting::Verify,
    })
}

/// SSH inputs after value validation.
#[derive(Default)]
pub(crate) struct SshParts {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub key_path: Option<PathBuf>,
    pub strategy: Option<SshStrategy>,
    pub node_name: Option<String>,
    pub nodes: BTreeMap<String, SshNodeOverride>,
    pub known_hosts: Option<PathBuf>,
    pub host_key_fingerprint: Option<String>,
}

/// Builds the SSH block. SSH is optional: no key and no strategy → REST-only (`None`);
/// `disabled` → `None`; any other strategy without a key is a contradiction and an error.
pub(crate) fn ssh_block(
    parts: SshParts,
    proxmox_host: &str,
    labels: &Labels,
) -> Result<Option<SshConfig>, ConfigError> {
    let (strategy, key_path) = match (parts.strategy, parts.key_path) {
        (Some(SshStrategy::Disabled), _) | (None, None) => return Ok(None),
        (Some(strategy), None) => {
            return Err(ConfigError::SshStrategyWithoutKey {
                place: labels.place.clone(),
                strategy_key: labels.strategy,
                strategy,
                key_key: labels.key_path,
            });
        }
        (strategy, Some(key_path)) => (strategy.unwrap_or(SshStrategy::Auto), key_path),
    };
    Ok(Some(SshConfig {
        host: parts.host.unwrap_or_else(|| proxmox_host.to_owned()),
        port: parts.port.unwrap_or(DEFAULT_SSH_PORT),
        user: parts.user.unwrap_or_else(|| DEFAULT_SSH_USER.to_owned()),
        key_path,
        strategy,
        node_name: parts.node_name,
        nodes: parts.nodes,
        known_hosts: parts.known_hosts,
        host_key_fingerprint: parts.host_key_fingerprint,
    }))
}

/// A JSON value's kind, for "must be a string (got a number)" messages that never show content.
pub(crate) fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::describe_unknown;

    #[test]
    fn host_rules() {
        assert!(host("pve.example.com").is_ok());
        assert!(host("10.0.0.1").is_ok());
        assert!(host("fe80::1").is_ok());
        for bad in ["", "-oProxy", "a b", "a/b", "a?b", "a#b", "a\\b", "a\nb"] {
            assert!(host(bad).is_err(), "{bad:?} accepted");
        }
        let msg = host("https://pve:8006").unwrap_err();
        assert!(msg.contains("without scheme"), "{msg}");
        assert!(host(&"a".repeat(4097)).is_err());
    }

    #[test]
    fn user_and_realm_rules() {
        assert!(user("mcp").is_ok());
        assert!(realm("pve").is_ok());
        assert!(user("mcp@pve").unwrap_err().contains("realm"));
        assert!(user("-x").is_err());
        assert!(realm("p ve").is_err());
        assert!(node_name("pve 1").is_err());
    }

    #[test]
    fn secret_rule_never_quotes_value() {
        let err = token_secret("short").unwrap_err();
        assert!(!err.contains("short"), "{err}");
        let err = token_secret("abcdefghijk\nl").unwrap_err();
        assert!(!err.contains("abcdef"), "{err}");
        assert!(token_secret("0123456789").is_ok());
    }

    #[test]
    fn ports() {
        assert_eq!(port_text("8006"), Ok(8006));
        for bad in ["abc", "0", "65536", "-1", "80 80", "", "+1"] {
            assert!(port_text(bad).is_err(), "{bad:?} accepted");
        }
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).unwrap();
        assert_eq!(port_number(&n("22")), Ok(22));
        assert_eq!(port_number(&n("22.0")), Ok(22));
        assert!(port_number(&n("22.5")).is_err());
        assert!(port_number(&n("0")).is_err());
        assert!(port_number(&n("70000")).is_err());
        assert!(port_number(&n("-5")).is_err());
    }

    #[test]
    fn flags() {
        for t in ["1", "true", "YES", " On "] {
            assert_eq!(flag(t), Ok(true), "{t}");
        }
        for f in ["0", "false", "No", "off", "", "  "] {
            assert_eq!(flag(f), Ok(false), "{f}");
        }
        assert!(flag("maybe").is_err());
    }

    #[test]
    fn tls_fingerprints_are_normalised() {
        let plain = "ab".repeat(32);
        let colon = vec!["AB"; 32].join(":");
        assert_eq!(tls_fingerprint(&plain).as_deref(), Ok(colon.as_str()));
        assert_eq!(
            tls_fingerprint(&colon.to_lowercase()).as_deref(),
            Ok(colon.as_str())
        );
        assert!(tls_fingerprint("AB:CD").is_err());
        assert!(tls_fingerprint(&"zz".repeat(32)).is_err());
        assert!(tls_fingerprint(&"A:BC".repeat(16)).is_err());
    }

    #[test]
    fn host_key_fingerprints() {
        let good = "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s";
        assert_eq!(host_key_fingerprint(good).as_deref(), Ok(good));
        assert_eq!(
            host_key_fingerprint(&format!("{good}=")).as_deref(),
            Ok(good)
        );
        assert!(host_key_fingerprint("uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s").is_err());
        assert!(host_key_fingerprint("SHA256:abc").is_err());
        assert!(host_key_fingerprint("MD5:aa:bb").is_err());
    }

    #[test]
    fn home_expansion() {
        let home = Path::new("/home/u");
        assert_eq!(
            expand_home("~/.ssh/k", Some(home)),
            PathBuf::from("/home/u/.ssh/k")
        );
        assert_eq!(expand_home("~", Some(home)), PathBuf::from("/home/u"));
        assert_eq!(expand_home("/k", Some(home)), PathBuf::from("/k"));
        assert_eq!(
            expand_home("~other/k", Some(home)),
            PathBuf::from("~other/k")
        );
        assert_eq!(expand_home("~/k", None), PathBuf::from("~/k"));
    }

    #[test]
    fn suggestions() {
        let valid = ["proxmoxHost", "proxmoxPort"];
        let text = describe_unknown(&["proxmxHost".into(), "zzz".into()], &valid);
        assert!(text.contains("did you mean `proxmoxHost`"), "{text}");
        assert!(text.contains("`zzz`"), "{text}");
    }
}
