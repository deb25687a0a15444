//! Host and Origin checks: the DNS-rebinding and cross-site guard in front of every route.
//!
//! Invariant: a request is served only when its `Host` names this server (a loopback name, the
//! bind address unless it is a wildcard, or an `MCP_ALLOWED_HOSTS` entry) and, if it carries an
//! `Origin`, that origin is one of ours: an allowed host on the bound port or the scheme's default
//! port (or a port listed with the host), or an `MCP_ALLOWED_ORIGINS` entry. Unlike the reference
//! the rule is the same for every bind address, and a bound port is allowed in Origins.

use std::collections::BTreeSet;

/// Host names every server accepts: loopback is never reachable by a rebinding site's name.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 400: no usable Host header.
    HostMissing,
    /// 400: a Host header that normalizes to nothing.
    HostInvalid,
    /// 403: a Host that is not ours.
    HostNotAllowed,
    /// 403: an Origin that is not ours.
    OriginNotAllowed,
}

impl Refusal {
    /// HTTP status and the message of the JSON-RPC error body (the reference's texts).
    pub fn status_and_message(self) -> (u16, &'static str) {
        match self {
            Refusal::HostMissing => (400, "Bad Request: Host header is required"),
            Refusal::HostInvalid => (400, "Bad Request: Host header is invalid"),
            Refusal::HostNotAllowed => (403, "Forbidden: Host header is not allowed"),
            Refusal::OriginNotAllowed => (403, "Forbidden: Origin header is not allowed"),
        }
    }
}

/// An origin reduced to what is compared: scheme, host, effective port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

/// The allow-lists, built once from the settings and the bound port.
#[derive(Debug, Clone)]
pub struct HostGuard {
    hosts: BTreeSet<String>,
    origins: BTreeSet<Origin>,
}

impl HostGuard {
    /// Builds the lists. `bind_host` is `MCP_HOST`; `extra_hosts` are `MCP_ALLOWED_HOSTS`
    /// entries (a `name:port` entry also allows that port in Origins); `extra_origins` are
    /// `MCP_ALLOWED_ORIGINS` entries (invalid ones are returned so start-up can refuse them).
    pub fn new(
        bind_host: &str,
        bound_port: u16,
        extra_hosts: &[String],
        extra_origins: &[String],
    ) -> Result<HostGuard, String> {
        let mut hosts: BTreeSet<String> = LOOPBACK_NAMES.iter().map(|h| (*h).to_owned()).collect();
        let bind = normalize_host(bind_host);
        if !bind.is_empty() && bind != "0.0.0.0" && bind != "::" {
            hosts.insert(bind);
        }
        let mut extra_ports: Vec<(String, u16)> = Vec::new();
        for entry in extra_hosts {
            let (host, port) = split_host_port(entry);
            if host.is_empty() {
                return Err(format!(
                    "MCP_ALLOWED_HOSTS entry {entry:?} has no host name"
                ));
            }
            if let Some(port) = port {
                extra_ports.push((host.clone(), port));
            }
            hosts.insert(host);
        }
        let mut origins = BTreeSet::new();
        for host in &hosts {
            for (scheme, default) in [("http", 80), ("https", 443)] {
                for port in [bound_port, default] {
                    origins.insert(Origin {
                        scheme: scheme.into(),
                        host: host.clone(),
                        port,
                    });
                }
            }
        }
        for (host, port) in extra_ports {
            for scheme in ["http", "https"] {
                origins.insert(Origin {
                    scheme: scheme.into(),
                    host: host.clone(),
                    port,
                });
            }
        }
        for entry in extra_origins {
            let origin = parse_origin(entry).ok_or_else(|| {
                format!("MCP_ALLOWED_ORIGINS entry {entry:?} is not an http(s) origin")
            })?;
            origins.insert(origin);
        }
        Ok(HostGuard { hosts, origins })
    }

