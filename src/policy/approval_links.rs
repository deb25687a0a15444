//! Settings of approval by link: a page a person opens to approve or decline one gated call,
//! reached through URL-mode elicitation or a webhook (`PVE_APPROVAL_NOTIFY`).
//!
//! Invariants: the webhook URL is a secret (its query or path may carry a token) and is never
//! shown by `Debug` or an error; it is `https`, or plain `http` only to a loopback host
//! (127.0.0.0/8, ::1, `localhost` — the rule of the OAuth issuer URL), because the notice carries
//! the approval link, which is the permission itself; a base URL is an absolute `http(s)` URL without query or
//! fragment; `PVE_HUMAN_APPROVAL=confirm` and `PVE_APPROVAL_NOTIFY` together are refused at
//! start-up (one says nobody is asked, the other names who is); `PVE_APPROVERS` names exactly
//! one rule (the caller themself, or one scope), and a scope is a valid RFC 6749 scope token.

use std::net::{IpAddr, SocketAddr};

use thiserror::Error;
use url::Url;

/// Where a person is told that a call waits for them (a webhook or an ntfy topic).
pub const ENV_APPROVAL_NOTIFY: &str = "PVE_APPROVAL_NOTIFY";
/// The public address of the approval page, as a person's browser reaches it.
pub const ENV_APPROVAL_BASE_URL: &str = "PVE_APPROVAL_BASE_URL";
/// Which way a client that declares both form and URL elicitation is asked.
pub const ENV_APPROVAL_VIA: &str = "PVE_APPROVAL_VIA";
/// Address of the approval page's own listener under the stdio transport.
pub const ENV_APPROVAL_LISTEN: &str = "PVE_APPROVAL_LISTEN";
/// Who may decide an approval link of an OAuth caller: `caller` or `scope:<name>`.
pub const ENV_APPROVERS: &str = "PVE_APPROVERS";
/// Where the stdio transport's approval page listens unless `PVE_APPROVAL_LISTEN` says.
pub const DEFAULT_APPROVAL_LISTEN: &str = "127.0.0.1:8788";

/// Scheme prefix marking an ntfy topic (`ntfy+https://ntfy.sh/topic`).
const NTFY_PREFIX: &str = "ntfy+";

/// How a webhook is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyKind {
    /// A JSON POST `{tool, question, link, expires_at, requested_by}`.
    Json,
    /// An ntfy topic: the question as plain text, the link in `Click`.
    Ntfy,
}

/// The webhook of `PVE_APPROVAL_NOTIFY`. Invariant: never shown by `Debug`; only its scheme and
/// host are fit for a log line ([`NotifyTarget::redacted`]).
#[derive(Clone, PartialEq, Eq)]
pub struct NotifyTarget {
    kind: NotifyKind,
    url: Url,
}

impl std::fmt::Debug for NotifyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NotifyTarget({:?}, {})", self.kind, self.redacted())
    }
}

impl NotifyTarget {
    /// How the target is spoken to.
    pub fn kind(&self) -> NotifyKind {
        self.kind
    }

    /// The URL to POST to (a secret: never log it).
    pub fn expose(&self) -> &Url {
        &self.url
    }

    /// `scheme://host[:port]`, the most a log line or error may show.
    pub fn redacted(&self) -> String {
        let host = self.url.host_str().unwrap_or("?");
        match self.url.port() {
            Some(port) => format!("{}://{host}:{port}", self.url.scheme()),
            None => format!("{}://{host}", self.url.scheme()),
        }
    }
}

/// Which elicitation a client that declares both modes gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalVia {
    /// The form in the client (default); URL mode only for clients that declare only URL.
    Form,
    /// The approval page (URL mode) whenever the client declares URL elicitation.
    Url,
}

/// Who may decide an approval link for a caller that signed in with OAuth (`PVE_APPROVERS`).
/// Callers without OAuth (static token, stdio) keep the capability link: whoever holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ApproverRule {
    /// Only the person the caller's token names (`sub`), signed in at the authorization server.
    #[default]
    Caller,
    /// Any person signed in at the authorization server whose token carries this scope.
    Scope(String),
}

