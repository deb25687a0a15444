//! The task ids this server hands out: bound to the caller who made them and, with several
//! clusters, to the cluster.
//!
//! An id is `<inner>~<seal>`, or `<cluster>~<inner>~<seal>` in a process serving several
//! clusters, where `<inner>` is the id of the Proxmox task or guest program
//! ([`super::id::TaskHandle`], [`super::exec_task::ExecHandle`]) and `<seal>` an HMAC-SHA256,
//! under a key of this server, of the caller's [`Owner`] and the rest. The key is derived from
//! `PVE_APPROVAL_KEY_FILE` when set (replicas sharing it accept each other's ids), else random
//! per process, and domain-separated from every other use.
//!
//! Invariants: an id opens only for the caller it was issued to — another caller, an edited id
//! or a forged one gets the very error an unknown id gets (no oracle), and nothing is sent to
//! Proxmox; an id is followed only on the cluster it was issued for; a cluster name never holds
//! `~` (names match `[a-z0-9][a-z0-9_-]*`) and neither does an inner id, so the split is
//! unambiguous.

use ring::hmac;
use rmcp::ErrorData as McpError;
use subtle::ConstantTimeEq;

use super::id::IdError;
use crate::clusters::Clusters;
use crate::identity::Owner;
use crate::state::AppState;

/// Separates the cluster, the inner id and the seal.
const SEP: char = '~';
/// Domain of the derived key: an id seal is never valid as anything else.
const DOMAIN: &[u8] = b"nandi-proxmox-mcp task id v2 (owner-bound)";

/// The key that seals ids: derived from the shared approval key when set (so replicas accept
/// each other's ids), else from this process's random secret.
fn key(state: &AppState) -> hmac::Key {
    let shared = state.settings.approval_key.as_ref().map(|k| k.expose());
    super::seal::domain_key(shared, DOMAIN)
}

fn tag(key: &hmac::Key, owner: &Owner, body: &str) -> hmac::Tag {
    let mut context = hmac::Context::with_key(key);
    context.update(&owner.binding());
    context.update(body.as_bytes());
    context.sign()
}

/// The id to hand out for `inner`, issued to `owner` by a call on `cluster` (`None`: a process
/// serving one cluster).
pub fn bind(state: &AppState, cluster: Option<&str>, owner: &Owner, inner: String) -> String {
    let body = match cluster {
        Some(cluster) => format!("{cluster}{SEP}{inner}"),
        None => inner,
    };
    let seal = hex::encode(tag(&key(state), owner, &body).as_ref());
    format!("{body}{SEP}{seal}")
}

/// The cluster an id was issued for and the inner id — only when `owner` is the caller it was
/// issued to and this server sealed it; anything else is an unknown task.
pub fn open<'a, 'b>(
    clusters: &'a Clusters,
    owner: &Owner,
    id: &'b str,
) -> Result<(&'a AppState, Option<&'static str>, &'b str), McpError> {
    let unknown = || super::id_error(IdError::Unknown);
    let (body, seal) = id.rsplit_once(SEP).ok_or_else(unknown)?;
    let mac = hex::decode(seal).map_err(|_| unknown())?;
    // Checked under the key before anything else is looked at, compared in constant time.
    let expected = tag(&key(clusters.primary()), owner, body);
    if !bool::from(expected.as_ref().ct_eq(&mac)) {
        return Err(unknown());
    }
    if clusters.is_single() {
        if body.contains(SEP) {
            return Err(unknown());
        }
        return Ok((clusters.primary(), None, body));
    }
    let (name, inner) = body.split_once(SEP).ok_or_else(unknown)?;
    let member = clusters
        .members()
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(unknown)?;
    Ok((member.state.as_ref(), Some(member.name), inner))
}
