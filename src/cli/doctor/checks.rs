//! The `permissions`, `tls` and `remote-op` checks of `doctor`.
//!
//! Invariants: `permissions` compares the token's own `/access/permissions` with the generated
//! per-tool privilege table — the same table `bootstrap` builds its roles from, endpoint gates
//! plus per-key checks — for exactly the tools the policy registers; `tls` reads the
//! certificate without trusting it; `remote-op` never reports RED on a REST-only installation.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::super::probe;
use super::super::report::{Item, Report};
use crate::catalog::privileges::TOOL_PRIVILEGES;
use crate::config::{self, Config, TlsSetting};
use crate::policy::Settings;
use crate::pve;
use crate::registry::{Capabilities, Registry};
use crate::ssh;

/// Privileges the token holds where a check on `need_path` (a template such as `/vms/{vmid}`)
/// can be met: on `/`, on the object type's root (`/vms`), on any object below it (`/vms/100`)
/// and, for guests and storages, on any pool (a grant on `/pool/NAME` reaches its members —
/// `bootstrap --acl-path`).
fn granted(perms: &Value, need_path: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let root = need_path
        .split('/')
        .nth(1)
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .map(|s| format!("/{s}"));
    let pools_reach = matches!(root.as_deref(), Some("/vms" | "/storage"));
    let Some(paths) = perms.as_object() else {
        return out;
    };
    for (path, map) in paths {
        let applies = path == "/"
            || root
                .as_deref()
                .is_some_and(|root| path == root || path.starts_with(&format!("{root}/")))
            || (pools_reach && path.starts_with("/pool/"));
        if !applies {
            continue;
        }
        for (p, v) in map.as_object().into_iter().flatten() {
            if v.as_i64().unwrap_or(0) != 0 || v.as_bool() == Some(true) {
                out.insert(p.clone());
            }
        }
    }
    out
}

/// `permissions`: the token's privileges against what the tools served at `settings` (the
/// cluster's own tier and module, as `run` computes them) need; RED naming how many tools would
/// fail with 403 and the privileges missing.
pub(super) async fn permissions(
    client: &pve::Client,
    settings: Result<Settings, String>,
    ssh: bool,
) -> Item {
    let settings = match settings {
        Ok(s) => s,
        Err(e) => return Item::red("permissions", e, None),
    };
    let perms = match probe::get(client, "/access/permissions").await {
        Ok(v) => v,
        Err(e) => {
            return Item::red(
                "permissions",
                format!("cannot read the token's permissions: {e}"),
                e.hint(),
            );
        }
    };
    // The PVE token's privileges; PBS rows are checked against the PBS token.
    let registry = Registry::build_for(&settings, Capabilities { ssh, pbs: false });
    let table: BTreeMap<&str, &[(&str, &str)]> = TOOL_PRIVILEGES.iter().copied().collect();
    let mut failing: Vec<String> = Vec::new();
    let mut missing_all: BTreeSet<&str> = BTreeSet::new();
    for entry in registry.entries().iter().filter(|e| e.alias_for.is_none()) {
        let needs = table.get(entry.spec.name).copied().unwrap_or(&[]);
        let missing: BTreeSet<&str> = needs
            .iter()
            .filter(|(path, privilege)| !granted(&perms, path).contains(*privilege))
            .map(|(_, p)| *p)
            .collect();
        let missing: Vec<&str> = missing.into_iter().collect();
        if !missing.is_empty() {
            missing_all.extend(missing.iter().copied());
            failing.push(format!("{} ({})", entry.spec.name, missing.join(", ")));
        }
    }
    let tier = settings.tier.as_str();
    let whence = settings
        .tier_source
        .clone()
        .unwrap_or_else(|| "PVE_ACCESS_TIER".to_owned());
    let served = registry.canonical_count();
    if failing.is_empty() {
        return Item::green(
            "permissions",
            format!(
                "the token holds every privilege the {served} served tools (tier {tier} from {whence}) need"
            ),
        );
    }
    let missing = missing_all.into_iter().collect::<Vec<_>>().join(",");
    Item::red(
        "permissions",
        format!(
            "{} of the {served} served tools (tier {tier} from {whence}) will fail with 403; missing {missing}: {}",
            failing.len(),
            failing.join("; ")
        ),
        Some(format!(
            "grant {missing} on / (or on the --acl-path the role was given): run the commands of `nandi-proxmox-mcp bootstrap --tier {tier}` (docs/PERMISSIONS.md lists each tool's privileges), or lower the tier"
        )),
    )
}

