//! The download address guard: which URLs `pve_download_to_storage` may hand to Proxmox.
//!
//! Invariant: a URL passes only when it is `http`/`https` without credentials and every
//! address it names — the literal host in any IPv4 spelling (`inet_aton` forms: decimal,
//! octal, hex, short), a bracketed IPv6 literal, or each address a host name resolves to —
//! is a public unicast address, unless the host or the address is on the operator's
//! allow-list. The URL handed on is the normalised form that was checked, so Proxmox never
//! sees a spelling the guard did not. Proxmox resolves the name again when it downloads
//! (DNS rebinding stays a residual risk, documented in docs/THREAT_MODEL.md).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use ipnet::IpNet;

/// Host names refused whatever they resolve to (cloud metadata services and loopback names).
const BLOCKED_NAMES: &[&str] = &[
    "localhost",
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.internal",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.tencentyun.com",
    "metadata.platformequinix.com",
];

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// Not a URL the guard can read.
    #[error("the URL cannot be parsed: {0}")]
    Unparsable(String),
    /// A scheme other than http/https.
    #[error("only http and https URLs can be downloaded, not {0}:")]
    Scheme(String),
    /// A user name or password in the URL.
    #[error("credentials in the URL are refused (they would be kept in the task log)")]
    Credentials,
    /// No host at all.
    #[error("the URL has no host")]
    NoHost,
    /// A host name that is refused by name.
    #[error("the host {0} is a loopback or cloud-metadata name")]
    BlockedName(String),
    /// An address in a refused class.
    #[error("{host} is or resolves to {address}, a {class} address")]
    Address {
        /// The host as written (normalised).
        host: String,
        /// The offending address.
        address: IpAddr,
        /// Its class (loopback, private, …).
        class: &'static str,
    },
    /// The name did not resolve.
    #[error("the host {0} does not resolve: {1}")]
    Unresolved(String, String),
}

/// The operator's exceptions (`PVE_DOWNLOAD_ALLOW`): host names and addresses/CIDRs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    hosts: Vec<String>,
    networks: Vec<IpNet>,
}

impl AllowList {
    /// Reads comma-separated entries: a host name, an address, or `address/prefix`.
    /// Start-up (`policy::Settings`) has already refused any entry that is neither.
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> AllowList {
        let mut list = AllowList::default();
        for entry in entries {
            let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
            if entry.is_empty() {
                continue;
            }
            if let Some(net) = parse_network(&entry) {
                list.networks.push(net);
            } else {
                list.hosts.push(entry);
            }
        }
        list
    }

    fn allows_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h == host)
    }

    fn allows_address(&self, address: IpAddr) -> bool {
        self.networks.iter().any(|net| net.contains(&address))
    }
}

/// `a.b.c.d/n`, `v6/n` or a bare address (a full-length prefix), brackets allowed around v6.
fn parse_network(entry: &str) -> Option<IpNet> {
    let (addr, prefix) = match entry.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (entry, None),
    };
    let addr: IpAddr = addr.trim_matches(['[', ']']).parse().ok()?;
    match prefix {
        None => Some(IpNet::from(addr)),
        Some(p) => IpNet::new(addr, p.parse().ok()?).ok(),
    }
}

/// A URL that passed the syntactic checks: its normalised text and what must still be
/// resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedUrl {
    /// The normalised URL (the one sent to Proxmox).
    pub url: String,
    /// The host as normalised.
    pub host: String,
    /// Port to resolve with.
    pub port: u16,
    /// A host name that must still be resolved and every address checked.
    pub needs_resolution: bool,
}

/// Parses a legacy IPv4 spelling as `inet_aton` does: 1 to 4 parts separated by dots,
/// each decimal, octal (leading `0`) or hex (`0x`); the last part fills the remaining
/// bytes (`127.1` = 127.0.0.1, `2130706433` = 127.0.0.1). One trailing dot is allowed.
pub fn parse_ipv4_legacy(text: &str) -> Option<Ipv4Addr> {
    let text = text.strip_suffix('.').unwrap_or(text);
    let parts: Vec<&str> = text.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for part in &parts {
        values.push(parse_ipv4_part(part)?);
    }
    let (last, leading) = values.split_last()?;
    let mut address: u64 = 0;
    for (i, value) in leading.iter().enumerate() {
        if *value > 255 {
            return None;
        }
        address |= value << (24 - 8 * i);
    }
    let remaining_bits = 32 - 8 * leading.len() as u32;
    if *last >= 1u64 << remaining_bits {
        return None;
    }
    address |= last;
    u32::try_from(address).ok().map(Ipv4Addr::from)
}

