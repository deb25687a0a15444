//! Turning what came back into `data` or a [`PveError`]: complete answers (status, reason phrase,
//! body) and transport failures (connect, TLS, reset, timeout).
//!
//! Invariants: Proxmox's own words are preferred over generic ones (JSON `message`, then a custom
//! reason phrase, where pveproxy puts its error text, then a body snippet); per-parameter `errors`
//! are kept; an empty 2xx body is `null`, not an error; snippets are whitespace-collapsed and at
//! most 200 characters, so a large HTML page cannot flood a message; Proxmox's message and each
//! per-parameter error are capped too, because Proxmox echoes the offending value (a 1 MB
//! argument would otherwise come back whole).

use std::error::Error as StdError;
use std::io;

use reqwest::StatusCode;
use serde_json::Value;

use super::error::PveError;
use super::tls::describe_tls_error;

/// Longest snippet of a non-JSON body kept in an error, in characters.
const SNIPPET_CHARS: usize = 200;
/// Longest Proxmox message kept, in characters (real ones are a line or two).
const MESSAGE_CHARS: usize = 2000;
/// Longest per-parameter error kept, in characters (Proxmox quotes the value it refused).
const PARAM_ERROR_CHARS: usize = 500;

/// Turns a complete answer into `data` or an error, following the module-level rules.
pub(crate) fn interpret(
    status: StatusCode,
    reason: Option<String>,
    body: &[u8],
) -> Result<Value, PveError> {
    let code = status.as_u16();
    let blank = body.iter().all(u8::is_ascii_whitespace);
    let parsed = if blank {
        None
    } else {
        serde_json::from_slice::<Value>(body).ok()
    };
    if status.is_success() {
        return match parsed {
            _ if blank => Ok(Value::Null),
            Some(Value::Object(mut envelope)) => Ok(envelope.remove("data").unwrap_or(Value::Null)),
            _ => Err(PveError::InvalidResponse {
                status: code,
                snippet: snippet(body),
            }),
        };
    }
    let envelope = match parsed {
        Some(Value::Object(envelope)) => Some(envelope),
        _ => None,
    };
    let json_message = envelope
        .as_ref()
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    let errors = envelope
        .as_ref()
        .and_then(|e| e.get("errors"))
        .and_then(Value::as_object)
        .filter(|e| !e.is_empty())
        .map(|errors| {
            errors
                .iter()
                .map(|(name, detail)| {
                    let detail = match detail {
                        Value::String(text) => Value::String(cap(text, PARAM_ERROR_CHARS)),
                        other => Value::String(cap(&other.to_string(), PARAM_ERROR_CHARS)),
                    };
                    (cap(name, PARAM_ERROR_CHARS), detail)
                })
                .collect()
        });
    let stated = json_message.or(reason).map(|m| cap(&m, MESSAGE_CHARS));
    let message = match (stated, envelope.is_none() && !blank) {
        (Some(m), true) => format!("{m}: {}", snippet(body)),
        (Some(m), false) => m,
        (None, true) => snippet(body),
        (None, false) => status
            .canonical_reason()
            .map_or_else(|| format!("HTTP {code}"), str::to_owned),
    };
    Err(PveError::Http {
        status: code,
        message,
        errors,
    })
}

/// Classifies a reqwest failure (connect, TLS, send or body read) into a variant.
pub(crate) fn classify_transport(err: &reqwest::Error) -> PveError {
    classify_chain(err, err.is_timeout(), err.is_dns())
}

/// What a walk over an error chain found, strongest evidence kept per kind.
#[derive(Default)]
struct Facts {
    tls: Option<String>,
    dns: bool,
    refused: bool,
    unreachable: bool,
    timeout: bool,
    reset: bool,
    texts: Vec<String>,
}

/// Walks `err` and its causes. `io::Error::source()` skips the error it wraps, so the walk steps
/// into `get_ref()` instead, which is where rustls' handshake errors live.
fn classify_chain(err: &(dyn StdError + 'static), timeout: bool, dns: bool) -> PveError {
    let mut facts = Facts {
        timeout,
        dns,
        ..Facts::default()
    };
    let mut current = Some(err);
    // Chains are short; the bound only guards against a pathological cyclic `source()`.
    for _ in 0..32 {
        let Some(e) = current else { break };
        let text = e.to_string();
        if !text.is_empty() && !facts.texts.iter().any(|t| t.contains(&text)) {
            facts.texts.push(text);
        }
        inspect(e, &mut facts);
        current = match e.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    let lower = facts.texts.join(": ").to_lowercase();
    let dns_words = [
        "dns error",
        "failed to lookup address",
        "name or service not known",
        "no address associated with hostname",
        "nodename nor servname",
        "temporary failure in name resolution",
    ];
    if let Some(tls) = facts.tls {
        PveError::Tls(tls)
    } else if facts.dns || dns_words.iter().any(|w| lower.contains(w)) {
        PveError::Dns
    } else if facts.refused {
        PveError::ConnectionRefused
    } else if facts.unreachable {
        PveError::HostUnreachable
    } else if facts.timeout {
        PveError::Timeout
    } else if facts.reset {
        PveError::ConnectionReset
    } else {
        PveError::Other(facts.texts.join(": "))
    }
}

fn inspect(e: &(dyn StdError + 'static), facts: &mut Facts) {
    if let Some(io) = e.downcast_ref::<io::Error>() {
        match io.kind() {
            io::ErrorKind::ConnectionRefused => facts.refused = true,
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::BrokenPipe => facts.reset = true,
            io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::NetworkDown => facts.unreachable = true,
            io::ErrorKind::TimedOut => facts.timeout = true,
            _ => {}
        }
    }
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        facts.tls.get_or_insert_with(|| describe_tls_error(tls));
    }
    if let Some(h) = e.downcast_ref::<hyper::Error>() {
        if h.is_timeout() {
            facts.timeout = true;
        }
        if h.is_incomplete_message() || h.is_closed() || h.is_canceled() {
            facts.reset = true;
        }
    }
}

/// `text` itself when it has at most `max` characters, else its start and a note of how much
/// was left out.
pub(crate) fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}… [{} more characters]", total - max)
}

