//! Approval of gated calls: a person where the client can ask, else the `confirm` flag.
//!
//! One module knows the client's abilities; tools never talk to the client themselves.
//! - Session clients that declared form elicitation are asked with `elicitation/create`.
//! - Stateless peers (protocol 2026-07-28 and later) get an `InputRequiredResult` carrying the
//!   same question and a sealed `requestState` bound to the exact tool and arguments (see
//!   [`state`]); the retry with the person's answer is checked against it.
//! - Session clients that declared only URL elicitation (or both, with `PVE_APPROVAL_VIA=url`)
//!   are sent to the approval page (see [`link`]): the page's Approve, never the elicitation's
//!   `accept`, approves. Where the page cannot be reached — no page address (stdio without
//!   `PVE_APPROVAL_LISTEN`), no session (`MCP_STATELESS=true`), or a 2026-07-28 peer, which is
//!   sent no `elicitation/create` — such a client goes to the webhook if one is configured, else
//!   its gated calls are refused (`APPROVAL_UNAVAILABLE`, naming the setting that fixes it): it
//!   is never downgraded to the model's `confirm`.
//! - Clients that cannot ask are sent to the page through the `PVE_APPROVAL_NOTIFY` webhook
//!   when one is configured; else they fall back to the reference behaviour (`confirm: true`)
//!   in `auto` mode, and are refused in `elicit` mode.
//! - Without sessions (`MCP_STATELESS=true`, see [`Approver::stateless`]) a client older than
//!   2026-07-28 cannot be sent `elicitation/create`, and its `initialize` is forgotten: one that
//!   declared elicitation, or whose request does not carry its own capabilities, is refused
//!   (`APPROVAL_UNAVAILABLE`, naming the setting that fixes it) instead of falling back to
//!   `confirm`.
//!
//! A client's abilities are the session's `initialize` declaration joined with the request's
//! own `_meta` capabilities: a request can add elicitation, never take away what its session
//! declared.
//!
//! Invariant: in a mode where a person can be asked, only the person's explicit accept lets
//! a gated call through — the model's `confirm` never replaces it, not even where the client
//! could ask but this server cannot reach it — and every other outcome (decline, cancel,
//! timeout, transport failure, a forged or replayed state) refuses the call before anything
//! is sent to Proxmox.

mod approvers;
mod form;
pub mod lease;
mod link;
mod notify;
mod pending;
mod state;

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ElicitRequest, ElicitResult, InputRequest,
    InputRequests, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{RequestContext, ServiceError};

use crate::envelope::{ToolFailure, codes};
use crate::identity::{Caller, Owner};
use crate::policy::ApprovalMode;

pub use approvers::{Approvers, Person, approver_of_this_call, note_approver, with_approver_slot};
pub use form::with_lease_line;
use form::{declined, form, judge};
pub use link::{ELICITATION_COMPLETE, LinkApproval};
pub use pending::{
    Admitted, Decided, LinkProblem, PageDecision, PageView, PendingApprovals,
    random as random_secret,
};
pub use state::SealedStates;

/// Key of the approval question inside an MRTR `inputRequests` map.
pub const INPUT_KEY: &str = "approval";

/// Name of the boolean the person ticks in the approval form.
pub const APPROVE_FIELD: &str = "approve";

/// Name of the form's optional choice: approve once, or lease the class for N minutes.
pub const LEASE_FIELD: &str = "lease";

/// The lease choice that grants nothing (approve this call only).
pub const ONCE: &str = "once";

/// How a call was approved, reported in the result's `meta.approval` and the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovedBy {
    /// A person accepted the question (elicitation or MRTR).
    Person,
    /// The caller passed `confirm: true` (a client that cannot ask, or `confirm` mode).
    ConfirmFlag,
    /// A person approved on the approval page (URL elicitation or webhook link).
    PersonByLink,
}

impl ApprovedBy {
    /// The wire form: `person`, `confirm-flag` or `person-link`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovedBy::Person => "person",
            ApprovedBy::ConfirmFlag => "confirm-flag",
            ApprovedBy::PersonByLink => "person-link",
        }
    }
}

