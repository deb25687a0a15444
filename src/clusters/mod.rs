//! Several clusters, one server: the per-cluster states, the listing the model sees, and the
//! routing of a call to the cluster it names.
//!
//! Each cluster is a whole [`AppState`] (its REST client, SSH router, policy, registry filtered
//! by that policy, audit log naming it); the server holds them here. With one cluster nothing
//! changes: the listing is that cluster's registry, no `cluster` argument exists, and entries
//! name no cluster. With several, the listing is the union of the clusters' registries and
//! every tool takes a `cluster` argument (an enum of the names; required unless a default is
//! configured).
//!
//! Invariants: a call runs against exactly the cluster it names (or the default); the
//! `cluster` argument is taken out before the tool's own validation, so no Proxmox request
//! ever carries it; a tool that cluster's registry does not hold is refused with
//! `CLUSTER_NOT_ALLOWED` before anything is sent (to any cluster).

mod route;

use std::sync::Arc;

use thiserror::Error;

use crate::backends::ClusterClient;
use crate::catalog::{self, Tier, ToolSpec};
use crate::registry::Registry;
use crate::state::AppState;

pub use route::{Refusal, Routed};

/// One cluster of the process.
#[derive(Debug)]
pub struct Member {
    /// Its name (the instance file's stem); kept for the life of the process.
    pub name: &'static str,
    /// Everything a call on it reads.
    pub state: Arc<AppState>,
}

/// Why a set of clusters cannot be served.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ClustersError {
    /// No cluster was given.
    #[error("no cluster to serve")]
    Empty,
    /// The default names no cluster.
    #[error("the default cluster `{0}` is not one of the configured clusters")]
    UnknownDefault(String),
}

/// Every cluster the process serves, and what the model sees of them.
#[derive(Debug)]
pub struct Clusters {
    members: Vec<Member>,
    /// Index of the default cluster, when one is configured (several clusters only).
    default: Option<usize>,
    /// The registry `tools/list`, prompts and the compact surface read.
    listing: Registry,
    /// Every cluster's REST client, named (several clusters only).
    clients: Vec<ClusterClient>,
}

impl Clusters {
    /// The plain case: one cluster, no `cluster` argument, nothing named.
    pub fn single(state: AppState) -> Clusters {
        let listing = state.registry.clone();
        Clusters {
            members: vec![Member {
                name: "",
                state: Arc::new(state),
            }],
            default: None,
            listing,
            clients: Vec::new(),
        }
    }

    /// Several clusters (one is served as [`Clusters::single`]). Each state's registry is
    /// marked with its cluster; the listing is their union with the `cluster` argument.
    pub fn new(
        members: Vec<(String, AppState)>,
        default: Option<&str>,
    ) -> Result<Clusters, ClustersError> {
        if members.len() == 1 {
            let Some((_, state)) = members.into_iter().next() else {
                return Err(ClustersError::Empty);
            };
            return Ok(Clusters::single(state));
        }
        if members.is_empty() {
            return Err(ClustersError::Empty);
        }
        let members: Vec<Member> = members
            .into_iter()
            .map(|(name, mut state)| {
                // Names live as long as the process: entries and answers borrow them.
                let name: &'static str = Box::leak(name.into_boxed_str());
                state.registry = state.registry.clone().in_cluster(name);
                Member {
                    name,
                    state: Arc::new(state),
                }
            })
            .collect();
        let default = match default {
            Some(name) => Some(
                members
                    .iter()
                    .position(|m| m.name == name)
                    .ok_or_else(|| ClustersError::UnknownDefault(name.to_owned()))?,
            ),
            None => None,
        };
        let names: Vec<&str> = members.iter().map(|m| m.name).collect();
        let first = &members[0].state.settings;
        // A tool is listed when at least one cluster allows it; a tool spanning every cluster
        // when at least one cluster's policy would expose it.
        let mut union = Registry::from_specs_with(
            catalog::all().filter(|spec| {
                members.iter().any(|m| {
                    m.state.registry.get(spec.name).is_some()
                        || (spec.spans_clusters() && m.state.settings.decide(spec))
                })
            }),
            first.aliases,
        );
        union.set_output_cap(first.output_cap);
        let listing = union.with_cluster_argument(&names, default.is_none());
        let spanning: Vec<&ToolSpec> = catalog::all().filter(|s| s.spans_clusters()).collect();
        let clients = members
            .iter()
            .map(|m| ClusterClient {
                name: m.name,
                pve: m.state.pve.clone(),
                readable: spanning.iter().all(|spec| m.state.settings.decide(spec)),
            })
            .collect();
        Ok(Clusters {
            members,
            default,
            listing,
            clients,
        })
    }

