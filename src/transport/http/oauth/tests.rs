//! Unit tests of the OAuth settings: what each variable accepts and refuses, scopes and tiers.

use std::collections::HashMap;

use super::*;

fn read(pairs: &[(&str, &str)], host: &str, proxy: bool) -> Result<OAuthSettings, String> {
    let map: HashMap<&str, &str> = pairs.iter().copied().collect();
    OAuthSettings::from_lookup(&|k| map.get(k).map(|v| (*v).to_owned()), host, proxy)
        .map_err(|e| e.to_string())
}

const BASE: &[(&str, &str)] = &[
    ("MCP_OAUTH_ISSUER", "https://id.example.com/realms/lab"),
    ("MCP_OAUTH_RESOURCE", "https://mcp.example.com/mcp"),
];

#[test]
fn defaults_and_the_metadata_url() {
    let s = read(BASE, "127.0.0.1", false).unwrap();
    assert_eq!(s.algorithms, DEFAULT_ALGORITHMS);
    assert_eq!(s.scopes.read, "proxmox:read");
    assert_eq!(
        s.metadata_url(),
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    );
    let doc = s.metadata(Tier::ReadExecute, "/mcp");
    assert_eq!(doc["resource"], "https://mcp.example.com/mcp");
    assert_eq!(
        doc["scopes_supported"],
        json!(["proxmox:read", "proxmox:operate"])
    );
    assert!(doc.get("resource_signing_alg_values_supported").is_none());
    // The root copy names the identifier its own URL stands for (RFC 9728 §3.3).
    assert_eq!(
        s.metadata(Tier::ReadExecute, "")["resource"],
        "https://mcp.example.com"
    );
    // A resource at the origin: the root copy is the resource, the `/mcp` copy names `/mcp`.
    let mut pairs = BASE.to_vec();
    pairs[1] = ("MCP_OAUTH_RESOURCE", "https://mcp.example.com/");
    let s = read(&pairs, "127.0.0.1", false).unwrap();
    assert_eq!(
        s.metadata(Tier::Full, "")["resource"],
        "https://mcp.example.com/"
    );
    assert_eq!(
        s.metadata(Tier::Full, "/mcp")["resource"],
        "https://mcp.example.com/mcp"
    );
}

#[test]
fn unsafe_urls_hosts_and_algorithms_are_refused() {
    for (name, value) in [
        ("MCP_OAUTH_ISSUER", "http://id.example.com"),
        ("MCP_OAUTH_JWKS_URL", "http://10.0.0.5/jwks"),
        ("MCP_OAUTH_RESOURCE", "mcp.example.com/mcp"),
        ("MCP_OAUTH_ALGORITHMS", "RS256,HS256"),
        ("MCP_OAUTH_ALGORITHMS", "none"),
        ("MCP_OAUTH_ALGORITHMS", "XS1"),
        ("MCP_OAUTH_SCOPE_READ", "proxmox read"),
        ("MCP_OAUTH_SCOPE_ADMIN", "proxmox:read"),
    ] {
        let mut pairs = BASE.to_vec();
        pairs.push((name, value));
        let err = read(&pairs, "127.0.0.1", false).unwrap_err();
        assert!(
            err.contains(name.trim_start_matches("MCP_OAUTH_SCOPE_")),
            "{err}"
        );
    }
    let local = [
        ("MCP_OAUTH_ISSUER", "http://127.0.0.1:8080"),
        ("MCP_OAUTH_RESOURCE", "http://localhost:3000/mcp"),
    ];
    assert!(read(&local, "127.0.0.1", false).is_ok());
    let err = read(BASE, "0.0.0.0", false).unwrap_err();
    assert!(err.contains("MCP_BEHIND_TLS_PROXY=true"), "{err}");
    assert!(read(BASE, "0.0.0.0", true).is_ok());
    assert!(
        read(&BASE[..1], "127.0.0.1", false)
            .unwrap_err()
            .contains("MCP_OAUTH_RESOURCE")
    );
}

#[test]
fn the_approval_client_and_its_secret_file() {
    assert_eq!(
        read(BASE, "127.0.0.1", false).unwrap().approval_client,
        None
    );
    let mut pairs = BASE.to_vec();
    pairs.push(("MCP_OAUTH_APPROVAL_CLIENT_ID", "pve-approval"));
    let client = read(&pairs, "127.0.0.1", false)
        .unwrap()
        .approval_client
        .unwrap();
    assert_eq!((client.id.as_str(), client.secret), ("pve-approval", None));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("secret");
    std::fs::write(&file, "s3cret\n").unwrap();
    let path = file.to_string_lossy().into_owned();
    pairs.push(("MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE", &path));
    let client = read(&pairs, "127.0.0.1", false)
        .unwrap()
        .approval_client
        .unwrap();
    assert_eq!(client.secret, Some(Secret::new("s3cret")));
    assert!(!format!("{client:?}").contains("s3cret"));
    let orphan = [
        BASE[0],
        BASE[1],
        ("MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE", &path),
    ];
    assert!(read(&orphan, "127.0.0.1", false).is_err());
}