/// `permissions` once per person of the people file (`PVE_PEOPLE_FILE`), with that person's
/// own token, against the tools the server's tier serves. A token Proxmox does not accept is
/// RED (every call of that person would fail); missing privileges are YELLOW — a person may be
/// meant to have fewer rights than the server's tier, and Proxmox then refuses those calls of
/// theirs with 403.
pub(super) async fn people_permissions(client: &pve::Client, settings: &Settings) -> Vec<Item> {
    let Some(people) = settings.people.as_deref() else {
        return Vec::new();
    };
    let mut items = Vec::new();
    for person in people.tokens() {
        let check = format!("permissions of {} ({})", person.subject, person.token_id);
        let (user, realm, token_name) = person.parts();
        let parts = pve::TokenParts {
            user,
            realm,
            token_name,
            secret: person.expose_secret(),
        };
        let own = match client.as_token(parts) {
            Ok(own) => own,
            Err(e) => {
                items.push(Item::red(&check, e.to_string(), e.hint()));
                continue;
            }
        };
        let mut item = permissions(&own, Ok(settings.clone()), false).await;
        item.check = check;
        if item.status == super::super::report::Status::Red
            && !item.detail.starts_with("cannot read")
        {
            item.status = super::super::report::Status::Yellow;
            item.fix = Some(format!(
                "if {} should use those tools, grant the privileges to their token: `pveum acl modify / --tokens {} --roles <the role of bootstrap --tier {}>`; otherwise nothing to do — Proxmox refuses those calls for them",
                person.subject,
                person.token_id,
                settings.tier.as_str()
            ));
        }
        items.push(item);
    }
    items
}

/// `tls`: how the certificate is checked, what it is, when it expires — and, for the CA modes,
/// whether the configured check accepts it (a self-signed node fails there, and the fix names
/// the fingerprint to pin).
pub(super) async fn tls(proxmox: &config::ProxmoxConfig, client: &pve::Client) -> Item {
    let mode = match &proxmox.tls {
        TlsSetting::Verify => "system CA store".to_owned(),
        TlsSetting::CaFile(p) => format!("CA file {}", p.display()),
        TlsSetting::Fingerprint(fp) => format!("pinned fingerprint {fp}"),
        TlsSetting::Insecure => "verification OFF (allowInsecureTls)".to_owned(),
    };
    let cert = match probe::certificate(&proxmox.host, proxmox.port).await {
        Ok(c) => c,
        Err(e) => {
            return Item::red(
                "tls",
                format!("{mode}; could not read the certificate: {e}"),
                Some(probe::unreadable_certificate_fix(proxmox, &e)),
            );
        }
    };
    let now = chrono::Utc::now().timestamp();
    let expiry = match cert.not_after {
        Some(t) => {
            let days = (t - now) / 86_400;
            if t < now {
                return Item::red(
                    "tls",
                    format!("{mode}; the certificate EXPIRED {} day(s) ago", -days),
                    Some("renew it on the node: `pvecm updatecerts --force` (self-signed) or your ACME setup".into()),
                );
            }
            format!("expires in {days} day(s)")
        }
        None => "expiry unknown".to_owned(),
    };
    let detail = format!("{mode}; certificate SHA-256 {}; {expiry}", cert.fingerprint);
    match &proxmox.tls {
        TlsSetting::Fingerprint(fp) if !fp.eq_ignore_ascii_case(&cert.fingerprint) => Item::red(
            "tls",
            format!("pinned {fp} but the server presents {}", cert.fingerprint),
            Some(probe::pin_changed_fix(&cert.fingerprint)),
        ),
        TlsSetting::Insecure => Item::yellow(
            "tls",
            format!(
                "{detail}; certificate checks are OFF, so anyone on the path can read the token{}",
                if std::env::var_os("PROXMOX_ALLOW_INSECURE_TLS").is_some() {
                    " (PROXMOX_ALLOW_INSECURE_TLS)"
                } else {
                    ""
                }
            ),
            Some(format!(
                "pin the certificate instead of turning checks off: tlsFingerprint = {} (unset PROXMOX_ALLOW_INSECURE_TLS / allowInsecureTls)",
                cert.fingerprint
            )),
        ),
        TlsSetting::Verify | TlsSetting::CaFile(_) => match probe::get(client, "/version").await {
            Err(pve::PveError::Tls(msg)) => {
                let cause = msg
                    .split_once("; the server presented a certificate")
                    .map_or(msg.as_str(), |(cause, _)| cause);
                Item::red(
                    "tls",
                    format!("the {mode} does not accept the node's certificate: {cause}; {expiry}"),
                    Some(probe::pin_fix(&cert.fingerprint)),
                )
            }
            // Past the handshake: whatever the API answered, the certificate was accepted.
            _ => Item::green("tls", detail),
        },
        TlsSetting::Fingerprint(_) => Item::green("tls", detail),
    }
}