/// The outcome of asking.
#[derive(Debug)]
pub enum Verdict {
    /// Run the call.
    Approved(ApprovedBy),
    /// Run the call, and the person also granted a lease of the offered scope for this many
    /// minutes (one of the question's offered lengths).
    Leased(ApprovedBy, u32),
    /// Do not run it; the failure says why.
    Refused(ToolFailure),
    /// Stateless peer: return this and wait for the retry with the person's answer.
    AskClient(Box<InputRequiredResult>),
}

/// Which way a person can be asked by the calling client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// `elicitation/create` on the session.
    Elicitation,
    /// `InputRequiredResult` round trip (2026-07-28 and later).
    MultiRoundTrip,
    /// `elicitation/create` in URL mode on the session: the client declared URL elicitation
    /// only; the person decides on the approval page.
    Url,
    /// The client may be able to ask — it declared elicitation, or, without sessions, could
    /// not say — but this server has no session to send `elicitation/create` on.
    Unreachable,
    /// The client declared only URL elicitation — a person it asks decides on the approval
    /// page — and this server cannot send it there, for the reason given.
    PageUnreachable(NoPage),
    /// No way to ask a person.
    None,
}

/// Why a client that asks a person only on the approval page (URL elicitation) cannot be sent
/// there. Each names its own fix; none lets the model's `confirm` stand in for the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoPage {
    /// The page has no address a person can be sent to (stdio without `PVE_APPROVAL_LISTEN`,
    /// HTTP off loopback without `PVE_APPROVAL_BASE_URL`).
    NoAddress,
    /// The transport keeps no sessions (`MCP_STATELESS=true`): no `elicitation/create` can
    /// carry the link.
    NoSession,
    /// The client speaks MCP 2026-07-28 or later, which takes no `elicitation/create`.
    NoServerRequests,
}

/// Whether `caps` declare form elicitation. A bare `elicitation: {}` means form (backward
/// compatibility, per the spec).
fn declares_form(caps: &ClientCapabilities) -> bool {
    caps.elicitation
        .as_ref()
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Whether `caps` declare URL elicitation.
fn declares_url(caps: &ClientCapabilities) -> bool {
    caps.elicitation.as_ref().is_some_and(|e| e.url.is_some())
}

/// Whether the session's or the request's capabilities satisfy `test` (joined, see
/// [`Channel::of`]).
fn declared(context: &RequestContext<RoleServer>, test: fn(&ClientCapabilities) -> bool) -> bool {
    let in_session = context
        .peer
        .peer_info()
        .is_some_and(|info| test(&info.capabilities));
    in_session || context.meta.client_capabilities().is_some_and(|c| test(&c))
}

impl Channel {
    /// How the client of this request can ask a person, where a session carries
    /// server-to-client requests ([`Approver::channel`] also knows about servers without
    /// sessions).
    ///
    /// The session's declaration and the request's `_meta` capabilities are joined: rmcp's
    /// `client_capabilities()` lets a request's `_meta` replace the session's, so a request
    /// claiming no elicitation would otherwise turn a session that can ask into one that
    /// runs on the model's `confirm`.
    pub fn of(context: &RequestContext<RoleServer>) -> Channel {
        let can_ask = declared(context, declares_form);
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        match (can_ask, stateless) {
            (false, false) if declared(context, declares_url) => Channel::Url,
            (false, true) if declared(context, declares_url) => {
                Channel::PageUnreachable(NoPage::NoServerRequests)
            }
            (false, _) => Channel::None,
            (true, true) => Channel::MultiRoundTrip,
            (true, false) => Channel::Elicitation,
        }
    }

    /// What approval this client and mode will use, for dry-runs and instructions.
    pub fn describe(self, mode: ApprovalMode) -> &'static str {
        match (mode, self) {
            (ApprovalMode::Confirm, _) => "confirm-flag (PVE_HUMAN_APPROVAL=confirm)",
            (_, Channel::Elicitation) => "person (elicitation)",
            (_, Channel::Unreachable) => {
                "refused (MCP_STATELESS=true keeps no session to ask this client on: it needs MCP 2026-07-28, sessions, or PVE_HUMAN_APPROVAL=confirm)"
            }
            (_, Channel::MultiRoundTrip) => "person (multi round-trip request)",
            (_, Channel::Url) => "person (approval page, URL elicitation)",
            (_, Channel::PageUnreachable(why)) => match why {
                NoPage::NoAddress => {
                    "refused (this client asks a person only on the approval page, which has no address: it needs PVE_APPROVAL_LISTEN (stdio) or PVE_APPROVAL_BASE_URL (HTTP), PVE_APPROVAL_NOTIFY, or PVE_HUMAN_APPROVAL=confirm; confirm=true does not replace the page)"
                }
                NoPage::NoSession => {
                    "refused (this client asks a person only on the approval page, and MCP_STATELESS=true keeps no session to send it the link: it needs sessions, PVE_APPROVAL_NOTIFY, or PVE_HUMAN_APPROVAL=confirm; confirm=true does not replace the page)"
                }
                NoPage::NoServerRequests => {
                    "refused (this client asks a person only on the approval page, and MCP 2026-07-28 takes no elicitation/create to send it the link: it needs form elicitation, PVE_APPROVAL_NOTIFY, or PVE_HUMAN_APPROVAL=confirm; confirm=true does not replace the page)"
                }
            },
            (ApprovalMode::Auto, Channel::None) => {
                "confirm-flag (this client cannot ask a person, so confirm=true is set by the model)"
            }
            (ApprovalMode::Elicit, Channel::None) => {
                "refused (PVE_HUMAN_APPROVAL=elicit and this client cannot ask a person)"
            }
        }
    }
}

