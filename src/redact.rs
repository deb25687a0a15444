//! Redaction: the one place where secrets are masked out of what a call returns or records.
//!
//! Rules are declared once, here, and applied to every tool result (success data and failure
//! details) just before the envelope is rendered, and to the arguments an audit line records:
//!
//! - **field rules** — an object key named like a secret ([`SECRET_FIELDS`], compared without
//!   case) has its value replaced by [`REDACTED`]; so does the `value`/`pending` of a
//!   `{key, value}` pair whose `key` is such a name (the shape of Proxmox's `pending` lists);
//! - **response-path rules** — a key that is only secret in one tool's answer (the `value` of
//!   a new API token) is declared in that tool's row (`ToolSpec::reveals`);
//! - **text rules** — inside any string: PEM private-key blocks, `Authorization`-like
//!   credentials (`PVEAPIToken=…=secret`, `Bearer …`, `PVEAuthCookie=…`) and
//!   `password: …` lines of YAML/ini text (a cloud-init dump) are masked;
//! - **argument echoes** — the values of the call's own secret-named arguments are masked
//!   wherever they reappear (a Proxmox 400 quoting the rejected value, say).
//!
//! The tier is the configured tier of the server (`policy::Settings::tier`), passed by the
//! caller: masking applies at every tier. The only exception is a tool whose purpose is to
//! return a secret (a row with `reveals`): at `full` its own response-path rule is
//! skipped, the secret is returned (once — Proxmox never shows it again) and the answer says
//! so. Invariant: nothing declared secret here leaves the process in a result or an audit
//! line, except that one field of those tools at `full`.
//!
//! Deliberately **not** secret: `sshkeys` (public keys), certificate fingerprints, digests.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::catalog::{Tier, ToolSpec};
use crate::envelope::ToolFailure;

/// What a masked value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Object keys whose value is a secret wherever they appear (compared ASCII-case-insensitively).
pub const SECRET_FIELDS: &[&str] = &[
    // Guest and user passwords, storage passwords (CIFS, PBS), LDAP/AD bind passwords.
    "password",
    "cipassword",
    "bind_password",
    "bind-password",
    // Session credentials from /access/ticket.
    "ticket",
    "CSRFPreventionToken",
    // API token secrets under the names clients and configs use.
    "tokenSecret",
    "token_secret",
    "token-secret",
    "secret",
    // Storage and ACME key material.
    "encryption-key",
    "master-key",
    "keyring",
    "eab-hmac-key",
    // Header-like values.
    "Authorization",
    // OpenID Connect realm client secret.
    "client-key",
    // Notification endpoint tokens (Gotify, webhook secrets).
    "token",
];

/// The sentence added (as `secretNotice`) to the answer of a secret-returning tool.
pub const SECRET_NOTICE: &str = "This answer contains a secret that Proxmox shows only once: store it now. It is not kept, logged or written to the audit trail by this server.";

/// Whether `key` names a secret field.
pub fn is_secret_field(key: &str) -> bool {
    SECRET_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(key))
}

/// Whether `spec` is a tool that exists to return a secret (its row's `reveals` keys).
pub fn returns_secret(spec: &ToolSpec) -> bool {
    !spec.reveals.is_empty()
}

/// Masks the secrets in a successful result of `spec`, served at the configured `tier`.
pub fn redact_output(spec: &ToolSpec, tier: Tier, value: &mut Value) {
    let reveal = tier == Tier::Full && returns_secret(spec);
    let paths = spec.reveals.iter();
    // The revealed secrets are set aside while the other rules run, then put back.
    let mut revealed = Vec::new();
    if let Value::Object(map) = value {
        for key in paths {
            if reveal {
                if let Some(secret) = map.remove(*key) {
                    revealed.push((*key, secret));
                }
            } else {
                mask_present(map, key);
            }
        }
    }
    mask_tree(value);
    if reveal && let Value::Object(map) = value {
        map.extend(revealed.into_iter().map(|(k, v)| (k.to_owned(), v)));
        map.insert("secretNotice".into(), SECRET_NOTICE.into());
    }
}

