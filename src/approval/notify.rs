//! Tells a person that a gated call waits for them: the `PVE_APPROVAL_NOTIFY` webhook.
//!
//! Two shapes: a JSON POST `{tool, question, link, expires_at, requested_by}` for any receiver,
//! or an ntfy topic (`ntfy+https://…`): the question as the plain-text body, the link in the
//! `Click` header, a short `Title`. One rustls `reqwest` client (system trust store, no
//! redirects, bounded timeouts) is built at start-up.
//!
//! Invariant: the webhook URL (its path or query may carry a token) never reaches a log line or
//! an error message — only its scheme and host do. The notice carries the approval link, which
//! is the permission itself, so it only ever travels over https or to a loopback host: plain
//! http elsewhere is refused at start-up (`policy::approval_links`).

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::policy::{NotifyKind, NotifyTarget};

/// Longest time one notification may take, connection included.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Connection set-up bound.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a notice says.
#[derive(Debug)]
pub struct Notice<'a> {
    /// Canonical tool name.
    pub tool: &'a str,
    /// The question, as the form shows it.
    pub question: &'a str,
    /// The approval page.
    pub link: &'a str,
    /// When the link stops working.
    pub expires_at: SystemTime,
    /// Who asked for the call (`stdio`, `static token`, `oauth:<sub>`).
    pub requested_by: &'a str,
}

/// Sends notices to the configured webhook.
#[derive(Clone)]
pub struct Notifier {
    target: NotifyTarget,
    /// The client, or why none could be built (then every notice fails with that reason).
    http: Result<reqwest::Client, String>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// A notifier for `target`. When no TLS client can be built (no system trust store) every
    /// notice fails, so the calls are refused: a webhook is never silently skipped.
    pub fn new(target: NotifyTarget) -> Notifier {
        let http = client();
        if let Err(why) = &http {
            tracing::error!(webhook = %target.redacted(), error = %why, "PVE_APPROVAL_NOTIFY cannot be used");
        }
        Notifier { target, http }
    }

    /// `scheme://host` of the webhook, for messages.
    pub fn shown(&self) -> String {
        self.target.redacted()
    }

    /// Sends `notice`; the error says why without the URL's secret parts.
    pub async fn send(&self, notice: &Notice<'_>) -> Result<(), String> {
        let http = self.http.as_ref().map_err(Clone::clone)?;
        let url = self.target.expose().clone();
        let request = match self.target.kind() {
            NotifyKind::Json => http
                .post(url)
                .header("Content-Type", "application/json")
                .body(
                    json!({
                        "tool": notice.tool,
                        "question": notice.question,
                        "link": notice.link,
                        "expires_at": rfc3339(notice.expires_at),
                        "requested_by": notice.requested_by,
                    })
                    .to_string(),
                ),
            NotifyKind::Ntfy => http
                .post(url)
                .header("Title", format!("Approve {}?", notice.tool))
                .header("Click", notice.link)
                .header("Tags", "warning")
                .header("Content-Type", "text/plain; charset=utf-8")
                .body(format!(
                    "{}\n\nApprove or decline: {}\n(requested by {}; the link expires at {})",
                    notice.question,
                    notice.link,
                    notice.requested_by,
                    rfc3339(notice.expires_at)
                )),
        };
        let response = request.send().await.map_err(|e| {
            let why = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "could not connect"
            } else {
                "request failed"
            };
            format!("{} {why}", self.shown())
        })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!(
                "{} answered HTTP {}",
                self.shown(),
                status.as_u16()
            ))
        }
    }
}

/// The webhook client: rustls with the system's trust store, no redirects, bounded times.
fn client() -> Result<reqwest::Client, String> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|e| format!("cannot load the system's CA certificates: {e}"))?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(verifier))
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(SEND_TIMEOUT)
        .user_agent(concat!("nandi-proxmox-mcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// `2026-01-02T03:04:05Z`.
fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notifier_prints_its_target_without_the_secret() {
        let links = crate::policy::LinkSettings::from_lookup(|key| {
            (key == "PVE_APPROVAL_NOTIFY")
                .then(|| "https://hooks.example.com/approve?token=sekrit-hook-token".to_owned())
        })
        .expect("settings");
        let notifier = Notifier::new(links.notify.expect("a webhook"));
        let printed = format!("{notifier:?}");
        assert!(
            printed.starts_with("Notifier { target: NotifyTarget("),
            "{printed}"
        );
        assert!(printed.contains("hooks.example.com"), "{printed}");
        assert!(!printed.contains("sekrit"), "{printed}");
        assert_eq!(notifier.shown(), "https://hooks.example.com");
    }

    #[test]
    fn times_are_written_in_utc() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_323_045);
        assert_eq!(rfc3339(at), "2026-01-02T03:04:05Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00Z");
    }
}
