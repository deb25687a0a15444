//! Who is asking: the caller of one MCP request, as the transport authenticated it.
//!
//! The HTTP transport puts a [`Caller`] into the request's extensions after authentication
//! (static bearer token, OAuth access token, or none on loopback); stdio requests come from
//! the local user who started the process. Everything that names the caller — audit lines,
//! the person's question, logs — reads it through [`Caller::of`].
//!
//! Every handle the server hands out (task ids, approval states, sessions) is bound to the
//! caller's [`Owner`], so a handle made for one caller opens for nobody else.
//!
//! Invariants: a caller's credentials can only *narrow* what the server's own settings allow
//! ([`Caller::tier_within`]), never widen it; the names it carries come from a verified token
//! and are cleaned ([`clean_name`]) before they reach a log line, an audit record or a question,
//! so no control character or oversized claim travels on; the owner is derived from the raw
//! claims, never from the cleaned names (two subjects that clean alike stay two owners).

use std::borrow::Cow;

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use sha2::{Digest, Sha256};

use crate::catalog::Tier;

/// How a caller was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// The local user who started the server over stdio.
    Stdio,
    /// HTTP with authentication turned off (loopback only).
    Unauthenticated,
    /// HTTP with the server's single static bearer token.
    StaticToken,
    /// HTTP with an OAuth 2.1 access token.
    OAuth,
}

/// The caller of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// How the caller was authenticated.
    pub via: Via,
    /// The token's subject (`sub`), cleaned; OAuth only.
    pub subject: Option<String>,
    /// The OAuth client (`client_id`, else `azp`), cleaned; OAuth only.
    pub client_id: Option<String>,
    /// The scopes the token grants (OAuth only; empty otherwise).
    pub scopes: Vec<String>,
    /// The highest tier the credentials allow; `None`: whatever the server's settings allow.
    pub tier_ceiling: Option<Tier>,
    /// Whom the handles this caller makes belong to.
    pub owner: Owner,
    /// The digest of the token's raw `sub` ([`subject_key`]); OAuth only. What per-person
    /// Proxmox identity and subject-named approvers match on.
    pub subject_key: Option<[u8; 32]>,
}

/// The digest an OAuth subject is matched by: SHA-256 of the raw claim, domain-separated.
/// Matching on it (never on the cleaned, possibly cut name) keeps two subjects that print
/// alike apart.
pub fn subject_key(raw_subject: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"nandi-proxmox-mcp subject v1\0");
    hasher.update(raw_subject.as_bytes());
    hasher.finalize().into()
}

/// Whom a handle belongs to (a task id, an approval state, an HTTP session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Owner {
    /// Everyone who reaches the server this way is one principal: the local stdio user, the
    /// holder of the server's static token, any client with authentication off.
    Shared(Via),
    /// An OAuth token's subject and client: SHA-256 of the raw claims, as the token carried
    /// them (not cut, not cleaned).
    Token([u8; 32]),
}

impl Owner {
    /// The owner of a verified OAuth token with these raw claims.
    pub fn of_token(subject: Option<&str>, client: Option<&str>) -> Owner {
        let mut hasher = Sha256::new();
        hasher.update(b"nandi-proxmox-mcp owner v1\0");
        for claim in [subject, client] {
            // Length-prefixed, and absent distinct from empty: no two claim pairs hash alike.
            match claim {
                Some(value) => {
                    hasher.update([1]);
                    hasher.update((value.len() as u64).to_be_bytes());
                    hasher.update(value.as_bytes());
                }
                None => hasher.update([0]),
            }
        }
        Owner::Token(hasher.finalize().into())
    }

    /// The bytes a seal binds: a kind byte, then the digest (zeros for a shared owner).
    pub fn binding(&self) -> [u8; 33] {
        let mut out = [0u8; 33];
        match self {
            Owner::Shared(via) => {
                out[0] = match via {
                    Via::Stdio => 1,
                    Via::Unauthenticated => 2,
                    Via::StaticToken => 3,
                    // Never built: an OAuth caller's owner is always its token's.
                    Via::OAuth => 4,
                };
            }
            Owner::Token(digest) => {
                out[0] = 5;
                out[1..].copy_from_slice(digest);
            }
        }
        out
    }
}

