//! The first stage of a call when several clusters are served: which cluster it names, and
//! whether that cluster's policy allows the tool.
//!
//! Invariants: the `cluster` argument is checked against the configured names and removed
//! from the arguments the rest of the pipeline sees (validation, rendering, the request), so
//! it never reaches Proxmox; a tool the named cluster's registry does not hold is refused
//! before anything is sent, with the clusters where it is allowed.

use std::borrow::Cow;

use serde_json::{Map, Value, json};

use super::Clusters;
use crate::envelope::{ToolFailure, codes};
use crate::registry::Entry;
use crate::schema::CLUSTER;
use crate::state::AppState;

/// A call bound to its cluster.
#[derive(Debug)]
pub struct Routed<'a> {
    /// The cluster's state.
    pub state: &'a AppState,
    /// The tool as that cluster serves it (naming the cluster when there are several).
    pub entry: Entry,
    /// The arguments without `cluster`.
    pub arguments: Option<Cow<'a, Map<String, Value>>>,
}

/// A call that names no valid cluster, or one whose policy does not allow the tool.
#[derive(Debug)]
pub struct Refusal<'a> {
    /// The named cluster (its audit log records the refusal), when it exists.
    pub state: Option<&'a AppState>,
    /// The tool, naming that cluster when it exists.
    pub entry: Entry,
    /// Why.
    pub failure: ToolFailure,
}

impl Clusters {
    /// Binds a call of `entry` (from the listing) to its cluster: the `cluster` argument, else
    /// the default; the plain case passes through untouched.
    pub fn route<'a>(
        &'a self,
        entry: &'a Entry,
        arguments: Option<&'a Map<String, Value>>,
    ) -> Result<Routed<'a>, Box<Refusal<'a>>> {
        if self.is_single() {
            return Ok(Routed {
                state: self.primary(),
                entry: *entry,
                arguments: arguments.map(Cow::Borrowed),
            });
        }
        if entry.spec.spans_clusters() {
            // Reads every cluster: it names none, and needs no `cluster` argument.
            return Ok(Routed {
                state: self.primary(),
                entry: *entry,
                arguments: arguments.map(|args| {
                    let mut args = args.clone();
                    args.remove(CLUSTER);
                    Cow::Owned(args)
                }),
            });
        }
        let refuse = |state: Option<&'a AppState>, entry: Entry, failure| {
            Box::new(Refusal {
                state,
                entry,
                failure,
            })
        };
        let names = self.names();
        let named = arguments.and_then(|args| args.get(CLUSTER));
        let member = match named {
            Some(Value::String(name)) => self.members.iter().find(|m| m.name == name.as_str()),
            None | Some(Value::Null) => self.default.map(|i| &self.members[i]),
            Some(_) => None,
        };
        let Some(member) = member else {
            let message = match named {
                None | Some(Value::Null) => format!(
                    "{} needs a cluster: pass cluster, one of {}.",
                    entry.wire_name,
                    names.join(", ")
                ),
                Some(other) => format!(
                    "cluster {} is not a configured cluster; use one of {}.",
                    crate::envelope::cap_echo(&other.to_string(), 80),
                    names.join(", ")
                ),
            };
            let failure = ToolFailure::new(codes::TOOL_INPUT_REJECTED, message)
                .with_hint("Nothing was sent to any cluster.")
                .with_details(json!({"clusters": names}));
            return Err(refuse(None, *entry, failure));
        };
        let state = member.state.as_ref();
        let Some(own) = state.registry.get(entry.wire_name) else {
            let mut named_entry = *entry;
            named_entry.cluster = Some(member.name);
            let failure = not_allowed(self, entry, member.name, state);
            return Err(refuse(Some(state), named_entry, failure));
        };
        let arguments = arguments.map(|args| {
            let mut args = args.clone();
            args.remove(CLUSTER);
            Cow::Owned(args)
        });
        Ok(Routed {
            state,
            entry: *own,
            arguments,
        })
    }
}

/// `CLUSTER_NOT_ALLOWED`: why `cluster`'s policy hides the tool, and where it is allowed.
fn not_allowed(clusters: &Clusters, entry: &Entry, cluster: &str, state: &AppState) -> ToolFailure {
    let why = state
        .settings
        .why_hidden(entry.spec)
        .unwrap_or_else(|| "it runs over SSH, and SSH is not configured there".to_owned());
    let allowed = clusters.allowing(entry.wire_name);
    ToolFailure::new(
        codes::CLUSTER_NOT_ALLOWED,
        format!(
            "{} is not allowed in cluster {cluster} ({why}); it is allowed in: {}.",
            entry.wire_name,
            allowed.join(", ")
        ),
    )
    .with_hint(format!(
        "Nothing was sent. Call it with cluster set to one of {} if that is the cluster meant, or change {cluster}'s policy.",
        allowed.join(", ")
    ))
    .with_details(json!({"cluster": cluster, "allowedIn": allowed}))
}

impl Refusal<'_> {
    /// The refusal's answer: recorded (as a refusal) in the named cluster's audit trail when
    /// that cluster exists; nothing was sent.
    pub async fn conclude(
        self,
        arguments: Option<&Map<String, Value>>,
        caller: &str,
        started: std::time::Instant,
    ) -> rmcp::model::CallToolResult {
        let record = crate::outcome::Record {
            tier: self
                .state
                .map_or(crate::catalog::Tier::ReadOnly, |s| s.settings.tier),
            audit: self.state.map(|s| &s.audit),
            arguments,
            caller: Some(caller),
        };
        crate::outcome::conclude(&record, &self.entry, started, Err(self.failure), 0, None).await
    }
}