/// What the person is asked: a plain-language summary of the exact call, and what a
/// refusal for want of `confirm` says (the reference's wording).
#[derive(Debug, Clone)]
pub struct Question {
    /// Message shown to the person.
    pub message: String,
    /// Canonical name of the tool asked about.
    pub tool: &'static str,
    /// Whether the call may remove or interrupt something (the refusal's `impact`).
    pub destructive: bool,
    /// The lease a person may grant with their answer (`None`: approve once only).
    pub lease: Option<lease::LeaseOffer>,
}

/// Asks for approval according to the mode and the client's abilities.
#[derive(Debug)]
pub struct Approver {
    mode: ApprovalMode,
    timeout: Duration,
    states: SealedStates,
    stateless: bool,
    links: Arc<LinkApproval>,
    leases: Arc<lease::Leases>,
}

impl Approver {
    /// An approver for `mode`, giving a person `timeout` to answer. The MRTR states are
    /// sealed with `states` (one key per process unless a shared key is configured).
    pub fn new(mode: ApprovalMode, timeout: Duration, states: SealedStates) -> Approver {
        Approver {
            mode,
            timeout,
            states,
            stateless: false,
            links: Arc::new(LinkApproval::off()),
            leases: Arc::new(lease::Leases::new(0)),
        }
    }

    /// The same approver with leases a person may grant, lasting at most `longest_minutes`
    /// (0: none is ever offered).
    pub fn with_leases(mut self, longest_minutes: u32) -> Approver {
        self.leases = Arc::new(lease::Leases::new(longest_minutes));
        self
    }

    /// The leases people granted through this approver.
    pub fn leases(&self) -> &lease::Leases {
        &self.leases
    }

    /// The same approver with approval by link (the page, URL elicitation, the webhook).
    pub fn with_links(mut self, links: Arc<LinkApproval>) -> Approver {
        self.links = links;
        self
    }

    /// The same approver for a transport that keeps no sessions (`MCP_STATELESS=true`,
    /// given by the transport at start-up): a client older than 2026-07-28 can then never be
    /// sent `elicitation/create`, and the capabilities it declared in `initialize` are gone.
    pub fn stateless(mut self, stateless: bool) -> Approver {
        self.stateless = stateless;
        self
    }