    /// Every cluster's REST client, named (empty in the plain case).
    pub fn clients(&self) -> &[ClusterClient] {
        &self.clients
    }

    /// Whether this is the plain one-cluster case.
    pub fn is_single(&self) -> bool {
        self.members.len() == 1
    }

    /// Every cluster, in configuration order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The names of the clusters (several clusters only; the plain case names none).
    pub fn names(&self) -> Vec<&'static str> {
        if self.is_single() {
            return Vec::new();
        }
        self.members.iter().map(|m| m.name).collect()
    }

    /// The default cluster's name, when one is configured.
    pub fn default_name(&self) -> Option<&'static str> {
        self.default.map(|i| self.members[i].name)
    }

    /// The state of the cluster named `name` (several clusters only).
    pub fn get(&self, name: &str) -> Option<&AppState> {
        if self.is_single() {
            return None;
        }
        self.members
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.state.as_ref())
    }

    /// The state read by what is not about one call (process-wide settings, the HTTP
    /// transport's readiness): the default cluster, else the first.
    pub fn primary(&self) -> &AppState {
        &self.members[self.default.unwrap_or(0)].state
    }

    /// The registry the model sees (`tools/list`, prompts, the compact surface).
    pub fn listing(&self) -> &Registry {
        &self.listing
    }

    /// Replaces the listing's `tools/list` payload (the compact surface's meta-tools).
    pub fn map_listing(&mut self, listing: impl FnOnce(&Registry) -> Vec<rmcp::model::Tool>) {
        let tools = listing(&self.listing);
        self.listing = self.listing.clone().with_listing(tools);
        if self.is_single() {
            // The plain case: the one cluster's registry is the listing, as it always was.
            if let Some(state) = Arc::get_mut(&mut self.members[0].state) {
                state.registry = self.listing.clone();
            }
        }
    }

    /// The highest tier any cluster allows (what a caller's credentials are narrowed from
    /// when listing tools).
    pub fn max_tier(&self) -> Tier {
        self.members
            .iter()
            .map(|m| m.state.settings.tier)
            .max()
            .unwrap_or(Tier::ReadOnly)
    }

    /// The clusters whose policy allows `wire_name`.
    pub fn allowing(&self, wire_name: &str) -> Vec<&'static str> {
        self.members
            .iter()
            .filter(|m| m.state.registry.get(wire_name).is_some())
            .map(|m| m.name)
            .collect()
    }
}

/// What the server instructions say about several clusters: the exposure sentence (each
/// cluster's policy), the connection notes and the SSH notes, each naming its cluster.
pub fn describe(clusters: &Clusters) -> (String, String, String) {
    let names = clusters.names().join(", ");
    let how = match clusters.default_name() {
        Some(default) => format!("pass cluster (one of {names}; default {default})"),
        None => format!("pass cluster (one of {names}; required)"),
    };
    let policies: Vec<String> = clusters
        .members()
        .iter()
        .map(|m| {
            format!(
                "{}: {} tools ({})",
                m.name,
                m.state.registry.canonical_count(),
                m.state.settings.summary()
            )
        })
        .collect();
    let exposure = format!(
        "{} tools over {} clusters; every tool acts on one cluster: {how}. A tool is listed when at least one cluster allows it, and a call to a cluster whose policy does not is refused with CLUSTER_NOT_ALLOWED. Per cluster — {}",
        clusters.listing().canonical_count(),
        clusters.members().len(),
        policies.join("; ")
    );
    let per = |note: fn(&AppState) -> &str| {
        clusters
            .members()
            .iter()
            .map(|m| format!("[{}] {}", m.name, note(&m.state)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    (
        exposure,
        per(|s| s.connection_note.as_str()),
        per(|s| s.ssh_note.as_str()),
    )
}