#[test]
fn the_highest_known_scope_wins() {
    let s = read(BASE, "127.0.0.1", false).unwrap().scopes;
    assert_eq!(s.tier_of(["openid", "proxmox:read"]), Some(Tier::ReadOnly));
    assert_eq!(
        s.tier_of(["proxmox:admin", "proxmox:read"]),
        Some(Tier::Full)
    );
    assert_eq!(s.tier_of(["openid", "profile"]), None);
}

/// `HttpSettings` with `pairs` as the environment.
fn settings(
    pairs: &[(&str, &str)],
) -> Result<super::super::HttpSettings, super::super::SettingsError> {
    let map: HashMap<&str, &str> = pairs.iter().copied().collect();
    super::super::HttpSettings::from_lookup(|k| map.get(k).map(|v| (*v).to_owned()))
}

const TOKEN: (&str, &str) = ("MCP_AUTH_TOKEN", "0123456789abcdef0123");

#[test]
fn one_auth_mode_at_a_time() {
    const ISSUER: (&str, &str) = ("MCP_OAUTH_ISSUER", "https://id.example.com/realms/lab");
    const RESOURCE: (&str, &str) = ("MCP_OAUTH_RESOURCE", "https://mcp.example.com/mcp");
    const OAUTH: (&str, &str) = ("MCP_AUTH_MODE", "oauth");
    let s = settings(&[OAUTH, ISSUER, RESOURCE]).unwrap();
    assert!(matches!(s.auth, super::super::Auth::OAuth(_)));
    for mix in [
        vec![OAUTH, ISSUER, RESOURCE, TOKEN],
        vec![OAUTH, ISSUER, RESOURCE, ("MCP_ALLOW_NO_AUTH", "true")],
        vec![TOKEN, ISSUER],
        vec![("MCP_AUTH_MODE", "none"), TOKEN],
        vec![("MCP_AUTH_MODE", "none"), RESOURCE],
    ] {
        let err = settings(&mix).unwrap_err();
        assert!(
            matches!(err, super::super::SettingsError::AuthMix(_)),
            "{mix:?}: {err}"
        );
    }
    // OAuth off loopback needs the TLS proxy flag; the issuer must be https.
    let off = [OAUTH, ISSUER, RESOURCE, ("MCP_HOST", "0.0.0.0")];
    assert!(
        settings(&off)
            .unwrap_err()
            .to_string()
            .contains("MCP_BEHIND_TLS_PROXY")
    );
    let mut proxied = off.to_vec();
    proxied.push(("MCP_BEHIND_TLS_PROXY", "true"));
    assert!(settings(&proxied).is_ok());
    let plain = [
        OAUTH,
        ("MCP_OAUTH_ISSUER", "http://id.example.com"),
        RESOURCE,
    ];
    assert!(matches!(
        settings(&plain).unwrap_err(),
        super::super::SettingsError::OAuth(_)
    ));
    // The explicit modes keep today's rules.
    assert_eq!(
        settings(&[("MCP_AUTH_MODE", "none")]).unwrap().auth,
        super::super::Auth::Disabled
    );
    assert!(settings(&[("MCP_AUTH_MODE", "none"), ("MCP_HOST", "0.0.0.0")]).is_err());
    assert!(matches!(
        settings(&[("MCP_AUTH_MODE", "token"), TOKEN]).unwrap().auth,
        super::super::Auth::Bearer(_)
    ));
    assert_eq!(
        settings(&[("MCP_AUTH_MODE", "token")]).unwrap_err(),
        super::super::SettingsError::MissingToken
    );
    assert!(matches!(
        settings(&[("MCP_AUTH_MODE", "jwt")]).unwrap_err(),
        super::super::SettingsError::Invalid {
            name: "MCP_AUTH_MODE",
            ..
        }
    ));
}

#[test]
fn every_tier_has_its_scope_and_the_scope_list_grows_with_the_tier() {
    let s = read(BASE, "127.0.0.1", false).unwrap().scopes;
    assert_eq!(s.tier_of(["proxmox:operate"]), Some(Tier::ReadExecute));
    assert_eq!(
        s.tier_of(["proxmox:operate", "proxmox:read"]),
        Some(Tier::ReadExecute)
    );
    assert_eq!(s.tier_of(["proxmox:read"]), Some(Tier::ReadOnly));
    assert_eq!(s.tier_of(["proxmox:admin"]), Some(Tier::Full));
    assert_eq!(s.tier_of([]), None);
    assert_eq!(s.up_to(Tier::ReadOnly), ["proxmox:read"]);
    assert_eq!(
        s.up_to(Tier::ReadExecute),
        ["proxmox:read", "proxmox:operate"]
    );
    assert_eq!(
        s.up_to(Tier::Full),
        ["proxmox:read", "proxmox:operate", "proxmox:admin"]
    );
}