    /// The mode in force.
    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// How this server can have the client of `context` ask a person: [`Channel::of`],
    /// corrected for a transport without sessions.
    pub fn channel(&self, context: &RequestContext<RoleServer>) -> Channel {
        let channel = match Channel::of(context) {
            // Without a session or a page address the URL question cannot be asked; the
            // client still asks only on the page, so it never counts as one that cannot ask.
            Channel::Url if self.stateless => Channel::PageUnreachable(NoPage::NoSession),
            Channel::Url if !self.links.reachable() => Channel::PageUnreachable(NoPage::NoAddress),
            other => other,
        };
        if !self.stateless {
            return channel;
        }
        match channel {
            Channel::Elicitation => Channel::Unreachable,
            // Without a session the `initialize` declaration is forgotten (rmcp fills in
            // empty capabilities): only the request's own capabilities can say the client
            // has no elicitation.
            Channel::None if context.meta.client_capabilities().is_none() => Channel::Unreachable,
            other => other,
        }
    }

    /// What approval a gated call of `context` gets, for dry-runs.
    pub fn describe(&self, context: &RequestContext<RoleServer>) -> &'static str {
        match self.channel(context) {
            Channel::None | Channel::Unreachable | Channel::PageUnreachable(_)
                if self.links.notifies() && self.mode != ApprovalMode::Confirm =>
            {
                "person (approval page linked by the PVE_APPROVAL_NOTIFY webhook; confirm=true does not approve)"
            }
            Channel::Elicitation if self.links.prefers_url() && declared(context, declares_url) => {
                Channel::Url.describe(self.mode)
            }
            channel => channel.describe(self.mode),
        }
    }

    /// Whether a gated call from a client with `channel` is put to a person. `channel` may be
    /// [`Channel::of`] as it is: one this server cannot reach is asked by the webhook, if any
    /// (the question is then worded for the notice).
    pub fn asks_person(&self, channel: Channel) -> bool {
        let reachable = match channel {
            Channel::MultiRoundTrip => true,
            Channel::Elicitation => !self.stateless || self.links.notifies(),
            Channel::Url => (!self.stateless && self.links.reachable()) || self.links.notifies(),
            Channel::PageUnreachable(_) | Channel::Unreachable | Channel::None => {
                self.links.notifies()
            }
        };
        self.mode != ApprovalMode::Confirm && reachable
    }

    /// Decides a gated call. `confirmed` is the model's `confirm` argument.
    pub async fn decide(
        &self,
        context: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
        question: &Question,
        confirmed: bool,
    ) -> Verdict {
        let channel = self.channel(context);
        let owner = Caller::of(context).owner;
        let bound = || state::binding(&owner, &request.name, request.arguments.as_ref());
        let (links, timeout) = (&self.links, self.timeout);
        match (self.mode, channel) {
            (ApprovalMode::Confirm, _) => confirm_flag(self.mode, channel, confirmed, question),
            // A webhook names who approves a call no client can ask: `confirm` never does.
            (_, Channel::None | Channel::Unreachable | Channel::PageUnreachable(_))
                if links.notifies() =>
            {
                links.by_webhook(context, question, bound(), timeout).await
            }
            (ApprovalMode::Auto, Channel::None) => {
                confirm_flag(self.mode, channel, confirmed, question)
            }
            (ApprovalMode::Elicit, Channel::None) => Verdict::Refused(unavailable()),
            // The model's `confirm` never stands in for a person the client could ask.
            (_, Channel::Unreachable) => Verdict::Refused(unreachable()),
            // Nor for the page a client that asks only there cannot be sent to.
            (_, Channel::PageUnreachable(why)) => Verdict::Refused(no_page(why)),
            (_, Channel::Url) => links.by_url(context, question, bound(), timeout).await,
            (_, Channel::Elicitation) if links.prefers_url() && declared(context, declares_url) => {
                links.by_url(context, question, bound(), timeout).await
            }
            (_, Channel::Elicitation) => self.elicit(context, question).await,
            (_, Channel::MultiRoundTrip) => self.round_trip(&owner, request, question),
        }
    }

    async fn elicit(&self, context: &RequestContext<RoleServer>, question: &Question) -> Verdict {
        let params = form(question);
        let asked = context
            .peer
            .create_elicitation_with_timeout(params, Some(self.timeout));
        let answer = tokio::select! {
            answer = asked => answer,
            () = context.ct.cancelled() => return Verdict::Refused(cancelled("The client cancelled the call while the person was being asked.")),
        };
        match answer {
            Ok(result) => judge(&result, question.lease.as_ref()),
            Err(ServiceError::Timeout { .. }) => Verdict::Refused(
                ToolFailure::new(
                    codes::CONFIRMATION_TIMEOUT,
                    format!(
                        "Nobody answered the approval question within {} s; nothing was sent to Proxmox.",
                        self.timeout.as_secs()
                    ),
                )
                .with_hint("Call again when a person can answer (PVE_APPROVAL_TIMEOUT_SECS sets the wait)."),
            ),
            Err(err) => Verdict::Refused(
                ToolFailure::new(
                    codes::CONFIRMATION_CANCELLED,
                    format!("The approval question could not be asked ({err}); nothing was sent to Proxmox."),
                )
                .with_hint("Check that the client shows elicitation requests, then call again."),
            ),
        }
    }

    /// The stateless flow: ask through `InputRequiredResult`, then check the retry.
    fn round_trip(
        &self,
        owner: &Owner,
        request: &CallToolRequestParams,
        question: &Question,
    ) -> Verdict {
        let binding = state::binding(owner, &request.name, request.arguments.as_ref());
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get(INPUT_KEY));
        match (request.request_state.as_deref(), answer) {
            (None, None) => {
                let sealed = self.states.seal(&binding, self.timeout);
                let mut requests = InputRequests::new();
                requests.insert(
                    INPUT_KEY.to_owned(),
                    InputRequest::Elicitation(ElicitRequest::new(form(question))),
                );
                Verdict::AskClient(Box::new(InputRequiredResult::new(
                    Some(requests),
                    Some(sealed),
                )))
            }
            (Some(_), None) => Verdict::Refused(
                ToolFailure::new(
                    codes::CONFIRMATION_CANCELLED,
                    "The retry carried no answer to the approval question; nothing was sent to Proxmox.",
                )
                .with_hint("Answer the approval question, then retry with its response."),
            ),
            (Some(sealed), Some(answer)) => {
                if let Err(why) = self.states.open(sealed, &binding) {
                    // An answer that came too late is the same situation as a person who did
                    // not answer in time on the elicitation path: one code for both.
                    if why == "expired" {
                        return Verdict::Refused(
                            ToolFailure::new(
                                codes::CONFIRMATION_TIMEOUT,
                                format!(
                                    "The approval came after its {} s window; nothing was sent to Proxmox.",
                                    self.timeout.as_secs()
                                ),
                            )
                            .with_hint("Call the tool again without requestState to be asked afresh (PVE_APPROVAL_TIMEOUT_SECS sets the window)."),
                        );
                    }
                    return Verdict::Refused(
                        ToolFailure::new(
                            codes::APPROVAL_STATE_INVALID,
                            format!("The approval does not belong to this exact call ({why}); nothing was sent to Proxmox."),
                        )
                        .with_hint("Call the tool again without requestState to be asked afresh."),
                    );
                }
                match serde_json::from_value::<ElicitResult>(answer.clone()) {
                    Ok(result) => judge(&result, question.lease.as_ref()),
                    Err(_) => Verdict::Refused(ToolFailure::new(
                        codes::CONFIRMATION_CANCELLED,
                        "The answer to the approval question is not an elicitation result; nothing was sent to Proxmox.",
                    )),
                }
            }
            (None, Some(_)) => answer_without_state(),
        }
    }
}

