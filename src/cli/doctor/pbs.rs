//! `doctor`'s Proxmox Backup Server items: for each configured PBS, whether it answers with
//! the token (its version), and whether the token holds what the served tier's PBS tools
//! need (PBS's own `/access/permissions` against each row's endpoint privileges in PBS's
//! schema: one of them, as PBS's checks are mostly "either … or …").
//!
//! Invariant: the token's secret is never in an item (errors come from the REST client,
//! whose messages never carry it).

use std::collections::BTreeSet;

use serde_json::Value;

use super::super::pbs_servers;
use super::super::probe;
use super::super::report::Item;
use crate::catalog::{self, Tier};
use crate::config::pbs::PbsConfig;
use crate::effects::pbs::pbs_endpoints_for_template;
use crate::pve;

/// The items of every configured PBS at `tier`.
pub(super) async fn items(servers: &[PbsConfig], tier: Tier) -> Vec<Item> {
    let mut out = Vec::new();
    for server in servers {
        let name = format!("pbs {}", server.name);
        let client = match pve::Client::pbs(
            &pbs_servers::connection(server),
            pve::ClientLimits::default(),
        ) {
            Ok(client) => client,
            Err(e) => {
                out.push(Item::red(&name, e.to_string(), e.hint()));
                continue;
            }
        };
        let version = match probe::get(&client, "/version").await {
            Ok(v) => v["version"].as_str().unwrap_or("?").to_owned(),
            Err(e) => {
                let fix = match e.code() {
                    "PROXMOX_AUTH_FAILED" => Some(format!(
                        "check the PBS token {}@{}!{} and its secret; `nandi-proxmox-mcp bootstrap --pbs` prints the commands that create it",
                        server.user, server.realm, server.token_name
                    )),
                    _ => e.hint(),
                };
                out.push(Item::red(&name, format!("{}: {e}", client.base_url()), fix));
                continue;
            }
        };
        out.push(Item::green(
            &name,
            format!(
                "Proxmox Backup Server {version} at {} as {}@{}!{}",
                client.base_url(),
                server.user,
                server.realm,
                server.token_name
            ),
        ));
        out.push(match probe::get(&client, "/access/permissions").await {
            Ok(held) => permissions_item(&format!("{name} permissions"), &held, tier),
            Err(e) => Item::red(
                &format!("{name} permissions"),
                format!("cannot read the token's permissions: {e}"),
                e.hint(),
            ),
        });
    }
    out
}

/// Green when every PBS row at `tier` finds one of its privileges among those the token holds
/// anywhere; red naming the tools that do not.
fn permissions_item(check: &str, held: &Value, tier: Tier) -> Item {
    let held: BTreeSet<&str> = held
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|privs| privs.iter())
        .filter(|(_, v)| v.as_i64() == Some(1) || v.as_bool() == Some(true))
        .map(|(p, _)| p.as_str())
        .collect();
    let (mut missing, mut missing_reads): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for spec in catalog::all().filter(|s| s.tier <= tier) {
        let Some((method, path)) = spec.backend.pbs_method_and_path() else {
            continue;
        };
        let needs: BTreeSet<String> = pbs_endpoints_for_template(method.as_str(), path)
            .into_iter()
            .flat_map(|e| e.privileges.iter().cloned())
            .collect();
        if !needs.is_empty() && !needs.iter().any(|p| held.contains(p.as_str())) {
            let list = if spec.effect.is_read() {
                &mut missing_reads
            } else {
                &mut missing
            };
            list.push(format!(
                "{} (one of {})",
                spec.name,
                needs.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let fix = Some(format!(
        "grant the roles `nandi-proxmox-mcp bootstrap --pbs --tier {}` prints",
        tier.as_str()
    ));
    if missing.is_empty() && missing_reads.is_empty() {
        Item::green(
            check,
            format!("the token holds what the {} PBS tools need", tier.as_str()),
        )
    } else if missing.is_empty() {
        // A read PBS checks in code may still answer with what the token owns (its own
        // tasks), or refuse (a prune's dry run wants the prune privilege).
        Item::yellow(
            check,
            format!(
                "these reads answer only with what the token owns, or are refused: {}",
                missing_reads.join("; ")
            ),
            Some("a wider view needs the privilege named, e.g. Sys.Audit on /system/tasks or DatastorePowerUser on /datastore for prune previews".to_owned()),
        )
    } else {
        missing.extend(missing_reads);
        Item::red(
            check,
            format!("the token lacks: {}", missing.join("; ")),
            fix,
        )
    }
}