/// Longest caller name kept (characters); longer claims are cut and marked.
const MAX_NAME_CHARS: usize = 96;

impl Caller {
    /// A caller without a token: stdio's local user, or HTTP with authentication off.
    pub const fn anonymous(via: Via) -> Caller {
        Caller {
            via,
            subject: None,
            client_id: None,
            scopes: Vec::new(),
            tier_ceiling: None,
            owner: Owner::Shared(via),
            subject_key: None,
        }
    }

    /// An OAuth caller from a verified token's raw claims (names cleaned, owner from the raw).
    pub fn oauth(
        subject: Option<&str>,
        client_id: Option<&str>,
        scopes: Vec<String>,
        tier_ceiling: Tier,
    ) -> Caller {
        Caller {
            via: Via::OAuth,
            subject: subject.and_then(clean_name),
            client_id: client_id.and_then(clean_name),
            scopes,
            tier_ceiling: Some(tier_ceiling),
            owner: Owner::of_token(subject, client_id),
            subject_key: subject.map(subject_key),
        }
    }

    /// The caller of this request: what the HTTP transport recorded, else (no HTTP request
    /// behind it) the local stdio user. An HTTP request that carries no recorded caller never
    /// reaches past reads: it is treated as unauthenticated at read-only (fail closed — the
    /// transport's authentication records a caller on every request it lets through).
    pub fn of(context: &RequestContext<RoleServer>) -> Caller {
        Caller::of_request(context.extensions.get::<axum::http::request::Parts>())
    }

    /// [`Caller::of`] for the HTTP request behind a call, if there is one.
    fn of_request(parts: Option<&axum::http::request::Parts>) -> Caller {
        let Some(parts) = parts else {
            return Caller::anonymous(Via::Stdio);
        };
        parts.extensions.get::<Caller>().cloned().unwrap_or(Caller {
            tier_ceiling: Some(Tier::ReadOnly),
            ..Caller::anonymous(Via::Unauthenticated)
        })
    }

    /// The tier this caller may use on a server configured for `server`: the lower of the two.
    pub fn tier_within(&self, server: Tier) -> Tier {
        self.tier_ceiling
            .map_or(server, |ceiling| ceiling.min(server))
    }

    /// A short, stable name for logs, audit lines and questions: `stdio`, `http (no auth)`,
    /// `static token`, or `oauth:<sub>` with the client in brackets when it differs.
    /// Fixed names cost no allocation: this runs on every call.
    pub fn label(&self) -> Cow<'static, str> {
        match self.via {
            Via::Stdio => Cow::Borrowed("stdio"),
            Via::Unauthenticated => Cow::Borrowed("http (no auth)"),
            Via::StaticToken => Cow::Borrowed("static token"),
            Via::OAuth => {
                let who = self
                    .subject
                    .as_deref()
                    .or(self.client_id.as_deref())
                    .unwrap_or("unknown");
                match (self.subject.as_deref(), self.client_id.as_deref()) {
                    (Some(subject), Some(client)) if client != subject => {
                        Cow::Owned(format!("oauth:{who} (client {client})"))
                    }
                    _ => Cow::Owned(format!("oauth:{who}")),
                }
            }
        }
    }
}