/// An answer with `requestState` missing can only be asked afresh.
fn answer_without_state() -> Verdict {
    Verdict::Refused(
        ToolFailure::new(
            codes::APPROVAL_STATE_INVALID,
            "An approval answer came without its requestState; nothing was sent to Proxmox.",
        )
        .with_hint("Call the tool again without inputResponses to be asked afresh."),
    )
}

/// The reference behaviour: `confirm: true` approves.
fn confirm_flag(
    mode: ApprovalMode,
    channel: Channel,
    confirmed: bool,
    question: &Question,
) -> Verdict {
    if confirmed {
        return Verdict::Approved(ApprovedBy::ConfirmFlag);
    }
    let hint = if mode == ApprovalMode::Auto && channel == Channel::None {
        "This client cannot ask a person, so approval is set by the model: ask the user to approve this exact action, then call the tool again with confirm=true."
    } else {
        "Ask the user to approve this exact action, then call the tool again with confirm=true."
    };
    let mut failure = ToolFailure::new(
        codes::CONFIRMATION_REQUIRED,
        format!("Tool '{}' requires explicit confirmation.", question.tool),
    )
    .with_hint(hint);
    failure.impact = Some(if question.destructive {
        "This operation may modify or remove existing resources or interrupt running workloads."
            .into()
    } else {
        "This operation may alter cluster state.".into()
    });
    Verdict::Refused(failure)
}