impl ApproverRule {
    /// `caller` or `scope:<name>`, as the variable is written.
    pub fn as_setting(&self) -> String {
        match self {
            ApproverRule::Caller => "caller".to_owned(),
            ApproverRule::Scope(name) => format!("scope:{name}"),
        }
    }
}

/// The link-approval settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSettings {
    /// `PVE_APPROVAL_NOTIFY`: whom to tell when a client cannot ask a person.
    pub notify: Option<NotifyTarget>,
    /// `PVE_APPROVAL_BASE_URL`: the page's public address; else derived by the transport.
    pub base_url: Option<Url>,
    /// `PVE_APPROVAL_VIA`: form or url for clients that declare both.
    pub via: ApprovalVia,
    /// `PVE_APPROVAL_LISTEN` as given (the stdio page listener); `None`: not set.
    pub listen: Option<SocketAddr>,
    /// `PVE_APPROVERS`: who may decide a link of an OAuth caller.
    pub approvers: ApproverRule,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            notify: None,
            base_url: None,
            via: ApprovalVia::Form,
            listen: None,
            approvers: ApproverRule::Caller,
        }
    }
}

/// A link-approval setting that cannot be honoured. Never quotes the webhook URL.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LinkSettingsError {
    /// `PVE_APPROVAL_NOTIFY` is not an https (or loopback http) or ntfy+https URL.
    #[error(
        "{ENV_APPROVAL_NOTIFY} is not usable ({problem}); give an https URL (plain http only to a loopback host: 127.0.0.0/8, ::1, localhost), or ntfy+https://host/topic for an ntfy topic"
    )]
    Notify {
        /// What is wrong (without the value: it may hold a token).
        problem: &'static str,
    },
    /// `PVE_APPROVAL_BASE_URL` is not an absolute http(s) URL without query.
    #[error(
        "{ENV_APPROVAL_BASE_URL}={value:?} is not valid; give the page's public address, e.g. https://mcp.example.com"
    )]
    BaseUrl {
        /// The rejected value.
        value: String,
    },
    /// `PVE_APPROVAL_VIA` is not `form` or `url`.
    #[error("{ENV_APPROVAL_VIA}={value:?} is not valid; use one of: form, url")]
    Via {
        /// The rejected value.
        value: String,
    },
    /// `PVE_APPROVERS` is not `caller` or `scope:<name>`.
    #[error(
        "{ENV_APPROVERS}={value:?} is not valid; use `caller` (the person who made the call) or `scope:<name>` (anyone whose token carries that scope), e.g. scope:proxmox:approve"
    )]
    Approvers {
        /// The rejected value.
        value: String,
    },
    /// `PVE_APPROVAL_LISTEN` is not `ip:port`.
    #[error(
        "{ENV_APPROVAL_LISTEN}={value:?} is not valid; give ip:port, e.g. {DEFAULT_APPROVAL_LISTEN}"
    )]
    Listen {
        /// The rejected value.
        value: String,
    },
    /// `PVE_HUMAN_APPROVAL=confirm` with `PVE_APPROVAL_NOTIFY`.
    #[error(
        "PVE_HUMAN_APPROVAL=confirm (nobody is asked) contradicts {ENV_APPROVAL_NOTIFY} (a person approves by link); unset one of them"
    )]
    NotifyWithConfirm,
}