    /// Checks one request: its `Host` header (else the authority of an absolute URI) and its
    /// `Origin` header (a value that is not text counts as foreign).
    pub fn check_request<B>(&self, request: &axum::http::Request<B>) -> Result<(), Refusal> {
        let headers = request.headers();
        let host = headers
            .get(axum::http::header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| request.uri().authority().map(|a| a.to_string()));
        let origin = headers
            .get(axum::http::header::ORIGIN)
            .map(|v| v.to_str().unwrap_or("\u{0}"));
        self.check(host.as_deref(), origin)
    }

    /// Checks one request's `Host` and `Origin` header values.
    pub fn check(&self, host: Option<&str>, origin: Option<&str>) -> Result<(), Refusal> {
        let host = host.ok_or(Refusal::HostMissing)?;
        let host = normalize_host(host);
        if host.is_empty() {
            return Err(Refusal::HostInvalid);
        }
        if !self.hosts.contains(&host) {
            return Err(Refusal::HostNotAllowed);
        }
        if let Some(origin) = origin {
            match parse_origin(origin) {
                Some(o) if self.origins.contains(&o) => {}
                _ => return Err(Refusal::OriginNotAllowed),
            }
        }
        Ok(())
    }

    /// Allowed host names (for rmcp's own, equivalent Host check).
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(String::as_str)
    }

    /// Allowed origins with explicit ports (for rmcp's own, equivalent Origin check).
    pub fn origins(&self) -> impl Iterator<Item = String> + '_ {
        self.origins.iter().map(|o| {
            if o.host.contains(':') {
                format!("{}://[{}]:{}", o.scheme, o.host, o.port)
            } else {
                format!("{}://{}:{}", o.scheme, o.host, o.port)
            }
        })
    }
}

/// The reference's `normalizeHost`: trim, lower-case, `[v6]:port` → `v6`, `name:port` → `name`,
/// a bare IPv6 address (several colons) unchanged.
pub fn normalize_host(value: &str) -> String {
    split_host_port(value).0
}

fn split_host_port(value: &str) -> (String, Option<u16>) {
    let v = value.trim().to_ascii_lowercase();
    if let Some(rest) = v.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((inside, tail)) => (
                inside.to_owned(),
                tail.strip_prefix(':').and_then(|p| p.parse().ok()),
            ),
            None => (String::new(), None),
        };
    }
    if v.matches(':').count() == 1 {
        let (name, port) = v.split_once(':').unwrap_or((&v, ""));
        return (name.to_owned(), port.parse().ok());
    }
    (v, None)
}