/// `remote-op`: a real command over SSH on the entry host (`sshBatch`) and, with a
/// container id, `pct exec` routed to the node that owns it (`pctExec`) — the same
/// executor and router the SSH tools use, host keys verified.
pub(super) async fn remote(
    ctid: Option<u32>,
    config: &Config,
    client: &pve::Client,
    report: &mut Report,
) {
    let Some(ssh_config) = &config.ssh else {
        report.push(Item::skip(
            "sshBatch",
            "SSH is not configured (REST-only installation)",
        ));
        report.push(Item::skip("pctExec", "SSH is not configured"));
        return;
    };
    let router = super::super::run::ssh_router(ssh_config);
    let options = ssh::RunOptions::with_timeout(Duration::from_secs(15));
    let argv = vec!["echo".to_owned(), "ssh-batch-ok".to_owned()];
    match router.run_on_entry(&argv, options).await {
        Ok(out) if out.success() && out.stdout.contains("ssh-batch-ok") => {
            report.push(Item::green(
                "sshBatch",
                format!("ran a command on {}", router.entry().host),
            ))
        }
        Ok(out) => report.push(Item::red(
            "sshBatch",
            format!(
                "`echo ssh-batch-ok` exited {:?}: {}",
                out.exit_status,
                out.stderr.trim()
            ),
            Some("check the login shell and authorized_keys of the SSH user".into()),
        )),
        Err(e) => report.push(Item::red("sshBatch", e.to_string(), e.hint())),
    }
    let Some(ctid) = ctid else {
        report.push(Item::skip(
            "pctExec",
            "no container id given (--ctid or NANDI_DOCTOR_CTID)",
        ));
        return;
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let node = match router.owning_node(client, u64::from(ctid), &cancel).await {
        Ok(node) => node,
        Err(e) => {
            report.push(Item::red("pctExec", e.to_string(), None));
            return;
        }
    };
    let argv: Vec<String> = [
        "pct",
        "exec",
        &ctid.to_string(),
        "--",
        "echo",
        "ct-remote-ok",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    match router
        .run_on_node(client, &node, &argv, options, &cancel)
        .await
    {
        Ok((out, route)) if out.success() && out.stdout.contains("ct-remote-ok") => {
            report.push(Item::green(
                "pctExec",
                format!(
                    "container {ctid} on {node} answered ({} route)",
                    route.as_str()
                ),
            ))
        }
        Ok((out, _)) => report.push(Item::red(
            "pctExec",
            format!("pct exec in {ctid} on {node} failed: {}", out.stderr.trim()),
            Some("check that the container runs and the SSH user may run pct".into()),
        )),
        Err(e) => report.push(Item::red("pctExec", e.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::granted;

    #[test]
    fn grants_count_where_the_check_can_be_met() {
        let perms = json!({
            "/pool/lab": {"VM.Config.CPU": 1, "Datastore.AllocateSpace": 1},
            "/vms/100": {"VM.Config.Memory": 1},
            "/nodes": {"Sys.Audit": 1},
            "/sdn/zones/localnetwork/vmbr0": {"SDN.Use": 1},
            "/": {"VM.Audit": 1, "Sys.Modify": 0}
        });
        let vm = granted(&perms, "/vms/{vmid}");
        for p in ["VM.Config.CPU", "VM.Config.Memory", "VM.Audit"] {
            assert!(vm.contains(p), "{p}: {vm:?}");
        }
        assert!(!vm.contains("Sys.Audit") && !vm.contains("Sys.Modify"));
        assert!(granted(&perms, "/storage/{storage}").contains("Datastore.AllocateSpace"));
        let node = granted(&perms, "/nodes/{node}");
        assert!(node.contains("Sys.Audit") && !node.contains("VM.Config.CPU"));
        assert!(granted(&perms, "/sdn/zones/localnetwork/{bridge}").contains("SDN.Use"));
        assert!(
            !granted(&perms, "/").contains("VM.Config.CPU"),
            "a pool does not reach /"
        );
    }
}