impl LinkSettings {
    /// Reads the four variables through `get` (trimmed, empty = unset).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<LinkSettings, LinkSettingsError> {
        let mut settings = LinkSettings::default();
        if let Some(value) = get(ENV_APPROVAL_NOTIFY) {
            settings.notify = Some(parse_notify(&value)?);
        }
        if let Some(value) = get(ENV_APPROVAL_BASE_URL) {
            settings.base_url =
                Some(parse_base_url(&value).ok_or(LinkSettingsError::BaseUrl { value })?);
        }
        if let Some(value) = get(ENV_APPROVAL_VIA) {
            settings.via = match value.to_ascii_lowercase().as_str() {
                "form" => ApprovalVia::Form,
                "url" => ApprovalVia::Url,
                _ => return Err(LinkSettingsError::Via { value }),
            };
        }
        if let Some(value) = get(ENV_APPROVAL_LISTEN) {
            settings.listen = Some(
                value
                    .parse::<SocketAddr>()
                    .map_err(|_| LinkSettingsError::Listen { value })?,
            );
        }
        if let Some(value) = get(ENV_APPROVERS) {
            settings.approvers =
                parse_approvers(&value).ok_or(LinkSettingsError::Approvers { value })?;
        }
        Ok(settings)
    }

    /// The stdio page listener's address: `PVE_APPROVAL_LISTEN`, else the default.
    pub fn listen_or_default(&self) -> SocketAddr {
        self.listen
            .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 8788)))
    }
}

fn parse_notify(value: &str) -> Result<NotifyTarget, LinkSettingsError> {
    let (kind, rest) = match value.strip_prefix(NTFY_PREFIX) {
        Some(rest) => (NotifyKind::Ntfy, rest),
        None => (NotifyKind::Json, value),
    };
    let url = Url::parse(rest).map_err(|_| LinkSettingsError::Notify {
        problem: "not a URL",
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LinkSettingsError::Notify {
            problem: "the scheme is not http or https",
        });
    }
    let host = url.host_str().unwrap_or_default();
    if host.is_empty() {
        return Err(LinkSettingsError::Notify { problem: "no host" });
    }
    // The notice carries the approval link: whoever reads it in transit can approve.
    if url.scheme() == "http" && !is_loopback_host(host) {
        return Err(LinkSettingsError::Notify {
            problem: "plain http to a host that is not loopback would send the approval link, which is the permission itself, readable in transit",
        });
    }
    if url.fragment().is_some() {
        return Err(LinkSettingsError::Notify {
            problem: "a fragment is never sent",
        });
    }
    Ok(NotifyTarget { kind, url })
}

