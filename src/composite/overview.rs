//! `pve_inventory_overview` and `pve_capabilities`: cluster-wide summaries made of a fixed
//! number of requests.
//!
//! Invariant: the inventory makes exactly three requests (`/cluster/resources`, `/version`,
//! `/cluster/status`) whatever the cluster's size; capabilities reports the registry in
//! force, never the whole catalog, and never prints a secret. Its SSH probe (`true` on the
//! entry host) is a fixed diagnostic admitted at the SSH choke point like any other, and is
//! not run at all while changes are frozen: the kill switch means no SSH connection is
//! opened, so the answer then says `"probed": false` and why.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::calls::Calls;
use crate::backends::Backends;
use crate::effects::{self, SshKind};
use crate::envelope::ToolFailure;
use crate::ssh::{Router, RunOptions};

/// `pve_inventory_overview`.
pub(super) async fn inventory(calls: &mut Calls<'_>) -> Result<Value, ToolFailure> {
    let resources = calls.get("/cluster/resources".into()).await?;
    let version = calls.get("/version".into()).await?;
    let status = calls.get("/cluster/status".into()).await?;
    let items = resources.as_array().cloned().unwrap_or_default();
    let field = |item: &Value, key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned()
    };
    let mut by_type: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut per_node: BTreeMap<String, BTreeMap<String, BTreeMap<String, u64>>> = BTreeMap::new();
    let mut templates = 0u64;
    for item in &items {
        let kind = field(item, "type");
        let state = field(item, "status");
        *by_type
            .entry(kind.clone())
            .or_default()
            .entry(state.clone())
            .or_default() += 1;
        if item.get("template").is_some_and(|t| t == 1) {
            templates += 1;
        }
        if let Some(node) = item.get("node").and_then(Value::as_str) {
            *per_node
                .entry(node.to_owned())
                .or_default()
                .entry(kind)
                .or_default()
                .entry(state)
                .or_default() += 1;
        }
    }
    let entries = status.as_array().cloned().unwrap_or_default();
    let cluster = entries.iter().find(|e| e["type"] == "cluster");
    let nodes_online = entries
        .iter()
        .filter(|e| e["type"] == "node" && e["online"] == 1)
        .count();
    let nodes_total = entries.iter().filter(|e| e["type"] == "node").count();
    Ok(json!({
        "version": {"version": version.get("version"), "release": version.get("release"), "repoid": version.get("repoid")},
        "cluster": {
            "name": cluster.and_then(|c| c.get("name")),
            "quorate": cluster.map(|c| c["quorate"] == 1).unwrap_or(true),
            "clustered": cluster.is_some(),
            "nodes_online": nodes_online,
            "nodes_total": nodes_total,
        },
        "counts": by_type,
        "templates": templates,
        "per_node": per_node,
    }))
}

/// `pve_capabilities`.
pub(super) async fn capabilities(
    backends: &Backends<'_>,
    calls: Option<&mut Calls<'_>>,
) -> Result<Value, ToolFailure> {
    let mut by_category: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut by_tier: BTreeMap<&str, u64> = BTreeMap::new();
    let mut by_module: BTreeMap<&str, u64> = BTreeMap::new();
    let canonical: Vec<_> = backends
        .registry
        .entries()
        .iter()
        .filter(|e| e.alias_for.is_none())
        .collect();
    for entry in &canonical {
        let spec = entry.spec;
        by_category
            .entry(spec.category.as_str())
            .or_default()
            .push(spec.name);
        *by_tier.entry(spec.tier.as_str()).or_default() += 1;
        *by_module.entry(spec.module.as_str()).or_default() += 1;
    }
    let ssh = match backends.ssh {
        None => json!({"configured": false, "reachable": false}),
        Some(router) => ssh_probe(backends, router).await,
    };
    let settings = backends.settings;
    let mut out = json!({
        "settings": {"tier": settings.tier.as_str(), "module": settings.module.as_str()},
        "tools": {"count": canonical.len(), "by_category": by_category, "by_tier": by_tier, "by_module": by_module},
        "ssh": ssh,
    });
    let Some(calls) = calls else {
        out["proxmox"] = json!({"configured": false});
        return Ok(out);
    };
    let version = calls.try_get("/version".into()).await;
    let permissions = calls.try_get("/access/permissions".into()).await;
    let mut proxmox = Map::new();
    proxmox.insert("configured".into(), true.into());
    match version {
        Ok(v) => proxmox.insert(
            "version".into(),
            v.get("version").cloned().unwrap_or(Value::Null),
        ),
        Err(e) => proxmox.insert("version_error".into(), e.into()),
    };
    match permissions {
        Ok(perms) => {
            let blocked = blocked_tools(&canonical, &perms);
            proxmox.insert("permissions".into(), perms);
            proxmox.insert("tools_not_permitted".into(), json!(blocked));
        }
        Err(e) => {
            proxmox.insert("permissions_error".into(), e.into());
        }
    }
    out["proxmox"] = Value::Object(proxmox);
    Ok(out)
}

/// The SSH part of the answer: `true` run on the entry host, unless changes are frozen (a
/// freeze file that cannot be read counts as frozen); then no connection is opened.
async fn ssh_probe(backends: &Backends<'_>, router: &Router) -> Value {
    let host = &router.entry().host;
    let frozen = backends
        .settings
        .freeze
        .as_ref()
        .and_then(|switch| switch.check().err());
    if frozen.is_some() {
        return json!({
            "configured": true,
            "host": host,
            "probed": false,
            "reachable": Value::Null,
            "not_probed": "changes are frozen (the kill switch): no SSH connection is opened while frozen",
        });
    }
    let probe = match effects::admit_ssh(SshKind::Diagnostic, "connection probe `true`") {
        Err(stopped) => Err(stopped.to_string()),
        Ok(_) => router
            .run_on_entry(
                &["true".to_owned()],
                RunOptions::with_timeout(Duration::from_secs(10)),
            )
            .await
            .map_err(|e| e.to_string()),
    };
    json!({
        "configured": true,
        "host": host,
        "probed": true,
        "reachable": probe.is_ok(),
        "error": probe.err(),
    })
}

/// The registered tools needing a privilege the token holds on no path at all, with the
/// privileges missing (per-path limits are not judged: a privilege held somewhere may
/// still be missing on the object a call names).
fn blocked_tools(canonical: &[&crate::registry::Entry], permissions: &Value) -> Vec<Value> {
    let held: std::collections::BTreeSet<&str> = permissions
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|privs| {
            privs
                .iter()
                .filter(|(_, v)| *v == 1 || **v == Value::Bool(true))
                .map(|(k, _)| k.as_str())
        })
        .collect();
    let mut blocked = Vec::new();
    for entry in canonical {
        let Some((_, needs)) = crate::catalog::privileges::TOOL_PRIVILEGES
            .iter()
            .find(|(tool, _)| *tool == entry.spec.name)
        else {
            continue;
        };
        let missing: Vec<&str> = needs
            .iter()
            .map(|(_, privilege)| *privilege)
            .filter(|p| !held.contains(p))
            .collect();
        if !missing.is_empty() {
            blocked.push(json!({"tool": entry.spec.name, "missing": missing}));
        }
    }
    blocked
}
