//! The state every call reads, shared by all sessions: registry, policy, backends, audit trail —
//! and, per call, the Proxmox identity it acts as ([`AppState::acting_for`]).
//!
//! It lives below `server` and `pipeline` (both read it; neither is imported from here), so the
//! call walk goes downward only. Invariants: built once at start-up, never mutated by a call;
//! with per-person identity on (`PVE_PEOPLE_FILE`), an OAuth caller's requests go out only under
//! that person's token — never the server's unless the operator said so (`unmapped: shared`),
//! and then the caller's audit name says it.

use std::borrow::Cow;
use std::sync::Arc;

use crate::audit::AuditLog;
use crate::envelope::{ToolFailure, codes};
use crate::identity::{Caller, Via};
use crate::policy::{Settings, Unmapped};
use crate::pve;
use crate::registry::Registry;
use crate::ssh;

/// Everything a call needs, shared by all sessions.
#[derive(Debug)]
pub struct AppState {
    /// Exposed tools.
    pub registry: Registry,
    /// Policy in force (for the instructions).
    pub settings: Settings,
    /// REST client; `None` when no Proxmox is configured.
    pub pve: Option<pve::Client>,
    /// Where the Proxmox connection comes from, for the instructions.
    pub connection_note: String,
    /// SSH router (executor + node routes); `None` when SSH is not configured.
    pub ssh: Option<Arc<ssh::Router>>,
    /// Why the SSH tools are or are not available, for the instructions.
    pub ssh_note: String,
    /// The audit trail of changes and refusals (`PVE_AUDIT_LOG`).
    pub audit: AuditLog,
    /// The Proxmox Backup Servers configured beside this cluster.
    pub pbs: Vec<crate::backends::PbsServer>,
}

/// Whose Proxmox rights one call uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActingAs {
    /// The server's own token (no people file, or a caller that is not an OAuth person).
    Server,
    /// The person's own token (`user@realm!token`).
    Person(String),
    /// The server's token for an OAuth caller the people file does not name, because the
    /// operator allows it (`unmapped: shared`).
    ServerForUnmapped,
}

/// The Proxmox identity of one call: the client its requests use, and whose it is.
#[derive(Debug, Clone)]
pub struct Acting {
    /// The REST client; `None` when no Proxmox is configured.
    pub client: Option<pve::Client>,
    /// Whose rights the client carries.
    pub as_: ActingAs,
}

impl Acting {
    /// Whether the call runs under the person's own token.
    pub fn is_personal(&self) -> bool {
        matches!(self.as_, ActingAs::Person(_))
    }

    /// The caller's name for audit lines and logs, naming the Proxmox identity when it is
    /// not simply the server's: `oauth:alice as pve:alice@pve!mcp`.
    pub fn caller_name<'a>(&self, label: Cow<'a, str>) -> Cow<'a, str> {
        match &self.as_ {
            ActingAs::Server => label,
            ActingAs::Person(token_id) => Cow::Owned(format!("{label} as pve:{token_id}")),
            ActingAs::ServerForUnmapped => Cow::Owned(format!(
                "{label} as the server's token (not in the people file)"
            )),
        }
    }
}

impl Acting {
    /// A failure as the person should read it: a Proxmox 403 under their own identity is
    /// their Proxmox rights speaking, not the server's configuration.
    pub fn explain(&self, mut failure: ToolFailure) -> ToolFailure {
        let ActingAs::Person(token_id) = &self.as_ else {
            return failure;
        };
        if failure.code != "PROXMOX_ACL_FORBIDDEN" {
            return failure;
        }
        failure.message = format!(
            "{} — the call ran as {token_id}, your own Proxmox identity, and your Proxmox rights do not allow it",
            failure.message
        );
        failure.hint = Some(format!(
            "If you should be allowed this, ask a Proxmox administrator to grant the privilege Proxmox names on that path to your token: `pveum acl modify <path> --roles <role> --tokens {token_id}`."
        ));
        failure
    }
}

impl AppState {
    /// The Proxmox identity `caller`'s requests use. Without a people file, or for a caller
    /// that is not an OAuth person (stdio, the static token, no auth: the operator's own
    /// channels), the server's token. An OAuth caller the file names gets their own token; one
    /// it does not name is refused ([`codes::PERSON_NOT_MAPPED`], nothing sent) unless the
    /// operator allows the shared token.
    pub fn acting_for(&self, caller: &Caller) -> Result<Acting, Box<ToolFailure>> {
        let server = |as_| Acting {
            client: self.pve.clone(),
            as_,
        };
        let Some(people) = self.settings.people.as_deref() else {
            return Ok(server(ActingAs::Server));
        };
        if caller.via != Via::OAuth {
            return Ok(server(ActingAs::Server));
        }
        let token = caller.subject_key.as_ref().and_then(|k| people.token_of(k));
        let Some(token) = token else {
            return match people.unmapped {
                Unmapped::Shared => Ok(server(ActingAs::ServerForUnmapped)),
                Unmapped::Refuse => Err(Box::new(not_mapped(caller))),
            };
        };
        let client = match &self.pve {
            Some(shared) => {
                let (user, realm, token_name) = token.parts();
                let parts = pve::TokenParts {
                    user,
                    realm,
                    token_name,
                    secret: token.expose_secret(),
                };
                Some(
                    shared
                        .as_token(parts)
                        .map_err(crate::envelope::failure_from)?,
                )
            }
            None => None,
        };
        Ok(Acting {
            client,
            as_: ActingAs::Person(token.token_id.clone()),
        })
    }
}

/// The refusal of an OAuth caller without a Proxmox identity of their own.
fn not_mapped(caller: &Caller) -> ToolFailure {
    ToolFailure::new(
        codes::PERSON_NOT_MAPPED,
        format!(
            "{} has no Proxmox identity of their own on this server, and the operator's people file (PVE_PEOPLE_FILE) refuses callers it does not name. Nothing was sent to Proxmox.",
            caller.label()
        ),
    )
    .with_hint(
        "Ask the operator to add your OAuth subject with your own Proxmox API token to the people file (docs/DEPLOY.md, \"Per-person Proxmox identity\").",
    )
}
