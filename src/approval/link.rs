//! Approval by link: the person decides on the approval page, reached through URL-mode
//! elicitation (MCP 2025-11-25) or a webhook notice (`PVE_APPROVAL_NOTIFY`).
//!
//! URL mode: the call registers a pending approval ([`PendingApprovals`]), sends
//! `elicitation/create` with `mode: "url"`, the page's address and an `elicitationId`, then
//! waits for the page until the deadline. The client's `accept` only means the person was shown
//! the page; its `decline` or `cancel` ends the wait. When the page decides, the client is sent
//! `notifications/elicitation/complete`. Webhook: the notice replaces the elicitation; the call
//! blocks until the page decides or the deadline passes. Who may decide is fixed at
//! registration ([`Approvers::for_caller`]): an OAuth caller's link needs a signed-in person
//! (`PVE_APPROVERS`), whose name is then noted for the call's audit lines.
//!
//! Invariant: only an Approve posted on the page, for this call's own link, before its deadline,
//! approves; everything else — decline, cancel, no answer, an undeliverable notice, a client
//! that drops the call — refuses it before anything is sent to Proxmox, and `confirm` plays no
//! part.

use std::sync::Arc;
use std::time::Duration;

use rand::RngCore;
use rmcp::RoleServer;
use rmcp::model::{CustomNotification, ElicitRequestParams, ElicitationAction, ServerNotification};
use rmcp::service::RequestContext;
use serde_json::json;

use super::approvers::{Approvers, NoApprover, note_approver};
use super::notify::{Notice, Notifier};
use super::pending::{Decided, PageDecision, PendingApprovals, RegisterError, Waiting};
use super::{ApprovedBy, Question, Verdict};
use crate::envelope::{ToolFailure, codes};
use crate::identity::Caller;
use crate::policy::{ApprovalVia, ApproverRule, LinkSettings};

/// The notification that tells the client the out-of-band interaction ended.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// The link-approval paths, shared by every session.
#[derive(Debug)]
pub struct LinkApproval {
    pending: Arc<PendingApprovals>,
    notifier: Option<Notifier>,
    via: ApprovalVia,
    approvers: ApproverRule,
}

impl LinkApproval {
    /// Built from the settings; the store is the one the page reads.
    pub fn new(pending: Arc<PendingApprovals>, settings: &LinkSettings) -> LinkApproval {
        LinkApproval {
            pending,
            notifier: settings.notify.clone().map(Notifier::new),
            via: settings.via,
            approvers: settings.approvers.clone(),
        }
    }

    /// Without links: no page address, no webhook (the approver's default).
    pub fn off() -> LinkApproval {
        LinkApproval {
            pending: Arc::new(PendingApprovals::new(None)),
            notifier: None,
            via: ApprovalVia::Form,
            approvers: ApproverRule::Caller,
        }
    }

    /// Whether the page has a public address a person can be sent to.
    pub fn reachable(&self) -> bool {
        self.pending.base_url().is_some()
    }

    /// Whether a webhook is configured (then `confirm` never approves).
    pub fn notifies(&self) -> bool {
        self.notifier.is_some()
    }

    /// Whether clients that declare both modes are sent to the page.
    pub fn prefers_url(&self) -> bool {
        self.via == ApprovalVia::Url && self.reachable()
    }

    /// Registers the call's link, decidable by whom the settings name for this caller.
    // The failure is the cold path, rendered once (as in `dispatch`).
    #[allow(clippy::result_large_err)]
    fn register(
        &self,
        context: &RequestContext<RoleServer>,
        question: &Question,
        binding: Vec<u8>,
        timeout: Duration,
    ) -> Result<Waiting, ToolFailure> {
        let approvers = Approvers::for_caller(&self.approvers, &Caller::of(context))
            .map_err(|NoApprover| no_approver())?;
        self.pending
            .register(
                &question.message,
                question.tool,
                binding,
                timeout,
                approvers,
            )
            .map_err(not_registered)
            .inspect(|waiting| {
                if let Some(offer) = &question.lease {
                    self.pending
                        .offer_lease(waiting, offer.scope.shown(), offer.minutes.clone());
                }
            })
    }

