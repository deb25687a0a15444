//! One tool call's validation and its trip to the backend.
//!
//! `preflight` validates (arguments → cross-field checks → at-least-one-of guard);
//! `execute` sends the request (built by `backends::build_request`) to REST, SSH or a
//! composite handler; `outcome` renders the envelope. The pipeline around them (gate,
//! approval, dry-run) is in `pipeline`. Invariant: nothing
//! is sent to Proxmox unless `preflight` passed, and every failure becomes a `ToolFailure`
//! with a stable code.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use futures::future::join_all;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::backends::{Backends, build_request};
use crate::catalog::{Backend, HttpMethod, ToolSpec};
pub use crate::composite::Prechecked;
use crate::envelope::{ToolFailure, codes, failure_from, not_configured};
use crate::pve;
use crate::registry::Entry;
use crate::schema::{self, ValidArgs};
use crate::ssh;

/// Sends a validated (and, where gated, approved) call to its backend: REST, the legacy
/// per-node list, SSH or a composite handler. Returns the outcome and the attempts made.
pub async fn execute(
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    prechecked: Prechecked,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let client = backends.pve;
    match (spec.backend, client) {
        // SSH tools check their own inputs first; most also need the API (owning node).
        (Backend::Ssh(op), _) => {
            ssh::ops::execute(op, spec, backends.ssh, client, args, cancel).await
        }
        (Backend::Composite(op), _) => {
            crate::composite::execute(op, backends, spec, args, prechecked, cancel).await
        }
        (Backend::Pbs { method, path }, _) => {
            let server = match crate::backends::pbs_server(backends, args) {
                Ok(server) => server,
                Err(failure) => return (Err(failure), 0),
            };
            let request = build_request(spec, method, path, args, &[]);
            let outcome = server.client.call(request, cancel).await;
            let named = |failure| pbs_failure(&server.name, failure);
            (
                outcome.result.map_err(|e| named(failure_from(e))),
                outcome.attempts,
            )
        }
        (_, None) => (Err(not_configured()), 0),
        (_, Some(client)) => execute_api(client, spec, args, cancel).await,
    }
}

/// A PBS's failure, saying which PBS answered; its token and privileges are PBS's own.
fn pbs_failure(name: &str, mut failure: ToolFailure) -> ToolFailure {
    failure.message = format!("Proxmox Backup Server {name:?}: {}", failure.message);
    match failure.code {
        "PROXMOX_AUTH_FAILED" => failure.with_hint(
            "Check the PBS token (`user@realm!token` and its secret, PBS_* or the instance file's `pbs` entry); `nandi-proxmox-mcp bootstrap --pbs` prints the commands that create it.",
        ),
        "PROXMOX_ACL_FORBIDDEN" => failure.with_hint(
            "Grant the PBS token a role on the datastore, e.g. `proxmox-backup-manager acl update /datastore/<store> DatastoreAudit --auth-id <user@realm!token>` (`bootstrap --pbs` lists the roles per tier).",
        ),
        _ => failure,
    }
}

/// The server's own guards that need more than the row, run after validation and before the
/// gate, so a person is asked only about a call that would really be sent: the SSH tools'
/// input rules, the download's address guard, the generic call's schema check. Returns what
/// the cluster's own schema says the call does (a plain read for everything else), and what
/// `execute` sends as judged.
pub async fn precheck(
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Result<Prechecked, ToolFailure> {
    match spec.backend {
        Backend::Ssh(op) => ssh::ops::precheck(op, args).map(|()| Prechecked::default()),
        Backend::Composite(op) => {
            crate::composite::precheck(op, backends, spec, args, cancel).await
        }
        // Which PBS: settled before anyone is asked about the call.
        Backend::Pbs { .. } => {
            crate::backends::pbs_server(backends, args).map(|_| Prechecked::default())
        }
        Backend::Rest { .. } | Backend::PerNodeList { .. } => Ok(Prechecked::default()),
    }
}

/// Everything that happens before the gate: validation and the cross-field guards. The
/// approval of gated calls is not here but in `approval`, which may ask a person.
pub fn preflight(
    entry: &Entry,
    arguments: Option<&Map<String, Value>>,
) -> Result<ValidArgs, ToolFailure> {
    let spec = entry.spec;
    let args = schema::validate(spec, arguments).map_err(|invalid| {
        let names: Vec<&str> = spec
            .params
            .iter()
            .filter(|p| !p.fixed)
            .map(|p| p.name)
            .collect();
        let summary: Vec<String> = invalid
            .errors
            .iter()
            .map(|(name, why)| format!("{name}: {why}"))
            .collect();
        ToolFailure::new(
            codes::TOOL_INPUT_REJECTED,
            format!(
                "Invalid arguments for {}: {}.",
                entry.wire_name,
                summary.join("; ")
            ),
        )
        .with_hint(format!(
            "Valid parameters: {}{}. Nothing was sent to Proxmox.",
            if names.is_empty() {
                "(none)".to_owned()
            } else {
                names.join(", ")
            },
            controls_suffix(spec),
        ))
        .with_details(json!({"errors": invalid.errors, "validParameters": valid_parameters(spec)}))
    })?;
    check_upid_node(&args)?;
    if !spec.at_least_one_of.is_empty() && !spec.at_least_one_of.iter().any(|name| args.has(name)) {
        return Err(ToolFailure::new(
            codes::TOOL_INPUT_REJECTED,
            format!(
                "At least one mutable field is required: {}.",
                spec.at_least_one_of.join(", ")
            ),
        )
        .with_hint("Pass at least one of the fields to change; nothing was sent to Proxmox."));
    }
    Ok(args)
}

/// `, confirm, dry_run` for the rows that accept those control arguments.
fn controls_suffix(spec: &ToolSpec) -> String {
    schema::control_arguments(spec)
        .map(|name| format!(", {name}"))
        .collect()
}

/// Every argument name a client may pass: parameters, then the control arguments.
fn valid_parameters(spec: &ToolSpec) -> Vec<&'static str> {
    spec.params
        .iter()
        .filter(|p| !p.fixed)
        .map(|p| p.name)
        .chain(schema::control_arguments(spec))
        .collect()
}