fn parse_origin(value: &str) -> Option<Origin> {
    let v = value.trim().to_ascii_lowercase();
    let (scheme, rest) = v.split_once("://")?;
    let default = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (inside, tail) = bracketed.split_once(']')?;
        let port = match tail {
            "" => default,
            t => t.strip_prefix(':')?.parse().ok()?,
        };
        (inside.to_owned(), port)
    } else {
        match authority.split_once(':') {
            None => (authority.to_owned(), default),
            Some((h, p)) => (h.to_owned(), p.parse().ok()?),
        }
    };
    if host.is_empty() {
        return None;
    }
    Some(Origin {
        scheme: scheme.to_owned(),
        host,
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bind: &str, hosts: &[&str], origins: &[&str]) -> HostGuard {
        let hosts: Vec<String> = hosts.iter().map(|s| (*s).to_owned()).collect();
        let origins: Vec<String> = origins.iter().map(|s| (*s).to_owned()).collect();
        HostGuard::new(bind, 3000, &hosts, &origins).unwrap()
    }

    #[test]
    fn an_allowed_origin_is_scheme_host_and_port_only() {
        for entry in [
            "https://app.example.com/path",
            "https://app.example.com?x=1",
            "https://app.example.com#top",
            "https://user@app.example.com",
            "https://",
            "ftp://app.example.com",
        ] {
            let refused = HostGuard::new("127.0.0.1", 3000, &[], &[entry.to_owned()]);
            assert!(refused.is_err(), "{entry}");
        }
        assert!(
            HostGuard::new("127.0.0.1", 3000, &[], &["https://app.example.com/".into()]).is_ok()
        );
    }

    #[test]
    fn rmcp_gets_the_same_hosts_and_origins() {
        // rmcp checks Host and Origin again behind this guard; it must be handed the very
        // lists this guard enforces (an empty list would switch its check off).
        let g = guard("127.0.0.1", &["mcp.lan:8443"], &["https://app.example.com"]);
        let mut hosts: Vec<&str> = g.hosts().collect();
        hosts.sort_unstable();
        assert_eq!(hosts, ["127.0.0.1", "::1", "localhost", "mcp.lan"]);
        let mut origins: Vec<String> = g.origins().collect();
        origins.sort_unstable();
        assert!(
            origins.contains(&"https://app.example.com:443".to_owned())
                && origins.contains(&"http://localhost:3000".to_owned())
                && origins.contains(&"http://[::1]:3000".to_owned()),
            "{origins:?}"
        );
    }

    #[test]
    fn normalization_follows_the_reference() {
        assert_eq!(normalize_host(" LocalHost:3000 "), "localhost");
        assert_eq!(normalize_host("[::1]:3000"), "::1");
        assert_eq!(normalize_host("fe80::1"), "fe80::1");
        assert_eq!(normalize_host("[::1"), "");
    }

    #[test]
    fn loopback_names_pass_on_any_bind_and_foreign_names_never() {
        let g = guard("127.0.0.1", &[], &[]);
        for ok in [
            "127.0.0.1:3000",
            "localhost:3000",
            "[::1]:3000",
            "localhost",
        ] {
            assert_eq!(g.check(Some(ok), None), Ok(()), "{ok}");
        }
        for bad in ["evil.example", "evil.example:3000", "0.0.0.0:3000"] {
            assert_eq!(
                g.check(Some(bad), None),
                Err(Refusal::HostNotAllowed),
                "{bad}"
            );
        }
        assert_eq!(g.check(None, None), Err(Refusal::HostMissing));
        assert_eq!(g.check(Some(":3000"), None), Err(Refusal::HostInvalid));
    }

    #[test]
    fn a_wildcard_bind_adds_nothing_but_a_specific_address_is_allowed() {
        let wild = guard("0.0.0.0", &["mcp.lan"], &[]);
        assert_eq!(wild.check(Some("mcp.lan:3000"), None), Ok(()));
        assert_eq!(
            wild.check(Some("192.168.1.5:3000"), None),
            Err(Refusal::HostNotAllowed)
        );
        let lan = guard("192.168.1.5", &[], &[]);
        assert_eq!(lan.check(Some("192.168.1.5:3000"), None), Ok(()));
    }

    #[test]
    fn origins_may_carry_the_bound_port_or_a_listed_one() {
        let g = guard("127.0.0.1", &["mcp.lan:8443"], &["https://app.example.com"]);
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1:3000",
            "http://localhost",
            "https://[::1]:3000",
            "https://mcp.lan:8443",
            "https://mcp.lan",
            "https://app.example.com",
            "https://app.example.com:443",
        ] {
            assert_eq!(g.check(Some("localhost"), Some(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "http://localhost:5173",
            "http://evil.example",
            "http://evil.example:3000",
            "null",
            "file://",
            "http://app.example.com",
            "https://app.example.com:8443",
        ] {
            assert_eq!(
                g.check(Some("localhost"), Some(bad)),
                Err(Refusal::OriginNotAllowed),
                "{bad}"
            );
        }
    }

    #[test]
    fn invalid_configured_origins_are_refused_at_start() {
        let bad = vec!["not a url".to_owned()];
        assert!(HostGuard::new("127.0.0.1", 3000, &[], &bad).is_err());
    }
}