/// Whitespace-collapsed start of a body, at most [`SNIPPET_CHARS`] characters, for messages.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= SNIPPET_CHARS {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(SNIPPET_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_interpreted() {
        let ok = StatusCode::OK;
        assert_eq!(interpret(ok, None, br#"{"data":[1,2]}"#), Ok(json!([1, 2])));
        assert_eq!(interpret(ok, None, br#"{"total":1}"#), Ok(Value::Null));
        assert_eq!(interpret(ok, None, b" \n"), Ok(Value::Null));
        let bad = interpret(ok, None, b"<html>\n  login  </html>").unwrap_err();
        assert_eq!(
            bad,
            PveError::InvalidResponse {
                status: 200,
                snippet: "<html> login </html>".into()
            }
        );
        assert!(interpret(ok, None, b"[1]").is_err());

        let status = StatusCode::INTERNAL_SERVER_ERROR;
        let reason = Some("Configuration file 'x' does not exist".to_owned());
        let err = interpret(status, reason, br#"{"data":null}"#).unwrap_err();
        assert_eq!(err.code(), "PROXMOX_NOT_FOUND");
        let err = interpret(
            StatusCode::BAD_REQUEST,
            Some("Parameter verification failed.".into()),
            br#"{"data":null,"errors":{"foo":"property is not defined in schema\n"},"message":" Parameter verification failed.\n"}"#,
        )
        .unwrap_err();
        let PveError::Http {
            message, errors, ..
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!(message, "Parameter verification failed.");
        assert_eq!(
            errors.as_ref().unwrap()["foo"],
            "property is not defined in schema\n"
        );
        let html = interpret(
            StatusCode::BAD_GATEWAY,
            None,
            b"<html>\n<h1>502 Bad Gateway</h1></html>",
        )
        .unwrap_err();
        assert_eq!(
            html,
            PveError::Http {
                status: 502,
                message: "<html> <h1>502 Bad Gateway</h1></html>".into(),
                errors: None
            }
        );
        let bare = interpret(StatusCode::FORBIDDEN, None, b"").unwrap_err();
        assert_eq!(bare.to_string(), "Proxmox API error (HTTP 403): Forbidden");
        let odd = interpret(StatusCode::from_u16(596).unwrap(), None, b"").unwrap_err();
        assert_eq!(odd.to_string(), "Proxmox API error (HTTP 596): HTTP 596");
    }

    #[test]
    fn chains_are_classified_by_io_kind_and_wording() {
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(
            classify_chain(&refused, false, false),
            PveError::ConnectionRefused
        );
        let reset = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(
            classify_chain(&reset, false, false),
            PveError::ConnectionReset
        );
        let unreachable = io::Error::from(io::ErrorKind::NetworkUnreachable);
        assert_eq!(
            classify_chain(&unreachable, false, false),
            PveError::HostUnreachable
        );
        let dns =
            io::Error::other("failed to lookup address information: Name or service not known");
        assert_eq!(classify_chain(&dns, false, false), PveError::Dns);
        let wrapped_tls = io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError);
        assert!(matches!(
            classify_chain(&wrapped_tls, false, false),
            PveError::Tls(_)
        ));
        let other = io::Error::other("weird");
        assert_eq!(
            classify_chain(&other, false, false),
            PveError::Other("weird".into())
        );
        assert_eq!(classify_chain(&other, true, false), PveError::Timeout);
    }

    #[test]
    fn echoed_values_are_capped() {
        let huge = "A".repeat(100_000);
        let body = json!({
            "data": null,
            "message": format!("value '{huge}' is bad\n"),
            "errors": {"comment": format!("value '{huge}' does not look like a comment")},
        })
        .to_string();
        let err = interpret(StatusCode::BAD_REQUEST, None, body.as_bytes()).unwrap_err();
        let text = err.to_string();
        assert!(text.len() < 3_000, "{} characters", text.len());
        assert!(text.contains("more characters]"), "{text}");
        let details = err.details().unwrap().to_string();
        assert!(details.len() < 1_000, "{} characters", details.len());
        assert_eq!(cap("short", 10), "short");
        assert_eq!(cap("abcdef", 3), "abc… [3 more characters]");
    }

    #[test]
    fn snippets_are_collapsed_and_bounded() {
        assert_eq!(
            snippet(b"  <html>\n\n <b>502</b>\t Bad  "),
            "<html> <b>502</b> Bad"
        );
        let long = "word ".repeat(100);
        let cut = snippet(long.as_bytes());
        assert_eq!(cut.chars().count(), 200);
        assert!(cut.ends_with('…'));
        assert_eq!(snippet(b""), "");
    }
}