#[test]
fn scope_names_are_printable_words_and_three_different_ones() {
    for (name, value) in [
        ("MCP_OAUTH_SCOPE_READ", "pve!read"),
        ("MCP_OAUTH_SCOPE_OPERATE", "urn:x:operate~1"),
        ("MCP_OAUTH_SCOPE_ADMIN", "admin[]"),
    ] {
        let mut pairs = BASE.to_vec();
        pairs.push((name, value));
        assert!(read(&pairs, "127.0.0.1", false).is_ok(), "{name}={value}");
    }
    for value in ["a\"b", "a\\b", "a\tb", "", "é"] {
        let mut pairs = BASE.to_vec();
        pairs.push(("MCP_OAUTH_SCOPE_OPERATE", value));
        assert!(read(&pairs, "127.0.0.1", false).is_err(), "{value:?}");
    }
    for (a, b) in [
        ("MCP_OAUTH_SCOPE_READ", "MCP_OAUTH_SCOPE_OPERATE"),
        ("MCP_OAUTH_SCOPE_READ", "MCP_OAUTH_SCOPE_ADMIN"),
        ("MCP_OAUTH_SCOPE_OPERATE", "MCP_OAUTH_SCOPE_ADMIN"),
    ] {
        let mut pairs = BASE.to_vec();
        pairs.extend([(a, "same"), (b, "same")]);
        let err = read(&pairs, "127.0.0.1", false).unwrap_err();
        assert!(err.contains("three different scopes"), "{a} {b}: {err}");
    }
}

#[test]
fn loopback_hosts_in_every_spelling() {
    for host in [
        "127.0.0.1",
        "127.9.9.9",
        "::1",
        "[::1]",
        "localhost",
        "LocalHost",
    ] {
        assert!(is_loopback_host(host), "{host}");
        assert!(read(BASE, host, false).is_ok(), "{host}");
    }
    for host in [
        "0.0.0.0",
        "10.0.0.1",
        "[::]",
        "localhost.example.com",
        "mcp.example.com",
    ] {
        assert!(!is_loopback_host(host), "{host}");
        assert!(read(BASE, host, false).is_err(), "{host}");
        assert!(read(BASE, host, true).is_ok(), "{host}");
    }
    assert!(secure_url("X", "http://[::1]:8080/x").is_ok());
    assert!(secure_url("X", "https://id.example.com/#frag").is_err());
    assert!(secure_url("X", "ftp://id.example.com/").is_err());
}

#[test]
fn algorithm_lists_name_each_algorithm_once() {
    let all = "RS256,RS384,RS512,PS256,PS384,PS512,ES256,ES384,EdDSA";
    let parsed = parse_algorithms(&format!(" {all} , ES256,,")).unwrap();
    let names: Vec<String> = parsed.iter().map(|a| format!("{a:?}")).collect();
    assert_eq!(names.join(","), all);
    for refused in ["HS384", "HS512", "rs256", " , "] {
        assert!(parse_algorithms(refused).is_err(), "{refused}");
    }
    assert!(
        parse_algorithms(" , ")
            .unwrap_err()
            .to_string()
            .contains("lists no algorithm")
    );
}

#[test]
fn an_approval_client_id_is_one_printable_word() {
    for id in ["pve approval", "pve\tapproval", "pve\napproval"] {
        let mut pairs = BASE.to_vec();
        pairs.push(("MCP_OAUTH_APPROVAL_CLIENT_ID", id));
        let err = read(&pairs, "127.0.0.1", false).unwrap_err();
        assert!(err.contains("is not a client id"), "{id:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::write(&empty, " \n").unwrap();
    let missing = dir.path().join("missing");
    for (path, want) in [(&empty, "is empty"), (&missing, "cannot be read")] {
        let path = path.to_string_lossy().into_owned();
        let pairs = [
            BASE[0],
            BASE[1],
            ("MCP_OAUTH_APPROVAL_CLIENT_ID", "pve-approval"),
            ("MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE", path.as_str()),
        ];
        let err = read(&pairs, "127.0.0.1", false).unwrap_err();
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn symmetric_algorithms_are_refused_by_name_not_as_unknown() {
    for name in ["HS256", "HS384", "HS512", "none"] {
        let err = parse_algorithms(name).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{name} is refused (only asymmetric signatures")),
            "{err}"
        );
    }
    assert!(
        parse_algorithms("XS1")
            .unwrap_err()
            .to_string()
            .contains("unknown algorithm \"XS1\"")
    );
}
