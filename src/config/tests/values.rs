//! Tests of value rules: instance-file keys (unknown, missing, types, TLS and SSH blocks,
//! round trip through `render_instance_file`) and environment variables.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::json;

use super::*;

#[test]
fn unknown_key_is_named_with_valid_keys() {
    let err = load_with_file(&with(rest_only("a"), json!({"proxmxHost": "x"}))).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`proxmxHost` (did you mean `proxmoxHost`?)"),
        "{msg}"
    );
    assert!(
        msg.contains("sshHostKeyFingerprint") && msg.contains("tokenSecret"),
        "{msg}"
    );
    let nested = json!({"sshKeyPath": "/k", "sshNodes": {"pve2": {"hots": "10.0.0.2"}}});
    let msg = load_with_file(&with(rest_only("a"), nested))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("sshNodes.pve2.hots") && msg.contains("host, port, user"),
        "{msg}"
    );
}

#[test]
fn missing_keys_are_listed_together() {
    let err = load_with_file(r#"{"proxmoxHost": "a", "tokenSecret": "  "}"#).unwrap_err();
    let msg = err.to_string();
    for key in ["proxmoxUser", "tokenName", "tokenSecret"] {
        assert!(msg.contains(key), "{key} missing in {msg}");
    }
    assert!(
        !msg.contains("proxmoxPort") && !msg.contains("proxmoxRealm"),
        "{msg}"
    );
}

#[test]
fn rest_only_file_is_valid_and_defaults_apply() {
    let body = r#"{"proxmoxHost":" a.lan ","proxmoxUser":"mcp","tokenName":"t","tokenSecret":"0123456789"}"#;
    let config = load_with_file(body).unwrap();
    let px = config.proxmox.unwrap();
    assert_eq!(
        (px.host.as_str(), px.port, px.realm.as_str()),
        ("a.lan", 8006, "pve")
    );
    assert!(config.ssh.is_none());
}

#[test]
fn ssh_block_rules() {
    let disabled = with(
        rest_only("a"),
        json!({"sshKeyPath": "/k", "sshStrategy": "disabled"}),
    );
    assert!(load_with_file(&disabled).unwrap().ssh.is_none());

    let err = load_with_file(&with(rest_only("a"), json!({"sshStrategy": "hop"}))).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ConfigError::SshStrategyWithoutKey { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("sshKeyPath") && msg.contains("disabled"),
        "{msg}"
    );

    let dirs = Dirs::new();
    let body = with(
        rest_only("pve1.lan"),
        json!({"sshKeyPath": "~/.ssh/id_ed25519", "sshNodeName": "pve1",
               "sshNodes": {"pve2": {"host": "10.0.0.2", "port": 2222}}}),
    );
    let path = dirs.project("lab.json", &body);
    let ssh = file::load_path(&path, Some(dirs.home.path()), FileOrigin::Selected)
        .unwrap()
        .ssh
        .unwrap();
    assert_eq!(
        (ssh.host.as_str(), ssh.port, ssh.user.as_str()),
        ("pve1.lan", 22, "root")
    );
    assert_eq!(ssh.strategy, SshStrategy::Auto);
    assert_eq!(ssh.key_path, dirs.home.path().join(".ssh/id_ed25519"));
    assert_eq!(ssh.node_name.as_deref(), Some("pve1"));
    assert_eq!(ssh.nodes["pve2"].port, Some(2222));
    assert_eq!(ssh.nodes["pve2"].user, None);
}

#[test]
fn tls_modes() {
    let two = with(
        rest_only("a"),
        json!({"allowInsecureTls": true, "tlsCaFile": "/ca.pem"}),
    );
    let err = load_with_file(&two).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("allowInsecureTls") && msg.contains("tlsCaFile"),
        "{msg}"
    );

    let fp = with(rest_only("a"), json!({"tlsFingerprint": "ab".repeat(32)}));
    let tls = load_with_file(&fp).unwrap().proxmox.unwrap().tls;
    assert_eq!(tls, TlsSetting::Fingerprint(vec!["AB"; 32].join(":")));

    let off = with(
        rest_only("a"),
        json!({"allowInsecureTls": false, "tlsCaFile": "/ca.pem"}),
    );
    let tls = load_with_file(&off).unwrap().proxmox.unwrap().tls;
    assert_eq!(tls, TlsSetting::CaFile(PathBuf::from("/ca.pem")));

    let wrong = with(rest_only("a"), json!({"allowInsecureTls": "yes"}));
    assert!(
        load_with_file(&wrong)
            .unwrap_err()
            .to_string()
            .contains("true or false")
    );
}

#[test]
fn file_value_errors_say_where() {
    let err = load_with_file(&with(rest_only("a"), json!({"proxmoxPort": 0}))).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`proxmoxPort` in ") && msg.contains("lab.json"),
        "{msg}"
    );
    assert!(load_with_file(&with(rest_only("https://a"), json!({}))).is_err());
    assert!(load_with_file(&with(rest_only("a"), json!({"proxmoxPort": "8006"}))).is_ok());
    assert!(matches!(
        load_with_file("[1]").unwrap_err(),
        ConfigError::NotAnObject { .. }
    ));
    let bom = format!("\u{feff}{}", rest_only("a"));
    assert!(load_with_file(&bom).is_ok());
}