    /// Asks through URL-mode elicitation and waits for the page.
    pub async fn by_url(
        &self,
        context: &RequestContext<RoleServer>,
        question: &Question,
        binding: Vec<u8>,
        timeout: Duration,
    ) -> Verdict {
        let mut waiting = match self.register(context, question, binding, timeout) {
            Ok(waiting) => waiting,
            Err(failure) => return Verdict::Refused(failure),
        };
        let elicitation_id = hex::encode({
            let mut id = [0u8; 16];
            rand::rng().fill_bytes(&mut id);
            id
        });
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: format!(
                "{}\n\nOpen the approval page to approve or decline this exact call.",
                question.message
            ),
            url: waiting.link.to_string(),
            elicitation_id: elicitation_id.clone(),
        };
        let peer = context.peer.clone();
        let mut asked = Box::pin(async move {
            peer.create_elicitation_with_timeout(params, Some(timeout))
                .await
        });
        let deadline = tokio::time::Instant::from_std(waiting.deadline);
        let mut shown = false;
        let decided = loop {
            tokio::select! {
                decided = waiting.decision() => {
                    if !shown {
                        // The page decided before the client answered the URL question (a
                        // client may answer once the person is back). Its answer still comes:
                        // keep waiting for it aside, so rmcp hands it to a live receiver
                        // instead of warning "Error sending response" on a dropped one.
                        tokio::spawn(async move {
                            let _ = asked.await;
                        });
                    }
                    break decided;
                }
                answer = &mut asked, if !shown => {
                    shown = true;
                    match answer.map(|r| r.action) {
                        // Accept: the person was shown the page; the page decides.
                        Ok(ElicitationAction::Accept) => {}
                        Ok(ElicitationAction::Decline) => return Verdict::Refused(super::declined()),
                        Ok(_) => return Verdict::Refused(super::cancelled("The person dismissed the approval page.")),
                        // The client could not show the link (or never answered): the page
                        // still decides until the deadline.
                        Err(err) => tracing::debug!(error = %err, "URL elicitation got no answer"),
                    }
                }
                () = tokio::time::sleep_until(deadline) => return Verdict::Refused(too_late(timeout)),
                () = context.ct.cancelled() => return Verdict::Refused(super::cancelled("The client cancelled the call while the person was being asked.")),
            }
        };
        let notification = CustomNotification::new(
            ELICITATION_COMPLETE,
            Some(json!({ "elicitationId": elicitation_id })),
        );
        if let Err(err) = context
            .peer
            .send_notification(ServerNotification::CustomNotification(notification))
            .await
        {
            tracing::debug!(error = %err, "could not send elicitation/complete");
        }
        conclude(decided)
    }

    /// Tells the webhook and waits for the page.
    pub async fn by_webhook(
        &self,
        context: &RequestContext<RoleServer>,
        question: &Question,
        binding: Vec<u8>,
        timeout: Duration,
    ) -> Verdict {
        let Some(notifier) = &self.notifier else {
            return Verdict::Refused(super::unavailable());
        };
        let mut waiting = match self.register(context, question, binding, timeout) {
            Ok(waiting) => waiting,
            Err(failure) => return Verdict::Refused(failure),
        };
        let requested_by = crate::identity::Caller::of(context).label();
        let link = waiting.link.to_string();
        let notice = Notice {
            tool: question.tool,
            question: &question.message,
            link: &link,
            expires_at: waiting.expires_at,
            requested_by: &requested_by,
        };
        if let Err(why) = notifier.send(&notice).await {
            tracing::warn!(webhook = %notifier.shown(), error = %why, "approval notice not delivered");
            return Verdict::Refused(
                ToolFailure::new(
                    codes::APPROVAL_UNAVAILABLE,
                    format!("The approval notice could not be delivered ({why}); nobody was asked and nothing was sent to Proxmox."),
                )
                .with_hint("Tell the operator to check PVE_APPROVAL_NOTIFY's receiver, then call again."),
            );
        }
        tracing::info!(tool = question.tool, webhook = %notifier.shown(), "approval notice sent; waiting for a person");
        let deadline = tokio::time::Instant::from_std(waiting.deadline);
        tokio::select! {
            decided = waiting.decision() => conclude(decided),
            () = tokio::time::sleep_until(deadline) => Verdict::Refused(too_late(timeout)),
            () = context.ct.cancelled() => Verdict::Refused(super::cancelled("The client cancelled the call while the person was being asked.")),
        }
    }
}

/// Why no link could be issued, as a refusal.
fn not_registered(why: RegisterError) -> ToolFailure {
    let message = match why {
        RegisterError::NoAddress => {
            "This call needs a person's approval on the approval page, and the page has no known address; nothing was sent to Proxmox."
        }
        RegisterError::Full => {
            "Too many approvals are waiting for a person; nothing was sent to Proxmox."
        }
    };
    ToolFailure::new(codes::APPROVAL_UNAVAILABLE, message).with_hint(
        "Tell the operator: set PVE_APPROVAL_BASE_URL to the page's public address (or PVE_APPROVAL_LISTEN under stdio), or answer the waiting approvals first.",
    )
}

/// An OAuth caller without a subject, under `PVE_APPROVERS=caller`: nobody could sign in as
/// them, so nobody is asked.
fn no_approver() -> ToolFailure {
    ToolFailure::new(
        codes::APPROVAL_UNAVAILABLE,
        "This call needs the approval of the person who made it, and the calling token names no person (no `sub`); nothing was sent to Proxmox.",
    )
    .with_hint("Tell the operator: call with a person's token, or set PVE_APPROVERS=scope:<name> so people with that scope approve.")
}

/// The page's decision as a verdict; the name of a signed-in person who decided (approve or
/// decline) is noted for the audit.
fn conclude(decided: Option<Decided>) -> Verdict {
    match decided {
        Some(Decided { decision, approver }) => {
            if let Some(name) = approver {
                note_approver(name);
            }
            match decision {
                PageDecision::Approve => Verdict::Approved(ApprovedBy::PersonByLink),
                PageDecision::ApproveFor(minutes) => {
                    Verdict::Leased(ApprovedBy::PersonByLink, minutes)
                }
                PageDecision::Decline => Verdict::Refused(super::declined()),
            }
        }
        None => Verdict::Refused(super::cancelled(
            "The approval link was abandoned before a person decided.",
        )),
    }
}

fn too_late(timeout: Duration) -> ToolFailure {
    ToolFailure::new(
        codes::CONFIRMATION_TIMEOUT,
        format!(
            "Nobody decided on the approval page within {} s; nothing was sent to Proxmox.",
            timeout.as_secs()
        ),
    )
    .with_hint("Call again when a person can answer (PVE_APPROVAL_TIMEOUT_SECS sets the wait).")
}
