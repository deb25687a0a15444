//! The download address guard on its own: every refused class in every spelling, names
//! resolving to loopback, and the allow-list letting one through.

use nandi_proxmox_mcp::composite::address_guard::{
    AllowList, CheckedUrl, GuardError, check, check_resolved, check_syntax, ipv4_class, ipv6_class,
    parse_ipv4_legacy,
};
use std::net::{Ipv4Addr, Ipv6Addr};

fn none() -> AllowList {
    AllowList::default()
}

#[test]
fn inet_aton_spellings_parse_like_the_c_library() {
    for (text, want) in [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("10.0x10.1", "10.16.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        // 255 is the largest byte a leading part may hold.
        ("255.255.255.255", "255.255.255.255"),
        ("0xff.1", "255.0.0.1"),
    ] {
        assert_eq!(
            parse_ipv4_legacy(text).map(|a| a.to_string()).as_deref(),
            Some(want),
            "{text}"
        );
    }
    for text in [
        "256.0.0.1",
        "1.2.3.4.5",
        // Five parts are refused even when the fifth is 0, and a leading part over 255
        // never spills into the byte before it.
        "1.2.3.4.0",
        "1.256.1",
        "example.com",
        "1..2",
        "08.0.0.1",
        "4294967296",
        "",
    ] {
        assert_eq!(parse_ipv4_legacy(text), None, "{text}");
    }
}

#[test]
fn every_refused_class_in_every_spelling() {
    let refused = [
        // loopback
        "http://127.0.0.1/x.iso",
        "http://2130706433/x.iso",
        "http://0177.0.0.1/x.iso",
        "http://0x7f.1/x.iso",
        "http://127.1/x.iso",
        "http://127.0.0.1./x.iso",
        "http://[::1]/x.iso",
        "http://good@127.0.0.1/x.iso",
        "http://localhost/x.iso",
        "http://foo.localhost/x.iso",
        // private
        "https://10.1.2.3/x.iso",
        "https://172.16.0.1/x.iso",
        "https://172.31.255.255/x.iso",
        "https://192.168.1.1/x.iso",
        "https://0xc0a80101/x.iso",
        "https://3232235777/x.iso",
        // link-local and metadata
        "http://169.254.169.254/latest/meta-data/",
        "http://0xa9fea9fe/",
        "http://2852039166/",
        "http://[fe80::1]/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://METADATA.google.internal./",
        // CGNAT
        "http://100.64.0.1/",
        "http://100.100.100.200/",
        // multicast, unspecified, broadcast
        "http://224.0.0.1/",
        "http://[ff02::1]/",
        "http://0.0.0.0/",
        "http://0/",
        "http://[::]/",
        "http://255.255.255.255/",
        // IPv4-mapped / compatible IPv6, unique-local
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::127.0.0.1]/",
        "http://[fc00::1]/",
        "http://[64:ff9b::a00:1]/",
        // NAT64 local use, Teredo, 6to4 embedding a private address
        "http://[64:ff9b:1::a00:1]/",
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        "http://[2002:a00:1::]/",
        "http://[2002:7f00:1::1]/",
        // 6to4 relay anycast, literal, in a legacy spelling and embedded in 6to4
        "http://192.88.99.1/x.iso",
        "http://0xc0.0x58.0x63.1/x.iso",
        "http://3227017985/x.iso",
        "http://[2002:c058:6301::1]/x.iso",
    ];
    for url in refused {
        let err = check_syntax(url, &none()).expect_err(url);
        assert!(
            matches!(
                err,
                GuardError::Address { .. } | GuardError::BlockedName(_) | GuardError::Credentials
            ),
            "{url}: {err}"
        );
    }
}

#[test]
fn schemes_and_credentials_are_refused() {
    for url in [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://x/",
        "javascript:alert(1)",
    ] {
        assert!(check_syntax(url, &none()).is_err(), "{url}");
    }
    assert_eq!(
        check_syntax("https://user:pw@example.com/x.iso", &none()),
        Err(GuardError::Credentials)
    );
}