/// Whether a URL's host (brackets allowed) is a loopback address (127.0.0.0/8, ::1) or
/// `localhost`: where plain http may go. The same rule as the OAuth issuer's
/// (`transport::http::oauth::is_loopback_host`, a layer above this one, so not importable
/// here; a unit test below checks that both agree).
fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `caller`, or `scope:` and one scope token (printable ASCII without blanks, quotes or
/// backslashes).
fn parse_approvers(value: &str) -> Option<ApproverRule> {
    if value.eq_ignore_ascii_case("caller") {
        return Some(ApproverRule::Caller);
    }
    let scope = value.strip_prefix("scope:")?;
    let valid = !scope.is_empty()
        && scope
            .chars()
            .all(|c| c == '!' || matches!(c, '#'..='[' | ']'..='~'));
    valid.then(|| ApproverRule::Scope(scope.to_owned()))
}

/// An absolute http(s) URL without query or fragment, its path ending in `/` (so the page's
/// path is appended, not substituted).
fn parse_base_url(value: &str) -> Option<Url> {
    let mut url = Url::parse(value).ok()?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none_or(str::is_empty)
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<LinkSettings, LinkSettingsError> {
        LinkSettings::from_lookup(|k| {
            pairs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn webhooks_and_ntfy_topics_are_read_and_never_shown() {
        let settings = read(&[(
            ENV_APPROVAL_NOTIFY,
            "ntfy+https://ntfy.example/sekrit-topic?auth=tk_secret",
        )])
        .unwrap();
        let target = settings.notify.clone().unwrap();
        assert_eq!(target.kind(), NotifyKind::Ntfy);
        assert_eq!(target.expose().host_str(), Some("ntfy.example"));
        let shown = format!("{settings:?}");
        assert!(
            !shown.contains("tk_secret") && !shown.contains("sekrit"),
            "{shown}"
        );
        let json = read(&[(ENV_APPROVAL_NOTIFY, "https://hooks.example/x")]).unwrap();
        assert_eq!(json.notify.unwrap().kind(), NotifyKind::Json);
        for bad in ["ftp://x/y", "not a url", "ntfy+mailto:x@y"] {
            let err = read(&[(ENV_APPROVAL_NOTIFY, bad)]).unwrap_err();
            assert!(!err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn the_webhook_and_the_oauth_issuer_share_one_loopback_rule() {
        use crate::transport::http::oauth::is_loopback_host as issuer;
        for host in [
            "127.0.0.1",
            "127.255.0.9",
            "::1",
            "[::1]",
            "localhost",
            "LocalHost",
            "0.0.0.0",
            "[::]",
            "10.0.0.1",
            "[::ffff:7f00:1]",
            "localhost.example.com",
            "hooks.example.com",
        ] {
            assert_eq!(is_loopback_host(host), issuer(host), "{host}");
        }
        assert!(is_loopback_host("127.0.0.1") && is_loopback_host("[::1]"));
        assert!(!is_loopback_host("hooks.example.com") && !is_loopback_host("0.0.0.0"));
    }

    #[test]
    fn plain_http_webhooks_are_read_only_to_loopback() {
        for good in [
            "http://127.0.0.1:9/hook",
            "http://127.8.9.10/hook",
            "http://[::1]:9/hook",
            "http://localhost:9/hook",
            "http://LOCALHOST/hook",
            "ntfy+http://127.0.0.1:9/topic",
            "https://hooks.example/x",
            "ntfy+https://ntfy.example/topic",
        ] {
            assert!(read(&[(ENV_APPROVAL_NOTIFY, good)]).is_ok(), "{good}");
        }
        for bad in [
            "http://hooks.example/x?token=tk_secret",
            "ntfy+http://ntfy.example/tk_secret",
            "http://10.0.0.5/tk_secret",
            "http://0.0.0.0/tk_secret",
            "http://[::]/tk_secret",
            "http://[::ffff:127.0.0.1]/tk_secret",
            "http://localhost.example/tk_secret",
        ] {
            let err = read(&[(ENV_APPROVAL_NOTIFY, bad)]).unwrap_err().to_string();
            assert!(
                err.starts_with("PVE_APPROVAL_NOTIFY is not usable (plain http"),
                "{bad}: {err}"
            );
            assert!(!err.contains("tk_secret"), "{err}");
        }
    }

    #[test]
    fn base_urls_end_in_a_slash_and_bad_values_are_refused() {
        let settings = read(&[(ENV_APPROVAL_BASE_URL, "https://mcp.example/pve")]).unwrap();
        assert_eq!(
            settings.base_url.unwrap().as_str(),
            "https://mcp.example/pve/"
        );
        for bad in ["mcp.example", "https://mcp.example/?a=b", "ftp://x"] {
            assert!(read(&[(ENV_APPROVAL_BASE_URL, bad)]).is_err(), "{bad}");
        }
        assert!(read(&[(ENV_APPROVAL_VIA, "email")]).is_err());
        assert_eq!(
            read(&[(ENV_APPROVAL_VIA, "url")]).unwrap().via,
            ApprovalVia::Url
        );
        assert!(read(&[(ENV_APPROVAL_LISTEN, "localhost")]).is_err());
        assert_eq!(read(&[]).unwrap().approvers, ApproverRule::Caller);
        assert_eq!(
            read(&[(ENV_APPROVERS, "scope:proxmox:approve")])
                .unwrap()
                .approvers,
            ApproverRule::Scope("proxmox:approve".into())
        );
        for bad in ["everyone", "scope:", "scope:a b", "group:admins"] {
            assert!(read(&[(ENV_APPROVERS, bad)]).is_err(), "{bad}");
        }
        assert_eq!(
            LinkSettings::default().listen_or_default().to_string(),
            DEFAULT_APPROVAL_LISTEN
        );
    }
}
