//! The generic API call (`pve_api_call` reads, `pve_api_write` writes): any method and path
//! under `/api2/json`, judged first by structural rules, then by the schema the cluster
//! itself serves (see `api_call_cache`), then sent once.
//!
//! Invariants: the call itself is not sent unless every check passed, and a refusal says
//! exactly what was read to judge it (the schema lookup's `GET /version` and `apidata.js`,
//! listed in `details.read`; "nothing was sent" only when nothing was); the method comes only from the
//! row (the read row has no `method` parameter and always sends GET; the write row's
//! `method` is limited to POST/PUT/DELETE by its enum), so a read-only tier can never write
//! through this handler; writes are never retried. Approval of writes happens before this
//! handler runs (the write row is `confirm: true`).

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::api_call_cache::{self, LoadedSchema};
use super::api_call_check::{
    CheckedCall, Refusal, against_schema, encode_path, structural_params, structural_path,
};
use crate::backends::Backends;
use crate::catalog::ToolSpec;
use crate::effects::{self, Classified};
use crate::envelope::{ToolFailure, codes, failure_from, not_configured};
use crate::pve::{self, ApiRequest, RetryPolicy};
use crate::schema::{ArgValue, ValidArgs};

/// A generic call judged by every check that needs no approval: the structural rules, then
/// the cluster's schema (when it can be had). What it will send, and the report of the check.
#[derive(Debug)]
pub struct Judged {
    method: String,
    pve_method: pve::Method,
    checked: CheckedCall,
    schema_report: Value,
}

impl Judged {
    /// The request as it will be sent, for the undo capture (`undo_change::capture`).
    pub(super) fn request(&self) -> ApiRequest {
        ApiRequest {
            params: self.checked.params.clone(),
            ..ApiRequest::new(self.pve_method, self.checked.path.clone())
        }
    }
}