/// A copy of the call's arguments with every secret masked, for audit lines and dry runs:
/// the field and text rules of results, at every level of the arguments.
pub fn mask_arguments(args: &Map<String, Value>) -> Value {
    let mut copy = Value::Object(args.clone());
    mask_tree(&mut copy);
    copy
}

/// Masks a call's outcome in place: the data of a success ([`redact_output`]); the message,
/// hint, impact and details of a failure; and, in both, every echo of a secret argument.
pub fn redact_outcome(
    spec: &ToolSpec,
    tier: Tier,
    arguments: Option<&Map<String, Value>>,
    outcome: &mut Result<Value, ToolFailure>,
) {
    let echoes = secret_argument_values(arguments);
    match outcome {
        Ok(data) => {
            redact_output(spec, tier, data);
            scrub_tree(data, &echoes);
        }
        Err(failure) => {
            for text in [
                Some(&mut failure.message),
                failure.hint.as_mut(),
                failure.impact.as_mut(),
            ]
            .into_iter()
            .flatten()
            {
                *text = scrub(&mask_text(text), &echoes);
            }
            if let Some(details) = failure.details.as_mut() {
                mask_tree(details);
                scrub_tree(details, &echoes);
            }
        }
    }
}

/// Values of secret-named arguments worth looking for (very short ones would mask noise),
/// nested ones included (a plan's steps carry their own arguments).
fn secret_argument_values(arguments: Option<&Map<String, Value>>) -> Vec<String> {
    fn collect(map: &Map<String, Value>, into: &mut Vec<String>) {
        for (key, value) in map {
            match value {
                Value::String(s) if is_secret_field(key) => into.push(s.clone()),
                Value::Number(n) if is_secret_field(key) => into.push(n.to_string()),
                Value::Object(inner) => collect(inner, into),
                Value::Array(items) => {
                    for inner in items.iter().filter_map(Value::as_object) {
                        collect(inner, into);
                    }
                }
                _ => {}
            }
        }
    }
    let mut values = Vec::new();
    if let Some(arguments) = arguments {
        collect(arguments, &mut values);
    }
    values.retain(|s| s.chars().count() >= 4);
    // Longest first, so a secret that contains another is masked whole.
    values.sort_by_key(|s| std::cmp::Reverse(s.len()));
    values
}