#[test]
fn env_values() {
    let run = |extra: &[(&'static str, &'static str)]| {
        let mut vars = full_env();
        vars.extend_from_slice(extra);
        load_env(&env(&vars))
    };
    let err = run(&[("PROXMOX_PORT", "abc")]).unwrap_err();
    assert!(err.to_string().contains("PROXMOX_PORT"), "{err}");
    assert_eq!(
        run(&[("PROXMOX_PORT", "")]).unwrap().proxmox.unwrap().port,
        8006
    );

    for (value, insecure) in [("TRUE", true), ("on", true), ("0", false), ("", false)] {
        let tls = run(&[("PROXMOX_ALLOW_INSECURE_TLS", value)])
            .unwrap()
            .proxmox
            .unwrap()
            .tls;
        assert_eq!(tls == TlsSetting::Insecure, insecure, "{value:?}");
    }
    assert!(run(&[("PROXMOX_ALLOW_INSECURE_TLS", "sure")]).is_err());
    let err = run(&[
        ("PROXMOX_ALLOW_INSECURE_TLS", "1"),
        ("PROXMOX_TLS_FINGERPRINT", "AB:CD"),
    ])
    .unwrap_err();
    assert!(err.to_string().contains("PROXMOX_TLS_FINGERPRINT"), "{err}");

    let err = run(&[("PROXMOX_SSH_STRATEGY", "direct")]).unwrap_err();
    assert!(err.to_string().contains("PROXMOX_SSH_KEY_PATH"), "{err}");
    let ssh = run(&[("PROXMOX_SSH_KEY_PATH", "/k"), ("PROXMOX_SSH_PORT", "2222")])
        .unwrap()
        .ssh
        .unwrap();
    assert_eq!(
        (ssh.host.as_str(), ssh.port, ssh.strategy),
        ("pve.lan", 2222, SshStrategy::Auto)
    );
    assert!(run(&[("PROXMOX_SSH_PORT", "22x"), ("PROXMOX_SSH_KEY_PATH", "/k")]).is_err());
}

#[test]
fn env_missing_vars_are_listed_together() {
    let err = load_env(&env(&[("PROXMOX_HOST", "a"), ("PROXMOX_USER", " ")])).unwrap_err();
    match &err {
        ConfigError::MissingEnvVars { vars } => assert_eq!(
            vars,
            &["PROXMOX_USER", "PROXMOX_TOKEN_NAME", "PROXMOX_TOKEN_SECRET"]
        ),
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn every_file_key_loads_and_round_trips() {
    let fp = "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s";
    let body = json!({
        "proxmoxHost": "pve1.lan", "proxmoxPort": 8443, "proxmoxUser": "mcp",
        "proxmoxRealm": "pam", "tokenName": "nandi", "tokenSecret": SECRET,
        "allowInsecureTls": false, "tlsCaFile": "/etc/ca.pem",
        "sshHost": "10.0.0.1", "sshPort": 2222, "sshUser": "admin", "sshKeyPath": "/k",
        "sshStrategy": "Hop", "sshNodeName": "pve1",
        "sshNodes": {"pve2": {"host": "10.0.0.2", "port": 22, "user": "root"}},
        "sshKnownHostsPath": "/kh", "sshHostKeyFingerprint": fp,
    });
    let used: BTreeSet<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut documented: BTreeSet<&str> = FILE_KEYS.iter().map(|d| d.key).collect();
    documented.remove("tlsFingerprint"); // exclusive with tlsCaFile; covered in `tls_modes`
    // A cluster's policy keys are not connection settings (`setup` does not write them);
    // covered in `multi::policy_keys_are_read_as_the_variables_would_hold_them`.
    for key in [
        "accessTier",
        "moduleMode",
        "categories",
        "toolWhitelist",
        "toolBlacklist",
        "default",
        "policy",
        // The Proxmox Backup Servers beside the cluster: `config::pbs`'s own tests.
        "pbs",
    ] {
        documented.remove(key);
    }
    assert_eq!(used, documented);

    let config = load_with_file(&body.to_string()).unwrap();
    let ssh = config.ssh.clone().unwrap();
    assert_eq!(ssh.strategy, SshStrategy::Hop);
    assert_eq!(ssh.host_key_fingerprint.as_deref(), Some(fp));
    assert_eq!(ssh.known_hosts, Some(PathBuf::from("/kh")));

    let px = config.proxmox.clone().unwrap();
    let rendered = render_instance_file(&px, Some(&ssh));
    assert!(rendered.ends_with("}\n") && rendered.contains("\n  \"proxmoxHost\": \"pve1.lan\""));
    let again = load_with_file(&rendered).unwrap();
    assert_eq!((again.proxmox, again.ssh), (config.proxmox, config.ssh));

    let rest = render_instance_file(&px, None);
    assert!(rest.contains("\"sshStrategy\": \"disabled\""), "{rest}");
    assert!(load_with_file(&rest).unwrap().ssh.is_none());
}
