//! The second half of `setup`: probe, name the instance, write the instance file, the
//! `.gitignore` entry, the client entries and the human-gate rules, then report.
//!
//! Invariant: the probe runs before anything is written (its cluster name can name the
//! instance) and the final status decides the exit code.

use super::{Answers, Common, SetupArgs, config_err, instance, server_entry};
use crate::catalog::Tier;
use crate::cli::clients::{self, ClientId};
use crate::cli::report::{Item, Report, use_colour};
use crate::cli::{CliError, files, harden, probe};
use crate::config::instances::{self, CONFIG_DIR_NAME, DEFAULT_INSTANCE_NAME};
use crate::config::{ProxmoxConfig, Scope, TlsSetting};
use crate::pve;

/// Probe result used for naming and for the report.
struct ProbeOutcome {
    items: Vec<Item>,
    cluster_name: Option<String>,
}

async fn probe_connection(proxmox: &ProxmoxConfig) -> ProbeOutcome {
    let mut items = Vec::new();
    let client = match pve::Client::new(&probe::connection(proxmox)) {
        Ok(c) => c,
        Err(e) => {
            items.push(probe::diagnose("listNodes", proxmox, &e).await);
            return ProbeOutcome {
                items,
                cluster_name: None,
            };
        }
    };
    let mut cluster_name = None;
    match probe::get(&client, "/nodes").await {
        Ok(nodes) => {
            let names: Vec<String> = nodes
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|n| n["node"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            items.push(Item::green(
                "listNodes",
                format!("API reachable; nodes: {}", names.join(", ")),
            ));
            match probe::get(&client, "/cluster/status").await {
                Ok(status) => {
                    let cluster = status
                        .as_array()
                        .and_then(|a| a.iter().find(|r| r["type"] == "cluster"));
                    let detail = match cluster {
                        Some(c) => {
                            cluster_name = c["name"].as_str().map(str::to_owned);
                            let quorate = c["quorate"].as_i64() == Some(1);
                            format!(
                                "cluster `{}` with {} node(s){}",
                                c["name"].as_str().unwrap_or("?"),
                                c["nodes"],
                                if quorate {
                                    ""
                                } else {
                                    " — WARNING: not quorate"
                                }
                            )
                        }
                        None => "standalone node".to_owned(),
                    };
                    items.push(Item::green("installation", detail));
                }
                Err(e) => items.push(Item::skip(
                    "installation",
                    format!(
                        "cluster status unavailable ({}); naming falls back to `proxmox`",
                        e.code()
                    ),
                )),
            }
        }
        Err(e) => items.push(probe::diagnose("listNodes", proxmox, &e).await),
    }
    ProbeOutcome {
        items,
        cluster_name,
    }
}

/// The summary line about certificate checks; OFF is said in plain words, never implied.
fn certificate_line(tls: &TlsSetting) -> String {
    match tls {
        TlsSetting::Verify => "Certificate checks: on (the system's CA store)".to_owned(),
        TlsSetting::CaFile(path) => format!("Certificate checks: on (CA file {})", path.display()),
        TlsSetting::Fingerprint(_) => {
            "Certificate checks: on (pinned SHA-256 fingerprint)".to_owned()
        }
        TlsSetting::Insecure => "Certificate checks: OFF. This instance does not verify the \
             Proxmox certificate (allowInsecureTls): anything between here and the node can pose \
             as the node and read the API token. Pin the certificate instead: run setup again \
             with --tls-fingerprint (`nandi-proxmox-mcp doctor` prints the fingerprint)."
            .to_owned(),
    }
}

/// Names the instance, writes every file, prints the report and the summary.
pub(super) async fn finish(
    args: &SetupArgs,
    c: &Common,
    answers: Answers,
    tier: Tier,
    tier_chosen: bool,
) -> Result<(), CliError> {
    // Validate the connection keys on their own first, so bad flags fail before any probe.
    let proxmox = instance::validate_core(&answers.core)?;
    let probed = if args.skip_connectivity {
        None
    } else {
        Some(probe_connection(&proxmox).await)
    };
    let same_host = match &args.name {
        Some(_) => None,
        None => instance::existing_for_host(&c.paths, c.scope, &proxmox.host, proxmox.port),
    };
    let name = match (
        &args.name,
        same_host.clone(),
        probed.as_ref().and_then(|p| p.cluster_name.clone()),
    ) {
        (Some(n), _, _) => instances::sanitize_name(n),
        (None, Some(existing), _) => existing,
        (None, None, Some(cluster)) => instances::sanitize_name(&cluster),
        (None, None, None) => DEFAULT_INSTANCE_NAME.to_owned(),
    };
    let path = instances::instance_path(&c.paths, c.scope, &name)
        .map_err(|e| config_err(e.to_string()))?;
    let mut report = Report::default();
    let existed = path.is_file();
    instance::write(&c.paths, c.scope, &path, &answers)?;
    let detail = match (&same_host, existed) {
        (Some(_), _) => format!(
            "`{name}` updated in {} (mode 0600): it already pointed at {}:{}; pass --name to \
             add another instance for the same host",
            path.display(),
            proxmox.host,
            proxmox.port
        ),
        (None, true) => format!("`{name}` updated in {} (mode 0600)", path.display()),
        (None, false) => format!("`{name}` written to {} (mode 0600)", path.display()),
    };
    report.push(Item::green("instance", detail));
    if c.scope == Scope::Project {
        match files::ensure_gitignore(&c.paths.cwd, &format!("{CONFIG_DIR_NAME}/")) {
            Ok(true) => report.push(Item::green(
                "gitignore",
                format!("added {CONFIG_DIR_NAME}/ to .gitignore"),
            )),
            Ok(false) => report.push(Item::green(
                "gitignore",
                format!("{CONFIG_DIR_NAME}/ already ignored"),
            )),
            Err(e) => report.push(Item::red(
                "gitignore",
                e.to_string(),
                Some(format!(
                    "add `{CONFIG_DIR_NAME}/` to .gitignore by hand: the folder holds secrets"
                )),
            )),
        }
    }
    let entry = server_entry(&path, tier, c.module);
    // Other instances of this scope whose entry this client may already have.
    let others: Vec<_> = instances::list_instances(&c.paths)
        .into_iter()
        .filter(|i| i.scope == c.scope && i.name != name)
        .collect();
    let mut tier_written = false;
    for client in &c.clients {
        let check = format!("mcpConfig:{}", client.as_str());
        let item = match client.config_path(&c.paths, c.scope) {
            Ok(file) => {
                // One server entry serves every cluster: extend an existing one.
                let joined = super::clusters::join_existing(*client, &file, &others, &path, &entry);
                if let Some((_, joined_entry)) = &joined
                    && !tier_written
                    && super::clusters::entry_tier(joined_entry) != Some(tier)
                {
                    super::clusters::write_tier(&c.paths, &path, tier)?;
                    tier_written = true;
                }
                let (key, entry, how) = match joined {
                    Some((key, entry)) => {
                        (key, entry, format!("`{name}` added as a cluster of entry"))
                    }
                    None => (name.clone(), entry.clone(), "entry".to_owned()),
                };
                match clients::write_entry(*client, &file, &key, &entry) {
                    Ok(()) => Item::green(
                        &check,
                        format!("{how} `{key}` merged into {}", file.display()),
                    ),
                    Err(e) => Item::red(&check, e.to_string(), None),
                }
            }
            Err(e) => Item::red(&check, e, None),
        };
        report.push(item);
    }
    if c.clients.contains(&ClientId::ClaudeCode) {
        match harden::apply(&c.paths, c.scope, &name, tier) {
            Ok(result) => report.push(Item::green("humanGate", result.summary(tier))),
            // Only a warning, as in the reference: the server works without the rules.
            Err(e) => report.push(Item::skip("humanGate", format!("not written: {e}"))),
        }
    }
    match probed {
        Some(p) => p.items.into_iter().for_each(|i| report.push(i)),
        None => report.push(Item::skip("connectivity", "skipped (--skip-connectivity)")),
    }
    let red = report.is_red();
    println!("{}", report.render("nandi-proxmox-mcp setup", use_colour()));
    println!("Final status: {}", if red { "RED" } else { "GREEN" });
    println!(
        "Instance: {name} ({}), credentials: {}",
        c.scope,
        path.display()
    );
    if tier_chosen {
        println!("Access tier: {}", tier.as_str());
    } else {
        println!(
            "Access tier: {} (the default; pass --access-tier read-execute or full for more tools)",
            tier.as_str()
        );
    }
    println!("{}", certificate_line(&proxmox.tls));
    println!("Next: restart your MCP client, then run `nandi-proxmox-mcp doctor --name {name}`.");
    if red {
        return Err(CliError::Red(
            "setup finished with RED items (see above)".into(),
        ));
    }
    Ok(())
}
