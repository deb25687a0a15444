//! Errors of the Proxmox client, their stable codes, hints, and transport-error classification.
//!
//! Invariants: Proxmox's own detail (its message and per-parameter `errors`) is carried verbatim,
//! never replaced by a generic text; no variant can hold the API token or the `Authorization`
//! header (texts are built from server answers, URLs without credentials, and OS/TLS errors);
//! `code()` strings are the stable, user-visible codes of the reference implementation.

use serde_json::{Map, Value, json};

/// A failed Proxmox API call.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PveError {
    /// Proxmox (or something in front of it) answered with a non-2xx status.
    #[error("{}", http_text(*.status, .message, .errors.as_ref()))]
    Http {
        /// HTTP status code.
        status: u16,
        /// Proxmox's message (trimmed), a custom reason phrase, a snippet of a non-JSON body, or
        /// the standard reason phrase, in that order of preference.
        message: String,
        /// Per-parameter messages from the JSON `errors` member (e.g. of a 400).
        errors: Option<Map<String, Value>>,
    },
    /// A 2xx answer whose body is not Proxmox's JSON envelope.
    #[error("the Proxmox API answered HTTP {status} with a body that is not JSON: {snippet}")]
    InvalidResponse {
        /// HTTP status code.
        status: u16,
        /// Start of the body, whitespace collapsed, at most 200 characters.
        snippet: String,
    },
    /// The attempt did not complete within its timeout.
    #[error("the Proxmox API did not answer within the request timeout")]
    Timeout,
    /// The TCP connection was refused.
    #[error("the connection to the Proxmox API was refused")]
    ConnectionRefused,
    /// The host name could not be resolved.
    #[error("the Proxmox host name could not be resolved")]
    Dns,
    /// No route to the host or network.
    #[error("the Proxmox host is unreachable")]
    HostUnreachable,
    /// TLS handshake or certificate failure (including a fingerprint-pin mismatch).
    #[error("TLS error: {0}")]
    Tls(String),
    /// The connection was reset or closed before a complete answer arrived.
    #[error("the connection to the Proxmox API was reset or closed before the answer was complete")]
    ConnectionReset,
    /// The caller cancelled the call.
    #[error("the request was cancelled")]
    Cancelled,
    /// Any other failure.
    #[error("{0}")]
    Other(String),
    /// The connection settings cannot work (bad host, fingerprint, CA file, token characters).
    #[error("invalid Proxmox connection settings: {0}")]
    Config(String),
    /// The request itself is malformed (e.g. a path with `..` segments); nothing was sent.
    #[error("invalid Proxmox API request: {0}")]
    InvalidRequest(String),
    /// The call's deadline passed while it waited for a free request slot; nothing was sent.
    #[error(
        "the call waited for one of the {max_inflight} request slots to this cluster until its \
         deadline passed; nothing was sent to Proxmox"
    )]
    Saturated {
        /// The in-flight bound that was full (`PVE_MAX_INFLIGHT`).
        max_inflight: usize,
    },
    /// The request's effects were not cleared for the running call (see `effects`); nothing
    /// was sent.
    #[error("refused before sending: {0}")]
    NotApproved(#[from] crate::effects::Refusal),
    /// The request does more than read and changes are frozen (`nandi-proxmox-mcp freeze`);
    /// nothing was sent.
    #[error("refused before sending: {0}")]
    Frozen(#[from] crate::effects::Frozen),
}

impl From<crate::effects::Stopped> for PveError {
    fn from(stopped: crate::effects::Stopped) -> PveError {
        match stopped {
            crate::effects::Stopped::NotApproved(refusal) => PveError::NotApproved(refusal),
            crate::effects::Stopped::Frozen(frozen) => PveError::Frozen(frozen),
        }
    }
}

fn http_text(status: u16, message: &str, errors: Option<&Map<String, Value>>) -> String {
    let mut text = format!("Proxmox API error (HTTP {status}): {message}");
    if let Some(errors) = errors.filter(|e| !e.is_empty()) {
        let parts: Vec<String> = errors
            .iter()
            .map(|(name, detail)| match detail {
                Value::String(s) => format!("{name}: {}", s.trim()),
                other => format!("{name}: {other}"),
            })
            .collect();
        text.push_str(" [");
        text.push_str(&parts.join("; "));
        text.push(']');
    }
    text
}

impl PveError {
    /// Stable error code (the reference implementation's names).
    pub fn code(&self) -> &'static str {
        if let Some(code) = self.message_code() {
            return code;
        }
        match self {
            PveError::Http {
                status, message, ..
            } => match *status {
                401 => "PROXMOX_AUTH_FAILED",
                403 => "PROXMOX_ACL_FORBIDDEN",
                404 => "PROXMOX_NOT_FOUND",
                500 if says_missing(message) => "PROXMOX_NOT_FOUND",
                501 => "PROXMOX_REQUEST_REJECTED",
                s if s >= 500 => "PROXMOX_SERVER_ERROR",
                _ => "PROXMOX_REQUEST_REJECTED",
            },
            PveError::InvalidResponse { .. } => "PROXMOX_INVALID_RESPONSE",
            PveError::Timeout | PveError::Saturated { .. } => "TIMEOUT",
            PveError::ConnectionRefused => "CONNECTION_REFUSED",
            PveError::Dns => "DNS_RESOLUTION_FAILED",
            PveError::HostUnreachable => "HOST_UNREACHABLE",
            PveError::Tls(_) => "TLS_ERROR",
            PveError::ConnectionReset => "CONNECTION_RESET",
            PveError::Cancelled => "CANCELLED",
            PveError::Other(_) => "UNHANDLED_ERROR",
            PveError::Config(_) => "INVALID_CONFIGURATION",
            PveError::InvalidRequest(_) => "TOOL_INPUT_REJECTED",
            // `envelope::codes::EFFECT_NOT_APPROVED` (pinned by a test): the envelope sits above
            // this client and maps its errors, so the client does not import it.
            PveError::NotApproved(_) => "EFFECT_NOT_APPROVED",
            // `envelope::codes::FROZEN`, pinned the same way.
            PveError::Frozen(_) => "FROZEN",
        }
    }

    /// Codes decided by Proxmox's wording rather than the status: guest agent and cloud-init.
    /// Not applied to 401/403, whose meaning must never be masked.
    fn message_code(&self) -> Option<&'static str> {
        let text = match self {
            PveError::Http {
                status, message, ..
            } if *status != 401 && *status != 403 => message,
            PveError::Other(message) => message,
            _ => return None,
        }
        .to_lowercase();
        if text.contains("qemu guest agent is not running")
            || text.contains("no qemu guest agent configured")
        {
            Some("QEMU_GUEST_AGENT_UNAVAILABLE")
        } else if text.contains("cloud-init") && text.contains("not") {
            Some("CLOUDINIT_UNAVAILABLE")
        } else {
            None
        }
    }

    /// HTTP status, for `Http` and `InvalidResponse`.
    pub fn status(&self) -> Option<u16> {
        match self {
            PveError::Http { status, .. } | PveError::InvalidResponse { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// Whether repeating a read after this failure is safe and may help: a 502/503/504 (a proxy
    /// or pveproxy could not get an answer), or a connect-phase failure of a request that was
    /// never sent (`sent == false`: refused, unreachable, reset or timed out while connecting).
    /// Everything else is final: Proxmox answers 500 for permanent errors (wrong node, unknown
    /// UPID), a timeout after sending may be a hang that would hang again, DNS and TLS failures
    /// do not heal between attempts.
    pub fn is_retryable(&self, sent: bool) -> bool {
        match self {
            PveError::Http { status, .. } => matches!(status, 502..=504),
            PveError::ConnectionRefused
            | PveError::HostUnreachable
            | PveError::ConnectionReset
            | PveError::Timeout => !sent,
            _ => false,
        }
    }

    /// A short, actionable hint for the user, when there is one.
    pub fn hint(&self) -> Option<String> {
        if let PveError::Frozen(frozen) = self {
            return Some(format!("Nothing was sent to Proxmox: {}", frozen.hint()));
        }
        if let PveError::NotApproved(refusal) = self {
            return Some(format!(
                "Nothing was sent to Proxmox. A person approves every request that does more \
                 than read ({}); call a tool whose approval covers it, at a tier that allows it.",
                refusal.beyond.names().join(", ")
            ));
        }
        if let PveError::Saturated { .. } = self {
            return Some(
                "Nothing was sent. Too many calls were in flight at once; send fewer calls in \
                 parallel, or raise PVE_MAX_INFLIGHT or PVE_CALL_DEADLINE_SECS."
                    .to_owned(),
            );
        }
        let hint = match self.code() {
            "PROXMOX_AUTH_FAILED" => {
                "Check the token id (user@realm!token), the token secret, and that the token was \
                 created with --privsep 0 or has its own ACL entries."
            }
            "PROXMOX_ACL_FORBIDDEN" => {
                "Grant the privilege named in Proxmox's message on the path named there, e.g. \
                 `pveum acl modify <path> --roles <role> --tokens <user@realm!token>` (or \
                 `--users <user@realm>` for a token without privilege separation)."
            }
            "PROXMOX_NOT_FOUND" => {
                "Check that the node, guest id or other object named in the request exists \
                 (list them first)."
            }
            "PROXMOX_SERVER_ERROR" if matches!(self.status(), Some(595 | 596)) => {
                "The target node is unreachable from the node this server talks to; check that \
                 it is online and that the cluster network and quorum are healthy."
            }
            "PROXMOX_SERVER_ERROR" if matches!(self.status(), Some(502..=504)) => {
                "A proxy in front of Proxmox, or pveproxy itself, could not get an answer; check \
                 that pveproxy and pvedaemon are running on the node (`systemctl status pveproxy \
                 pvedaemon`), then retry."
            }
            "PROXMOX_SERVER_ERROR" => {
                "Proxmox failed while handling the request; read its message, check the task log \
                 or `journalctl -u pveproxy -u pvedaemon` on the node, then retry."
            }
            "PROXMOX_REQUEST_REJECTED" if self.details_errors().is_some() => {
                "Fix the parameters named in details.errors."
            }
            "PROXMOX_REQUEST_REJECTED" => {
                "Proxmox rejected the request; check its message and the parameters sent."
            }
            "PROXMOX_INVALID_RESPONSE" => {
                "Something other than the Proxmox API answered (a reverse proxy, captive portal or \
                 login page?); check the host and port (pveproxy listens on 8006)."
            }
            "TIMEOUT" => {
                "The node did not answer in time; check that it is reachable (VPN, firewall, port \
                 8006) or raise the timeout. A write may still have been carried out: check the \
                 task list before repeating it."
            }
            "CONNECTION_REFUSED" => {
                "Nothing accepts connections on that host and port; check the host, the port \
                 (default 8006) and that pveproxy is running."
            }
            "DNS_RESOLUTION_FAILED" => {
                "The host name could not be resolved; check its spelling and your DNS or VPN, or \
                 use the node's IP address."
            }
            "HOST_UNREACHABLE" => {
                "There is no route to the host; check the network, VPN and firewall between this \
                 machine and the node."
            }
            "TLS_ERROR" => {
                "Pin the node's certificate fingerprint with PROXMOX_TLS_FINGERPRINT (or \
                 tlsFingerprint in the instance file), or give the CA that signed it with \
                 PROXMOX_TLS_CA_FILE (on a node: /etc/pve/pve-root-ca.pem)."
            }
            "CONNECTION_RESET" => {
                "The connection dropped mid-request (proxy, VPN or a pveproxy restart); retry. A \
                 write may still have been carried out: check the task list before repeating it."
            }
            "QEMU_GUEST_AGENT_UNAVAILABLE" => {
                "Install and start qemu-guest-agent inside the guest and enable the agent option \
                 (`qm set <vmid> --agent enabled=1`, then restart the VM)."
            }
            "CLOUDINIT_UNAVAILABLE" => {
                "Add a cloud-init drive to the VM first (`qm set <vmid> --ide2 \
                 <storage>:cloudinit`)."
            }
            "INVALID_CONFIGURATION" => {
                "Fix the connection settings (host, port, token, TLS options) and restart."
            }
            _ => return None,
        };
        Some(hint.to_owned())
    }

    /// Structured detail for the error envelope: `{"status": …, "errors": {…}}` for HTTP errors
    /// (`errors` only when Proxmox sent them), `{"status": …}` for an invalid response.
    pub fn details(&self) -> Option<Value> {
        match self {
            PveError::Http { status, errors, .. } => {
                let mut details = json!({ "status": status });
                if let (Some(errors), Some(obj)) = (errors, details.as_object_mut()) {
                    obj.insert("errors".to_owned(), Value::Object(errors.clone()));
                }
                Some(details)
            }
            PveError::InvalidResponse { status, .. } => Some(json!({ "status": status })),
            PveError::NotApproved(refusal) => Some(json!({
                "refusedRequest": refusal.what,
                "effectsNotApproved": refusal.beyond.names(),
                "reasons": refusal.classified.reason_lines(),
            })),
            _ => None,
        }
    }

    fn details_errors(&self) -> Option<&Map<String, Value>> {
        match self {
            PveError::Http {
                errors: Some(errors),
                ..
            } if !errors.is_empty() => Some(errors),
            _ => None,
        }
    }
}

/// Proxmox reports a missing guest or object as HTTP 500 with this kind of wording.
fn says_missing(message: &str) -> bool {
    let lower = message.to_lowercase();
    lower.contains("does not exist") || lower.contains("no such")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_approved_has_the_envelope_code() {
        let refused = PveError::NotApproved(crate::effects::Refusal {
            what: String::new(),
            beyond: Default::default(),
            classified: Default::default(),
        });
        assert_eq!(refused.code(), crate::envelope::codes::EFFECT_NOT_APPROVED);
    }

    #[test]
    fn frozen_has_the_envelope_code_and_says_how_to_lift_it() {
        let frozen = PveError::Frozen(crate::effects::Frozen {
            note: crate::effects::FreezeNote {
                reason: Some("incident".into()),
                ..Default::default()
            },
            unreadable: None,
        });
        assert_eq!(frozen.code(), crate::envelope::codes::FROZEN);
        let hint = frozen.hint().unwrap_or_default();
        assert!(hint.contains("Nothing was sent"), "{hint}");
        assert!(
            hint.contains("incident") && hint.contains("unfreeze"),
            "{hint}"
        );
    }

    fn http(status: u16, message: &str) -> PveError {
        PveError::Http {
            status,
            message: message.to_owned(),
            errors: None,
        }
    }

    #[test]
    fn status_codes_map_to_stable_codes() {
        let table = [
            (401, "authentication failure", "PROXMOX_AUTH_FAILED"),
            (403, "Permission check failed", "PROXMOX_ACL_FORBIDDEN"),
            (404, "Not Found", "PROXMOX_NOT_FOUND"),
            (
                500,
                "Configuration file 'x.conf' does not exist",
                "PROXMOX_NOT_FOUND",
            ),
            (500, "No such user", "PROXMOX_NOT_FOUND"),
            (500, "boom", "PROXMOX_SERVER_ERROR"),
            (502, "does not exist", "PROXMOX_SERVER_ERROR"),
            (595, "no route", "PROXMOX_SERVER_ERROR"),
            (501, "Method not implemented", "PROXMOX_REQUEST_REJECTED"),
            (
                400,
                "Parameter verification failed.",
                "PROXMOX_REQUEST_REJECTED",
            ),
            (302, "Found", "PROXMOX_REQUEST_REJECTED"),
        ];
        for (status, message, code) in table {
            assert_eq!(http(status, message).code(), code, "{status} {message}");
        }
        let plain = [
            (
                PveError::InvalidResponse {
                    status: 200,
                    snippet: "x".into(),
                },
                "PROXMOX_INVALID_RESPONSE",
            ),
            (PveError::Timeout, "TIMEOUT"),
            (PveError::ConnectionRefused, "CONNECTION_REFUSED"),
            (PveError::Dns, "DNS_RESOLUTION_FAILED"),
            (PveError::HostUnreachable, "HOST_UNREACHABLE"),
            (PveError::Tls("x".into()), "TLS_ERROR"),
            (PveError::ConnectionReset, "CONNECTION_RESET"),
            (PveError::Cancelled, "CANCELLED"),
            (PveError::Other("x".into()), "UNHANDLED_ERROR"),
            (PveError::Config("x".into()), "INVALID_CONFIGURATION"),
            (PveError::InvalidRequest("x".into()), "TOOL_INPUT_REJECTED"),
        ];
        for (err, code) in plain {
            assert_eq!(err.code(), code);
        }
    }

    #[test]
    fn wording_codes_win_over_status_but_not_over_auth() {
        assert_eq!(
            http(500, "QEMU guest agent is not running").code(),
            "QEMU_GUEST_AGENT_UNAVAILABLE"
        );
        assert_eq!(
            http(500, "No QEMU guest agent configured").code(),
            "QEMU_GUEST_AGENT_UNAVAILABLE"
        );
        assert_eq!(
            PveError::Other("cloud-init drive not found".into()).code(),
            "CLOUDINIT_UNAVAILABLE"
        );
        assert_eq!(
            http(403, "QEMU guest agent is not running").code(),
            "PROXMOX_ACL_FORBIDDEN"
        );
    }

    #[test]
    fn only_gateway_errors_and_unsent_requests_are_retryable() {
        for status in [502, 503, 504] {
            assert!(http(status, "busy").is_retryable(true), "{status}");
        }
        for (status, message) in [
            (500, "boom"),
            (500, "no such task"),
            (500, "VM 999 does not exist"),
            (501, "nope"),
            (400, "bad"),
            (403, "no"),
            (595, "no route"),
            (596, "timeout"),
        ] {
            assert!(!http(status, message).is_retryable(true), "{status}");
            assert!(!http(status, message).is_retryable(false), "{status}");
        }
        for err in [
            PveError::Timeout,
            PveError::ConnectionRefused,
            PveError::ConnectionReset,
            PveError::HostUnreachable,
        ] {
            assert!(err.is_retryable(false), "{err:?} before sending");
            assert!(!err.is_retryable(true), "{err:?} after sending");
        }
        for err in [
            PveError::Dns,
            PveError::Tls("x".into()),
            PveError::Cancelled,
            PveError::Saturated { max_inflight: 4 },
            PveError::InvalidResponse {
                status: 200,
                snippet: String::new(),
            },
        ] {
            assert!(!err.is_retryable(false), "{err:?}");
        }
        let saturated = PveError::Saturated { max_inflight: 4 };
        assert_eq!(saturated.code(), "TIMEOUT");
        assert!(saturated.hint().unwrap().contains("PVE_MAX_INFLIGHT"));
        assert!(saturated.to_string().contains("nothing was sent"));
    }

    #[test]
    fn details_and_hints_keep_proxmox_detail() {
        let mut errors = Map::new();
        errors.insert("vmid".into(), Value::String("invalid format\n".into()));
        let err = PveError::Http {
            status: 400,
            message: "Parameter verification failed.".into(),
            errors: Some(errors),
        };
        assert_eq!(
            err.details(),
            Some(json!({"status": 400, "errors": {"vmid": "invalid format\n"}}))
        );
        assert!(err.hint().unwrap().contains("details.errors"));
        let text = err.to_string();
        assert!(text.contains("Parameter verification failed."), "{text}");
        assert!(text.contains("vmid: invalid format"), "{text}");
        assert_eq!(http(500, "x").details(), Some(json!({"status": 500})));
        assert!(http(595, "x").hint().unwrap().contains("unreachable"));
        assert!(http(401, "x").hint().unwrap().contains("privsep"));
        assert!(http(403, "x").hint().unwrap().contains("pveum acl modify"));
        assert!(
            PveError::Tls("x".into())
                .hint()
                .unwrap()
                .contains("PROXMOX_TLS_FINGERPRINT")
        );
        assert!(PveError::Cancelled.hint().is_none());
        assert!(PveError::Timeout.details().is_none());
    }
}
