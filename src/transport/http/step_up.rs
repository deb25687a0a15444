//! Step-up authorization (RFC 6750 §3.1, the MCP authorization spec's scope challenge): a
//! `tools/call` for a tool above the tier an OAuth token's scopes grant is answered with HTTP 403
//! and `WWW-Authenticate: Bearer error="insufficient_scope", scope="<the scope it needs>"`, so a
//! client that started with the least scope (the 401 challenge names `MCP_OAUTH_SCOPE_READ`)
//! asks its authorization server for more and retries.
//!
//! Invariants: only a tool this server could run for some token is challenged (its tier at most
//! the server's); a tool no scope reaches, an unknown name, a compact meta-tool and a sensitive
//! read below `full` (decided by the gate, with the arguments) stay refused inside the call's
//! result as before. Nothing is sent to Proxmox for a challenged call.

use std::collections::HashMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::errors::{SERVER_ERROR, json_error_with_id};
use super::oauth::{Challenges, OAuthSettings};
use crate::catalog::Tier;
use crate::identity::{Caller, Via};
use crate::registry::Registry;

/// What the step-up check needs: each tool's tier, the server's tier and the challenges.
#[derive(Debug)]
pub struct StepUp {
    /// Wire names of tools above read-only, with their tier.
    tiers: HashMap<&'static str, Tier>,
    /// The highest tier any cluster of this server allows.
    server_tier: Tier,
    /// The `WWW-Authenticate` value per tier that can be stepped up to.
    challenges: HashMap<Tier, (HeaderValue, String)>,
}

impl StepUp {
    /// The check for `listing` on a server whose tier is `server_tier`.
    pub fn new(settings: &OAuthSettings, listing: &Registry, server_tier: Tier) -> StepUp {
        let tiers = listing
            .entries()
            .iter()
            .filter(|entry| entry.spec.tier > Tier::ReadOnly && entry.spec.tier <= server_tier)
            .map(|entry| (entry.wire_name, entry.spec.tier))
            .collect();
        let challenges = [Tier::ReadExecute, Tier::Full]
            .into_iter()
            .map(|tier| {
                let scope = settings.scopes.for_tier(tier).to_owned();
                (tier, (Challenges::step_up(settings, &scope), scope))
            })
            .collect();
        StepUp {
            tiers,
            server_tier,
            challenges,
        }
    }

    /// The 403 answer when `body` is a `tools/call` this OAuth `caller` needs more scope for.
    pub fn check(&self, caller: Option<&Caller>, body: &[u8]) -> Option<Response> {
        let caller = caller.filter(|c| c.via == Via::OAuth)?;
        let request: Value = serde_json::from_slice(body).ok()?;
        if request.get("method").and_then(Value::as_str) != Some("tools/call") {
            return None;
        }
        let name = request.pointer("/params/name").and_then(Value::as_str)?;
        let needed = *self.tiers.get(name)?;
        if needed <= caller.tier_within(self.server_tier) {
            return None;
        }
        let (challenge, scope) = self.challenges.get(&needed)?;
        let mut response = json_error_with_id(
            StatusCode::FORBIDDEN,
            SERVER_ERROR,
            &format!(
                "Forbidden: {name} needs the scope {scope}, which this token does not grant; ask the authorization server for it and retry. Nothing was sent to Proxmox."
            ),
            request.get("id"),
        );
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge.clone());
        Some(response)
    }
}
