//! The pipeline's lease stage: which lease a call would fall under, who holds it, and the
//! audit lines of a lease's life (granted, used — on the call's own lines — and ended).
//!
//! Invariant: the scope of a call is computed from what the server validated and classified
//! (the caller's identity, the routed cluster, the `vmid` argument, the gate's effects and
//! fired rules) — nothing the model passes can name, widen or create a lease.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::approval::ApprovedBy;
use crate::approval::lease::{
    AUDIT_TOOL, Ending, Lease, LeaseOffer, Leases, Scope, Target, describe, revocation_file,
};
use crate::audit::AuditLog;
use crate::catalog::ToolSpec;
use crate::gate::Gate;
use crate::identity::{Caller, Via};
use crate::schema::ValidArgs;

/// Who a lease granted on this call would belong to: the stdio user; the OAuth subject and
/// client; else the HTTP session (a caller without a session holds nothing across calls).
pub fn holder_of(context: &RequestContext<RoleServer>, caller: &Caller) -> Option<String> {
    match caller.via {
        Via::Stdio => Some("stdio".to_owned()),
        // The label names the person; the owner's digest keeps two subjects that print
        // alike (a cut claim) from sharing a lease.
        Via::OAuth => Some(match caller.owner {
            crate::identity::Owner::Token(digest) => {
                let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
                format!("{} #{tag}", caller.label())
            }
            crate::identity::Owner::Shared(_) => caller.label().into_owned(),
        }),
        Via::StaticToken | Via::Unauthenticated => {
            let parts = context.extensions.get::<axum::http::request::Parts>()?;
            let session = parts.headers.get("mcp-session-id")?.to_str().ok()?;
            Some(format!("{} session {session}", caller.label()))
        }
    }
}

/// The scope of this call: its holder and cluster, its target (the guest it names, else the
/// tool and its exact arguments), and the gate's effects and fired rules.
pub fn scope_of(
    holder: String,
    cluster: Option<&str>,
    spec: &'static ToolSpec,
    args: &ValidArgs,
    gate: &Gate,
) -> Scope {
    let target = match args.values.get("vmid") {
        Some(vmid) => Target::Guest(vmid.to_wire()),
        None => Target::Call {
            tool: spec.name,
            object: args
                .values
                .iter()
                .map(|(k, v)| format!("{k}={}", v.to_wire()))
                .chain(
                    args.indexed
                        .iter()
                        .map(|(k, (_, v))| format!("{k}={}", v.to_wire())),
                )
                .collect::<Vec<_>>()
                .join(" "),
        },
    };
    Scope {
        holder,
        cluster: cluster.unwrap_or_default().to_owned(),
        target,
        tool: spec.name,
        routine: gate.routine.is_some(),
        effects: gate.clearance(),
        rules: gate.fired.iter().map(|r| r.condition()).collect(),
    }
}

/// How a call a lease let through is recorded (the audit's `approval` and `meta.approval`).
pub const LEASED: &str = "lease";

/// Which lease let a call through (the audit line's `approver`).
pub fn approval_of(lease: &Lease) -> String {
    format!("lease:{}", lease.id)
}

/// The lease covering `scope`, if any; every lease found ended on the way (expired, or named
/// by the revocation file beside `freeze`'s file) gets its `ended` line.
pub async fn lookup(
    store: &Leases,
    scope: &Scope,
    freeze: Option<&crate::effects::FreezeSwitch>,
    log: &AuditLog,
    caller: &str,
) -> Option<Lease> {
    let revocations = freeze.map(|f| revocation_file(f.path()));
    let found = store.find(scope, revocations.as_deref());
    for (lease, ending) in &found.ended {
        record(log, lease, Some(*ending), caller).await;
    }
    found.lease
}

/// Grants the lease a person chose on `offer` and records it (and any lease it evicted).
pub async fn grant(
    store: &Leases,
    offer: &LeaseOffer,
    minutes: u32,
    by: ApprovedBy,
    log: &AuditLog,
    caller: &str,
) {
    let Some((lease, evicted)) = store.grant(offer, minutes, by.as_str()) else {
        return;
    };
    record(log, &lease, None, caller).await;
    if let Some(evicted) = evicted {
        record(log, &evicted, Some(Ending::Evicted), caller).await;
    }
}

/// Appends a lease line: `granted` (with how), or `ended` (with why). A line that cannot be
/// written is logged; the lease itself is already decided (granted by a person, or gone).
pub async fn record(log: &AuditLog, lease: &Lease, ended: Option<Ending>, caller: &str) {
    let (decision, outcome) = match ended {
        None => ("granted", "ok"),
        Some(ending) => ("ended", ending.as_str()),
    };
    let mut line = crate::audit::call::entry(
        AUDIT_TOOL,
        None,
        describe(lease),
        decision,
        Some(lease.granted_by.to_owned()),
        outcome,
        None,
        None,
        Duration::ZERO,
    );
    line.caller = Some(caller.to_owned());
    if let Err(e) = log.append(line).await {
        tracing::error!(lease = %lease.id, error = %e, "lease line not written to the audit log");
    }
}