fn unavailable() -> ToolFailure {
    ToolFailure::new(
        codes::APPROVAL_UNAVAILABLE,
        "This call needs a person's approval, and this client cannot ask one (no form elicitation); nothing was sent to Proxmox.",
    )
    .with_hint(
        "Use a client that supports MCP elicitation, or set PVE_HUMAN_APPROVAL=auto (confirm=true from clients that cannot ask) or confirm (unattended automation).",
    )
}

/// A client this server cannot reach for lack of a session: the fix is the operator's.
fn unreachable() -> ToolFailure {
    ToolFailure::new(
        codes::APPROVAL_UNAVAILABLE,
        "This call needs a person's approval, and this server keeps no sessions (MCP_STATELESS=true): a client speaking MCP older than 2026-07-28 cannot be sent the question, and confirm=true does not replace a person the client may be able to ask. Nothing was sent to Proxmox.",
    )
    .with_hint(
        "Tell the operator: set MCP_STATELESS=false (one replica, or session affinity) so the session is asked; or use a client speaking MCP 2026-07-28 (asked through an input-required round trip on any replica); or set PVE_HUMAN_APPROVAL=confirm for unattended automation (confirm=true approves, nobody is asked).",
    )
}

/// A client that asks a person only on the approval page, which this server cannot send it to:
/// the fix is the operator's (or, for a 2026-07-28 client, a client with form elicitation).
fn no_page(why: NoPage) -> ToolFailure {
    let (message, hint) = match why {
        NoPage::NoAddress => (
            "This call needs a person's approval on the approval page (this client declared only URL elicitation), and the page has no address to send the person to; confirm=true does not replace the page. Nothing was sent to Proxmox.",
            "Tell the operator: set PVE_APPROVAL_LISTEN=127.0.0.1:0 (stdio) or PVE_APPROVAL_BASE_URL (HTTP) so the page can be opened, or PVE_APPROVAL_NOTIFY to send the link to a webhook; or set PVE_HUMAN_APPROVAL=confirm to let the model confirm on purpose (confirm=true approves, nobody is asked).",
        ),
        NoPage::NoSession => (
            "This call needs a person's approval on the approval page (this client declared only URL elicitation), and this server keeps no sessions (MCP_STATELESS=true) to send the client the link; confirm=true does not replace the page. Nothing was sent to Proxmox.",
            "Tell the operator: set MCP_STATELESS=false (one replica, or session affinity) so the client is sent the link, or PVE_APPROVAL_NOTIFY to send it to a webhook; or set PVE_HUMAN_APPROVAL=confirm to let the model confirm on purpose (confirm=true approves, nobody is asked).",
        ),
        NoPage::NoServerRequests => (
            "This call needs a person's approval on the approval page (this client declared only URL elicitation), and a client speaking MCP 2026-07-28 is sent no elicitation/create to carry the link; confirm=true does not replace the page. Nothing was sent to Proxmox.",
            "Use a client that declares form elicitation, or tell the operator: set PVE_APPROVAL_NOTIFY to send the link to a webhook, or PVE_HUMAN_APPROVAL=confirm to let the model confirm on purpose (confirm=true approves, nobody is asked).",
        ),
    };
    ToolFailure::new(codes::APPROVAL_UNAVAILABLE, message).with_hint(hint)
}

fn cancelled(message: &str) -> ToolFailure {
    ToolFailure::new(codes::CONFIRMATION_CANCELLED, message)
        .with_hint("Nothing was sent to Proxmox; call again to be asked afresh.")
}

#[cfg(test)]
mod tests;
