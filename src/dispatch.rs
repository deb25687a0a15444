//! One tool call, from validated arguments to envelope.
//!
//! Order (each step can stop the call; only the last one talks to Proxmox):
//! validate arguments → cross-field checks → at-least-one-of guard → confirmation guard →
//! backend request. Invariant: nothing is sent to Proxmox unless every earlier step
//! passed, and every failure becomes a `ToolFailure` with a stable code.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::time::{Duration, Instant};

use futures::future::join_all;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Backend, HttpMethod, Location, ToolSpec};
use crate::envelope::{CallMeta, ToolFailure, codes, render};
use crate::pve::{self, ApiRequest, PveError, RetryPolicy};
use crate::registry::Entry;
use crate::schema::{self, ValidArgs};

/// Runs one call of `entry` with the client's raw `arguments`.
pub async fn call(
    client: Option<&pve::Client>,
    entry: &Entry,
    arguments: Option<&Map<String, Value>>,
    cancel: &CancellationToken,
) -> CallToolResult {
    let started = Instant::now();
    let (outcome, attempts) = match preflight(entry, arguments) {
        Err(failure) => (Err(failure), 0),
        Ok(args) => match client {
            None => (Err(not_configured()), 0),
            Some(client) => execute(client, entry.spec, &args, cancel).await,
        },
    };
    let meta = CallMeta {
        tool: entry.wire_name,
        alias_for: entry.alias_for,
        duration: started.elapsed(),
        retries: attempts.saturating_sub(1),
    };
    match &outcome {
        Ok(_) => tracing::info!(
            tool = entry.wire_name,
            ms = meta.duration.as_millis() as u64,
            "tool call ok"
        ),
        Err(f) => tracing::info!(tool = entry.wire_name, code = f.code, "tool call failed"),
    }
    render(outcome, &meta)
}

/// Everything that happens before a request: validation and the two guards.
pub fn preflight(
    entry: &Entry,
    arguments: Option<&Map<String, Value>>,
) -> Result<ValidArgs, ToolFailure> {
    let spec = entry.spec;
    let args = schema::validate(spec, arguments).map_err(|invalid| {
        let names: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
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
            if spec.confirm { ", confirm" } else { "" },
        ))
        .with_details(json!({"errors": invalid.errors, "validParameters": names}))
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
    if spec.confirm && !args.confirmed {
        let mut failure = ToolFailure::new(
            codes::CONFIRMATION_REQUIRED,
            format!("Tool '{}' requires explicit confirmation.", spec.name),
        )
        .with_hint(
            "Ask the user to approve this exact action, then call the tool again with confirm=true.",
        );
        failure.impact = Some(if spec.effect.is_destructive() {
            "This operation may modify or remove existing resources or interrupt running workloads."
                .into()
        } else {
            "This operation may alter cluster state.".into()
        });
        return Err(failure);
    }
    Ok(args)
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

fn not_configured() -> ToolFailure {
    ToolFailure::new(
        codes::PROXMOX_NOT_CONFIGURED,
        "No Proxmox connection is configured for this server.",
    )
    .with_hint(
        "Run `nandi-proxmox-mcp setup` (or set PROXMOX_HOST, PROXMOX_USER, PROXMOX_TOKEN_NAME and PROXMOX_TOKEN_SECRET, or NANDI_PROXMOX_CONFIG) and restart the server. `nandi-proxmox-mcp run --demo` tries the server against a built-in emulator.",
    )
}

async fn execute(
    client: &pve::Client,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    match spec.backend {
        Backend::Rest { method, path } => {
            let request = build_request(spec, method, path, args, &[]);
            let outcome = client.call(request, cancel).await;
            let result = outcome.result.map_err(failure_from);
            let result = match spec.result_filter {
                Some(filter) => result.map(|answer| filter.apply(answer)),
                None => result,
            };
            (result, outcome.attempts)
        }
        Backend::PerNodeList { path } => per_node_list(client, spec, path, args, cancel).await,
    }
}

/// Renders the path and splits the remaining arguments into query or body parameters.
pub fn build_request(
    spec: &ToolSpec,
    method: HttpMethod,
    template: &str,
    args: &ValidArgs,
    overrides: &[(&str, &str)],
) -> ApiRequest {
    let mut path = template.to_owned();
    let mut params = Vec::new();
    for param in spec.params.iter().filter(|p| p.index.is_none()) {
        let value = overrides
            .iter()
            .find(|(name, _)| *name == param.name)
            .map(|(_, v)| vec![(*v).to_owned()])
            .or_else(|| args.values.get(param.name).map(|v| v.wire_values()))
            .or_else(|| param.default.map(|d| vec![d.to_owned()]));
        let Some(values) = value else { continue };
        match param.location {
            Location::Path => {
                let placeholder = format!("{{{}}}", param.name);
                let value = values.concat();
                path = path.replace(&placeholder, &pve::encode_path_segment(&value));
            }
            Location::Query | Location::Body => params.extend(
                values
                    .into_iter()
                    .map(|v| (param.api_name().to_owned(), wire_encode(param, v))),
            ),
        }
    }
    // Indexed keys (`net1`, `scsi0`) go out under the name the client gave.
    for (key, (param, value)) in &args.indexed {
        params.extend(
            value
                .wire_values()
                .into_iter()
                .map(|v| (key.clone(), wire_encode(param, v))),
        );
    }
    ApiRequest {
        method: pve_method(method),
        path,
        params,
        timeout: Duration::from_millis(spec.timeout_ms),
        retry: if spec.retries_reads() {
            RetryPolicy::Reads
        } else {
            RetryPolicy::Never
        },
    }
}

/// Proxmox reads `format: urlencoded` values (cloud-init `sshkeys`) percent-decoded
/// after the form layer has decoded them once, so they are encoded here first — every
/// byte but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`, as JavaScript's `encodeURIComponent` does,
/// which is the set Proxmox's format check accepts.
fn wire_encode(param: &crate::catalog::Param, value: String) -> String {
    if !param.urlencoded {
        return value;
    }
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'!')
        .remove(b'~')
        .remove(b'*')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')');
    percent_encoding::utf8_percent_encode(&value, KEEP).to_string()
}

fn pve_method(method: HttpMethod) -> pve::Method {
    match method {
        HttpMethod::Get => pve::Method::Get,
        HttpMethod::Post => pve::Method::Post,
        HttpMethod::Put => pve::Method::Put,
        HttpMethod::Delete => pve::Method::Delete,
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

/// Maps a client error to the envelope, keeping Proxmox's message and details.
pub fn failure_from(err: PveError) -> ToolFailure {
    ToolFailure {
        code: err.code(),
        message: err.to_string(),
        hint: err.hint(),
        details: err.details(),
        impact: None,
    }
}
