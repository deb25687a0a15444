//! Task ids of a process serving several clusters: the cluster is bound into the id.
//!
//! With several clusters an id is `<cluster>~<id>~<seal>`, where `<id>` is the id the plain
//! case issues (UPID-derived, or a sealed guest-program id) and `<seal>` an HMAC-SHA256 of
//! `<cluster>~<id>` under a key of this server (derived from `PVE_APPROVAL_KEY_FILE` when
//! set, domain-separated from every other use; else random per process). The plain case's
//! ids are unchanged. Invariants: an id is followed only on the cluster it was issued for —
//! an id edited to name another cluster, or naming no configured cluster, is an unknown
//! task, and nothing is sent anywhere; a cluster name never holds `~` (names match
//! `[a-z0-9][a-z0-9_-]*`) and neither does an inner id, so the split is unambiguous.

use ring::hmac;
use rmcp::ErrorData as McpError;

use super::id::IdError;
use crate::clusters::Clusters;
use crate::state::AppState;

/// Separates the cluster, the inner id and the seal.
const SEP: char = '~';
/// Domain of the derived key: an id seal is never valid as anything else.
const DOMAIN: &[u8] = b"nandi-proxmox-mcp cluster task id v1";

/// The key that seals cluster-bound ids: derived from the shared approval key when set (so
/// replicas accept each other's ids), else from this process's random secret.
fn key(state: &AppState) -> hmac::Key {
    let shared = state.settings.approval_key.as_ref().map(|k| k.expose());
    super::seal::domain_key(shared, DOMAIN)
}

/// The id to hand out for `inner`, issued by a call on `cluster` (`None`: the plain case,
/// unchanged).
pub fn bind(state: &AppState, cluster: Option<&str>, inner: String) -> String {
    let Some(cluster) = cluster else {
        return inner;
    };
    let body = format!("{cluster}{SEP}{inner}");
    let seal = hex::encode(hmac::sign(&key(state), body.as_bytes()).as_ref());
    format!("{body}{SEP}{seal}")
}

/// The cluster an id was issued for and the inner id. With one cluster, the id as it is;
/// with several, only an id this server sealed for a configured cluster opens.
pub fn open<'a, 'b>(
    clusters: &'a Clusters,
    id: &'b str,
) -> Result<(&'a AppState, Option<&'static str>, &'b str), McpError> {
    if clusters.is_single() {
        return Ok((clusters.primary(), None, id));
    }
    let unknown = || super::id_error(IdError::Unknown);
    let (body, seal) = id.rsplit_once(SEP).ok_or_else(unknown)?;
    let tag = hex::decode(seal).map_err(|_| unknown())?;
    // The seal is checked under the key before the cluster is looked up (constant time).
    hmac::verify(&key(clusters.primary()), body.as_bytes(), &tag).map_err(|_| unknown())?;
    let (name, inner) = body.split_once(SEP).ok_or_else(unknown)?;
    let member = clusters
        .members()
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(unknown)?;
    Ok((member.state.as_ref(), Some(member.name), inner))
}
