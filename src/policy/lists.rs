//! The list-valued policy settings: the comma lists of categories, tools and download hosts.
//!
//! Invariant: a list is never silently narrowed — an entry that names no category, no canonical
//! tool (an alias included) or no host, address or CIDR is an error naming it and the valid
//! values, never dropped.

use std::collections::BTreeSet;

use super::PolicyError;
use crate::catalog::{self, Category};

/// The entries of a comma-separated setting, trimmed, empty ones dropped.
pub(crate) fn split_list(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// `PVE_DOWNLOAD_ALLOW`: every entry a host name (letters, digits and `-` in dot-separated
/// labels of up to 63 characters, one trailing dot allowed), an IPv4 or IPv6 address (brackets
/// allowed around IPv6) or a CIDR (`address/prefix`, the prefix at most 32 or 128); anything
/// else — a URL, a port, a wildcard, a space — is refused by name, never silently dropped.
pub(super) fn parse_download_allow(value: &str) -> Result<Vec<String>, PolicyError> {
    split_list(value)
        .map(|entry| {
            download_allow_entry(entry)
                .map(|()| entry.to_ascii_lowercase())
                .map_err(|why| PolicyError::InvalidDownloadAllow {
                    entry: entry.to_owned(),
                    why,
                })
        })
        .collect()
}

/// Why one `PVE_DOWNLOAD_ALLOW` entry is refused, if it is.
fn download_allow_entry(entry: &str) -> Result<(), &'static str> {
    let address = |text: &str| text.trim_matches(['[', ']']).parse::<std::net::IpAddr>();
    if let Some((addr, prefix)) = entry.split_once('/') {
        let addr = address(addr).map_err(|_| "the part before `/` is not an IP address")?;
        let most = if addr.is_ipv4() { 32 } else { 128 };
        return match prefix.parse::<u8>() {
            Ok(p) if p <= most => Ok(()),
            _ => Err(if addr.is_ipv4() {
                "an IPv4 prefix is a number from 0 to 32"
            } else {
                "an IPv6 prefix is a number from 0 to 128"
            }),
        };
    }
    if address(entry).is_ok() {
        return Ok(());
    }
    if entry.contains("://") {
        return Err("a URL; give only its host");
    }
    let host = entry.strip_suffix('.').unwrap_or(entry);
    if host.is_empty() || host.len() > 253 {
        return Err("a host name is 1 to 253 characters");
    }
    for label in host.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(
                "not a host name: labels of letters, digits and `-`, no port, wildcard or space",
            );
        }
    }
    Ok(())
}

/// `PVE_CATEGORIES`: every name a category (any case); unknown names are listed with the valid ones.
pub(super) fn parse_categories(value: &str) -> Result<BTreeSet<Category>, PolicyError> {
    let mut found = BTreeSet::new();
    let mut unknown = Vec::new();
    for name in split_list(value) {
        match Category::parse(&name.to_ascii_lowercase()) {
            Some(category) => {
                found.insert(category);
            }
            None => unknown.push(name.to_owned()),
        }
    }
    if unknown.is_empty() {
        Ok(found)
    } else {
        let valid: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
        Err(PolicyError::UnknownCategories {
            unknown: unknown.join(", "),
            valid: valid.join(", "),
        })
    }
}

/// A tool list (`var`): every name a canonical tool; an alias is refused naming its tool.
pub(super) fn parse_tools(var: &'static str, value: &str) -> Result<BTreeSet<String>, PolicyError> {
    let known: BTreeSet<&str> = catalog::canonical_names().collect();
    let mut found = BTreeSet::new();
    let mut unknown = Vec::new();
    for name in split_list(value) {
        if known.contains(name) {
            found.insert(name.to_owned());
        } else if let Some(spec) = catalog::all().find(|s| s.aliases.contains(&name)) {
            unknown.push(format!("{name} (an alias: write {})", spec.name));
        } else {
            unknown.push(name.to_owned());
        }
    }
    if unknown.is_empty() {
        Ok(found)
    } else {
        let valid: Vec<&str> = known.into_iter().collect();
        Err(PolicyError::UnknownTools {
            var,
            unknown: unknown.join(", "),
            valid: valid.join(", "),
        })
    }
}