/// Judges a call: structural rules, then the cluster's schema. `Err` is the refusal, with
/// the number of attempts (always 0: the call itself was not sent).
pub async fn judge(
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Result<Judged, ToolFailure> {
    let method = args.str("method").unwrap_or("GET").to_ascii_uppercase();
    let pve_method = match (method.as_str(), spec.effect.is_read()) {
        ("GET", true) => pve::Method::Get,
        ("POST", false) => pve::Method::Post,
        ("PUT", false) => pve::Method::Put,
        ("DELETE", false) => pve::Method::Delete,
        _ => {
            return Err(refused(spec, &[("method".into(), format!("{method} is not allowed here"))])
                    .with_hint("pve_api_call sends GET only; writes go through pve_api_write (tier full, approval required). Nothing was sent."));
        }
    };
    let raw_path = args.str("path").unwrap_or_default();
    let segments = structural_path(raw_path).map_err(|refusal| refused(spec, &[refusal]))?;
    let items = match args.values.get("params") {
        Some(ArgValue::List(items)) => items.clone(),
        _ => Vec::new(),
    };
    let params = structural_params(&items).map_err(|refusals| refused(spec, &refusals))?;
    let Some(client) = backends.pve else {
        return Err(not_configured());
    };
    let (loaded, lookups) = api_call_cache::load(client, cancel).await;
    let (checked, schema_report) = match &loaded {
        Ok(schema) => match against_schema(&schema.schema, &method, &segments, params) {
            Ok(checked) => (checked, checked_report(schema)),
            Err(refusals) => {
                return Err(
                    refused_after_reading(spec, &refusals, &lookups).with_details(json!({
                        "errors": errors_map(&refusals),
                        "schema": checked_report(schema),
                        "read": lookups,
                    })),
                );
            }
        },
        Err(why) => (
            CheckedCall {
                path: encode_path(&segments),
                params,
                template: None,
                cluster: None,
            },
            json!({
                "checked": false,
                "reason": why,
                "applied": "structural checks only (no '.'/'..' segments, no '%', '?', '#', '\\\\' or control characters in the path; each segment encoded; plain parameter names)",
            }),
        ),
    };
    Ok(Judged {
        method,
        pve_method,
        checked,
        schema_report,
    })
}

/// What the cluster's own schema says the call does (nothing when no schema could be had):
/// learned before the gate, so a person is asked about everything either schema says.
pub fn by_cluster(judged: &Judged) -> Classified {
    match &judged.checked.cluster {
        Some(cluster) => effects::classify_rest_with(
            &judged.method,
            &judged.checked.path,
            &judged.checked.params,
            Some(cluster),
        ),
        None => Classified::read(),
    }
}

/// Runs one generic call, as the checks before the gate judged it (`judged`; judged here
/// when the call comes without). Returns the outcome and the attempts of the call itself.
pub async fn execute(
    backends: &Backends<'_>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    judged: Option<Judged>,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let judged = match judged {
        Some(judged) => judged,
        None => match judge(backends, spec, args, cancel).await {
            Ok(judged) => judged,
            Err(failure) => return (Err(failure), 0),
        },
    };
    let Some(client) = backends.pve else {
        return (Err(not_configured()), 0);
    };
    // The REST door classifies by the embedded table; what the cluster's schema adds must be
    // cleared too (the gate asked about it when the schema was at hand).
    let what = format!("{} {}", judged.method, judged.checked.path);
    if let Err(stopped) = effects::admit_classified(what, by_cluster(&judged)) {
        return (Err(failure_from(pve::PveError::from(stopped))), 0);
    }
    let Judged {
        method,
        pve_method,
        checked,
        schema_report,
    } = judged;
    let request = ApiRequest {
        method: pve_method,
        path: checked.path.clone(),
        params: checked.params.clone(),
        timeout: Duration::from_millis(spec.timeout_ms),
        retry: if pve_method == pve::Method::Get {
            RetryPolicy::Reads
        } else {
            RetryPolicy::Never
        },
    };
    let outcome = client.call(request, cancel).await;
    let result = outcome.result.map_err(failure_from).map(|data| {
        json!({
            "method": method,
            "path": format!("/api2/json{}", checked.path),
            "endpoint": checked.template,
            "schema": schema_report,
            "data": data,
        })
    });
    (result, outcome.attempts)
}

fn checked_report(schema: &LoadedSchema) -> Value {
    json!({
        "checked": true,
        "pveVersion": schema.version,
        "source": schema.source.as_str(),
    })
}

fn refused(spec: &ToolSpec, refusals: &[Refusal]) -> ToolFailure {
    let summary: Vec<String> = refusals
        .iter()
        .map(|(name, why)| format!("{name}: {why}"))
        .collect();
    ToolFailure::new(
        codes::TOOL_INPUT_REJECTED,
        format!("Invalid arguments for {}: {}.", spec.name, summary.join("; ")),
    )
    .with_hint("Fix the named parameters; the path is relative to /api2/json and params are key=value items. Nothing was sent to Proxmox.")
    .with_details(json!({ "errors": errors_map(refusals) }))
}

/// A refusal judged against the schema: the call was not sent, but the lookup may have read
/// the version and the schema, and the hint says so rather than promise nothing was sent.
fn refused_after_reading(spec: &ToolSpec, refusals: &[Refusal], read: &[&str]) -> ToolFailure {
    let failure = refused(spec, refusals);
    if read.is_empty() {
        return failure;
    }
    failure.with_hint(format!(
        "Fix the named parameters; the path is relative to /api2/json and params are key=value items. The call itself was not sent; to check it against the cluster's API schema this server read {} (details.read).",
        read.join(" and ")
    ))
}

fn errors_map(refusals: &[Refusal]) -> serde_json::Map<String, Value> {
    refusals
        .iter()
        .map(|(name, why)| (name.clone(), Value::String(why.clone())))
        .collect()
}