/// A claim made fit to print: control characters dropped, surrounding blanks trimmed, at most
/// [`MAX_NAME_CHARS`] characters (a cut is marked with `…`). `None` when nothing is left.
pub fn clean_name(raw: &str) -> Option<String> {
    let kept: String = raw.chars().filter(|c| !c.is_control()).collect();
    let kept = kept.trim();
    if kept.is_empty() {
        return None;
    }
    if kept.chars().count() <= MAX_NAME_CHARS {
        return Some(kept.to_owned());
    }
    let mut cut: String = kept.chars().take(MAX_NAME_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(subject: Option<&str>, client: Option<&str>) -> Caller {
        Caller::oauth(subject, client, vec![], Tier::ReadOnly)
    }

    #[test]
    fn owners_come_from_the_raw_claims() {
        let long = |tail: &str| format!("https://idp.example/{}{tail}", "u".repeat(120));
        let (a, b) = (long("alice"), long("bob"));
        let (alice, bob) = (oauth(Some(&a), None), oauth(Some(&b), None));
        // The printable names are cut alike; the owners stay apart.
        assert_eq!(alice.subject, bob.subject);
        assert_ne!(alice.owner, bob.owner);
        assert_eq!(alice.owner, oauth(Some(&a), None).owner);
        // Subject and client are kept apart: ("ab", none) is not ("a", "b") nor (none, "ab").
        let pairs = [
            Owner::of_token(Some("ab"), None),
            Owner::of_token(Some("a"), Some("b")),
            Owner::of_token(None, Some("ab")),
            Owner::of_token(Some(""), None),
            Owner::of_token(None, None),
        ];
        for (i, x) in pairs.iter().enumerate() {
            for y in &pairs[i + 1..] {
                assert_ne!(x.binding(), y.binding());
            }
        }
        let shared = [Via::Stdio, Via::Unauthenticated, Via::StaticToken]
            .map(|via| Caller::anonymous(via).owner.binding());
        assert_ne!(shared[0], shared[1]);
        assert_ne!(shared[1], shared[2]);
        assert!(!shared.contains(&pairs[4].binding()));
    }

    #[test]
    fn labels_name_how_and_who() {
        assert_eq!(Caller::anonymous(Via::Stdio).label(), "stdio");
        assert_eq!(Caller::anonymous(Via::StaticToken).label(), "static token");
        assert_eq!(
            Caller::anonymous(Via::Unauthenticated).label(),
            "http (no auth)"
        );
        assert_eq!(
            oauth(Some("alice"), Some("claude")).label(),
            "oauth:alice (client claude)"
        );
        assert_eq!(oauth(Some("svc"), Some("svc")).label(), "oauth:svc");
        assert_eq!(oauth(None, Some("ci-bot")).label(), "oauth:ci-bot");
    }

    #[test]
    fn credentials_only_narrow_the_server_tier() {
        let reader = oauth(Some("a"), None);
        assert_eq!(reader.tier_within(Tier::Full), Tier::ReadOnly);
        let admin = Caller {
            tier_ceiling: Some(Tier::Full),
            ..reader.clone()
        };
        assert_eq!(admin.tier_within(Tier::ReadExecute), Tier::ReadExecute);
        assert_eq!(
            Caller::anonymous(Via::StaticToken).tier_within(Tier::ReadExecute),
            Tier::ReadExecute
        );
    }

    #[test]
    fn an_http_request_without_a_recorded_caller_is_read_only() {
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        assert_eq!(Caller::of_request(None), Caller::anonymous(Via::Stdio));
        let unrecorded = Caller::of_request(Some(&parts));
        assert_eq!(unrecorded.via, Via::Unauthenticated);
        assert_eq!(unrecorded.tier_ceiling, Some(Tier::ReadOnly));
        assert_eq!(unrecorded.tier_within(Tier::Full), Tier::ReadOnly);
        let recorded = oauth(Some("alice"), Some("claude"));
        parts.extensions.insert(recorded.clone());
        assert_eq!(Caller::of_request(Some(&parts)), recorded);
    }

    #[test]
    fn names_are_cleaned_and_bounded() {
        assert_eq!(clean_name(" al\u{1b}[31mice\n "), Some("al[31mice".into()));
        assert_eq!(clean_name("\u{7}\t "), None);
        let long = "x".repeat(500);
        let cut = clean_name(&long).unwrap();
        assert_eq!(cut.chars().count(), MAX_NAME_CHARS);
        assert!(cut.ends_with('…'));
    }
}