fn parse_ipv4_part(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let lower = part.to_ascii_lowercase();
    let (digits, radix) = if let Some(hex) = lower.strip_prefix("0x") {
        (hex, 16)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    if digits.is_empty() {
        // `0x` alone is 0 for inet_aton.
        return (radix == 16).then_some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The refused class of an IPv4 address, if any.
pub fn ipv4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let class = match (a, b, c) {
        (0, _, _) => "unspecified (this-network)",
        (10, _, _) => "private (RFC 1918)",
        (100, 64..=127, _) => "carrier-grade NAT (100.64/10)",
        (127, _, _) => "loopback",
        (169, 254, _) => "link-local or cloud-metadata",
        (172, 16..=31, _) => "private (RFC 1918)",
        (192, 0, 0) => "IETF protocol assignment",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        // 6to4 relay anycast (RFC 3068), deprecated by RFC 7526: whoever answers it is a
        // relay chosen by routing, not a download server.
        (192, 88, 99) => "6to4 relay anycast (RFC 7526)",
        (192, 168, _) => "private (RFC 1918)",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved or broadcast",
        _ => return None,
    };
    Some(class)
}

/// The refused class of an IPv6 address, if any (embedded IPv4 checked where it routes).
pub fn ipv6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if segments[0] & 0xff00 == 0xff00 {
        return Some("multicast");
    }
    if segments[0] & 0xffc0 == 0xfe80 {
        return Some("link-local");
    }
    if segments[0] & 0xffc0 == 0xfec0 {
        return Some("site-local");
    }
    if segments[0] & 0xfe00 == 0xfc00 {
        return Some("unique-local (fc00::/7) or cloud-metadata");
    }
    if segments[..5].iter().all(|s| *s == 0) && segments[5] == 0xffff {
        return Some("IPv4-mapped IPv6");
    }
    if segments[..6].iter().all(|s| *s == 0) {
        return Some("IPv4-compatible IPv6");
    }
    if segments[0] == 0x2001 && segments[1] == 0x0db8 {
        return Some("documentation");
    }
    // Local-use NAT64 (64:ff9b:1::/48, RFC 8215) embeds IPv4 at a prefix length the network
    // chooses, and Teredo (2001::/32) reaches a relay and an obfuscated client address: neither
    // can be checked for the IPv4 host it ends at, so both are refused.
    if segments[0] == 0x64 && segments[1] == 0xff9b && segments[2] == 1 {
        return Some("local-use NAT64 (64:ff9b:1::/48)");
    }
    if segments[0] == 0x2001 && segments[1] == 0 {
        return Some("Teredo (2001::/32)");
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach the IPv4 address they embed.
    let embedded = if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(ipv4_of(segments[6], segments[7]))
    } else if segments[0] == 0x2002 {
        Some(ipv4_of(segments[1], segments[2]))
    } else {
        None
    };
    embedded
        .and_then(ipv4_class)
        .map(|_| "IPv6 embedding a refused IPv4 address")
}

/// The IPv4 address held by two IPv6 groups, high group first.
fn ipv4_of(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// The refused class of an address, if any.
pub fn address_class(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => ipv4_class(v4),
        IpAddr::V6(v6) => ipv6_class(v6),
    }
}

fn check_address(host: &str, address: IpAddr, allow: &AllowList) -> Result<(), GuardError> {
    match address_class(address) {
        Some(class) if !allow.allows_address(address) => Err(GuardError::Address {
            host: host.to_owned(),
            address,
            class,
        }),
        _ => Ok(()),
    }
}

/// Checks everything that needs no resolution: scheme, credentials, literal addresses in
/// any spelling, refused names.
pub fn check_syntax(raw: &str, allow: &AllowList) -> Result<CheckedUrl, GuardError> {
    let parsed = url::Url::parse(raw.trim()).map_err(|e| GuardError::Unparsable(e.to_string()))?;
    let scheme = parsed.scheme().to_owned();
    if scheme != "http" && scheme != "https" {
        return Err(GuardError::Scheme(scheme));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(GuardError::Credentials);
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    let (host, needs_resolution) = match parsed.host() {
        None => return Err(GuardError::NoHost),
        Some(url::Host::Ipv4(v4)) => {
            let host = v4.to_string();
            if !allow.allows_host(&host) {
                check_address(&host, IpAddr::V4(v4), allow)?;
            }
            (host, false)
        }
        Some(url::Host::Ipv6(v6)) => {
            let host = v6.to_string();
            if !allow.allows_host(&host) {
                check_address(&host, IpAddr::V6(v6), allow)?;
            }
            (host, false)
        }
        Some(url::Host::Domain(domain)) => {
            let host = domain.trim_end_matches('.').to_ascii_lowercase();
            if allow.allows_host(&host) {
                (host, false)
            } else {
                // A name a resolver would read as an IPv4 address is checked as one.
                if let Some(v4) = parse_ipv4_legacy(&host) {
                    check_address(&host, IpAddr::V4(v4), allow)?;
                }
                if BLOCKED_NAMES.contains(&host.as_str()) || host.ends_with(".localhost") {
                    return Err(GuardError::BlockedName(host));
                }
                (host, true)
            }
        }
    };
    Ok(CheckedUrl {
        url: parsed.to_string(),
        host,
        port,
        needs_resolution,
    })
}

/// Resolves the host of a checked URL and refuses it if any address is in a refused class.
pub async fn check_resolved(checked: &CheckedUrl, allow: &AllowList) -> Result<(), GuardError> {
    if !checked.needs_resolution {
        return Ok(());
    }
    let lookup = tokio::net::lookup_host((checked.host.as_str(), checked.port));
    let addresses = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
        Err(_) => {
            return Err(GuardError::Unresolved(
                checked.host.clone(),
                "timed out".into(),
            ));
        }
        Ok(Err(e)) => return Err(GuardError::Unresolved(checked.host.clone(), e.to_string())),
        Ok(Ok(addresses)) => addresses.map(|a| a.ip()).collect::<Vec<_>>(),
    };
    if addresses.is_empty() {
        return Err(GuardError::Unresolved(
            checked.host.clone(),
            "no addresses".into(),
        ));
    }
    for address in addresses {
        check_address(&checked.host, address, allow)?;
    }
    Ok(())
}

/// The whole guard: syntax, then resolution. Returns the URL to send.
pub async fn check(raw: &str, allow: &AllowList) -> Result<String, GuardError> {
    let checked = check_syntax(raw, allow)?;
    check_resolved(&checked, allow).await?;
    Ok(checked.url)
}
