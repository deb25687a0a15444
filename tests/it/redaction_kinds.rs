//! One canary per kind of secret an outside attack found unmasked: each is planted in a
//! result (success data and a failure's message and details), in the arguments an audit line
//! records, and in the text a preview or question shows — and appears in none of them.

use nandi_proxmox_mcp::catalog::{self, Tier};
use nandi_proxmox_mcp::envelope::ToolFailure;
use nandi_proxmox_mcp::redact::{mask_arguments, mask_text, redact_outcome};
use serde_json::{Value, json};

/// (kind, the text that carries the secret, the secret itself).
fn kinds() -> Vec<(&'static str, String, &'static str)> {
    vec![
        (
            "ACME plugin data",
            "CF_Token=CANARYacme1f3e9\nCF_Account_ID=abc".into(),
            "CANARYacme1f3e9",
        ),
        (
            "OpenID client key (field)",
            String::new(),
            "CANARYoidc7d2c4b",
        ),
        (
            "cloud-init chpasswd list",
            "#cloud-config\nchpasswd:\n  list: |\n    root:CANARYchpw92ab\n  expire: False\n".into(),
            "CANARYchpw92ab",
        ),
        (
            "password inside a JSON string",
            r#"{"user":"ops","password":"CANARYjson55e1"}"#.into(),
            "CANARYjson55e1",
        ),
        (
            "command-line flag",
            "pvesm add cifs x --server s --password CANARYflag0a9d --username u".into(),
            "CANARYflag0a9d",
        ),
        (
            "env-style text",
            "export DB_PASSWORD=CANARYenv77c2 && run".into(),
            "CANARYenv77c2",
        ),
        (
            "double-quoted env value (guest file)",
            "# /etc/app.env\nAPI_TOKEN=\"CANARYdq5a1c\"\nLOG_LEVEL=info\n".into(),
            "CANARYdq5a1c",
        ),
        (
            "double-quoted password with spaces (exec input-data)",
            "DB_PASSWORD=\"CANARY sp4ce 9d\" ./migrate".into(),
            "CANARY sp4ce 9d",
        ),
        (
            "single-quoted exported secret (syslog)",
            "Dec 03 05:00:01 pve01 bash[811]: export SECRET_KEY='CANARYsq0e7f'".into(),
            "CANARYsq0e7f",
        ),
        (
            "unquoted env password",
            "PASSWORD=CANARYuq3b2d make install".into(),
            "CANARYuq3b2d",
        ),
        (
            "PBS API token header",
            "Authorization: PBSAPIToken=backup@pbs!nandi:CANARYpbs61c0".into(),
            "CANARYpbs61c0",
        ),
        (
            "credentials in a URL",
            "fetching https://ops:CANARYurl31f8@mirror.example/x.iso".into(),
            "CANARYurl31f8",
        ),
        (
            "PuTTY private key",
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\nAAAAC3Nza\nAAAAIB\nPrivate-Lines: 1\nCANARYputty4b6e\nPrivate-MAC: 0123abcd\n".into(),
            "CANARYputty4b6e",
        ),
    ]
}

#[test]
fn every_kind_is_masked_in_results_failures_audit_and_previews() {
    let spec = catalog::find("pve_api_call").expect("row");
    for (kind, text, secret) in kinds() {
        let data = if text.is_empty() {
            json!({"realm": "corp", "type": "openid", "client-key": secret})
        } else {
            json!({"value": text, "nested": [{"log": text}]})
        };
        for tier in Tier::ALL {
            let mut ok: Result<Value, ToolFailure> = Ok(data.clone());
            redact_outcome(spec, tier, None, &mut ok);
            let shown = serde_json::to_string(&ok.expect("ok")).expect("json");
            assert!(!shown.contains(secret), "{kind} at {tier:?}: {shown}");
        }
        let failure = ToolFailure::new("PROXMOX_REQUEST_REJECTED", format!("rejected: {text}"))
            .with_details(data.clone());
        let mut err: Result<Value, ToolFailure> = Err(failure);
        redact_outcome(spec, Tier::Full, None, &mut err);
        let failure = err.expect_err("failure");
        if !text.is_empty() {
            assert!(
                !failure.message.contains(secret),
                "{kind}: {}",
                failure.message
            );
        }
        let details = serde_json::to_string(&failure.details).expect("json");
        assert!(!details.contains(secret), "{kind}: {details}");
        // The audit line records masked arguments; previews and questions show masked text.
        let args = json!({"path": "/x", "params": [format!("data={text}")], "body": data});
        let masked = mask_arguments(args.as_object().expect("object")).to_string();
        assert!(!masked.contains(secret), "{kind} (audit): {masked}");
        if !text.is_empty() {
            let preview = mask_text(&text);
            assert!(!preview.contains(secret), "{kind} (preview): {preview}");
        }
    }
}

#[test]
fn ordinary_text_is_left_alone() {
    for text in [
        "the bearer of this key opens the door",
        "cores: 4\nmemory: 2048\nexpire: False",
        "UPID:pve01:0000C0DE:00ABCDEF:6500A1B2:qmstart:101:root@pam:",
        "https://download.example/debian-12.iso",
        "Authorization: PVEAPIToken=mcp@pve!nandi=[redacted]",
        // Indented `name:value` lines are only masked in text that speaks of passwords
        // (a cloud-init `chpasswd` list); in any other YAML they are ordinary settings.
        "net:\n  bridge:vmbr0\n  - tag:20",
        // Quoted assignments whose name says nothing secret, and prose about passwords.
        "HOSTNAME=\"web01\"\nexport PATH='/usr/local/bin:/usr/bin'",
        "echo \"the password was changed\"; KEY_COUNT is 3",
        "API_TOKEN=\"\"",
    ] {
        assert_eq!(mask_text(text), text);
    }
}

/// A masked assignment or header keeps what names it: the variable, its quotes, the PBS
/// token id.
#[test]
fn masking_keeps_names_quotes_and_token_ids() {
    for (text, shown) in [
        (
            "API_TOKEN=\"abc123def\" run",
            "API_TOKEN=\"[redacted]\" run",
        ),
        (
            "export SECRET_KEY='s3cr3t v@lue'",
            "export SECRET_KEY='[redacted]'",
        ),
        ("DB_PASSWORD = \"x\"", "DB_PASSWORD = \"[redacted]\""),
        (
            "PBSAPIToken=backup@pbs!nandi:0b3c-55aa",
            "PBSAPIToken=backup@pbs!nandi:[redacted]",
        ),
    ] {
        assert_eq!(mask_text(text), shown, "{text}");
    }
}
