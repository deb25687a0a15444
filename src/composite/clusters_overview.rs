//! `pve_clusters_overview`: what runs where, across every configured cluster at once.
//!
//! Each cluster's inventory (the three reads of `pve_inventory_overview`) is read in
//! parallel — at most [`PARALLEL`] clusters at a time, each within [`PER_CLUSTER`].
//! Invariants: one cluster's failure (unreachable, refused, too slow) is reported in its own
//! entry as `{cluster, ok: false, error: {code, message}}` and never fails the whole answer;
//! the entries come in configuration order; only reads are sent, and only to clusters whose
//! own policy exposes the overview (another is reported `CLUSTER_NOT_ALLOWED`, unread).

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::calls::Calls;
use super::overview;
use crate::backends::{Backends, ClusterClient};
use crate::envelope::{ToolFailure, codes};

/// Clusters read at the same time.
const PARALLEL: usize = 8;
/// Time one cluster's reads may take before it is reported as timed out.
const PER_CLUSTER: Duration = Duration::from_secs(20);

/// Reads every cluster; `Ok` always (the failures are per cluster), with the attempts made.
pub(super) async fn run(
    backends: &Backends<'_>,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let permits = tokio::sync::Semaphore::new(PARALLEL);
    let mut reads = Vec::with_capacity(backends.clusters.len());
    for cluster in backends.clusters {
        reads.push(bounded(cluster, cancel, &permits));
    }
    let answers: Vec<(Value, u32)> = futures::future::join_all(reads).await;
    let attempts = answers.iter().map(|(_, n)| n).sum();
    let ok = answers.iter().filter(|(v, _)| v["ok"] == true).count();
    let clusters: Vec<Value> = answers.into_iter().map(|(v, _)| v).collect();
    let data = json!({
        "clusters": clusters,
        "reachable": ok,
        "total": clusters.len(),
    });
    (Ok(data), attempts)
}

/// [`one`] once a permit is free (at most [`PARALLEL`] clusters are read at a time).
async fn bounded(
    cluster: &ClusterClient,
    cancel: &CancellationToken,
    permits: &tokio::sync::Semaphore,
) -> (Value, u32) {
    let _permit = permits.acquire().await.ok();
    one(cluster, cancel).await
}

/// One cluster's entry, and the requests it took.
async fn one(cluster: &ClusterClient, cancel: &CancellationToken) -> (Value, u32) {
    let failed = |code: &str, message: String| json!({"cluster": cluster.name, "ok": false, "error": {"code": code, "message": message}});
    if !cluster.readable {
        let message = "this cluster's tool policy (access tier, module mode, categories or lists) leaves the overview out; nothing was read from it".to_owned();
        return (failed(codes::CLUSTER_NOT_ALLOWED, message), 0);
    }
    let mut calls = match Calls::new(cluster.pve.as_ref(), cancel) {
        Ok(calls) => calls,
        Err(f) => return (failed(f.code, f.message), 0),
    };
    let read = tokio::time::timeout(PER_CLUSTER, overview::inventory(&mut calls)).await;
    let entry = match read {
        Ok(Ok(inventory)) => json!({
            "cluster": cluster.name,
            "ok": true,
            "name": inventory["cluster"]["name"],
            "version": inventory["version"]["version"],
            "quorate": inventory["cluster"]["quorate"],
            "nodes": {
                "online": inventory["cluster"]["nodes_online"],
                "total": inventory["cluster"]["nodes_total"],
            },
            "guests": inventory["counts"],
            "per_node": inventory["per_node"],
        }),
        Ok(Err(f)) => failed(f.code, f.message),
        Err(_) => failed(
            "CLUSTER_TIMEOUT",
            format!(
                "no answer within {} s; the other clusters are reported",
                PER_CLUSTER.as_secs()
            ),
        ),
    };
    (entry, calls.attempts)
}
