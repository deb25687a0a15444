//! URL building for the Proxmox API: path segments, host formatting and path checks.
//!
//! Invariant: a value placed into a path segment can never change which endpoint is called.
//! Every byte other than RFC 3986 unreserved characters is percent-encoded (so `?`, `#`, `:`
//! cannot split or end the path); a rendered path with `.`/`..` segments is refused because URL
//! normalisation would silently move it to another endpoint; and a segment holding an encoded
//! `/` (`%2F`) is refused because pveproxy decodes the path before routing, so
//! `/cluster/backup/x%2Fincluded_volumes` would reach `/cluster/backup/{id}/included_volumes`.

use std::net::Ipv6Addr;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// Everything except ALPHA / DIGIT / `-` `.` `_` `~` is encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes `s` for use as one path segment: every character except the unreserved ones
/// (`A-Z a-z 0-9 - . _ ~`) is encoded, so `:` becomes `%3A` and `/` becomes `%2F` (a path
/// holding `%2F` is then refused by the client before sending; see the module invariant).
pub fn encode_path_segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// Formats `host` for the authority part of a URL: IPv6 literals get brackets (whether or not
/// the caller wrote them); hostnames and IPv4 addresses are returned trimmed.
///
/// Characters that would end or re-shape the authority (`/ ? # @ \` whitespace, stray brackets or
/// colons, `%`) are refused so a mistyped host cannot redirect the token elsewhere.
pub(crate) fn url_host(host: &str) -> Result<String, String> {
    let trimmed = host.trim();
    if trimmed.is_empty() {
        return Err("the Proxmox host is empty".to_owned());
    }
    let bracketed = trimmed
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'));
    let unbracketed = bracketed.unwrap_or(trimmed);
    if let Ok(v6) = unbracketed.parse::<Ipv6Addr>() {
        return Ok(format!("[{v6}]"));
    }
    if bracketed.is_some() {
        return Err(format!(
            "the Proxmox host {trimmed:?} is in brackets but is not an IPv6 address"
        ));
    }
    if unbracketed.contains(':') {
        return Err(format!(
            "the Proxmox host {trimmed:?} is neither a hostname nor a valid IP address \
             (give the port separately)"
        ));
    }
    let bad = |c: char| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '/' | '\\' | '?' | '#' | '@' | '[' | ']' | '%')
    };
    if unbracketed.chars().any(bad) {
        return Err(format!(
            "the Proxmox host {trimmed:?} contains characters not allowed in a hostname"
        ));
    }
    Ok(unbracketed.to_owned())
}

/// Checks a rendered API path: starts with `/`, has no query/fragment/whitespace, no segment
/// that decodes to `.` or `..`, and no encoded `/` inside a segment.
pub(crate) fn check_api_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("API path {path:?} must start with '/'"));
    }
    if path
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#' | '\\'))
    {
        return Err(format!(
            "API path {path:?} contains a character that must be percent-encoded"
        ));
    }
    for segment in path.split('/').skip(1) {
        let decoded = percent_decode_str(segment).decode_utf8_lossy();
        if decoded.contains('/') {
            return Err(format!(
                "API path {path:?} has a '/' inside a segment; Proxmox decodes it before \
                 routing, so the request would reach another endpoint"
            ));
        }
        if decoded == "." || decoded == ".." {
            return Err(format!(
                "API path {path:?} contains a '.' or '..' segment; path values cannot be \
                 relative references"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_everything_but_unreserved() {
        assert_eq!(encode_path_segment("pve01"), "pve01");
        assert_eq!(encode_path_segment("a-b.c_d~e"), "a-b.c_d~e");
        assert_eq!(
            encode_path_segment("UPID:pve01:0000C0DE:"),
            "UPID%3Apve01%3A0000C0DE%3A"
        );
        assert_eq!(encode_path_segment("a/b"), "a%2Fb");
        assert_eq!(encode_path_segment("x?y#z"), "x%3Fy%23z");
        assert_eq!(encode_path_segment("root@pam!t"), "root%40pam%21t");
        assert_eq!(encode_path_segment("a b%"), "a%20b%25");
        assert_eq!(encode_path_segment("ü"), "%C3%BC");
        assert_eq!(encode_path_segment(""), "");
    }

    #[test]
    fn hosts_are_bracketed_when_ipv6() {
        assert_eq!(url_host("::1").as_deref(), Ok("[::1]"));
        assert_eq!(url_host("[::1]").as_deref(), Ok("[::1]"));
        assert_eq!(url_host(" fe80::0:1 ").as_deref(), Ok("[fe80::1]"));
        assert_eq!(url_host("192.0.2.7").as_deref(), Ok("192.0.2.7"));
        assert_eq!(url_host("pve01.lan").as_deref(), Ok("pve01.lan"));
    }

    #[test]
    fn bad_hosts_are_refused() {
        for host in [
            "",
            "  ",
            "pve:8006",
            "evil.com/x",
            "a@b",
            "[pve]",
            "h#",
            "a b",
            "fe80::1%eth0",
        ] {
            assert!(url_host(host).is_err(), "{host:?} accepted");
        }
    }

    #[test]
    fn api_paths_are_checked() {
        assert!(check_api_path("/nodes/pve01/qemu/100/status/current").is_ok());
        assert!(check_api_path("/nodes/a%2Fb").is_err());
        assert!(check_api_path("/cluster/backup/x%2fincluded_volumes").is_err());
        assert!(check_api_path("/nodes/a%3Ab").is_ok());
        assert!(check_api_path("/").is_ok());
        assert!(check_api_path("nodes").is_err());
        assert!(check_api_path("/nodes?x=1").is_err());
        assert!(check_api_path("/nodes#x").is_err());
        assert!(check_api_path("/nodes/a b").is_err());
        assert!(check_api_path("/nodes/../access").is_err());
        assert!(check_api_path("/nodes/%2e%2E/access").is_err());
        assert!(check_api_path("/nodes/./x").is_err());
        assert!(check_api_path("/nodes/...").is_ok());
    }
}
