//! One tool call, from validated arguments to envelope.
//!
//! `preflight` validates (arguments → cross-field checks → at-least-one-of guard);
//! `execute` builds the request and talks to the backend; `finish` renders the envelope.
//! The pipeline around them (gate, approval, dry-run) is in `pipeline`. Invariant: nothing
//! is sent to Proxmox unless `preflight` passed, and every failure becomes a `ToolFailure`
//! with a stable code.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::time::Instant;

use futures::future::join_all;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::audit::{self, AuditLog};
use crate::backends::{Backends, build_request};
use crate::catalog::{Backend, HttpMethod, Tier, ToolSpec};
use crate::envelope::{CallMeta, ToolFailure, codes, failure_from, not_configured, render};
use crate::pve;
use crate::redact;
use crate::registry::Entry;
use crate::schema::{self, ValidArgs};
use crate::ssh;

/// Sends a validated (and, where gated, approved) call to its backend: REST, the legacy
/// per-node list, SSH or a composite handler. Returns the outcome and the attempts made.
pub async fn execute(
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let client = backends.pve;
    match (spec.backend, client) {
        // SSH tools check their own inputs first; most also need the API (owning node).
        (Backend::Ssh(op), _) => {
            ssh::ops::execute(op, spec, backends.ssh, client, args, cancel).await
        }
        (Backend::Composite(op), _) => {
            crate::composite::execute(op, backends, spec, args, cancel).await
        }
        (_, None) => (Err(not_configured()), 0),
        (_, Some(client)) => execute_api(client, spec, args, cancel).await,
    }
}

/// Logs the outcome, cuts an answer over the size cap (with a note on how to page), and
/// renders the envelope with the call's meta.
pub fn finish(
    entry: &Entry,
    started: Instant,
    outcome: Result<Value, ToolFailure>,
    attempts: u32,
    approval: Option<&'static str>,
) -> CallToolResult {
    let meta = CallMeta {
        tool: entry.wire_name,
        alias_for: entry.alias_for,
        duration: started.elapsed(),
        attempts,
        retries: attempts.saturating_sub(1),
        approval,
    };
    // DEBUG, not INFO: at the default level a per-call line cost more CPU than the call's own
    // code (see docs/PERFORMANCE.md); `RUST_LOG=nandi_proxmox_mcp=debug` brings it back.
    match &outcome {
        Ok(_) => tracing::debug!(
            tool = entry.wire_name,
            ms = meta.duration.as_millis() as u64,
            "tool call ok"
        ),
        Err(f) => tracing::debug!(tool = entry.wire_name, code = f.code, "tool call failed"),
    }
    // The one place every answer passes: nothing larger than the cap reaches the client.
    let outcome = outcome.map(|data| crate::lean::cap(data, entry.spec, entry.output_cap));
    render(outcome, &meta)
}

/// What the last stages of a call need besides its outcome: the server's configured tier
/// (what redaction may reveal), the audit trail (`None`: not recorded, e.g. a dry-run) and
/// the client's raw arguments (masked before they are recorded or echoed).
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// `policy::Settings::tier` of the server.
    pub tier: Tier,
    /// Where the call is recorded, if it is.
    pub audit: Option<&'a AuditLog>,
    /// The arguments as the client sent them.
    pub arguments: Option<&'a Map<String, Value>>,
}

/// The end of every call: redact → envelope → audit. `approval` is how a gated call was
/// approved (`person`, `confirm-flag`).
pub async fn conclude(
    record: &Record<'_>,
    entry: &Entry,
    started: Instant,
    mut outcome: Result<Value, ToolFailure>,
    attempts: u32,
    approval: Option<&'static str>,
) -> CallToolResult {
    seal(record, entry, started, &mut outcome, approval).await;
    finish(entry, started, outcome, attempts, approval)
}

/// Redact → audit, without rendering: for callers that build the answer themselves (a task
/// handle) after the outcome is final.
pub async fn seal(
    record: &Record<'_>,
    entry: &Entry,
    started: Instant,
    outcome: &mut Result<Value, ToolFailure>,
    approval: Option<&'static str>,
) {
    redact::redact_outcome(entry.spec, record.tier, record.arguments, outcome);
    if let Some(log) = record.audit {
        let call = audit::call::Call {
            spec: entry.spec,
            wire_name: entry.wire_name,
            alias_for: entry.alias_for,
            arguments: record.arguments,
            approval,
        };
        audit::call::record_call(log, &call, outcome, started.elapsed()).await;
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
        Backend::Composite(_) => (Err(not_configured()), 0),
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