fn mask_present(map: &mut Map<String, Value>, key: &str) {
    if let Some(value) = map.get_mut(key)
        && !is_blank(value)
    {
        *value = Value::String(REDACTED.into());
    }
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Applies the field, pair and text rules to every level of `value`.
fn mask_tree(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let pair_is_secret = map
                .get("key")
                .and_then(Value::as_str)
                .is_some_and(is_secret_field);
            if pair_is_secret {
                mask_present(map, "value");
                mask_present(map, "pending");
            }
            for (key, child) in map.iter_mut() {
                if is_secret_field(key) && !is_blank(child) {
                    *child = Value::String(REDACTED.into());
                } else {
                    mask_tree(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_tree),
        Value::String(text) => {
            if let Some(masked) = masked_text(text) {
                *text = masked;
            }
        }
        _ => {}
    }
}

fn scrub_tree(value: &mut Value, echoes: &[String]) {
    if echoes.is_empty() {
        return;
    }
    match value {
        Value::Object(map) => map.values_mut().for_each(|v| scrub_tree(v, echoes)),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_tree(v, echoes)),
        Value::String(text) => *text = scrub(text, echoes),
        _ => {}
    }
}

fn scrub(text: &str, echoes: &[String]) -> String {
    echoes.iter().fold(text.to_owned(), |acc, secret| {
        acc.replace(secret.as_str(), REDACTED)
    })
}

/// The text rules, compiled once. `None` only if a pattern failed to compile, which the unit
/// tests rule out; text is then masked whole rather than passed through.
fn text_rules() -> Option<&'static [(Regex, &'static str)]> {
    static RULES: OnceLock<Option<Vec<(Regex, &'static str)>>> = OnceLock::new();
    RULES
        .get_or_init(|| {
            let rules = [
                // PEM private keys (RSA, EC, OpenSSH, PKCS#8, encrypted), whole block.
                (
                    r"(?s)-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
                    "-----BEGIN ${1}PRIVATE KEY-----[redacted]-----END ${1}PRIVATE KEY-----",
                ),
                // Proxmox API token header: keep the token id, mask the secret.
                (r"(PVEAPIToken=[^\s=]+=)[^\s;,'\x22]+", "${1}[redacted]"),
                (r"(PBSAPIToken=[^\s:]+:)[^\s;,'\x22]+", "${1}[redacted]"),
                // A bearer credential is one long token, so prose ("the bearer of …") is left alone.
                (r"(?i)(\bBearer\s+)[A-Za-z0-9._~+/=-]{12,}", "${1}[redacted]"),
                (r"(PVEAuthCookie=)[^\s;,'\x22]+", "${1}[redacted]"),
                (r"(?i)(CSRFPreventionToken\s*[:=]\s*)[^\s;,'\x22]+", "${1}[redacted]"),
                // `password: …` / `password=…` lines of YAML or ini text (cloud-init dumps).
                (
                    r"(?im)^(\s*-?\s*(?:password|passwd|cipassword|hashed_passwd|plain_text_passwd)\s*[:=][ \t]*)\S[^\r\n]*",
                    "${1}[redacted]",
                ),
                // Cloud-init `chpasswd` lists: indented `user:password` lines (`list: |` or
                // `- root:pw`) — a YAML key followed by a value with no space after the colon.
                (
                    r#"(?m)^([ \t]+(?:-[ \t]*)?["']?[A-Za-z0-9_.-]+:)[^\s:"']+(["']?)[ \t]*$"#,
                    "${1}[redacted]${2}",
                ),
                // Passwords and secrets as JSON inside a string: `"password": "…"`.
                (
                    r#"(?i)("(?:password|passwd|secret|token|api[_-]?key|client[_-]?key)"\s*:\s*)"(?:[^"\\]|\\.)*""#,
                    r#"${1}"[redacted]""#,
                ),
                // Command-line flags: `--password x`, `--password=x`.
                (
                    r"(?i)(--(?:password|passwd|secret|token|api-key|client-key)(?:=|\s+))[^\s'\x22]+",
                    "${1}[redacted]",
                ),
                // Credentials in a URL: `https://user:pass@host`.
                (
                    r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+@",
                    "${1}[redacted]@",
                ),
                // PuTTY private keys: the private lines and their MAC.
                (
                    r"(?s)Private-Lines:.*?(?:Private-(?:MAC|Hash):[^\r\n]*|\z)",
                    "Private-Lines: [redacted]",
                ),
            ];
            rules
                .into_iter()
                .map(|(pattern, with)| Regex::new(pattern).ok().map(|re| (re, with)))
                .collect()
        })
        .as_deref()
}

/// Literals at least one of which every text rule needs: most strings (log lines, names)
/// contain none, and one literal search is far cheaper than every rule.
fn needs_text_rules(text: &str) -> Option<bool> {
    static PREFILTER: OnceLock<Option<Regex>> = OnceLock::new();
    let prefilter = PREFILTER.get_or_init(|| {
        Regex::new(
            r"(?i)PRIVATE KEY|APIToken=|bearer|PVEAuthCookie|CSRFPreventionToken|passw|pass\s*=|secret|token|key|chpasswd|://[^/\s]*@|Private-Lines",
        )
        .ok()
    });
    prefilter.as_ref().map(|re| re.is_match(text))
}

/// Applies the text rules to one string.
pub fn mask_text(text: &str) -> String {
    masked_text(text).unwrap_or_else(|| text.to_owned())
}

/// `text` with the text rules applied, or `None` when no rule touched it (most strings: the
/// literal prefilter rules them out without running a rule).
fn masked_text(text: &str) -> Option<String> {
    if needs_text_rules(text) == Some(false) {
        return None;
    }
    let Some(rules) = text_rules() else {
        return Some(REDACTED.to_owned());
    };
    let mut out = Cow::Borrowed(text);
    for (re, with) in rules {
        if re.is_match(&out) {
            out = Cow::Owned(re.replace_all(&out, *with).into_owned());
        }
    }
    match mask_env_assignments(&out) {
        Some(masked) => Some(masked),
        None => match out {
            Cow::Owned(masked) => Some(masked),
            Cow::Borrowed(_) => None,
        },
    }
}

/// Env-style assignments whose name says secret (ACME plugin data, scripts): `CF_Token=…`,
/// `AWS_SECRET_ACCESS_KEY=…`, `DB_PASSWORD=…`, quoted (`API_TOKEN="…"`, `SECRET_KEY='…'`) or
/// not; the name and the quotes are kept; `None` when there is none. The token headers
/// (`PVEAPIToken=id=secret`) have their own rule above, which keeps the token id.
fn mask_env_assignments(text: &str) -> Option<String> {
    static ENV: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = ENV
        .get_or_init(|| {
            Regex::new(
                r#"(?i)\b([A-Z0-9_]*(?:password|passwd|pass|secret|token|api_?key|_key)[A-Z0-9_]*)([ \t]*=[ \t]*)(?:"((?:[^"\\\r\n]|\\.)*)"|'([^'\r\n]*)'|([^\s'";,]+))"#,
            )
            .ok()
        })
        .as_ref()
    else {
        return Some(REDACTED.to_owned());
    };
    let masked = re.replace_all(text, |caps: &regex::Captures<'_>| {
        let name = &caps[1];
        // A quoted value keeps its quotes; an empty one has nothing to hide.
        let quote = match (caps.get(3), caps.get(4)) {
            (Some(inner), _) | (_, Some(inner)) if inner.as_str().is_empty() => None,
            (Some(_), _) => Some("\""),
            (_, Some(_)) => Some("'"),
            _ => Some(""),
        };
        match quote {
            Some(quote) if !name.to_ascii_lowercase().ends_with("apitoken") => {
                format!("{name}{}{quote}{REDACTED}{quote}", &caps[2])
            }
            _ => caps[0].to_owned(),
        }
    });
    match masked {
        Cow::Owned(masked) => Some(masked),
        Cow::Borrowed(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use serde_json::json;

    fn spec(name: &str) -> &'static ToolSpec {
        catalog::find(name).unwrap_or_else(|| panic!("no tool {name}"))
    }

    #[test]
    fn text_rules_compile() {
        assert!(text_rules().is_some());
        assert_eq!(needs_text_rules("worker finished"), Some(false));
    }

    #[test]
    fn secret_fields_are_masked_at_any_depth_and_sshkeys_is_kept() {
        let mut config = json!({
            "cipassword": "$5$abc$hash", "sshkeys": "ssh-ed25519%20AAAA", "name": "vm",
            "nested": [{"Password": "p1"}, {"key": "cipassword", "value": "h", "pending": "h2"}],
            "empty": {"password": ""}, "unset": {"password": null},
        });
        redact_output(spec("pve_get_qemu_config"), Tier::Full, &mut config);
        assert_eq!(config["cipassword"], REDACTED);
        assert_eq!(config["sshkeys"], "ssh-ed25519%20AAAA");
        assert_eq!(config["nested"][0]["Password"], REDACTED);
        assert_eq!(config["nested"][1]["value"], REDACTED);
        assert_eq!(config["nested"][1]["pending"], REDACTED);
        // An empty or null secret is shown as it is: there is nothing to hide.
        assert_eq!(config["empty"]["password"], "");
        assert_eq!(config["unset"]["password"], Value::Null);
    }

    #[test]
    fn text_rules_mask_keys_headers_and_password_lines() {
        let pem = "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nz";
        let masked = mask_text(pem);
        assert!(
            !masked.contains("b3BlbnNzaC1rZXk")
                && masked.starts_with("a\n")
                && masked.ends_with("\nz")
        );
        let header = "Authorization: PVEAPIToken=mcp@pve!nandi=1234-abcd; Bearer tok.en-0123456789";
        let masked = mask_text(header);
        assert_eq!(
            masked,
            "Authorization: PVEAPIToken=mcp@pve!nandi=[redacted]; Bearer [redacted]"
        );
        let yaml = "#cloud-config\nuser: ops\npassword: $5$emu$xyz\nchpasswd:\n  expire: False\n";
        assert_eq!(
            mask_text(yaml),
            "#cloud-config\nuser: ops\npassword: [redacted]\nchpasswd:\n  expire: False\n"
        );
    }

    #[test]
    fn token_value_is_revealed_only_at_full_with_a_notice() {
        let answer = json!({"full-tokenid": "a@pve!ci", "value": "uuid-secret"});
        let tool = spec("pve_create_api_token");
        let mut below = answer.clone();
        redact_output(tool, Tier::ReadExecute, &mut below);
        assert_eq!(below["value"], REDACTED);
        let mut full = answer.clone();
        redact_output(tool, Tier::Full, &mut full);
        assert_eq!(full["value"], "uuid-secret");
        assert_eq!(full["secretNotice"], SECRET_NOTICE);
        // The console ticket is revealed the same way, though `ticket` is a secret field.
        let console = json!({"ticket": "PVEVNC:abc", "port": 5900, "password": "x"});
        let mut full = console.clone();
        redact_output(spec("pve_create_console_ticket"), Tier::Full, &mut full);
        assert_eq!(full["ticket"], "PVEVNC:abc");
        assert_eq!(full["password"], REDACTED);
        let mut below = console;
        redact_output(
            spec("pve_create_console_ticket"),
            Tier::ReadExecute,
            &mut below,
        );
        assert_eq!(below["ticket"], REDACTED);
        // Another tool's `value` key is not a secret, and its answer carries no notice.
        let mut other = answer;
        redact_output(spec("pve_get_qemu_config"), Tier::Full, &mut other);
        assert_eq!(other["value"], "uuid-secret");
        assert_eq!(other.get("secretNotice"), None, "{other}");
    }

    #[test]
    fn failures_lose_argument_echoes_and_secret_details() {
        let args = json!({"password": "hunter22-canary", "userid": "a@pve"});
        let mut outcome: Result<Value, ToolFailure> = Err(ToolFailure::new(
            "X",
            "bad value 'hunter22-canary' for password",
        )
        .with_details(json!({"errors": {"password": "got hunter22-canary"}, "ticket": "PVE:x"})));
        redact_outcome(
            spec("pve_create_user"),
            Tier::Full,
            args.as_object(),
            &mut outcome,
        );
        let text = format!("{outcome:?}");
        assert!(
            !text.contains("hunter22-canary") && !text.contains("PVE:x"),
            "{text}"
        );
        // A secret given as a number is an echo too; a short one would mask noise and is not.
        let args = json!({"password": 73912846, "token": 42});
        let mut outcome: Result<Value, ToolFailure> = Err(ToolFailure::new(
            "X",
            "value 73912846 is not a string (field 42)",
        ));
        redact_outcome(
            spec("pve_create_user"),
            Tier::Full,
            args.as_object(),
            &mut outcome,
        );
        let failure = outcome.expect_err("failure");
        assert_eq!(
            failure.message,
            format!("value {REDACTED} is not a string (field 42)")
        );
    }

    #[test]
    fn echoes_are_masked_at_any_depth_of_a_success_and_of_failure_details() {
        let args = json!({"password": "hunter22-canary"});
        let echoed = json!({"log": ["line 1", "user set to hunter22-canary"],
            "status": {"note": "hunter22-canary!"}, "count": 2});
        let mut ok: Result<Value, ToolFailure> = Ok(echoed.clone());
        redact_outcome(
            spec("pve_create_user"),
            Tier::Full,
            args.as_object(),
            &mut ok,
        );
        let expected = json!({"log": ["line 1", format!("user set to {REDACTED}")],
            "status": {"note": format!("{REDACTED}!")}, "count": 2});
        assert_eq!(ok.expect("ok"), expected);
        let mut err: Result<Value, ToolFailure> =
            Err(ToolFailure::new("X", "rejected").with_details(echoed));
        redact_outcome(
            spec("pve_create_user"),
            Tier::Full,
            args.as_object(),
            &mut err,
        );
        assert_eq!(err.expect_err("failure").details, Some(expected));
    }

    #[test]
    fn masked_arguments_keep_the_rest() {
        let args = json!({"userid": "a@pve", "password": "pw-secret", "confirm": true});
        let masked = mask_arguments(args.as_object().unwrap());
        assert_eq!(
            masked,
            json!({"userid": "a@pve", "password": REDACTED, "confirm": true})
        );
    }
}