/// A UPID names the node that ran the task; asking another node for it can only fail,
/// so the mismatch is reported before any request.
fn check_upid_node(args: &ValidArgs) -> Result<(), ToolFailure> {
    let (Some(upid), Some(node)) = (args.str("upid"), args.str("node")) else {
        return Ok(());
    };
    let upid_node = upid.split(':').nth(1).unwrap_or_default();
    if upid_node.eq_ignore_ascii_case(node) {
        return Ok(());
    }
    Err(ToolFailure::new(
        codes::TOOL_INPUT_REJECTED,
        format!("The task {upid} ran on node '{upid_node}', not on '{node}'."),
    )
    .with_hint(format!("Call again with node=\"{upid_node}\"."))
    .with_details(json!({"errors": {"node": format!("must be '{upid_node}' for this upid")}})))
}

async fn execute_api(
    client: &pve::Client,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let (result, attempts) = match spec.backend {
        Backend::Rest { method, path } => {
            let request = build_request(spec, method, path, args, &[]);
            let outcome = client.call(request, cancel).await;
            (outcome.result.map_err(failure_from), outcome.attempts)
        }
        Backend::PerNodeList { path } => per_node_list(client, spec, path, args, cancel).await,
        // Routed in `execute` before a REST client is required; kept for exhaustiveness.
        Backend::Ssh(op) => ssh::ops::execute(op, spec, None, Some(client), args, cancel).await,
        Backend::Composite(_) | Backend::Pbs { .. } => (Err(not_configured()), 0),
    };
    // A declared result filter selects what the API cannot (e.g. templates only).
    match spec.result_filter {
        Some(filter) => (result.map(|answer| filter.apply(answer)), attempts),
        None => (result, attempts),
    }
}

/// The legacy `listVMs` / `listContainers`: one node, or every online node in parallel.
async fn per_node_list(
    client: &pve::Client,
    spec: &'static ToolSpec,
    path: &'static str,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    if args.values.contains_key("node") {
        let outcome = client
            .call(
                build_request(spec, HttpMethod::Get, path, args, &[]),
                cancel,
            )
            .await;
        return (outcome.result.map_err(failure_from), outcome.attempts);
    }
    // `node` is absent here, so the rendered request is a plain `GET /nodes`.
    let nodes_request = build_request(spec, HttpMethod::Get, "/nodes", args, &[]);
    let nodes = client.call(nodes_request, cancel).await;
    let mut attempts = nodes.attempts;
    let names: Vec<String> = match nodes.result {
        Err(err) => return (Err(failure_from(err)), attempts),
        Ok(list) => list
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| n.get("status").and_then(Value::as_str) != Some("offline"))
            .filter_map(|n| n.get("node").and_then(Value::as_str).map(str::to_owned))
            .collect(),
    };
    let calls = names.iter().map(|name| {
        let request = build_request(spec, HttpMethod::Get, path, args, &[("node", name)]);
        client.call(request, cancel)
    });
    let mut merged = Vec::new();
    for (name, outcome) in names.iter().zip(join_all(calls).await) {
        attempts = attempts.max(outcome.attempts);
        match outcome.result {
            Err(err) => return (Err(failure_from(err)), attempts),
            Ok(Value::Array(items)) => merged.extend(items.into_iter().map(|mut item| {
                if let Value::Object(obj) = &mut item {
                    obj.entry("node").or_insert_with(|| name.clone().into());
                }
                item
            })),
            Ok(_) => {}
        }
    }
    (Ok(Value::Array(merged)), attempts)
}