#[test]
fn public_addresses_pass_and_are_normalised() {
    let ok = check_syntax("https://0x5d.0xb8.0xd8.0x22/debian.iso", &none()).unwrap();
    assert_eq!(ok.url, "https://93.184.216.34/debian.iso");
    assert!(!ok.needs_resolution);
    let named = check_syntax("https://Deb.Debian.ORG./x.iso", &none()).unwrap();
    assert_eq!(named.host, "deb.debian.org");
    assert!(named.needs_resolution);
    // A backslash cannot hide a host: the URL sent is the normalised one.
    let tricky = check_syntax("http://example.com\\@127.0.0.1/x", &none()).unwrap();
    assert_eq!(tricky.host, "example.com");
    assert!(tricky.url.starts_with("http://example.com/"));
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_after_resolution() {
    // The resolution step on its own: `localhost` resolves to loopback and is refused as
    // an address (not only by name).
    let checked = CheckedUrl {
        url: "http://localhost/x.iso".into(),
        host: "localhost".into(),
        port: 80,
        needs_resolution: true,
    };
    let err = check_resolved(&checked, &none()).await.unwrap_err();
    assert!(
        matches!(
            err,
            GuardError::Address {
                class: "loopback",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        check_resolved(&checked, &AllowList::parse(["127.0.0.0/8", "::1"]))
            .await
            .is_ok()
    );
    let err = check("http://ip6-localhost/x.iso", &none()).await;
    assert!(err.is_err(), "{err:?}");
    let allow = AllowList::parse(["ip6-localhost"]);
    // Listed by name: passes without resolving.
    assert!(check("http://ip6-localhost/x.iso", &allow).await.is_ok());
}

#[test]
fn the_allow_list_lets_listed_hosts_and_networks_through() {
    let allow = AllowList::parse(["127.0.0.1", "10.0.0.0/8", "mirror.lan"]);
    assert!(check_syntax("http://127.0.0.1/x.iso", &allow).is_ok());
    assert!(check_syntax("http://0x7f.0.0.1/x.iso", &allow).is_ok());
    assert!(check_syntax("http://10.9.8.7/x.iso", &allow).is_ok());
    assert!(check_syntax("http://127.0.0.2/x.iso", &allow).is_err());
    assert!(check_syntax("http://192.168.0.1/x.iso", &allow).is_err());
    let lan = check_syntax("http://mirror.lan/x.iso", &allow).unwrap();
    assert!(!lan.needs_resolution);
}

#[test]
fn allow_list_networks_take_v6_brackets_and_refuse_impossible_prefixes() {
    let allow = AllowList::parse(["[fd00::]/8", "192.168.0.0/33", "172.16.0.0/12"]);
    assert!(check_syntax("http://[fd12::1]/x.iso", &allow).is_ok());
    assert!(check_syntax("http://[fe80::1]/x.iso", &allow).is_err());
    assert!(check_syntax("http://172.31.255.1/x.iso", &allow).is_ok());
    assert!(check_syntax("http://10.0.0.1/x.iso", &allow).is_err());
    // A /33 is no IPv4 network: the entry does not open 192.168.0.0/16 or anything else.
    assert!(check_syntax("http://192.168.0.1/x.iso", &allow).is_err());
}

#[test]
fn the_last_part_fills_exactly_the_bytes_left() {
    for (text, want) in [
        ("1.16777215", Some("1.255.255.255")),
        ("1.2.65535", Some("1.2.255.255")),
        ("1.2.3.255", Some("1.2.3.255")),
        // One more than the bytes left hold: refused, never carried into a leading byte.
        ("1.16777216", None),
        ("1.2.65536", None),
        ("1.2.3.256", None),
    ] {
        assert_eq!(
            parse_ipv4_legacy(text).map(|a| a.to_string()).as_deref(),
            want,
            "{text}"
        );
    }
}

#[test]
fn a_bare_hex_prefix_is_zero_and_overlong_parts_are_no_address() {
    // `0x` alone is 0, as inet_aton reads it.
    assert_eq!(parse_ipv4_legacy("0x"), Some(Ipv4Addr::new(0, 0, 0, 0)));
    assert_eq!(
        parse_ipv4_legacy("0x.0.0.1"),
        Some(Ipv4Addr::new(0, 0, 0, 1))
    );
    assert!(check_syntax("http://0x.0.0.1/x.iso", &none()).is_err());
    // Twelve digits are read; a thirteenth makes the part no number at all.
    assert_eq!(
        parse_ipv4_legacy("0x00007f000001"),
        Some(Ipv4Addr::new(127, 0, 0, 1))
    );
    assert_eq!(parse_ipv4_legacy("0x000007f000001"), None);
    assert_eq!(
        parse_ipv4_legacy("0000000000001"),
        Some(Ipv4Addr::new(0, 0, 0, 1))
    );
    assert_eq!(parse_ipv4_legacy("00000000000001"), None);
}

#[test]
fn special_purpose_ipv4_blocks_are_named() {
    for (ip, want) in [
        (
            Ipv4Addr::new(192, 0, 0, 8),
            Some("IETF protocol assignment"),
        ),
        (
            Ipv4Addr::new(192, 0, 0, 170),
            Some("IETF protocol assignment"),
        ),
        (Ipv4Addr::new(192, 0, 2, 1), Some("documentation")),
        (Ipv4Addr::new(198, 51, 100, 7), Some("documentation")),
        (Ipv4Addr::new(203, 0, 113, 9), Some("documentation")),
        (
            Ipv4Addr::new(192, 88, 99, 1),
            Some("6to4 relay anycast (RFC 7526)"),
        ),
        (
            Ipv4Addr::new(192, 88, 99, 255),
            Some("6to4 relay anycast (RFC 7526)"),
        ),
        // Their neighbours route on the internet.
        (Ipv4Addr::new(192, 88, 98, 1), None),
        (Ipv4Addr::new(192, 88, 100, 1), None),
        (Ipv4Addr::new(192, 0, 1, 1), None),
        (Ipv4Addr::new(192, 0, 3, 1), None),
        (Ipv4Addr::new(198, 51, 101, 1), None),
        (Ipv4Addr::new(203, 0, 114, 1), None),
    ] {
        assert_eq!(ipv4_class(ip), want, "{ip}");
    }
}

#[test]
fn benchmarking_addresses_are_named() {
    assert_eq!(
        ipv4_class(Ipv4Addr::new(198, 18, 0, 1)),
        Some("benchmarking")
    );
    assert_eq!(
        ipv4_class(Ipv4Addr::new(198, 19, 255, 1)),
        Some("benchmarking")
    );
    assert_eq!(ipv4_class(Ipv4Addr::new(198, 20, 0, 1)), None);
}

#[test]
fn every_refused_ipv6_class_is_named_and_public_ipv6_passes() {
    let v6 = |text: &str| text.parse::<Ipv6Addr>().expect(text);
    for (ip, want) in [
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("ff02::1", "multicast"),
        ("fe80::1", "link-local"),
        ("febf::1", "link-local"),
        ("fec0::1", "site-local"),
        ("feff::1", "site-local"),
        ("fc00::1", "unique-local (fc00::/7) or cloud-metadata"),
        ("fd00:ec2::254", "unique-local (fc00::/7) or cloud-metadata"),
        ("::ffff:8.8.8.8", "IPv4-mapped IPv6"),
        ("::8.8.8.8", "IPv4-compatible IPv6"),
        ("2001:db8::1", "documentation"),
        ("64:ff9b:1::8.8.8.8", "local-use NAT64 (64:ff9b:1::/48)"),
        ("2001:0:4136:e378::1", "Teredo (2001::/32)"),
        (
            "64:ff9b::127.0.0.1",
            "IPv6 embedding a refused IPv4 address",
        ),
        ("2002:a9fe:a9fe::1", "IPv6 embedding a refused IPv4 address"),
        ("2002:c058:6301::1", "IPv6 embedding a refused IPv4 address"),
        (
            "64:ff9b::192.88.99.1",
            "IPv6 embedding a refused IPv4 address",
        ),
    ] {
        assert_eq!(ipv6_class(v6(ip)), Some(want), "{ip}");
    }
    for ip in [
        "2606:4700:4700::1111",
        "2001:4860:4860::8888",
        // ffff in the sixth group of a routed address is no IPv4 mapping.
        "2606:4700::ffff:101:101",
        "64:ff9b::8.8.8.8",
        "2002:808:808::1",
        "2001:db9::1",
        "64:ff9b:2::1",
    ] {
        assert_eq!(ipv6_class(v6(ip)), None, "{ip}");
        let url = format!("http://[{ip}]/x.iso");
        assert!(check_syntax(&url, &none()).is_ok(), "{url}");
    }
}

#[test]
fn a_user_name_or_a_password_alone_is_refused() {
    for url in [
        "http://user@mirror.example/x.iso",
        "http://:secret@mirror.example/x.iso",
        "https://user:secret@mirror.example/x.iso",
    ] {
        assert!(
            matches!(check_syntax(url, &none()), Err(GuardError::Credentials)),
            "{url}"
        );
    }
}
