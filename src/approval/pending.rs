//! Approvals waiting for a person on the approval page: a bounded, in-memory store keyed by
//! unguessable, single-use links.
//!
//! Each gated call that is put to a person by link registers one entry: the question text, the
//! tool, the binding of the exact call (the digest [`super::state::binding`] seals), a deadline
//! (the approval timeout) and the channel its decision travels on. The link id is 256 bits from
//! the operating system's CSPRNG (rand's `ThreadRng`, seeded from `OsRng`); the store keeps
//! only its SHA-256, so a lookup's timing says nothing about stored ids. The page also carries
//! a per-link anti-forgery token, compared in constant time. Each entry also carries who may
//! decide it ([`Approvers`]); when that is a signed-in person, the page admits the person
//! ([`PendingApprovals::admit`]) into a short session of this link only (a 256-bit secret the
//! browser keeps in a cookie; the store keeps its SHA-256), and only a decision made in such a
//! session counts; it travels with the person's name.
//!
//! Invariants: a link decides at most one call, once, before its deadline, and only with its own
//! anti-forgery token and call digest — and, when it needs a signed-in person, only inside a
//! session of a person its [`Approvers`] admit; an unknown, expired, used or abandoned link
//! decides nothing. The store never holds more than [`CAPACITY`] entries (spent links are remembered
//! for a while so a replay is told "already used" rather than "unknown").

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::oneshot;
use url::Url;

use super::approvers::{Approvers, Person};

/// Most entries held, waiting and spent together (bounded memory).
pub const CAPACITY: usize = 1024;
/// How long a spent or abandoned link is remembered after its deadline.
const REMEMBER: Duration = Duration::from_secs(3600);
/// Bytes of randomness in a link id and an anti-forgery token.
const SECRET_BYTES: usize = 32;
/// Longest life of a signed-in session on one link (never past the link's deadline).
pub const SESSION_TTL: Duration = Duration::from_secs(600);
/// Most sessions one link keeps (the oldest is dropped first).
const MAX_SESSIONS: usize = 8;

/// What the person decided on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageDecision {
    /// Run exactly this call.
    Approve,
    /// Run it, and lease its class for its target for this many minutes (one of the link's
    /// offered lengths; see [`PendingApprovals::offer_lease`]).
    ApproveFor(u32),
    /// Do not run it.
    Decline,
}

/// A decision made on the page, with the signed-in person who made it (if the link needed one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// What was decided.
    pub decision: PageDecision,
    /// The approver's name (`oauth:<sub>`); `None` for a capability link.
    pub approver: Option<String>,
}

/// Why a link decides nothing (each has its page and status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkProblem {
    /// No such link (never issued, or forgotten long ago): 404.
    Unknown,
    /// The deadline passed: 410.
    Expired,
    /// The link was already used: 410.
    Used,
    /// The call stopped waiting (cancelled, timed out, server restarted the call): 410.
    Abandoned,
    /// The anti-forgery token is missing or wrong: 403.
    Forged,
    /// The form names another call than the link's: 404.
    OtherCall,
    /// The link needs a signed-in person and the request carries no live session of it: 403.
    NotSignedIn,
    /// The signed-in person is not one the link's approvers admit: 403.
    NotAllowed,
}

/// What the page shows for a link still waiting.
#[derive(Debug, Clone)]
pub struct PageView {
    /// The question, as the form elicitation would show it.
    pub question: String,
    /// Canonical tool name.
    pub tool: &'static str,
    /// The per-link anti-forgery token the form must post back.
    pub token: String,
    /// Hex digest of the exact call (tool and canonical arguments), posted back too.
    pub call: String,
    /// Seconds left to decide.
    pub seconds_left: u64,
    /// Who may decide.
    pub approvers: Approvers,
    /// The signed-in person of the request's session, when it has a live one.
    pub signed_in: Option<String>,
    /// The lease the page offers besides approving once: its scope in words, and the lengths.
    pub lease: Option<(String, Vec<u32>)>,
}

/// A session a person was admitted into: the secret for the browser's cookie.
#[derive(Debug)]
pub struct Admitted {
    /// The session secret (hex): the cookie's value, never logged.
    pub secret: String,
    /// Seconds the session lives (the cookie's `Max-Age`).
    pub seconds: u64,
    /// The person's name (`oauth:<sub>`).
    pub label: String,
}

struct Session {
    digest: [u8; 32],
    label: String,
    until: Instant,
}

enum SlotState {
    Waiting(oneshot::Sender<Decided>),
    Used,
    Abandoned,
}

struct Slot {
    question: String,
    tool: &'static str,
    call: Vec<u8>,
    token: [u8; SECRET_BYTES],
    deadline: Instant,
    state: SlotState,
    approvers: Approvers,
    sessions: Vec<Session>,
    /// The lease the page may grant: what it covers, in words, and the lengths offered.
    lease: Option<(String, Vec<u32>)>,
}

/// The store; shared by the approver (registers) and the page (decides).
pub struct PendingApprovals {
    slots: Mutex<HashMap<[u8; 32], Slot>>,
    base_url: Mutex<Option<Url>>,
}

impl std::fmt::Debug for PendingApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Entries hold live link hashes and tokens: never printed.
        f.debug_struct("PendingApprovals").finish_non_exhaustive()
    }
}

/// A registered approval, waiting. Dropping it abandons the link (the page then says so).
pub struct Waiting {
    store: Arc<PendingApprovals>,
    key: [u8; 32],
    /// The page's address, to hand to the person.
    pub link: Url,
    /// When the link stops working (wall clock, for the notice).
    pub expires_at: SystemTime,
    /// When the link stops working.
    pub deadline: Instant,
    decision: Option<oneshot::Receiver<Decided>>,
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting").finish_non_exhaustive()
    }
}

impl Waiting {
    /// Waits for the person's decision; `None` when the link was abandoned meanwhile.
    /// Cancel-safe: waiting again after a timeout keeps listening.
    pub async fn decision(&mut self) -> Option<Decided> {
        let receiver = self.decision.as_mut()?;
        let decided = receiver.await.ok();
        self.decision = None;
        decided
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.store.abandon(&self.key);
    }
}

/// Why a link could not be issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterError {
    /// No public address for the page is known.
    NoAddress,
    /// Too many approvals are waiting.
    Full,
}

impl PendingApprovals {
    /// An empty store; `base_url` is the page's configured public address, if any.
    pub fn new(base_url: Option<Url>) -> PendingApprovals {
        PendingApprovals {
            slots: Mutex::new(HashMap::new()),
            base_url: Mutex::new(base_url),
        }
    }

    /// Offers the address a transport serves the page at; a configured one is kept.
    pub fn offer_base_url(&self, url: Url) {
        let mut base = self.base_url.lock().unwrap_or_else(PoisonError::into_inner);
        if base.is_none() {
            *base = Some(url);
        }
    }

    /// The page's public address, when known.
    pub fn base_url(&self) -> Option<Url> {
        self.base_url
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Registers one call waiting for a person, for `ttl`. `call` is the call's binding;
    /// `approvers` says who may decide it.
    pub fn register(
        self: &Arc<Self>,
        question: &str,
        tool: &'static str,
        call: Vec<u8>,
        ttl: Duration,
        approvers: Approvers,
    ) -> Result<Waiting, RegisterError> {
        let base = self.base_url().ok_or(RegisterError::NoAddress)?;
        let id = hex::encode(random());
        let link = base
            .join(&format!("approve/{id}"))
            .map_err(|_| RegisterError::NoAddress)?;
        let key = digest(&id);
        let now = Instant::now();
        let (send, receive) = oneshot::channel();
        let mut slots = self.lock();
        slots.retain(|_, slot| slot.deadline + REMEMBER > now);
        if slots.len() >= CAPACITY {
            return Err(RegisterError::Full);
        }
        slots.insert(
            key,
            Slot {
                question: question.to_owned(),
                tool,
                call,
                token: random(),
                deadline: now + ttl,
                state: SlotState::Waiting(send),
                approvers,
                sessions: Vec::new(),
                lease: None,
            },
        );
        drop(slots);
        Ok(Waiting {
            store: Arc::clone(self),
            key,
            link,
            expires_at: SystemTime::now() + ttl,
            deadline: now + ttl,
            decision: Some(receive),
        })
    }

    /// What the page shows for `id`, if it can still decide; `session` is the secret of the
    /// request's session cookie, if any.
    pub fn view(&self, id: &str, session: Option<&str>) -> Result<PageView, LinkProblem> {
        let key = digest(id);
        let slots = self.lock();
        let slot = slots.get(&key).ok_or(LinkProblem::Unknown)?;
        let seconds_left = open(slot)?;
        Ok(PageView {
            question: slot.question.clone(),
            tool: slot.tool,
            token: hex::encode(slot.token),
            call: hex::encode(&slot.call),
            seconds_left,
            approvers: slot.approvers.clone(),
            signed_in: signed_in(slot, session),
            lease: slot.lease.clone(),
        })
    }

    /// Admits `person`, signed in at the authorization server, into a session of link `id`:
    /// only while the link can decide and only when its approvers admit the person.
    pub fn admit(&self, id: &str, person: &Person) -> Result<Admitted, LinkProblem> {
        let key = digest(id);
        let mut slots = self.lock();
        let slot = slots.get_mut(&key).ok_or(LinkProblem::Unknown)?;
        open(slot)?;
        if !slot.approvers.admits(person) {
            return Err(LinkProblem::NotAllowed);
        }
        let now = Instant::now();
        let until = (now + SESSION_TTL).min(slot.deadline);
        let secret = hex::encode(random());
        let label = person.label();
        slot.sessions.retain(|s| s.until > now);
        if slot.sessions.len() >= MAX_SESSIONS {
            slot.sessions.remove(0);
        }
        slot.sessions.push(Session {
            digest: digest(&secret),
            label: label.clone(),
            until,
        });
        Ok(Admitted {
            secret,
            seconds: until.saturating_duration_since(now).as_secs().max(1),
            label,
        })
    }

    /// Decides the call of `id`: only with the link's own `token` and `call` digest, once, and
    /// — when the link needs a signed-in person — only in a live `session` of an admitted one.
    pub fn decide(
        &self,
        id: &str,
        token: &str,
        call: &str,
        decision: PageDecision,
        session: Option<&str>,
    ) -> Result<&'static str, LinkProblem> {
        let key = digest(id);
        let mut slots = self.lock();
        let slot = slots.get_mut(&key).ok_or(LinkProblem::Unknown)?;
        open(slot)?;
        let approver = if slot.approvers.needs_sign_in() {
            Some(signed_in(slot, session).ok_or(LinkProblem::NotSignedIn)?)
        } else {
            None
        };
        let token_ok = hex::decode(token.trim())
            .is_ok_and(|given| given.len() == SECRET_BYTES && bool::from(given.ct_eq(&slot.token)));
        if !token_ok {
            return Err(LinkProblem::Forged);
        }
        if hex::decode(call.trim()).ok().as_deref() != Some(slot.call.as_slice()) {
            return Err(LinkProblem::OtherCall);
        }
        // A lease length the page did not offer is a form made for another call.
        if let PageDecision::ApproveFor(minutes) = decision
            && !slot
                .lease
                .as_ref()
                .is_some_and(|(_, offered)| offered.contains(&minutes))
        {
            return Err(LinkProblem::OtherCall);
        }
        let tool = slot.tool;
        match std::mem::replace(&mut slot.state, SlotState::Used) {
            SlotState::Waiting(sender) => match sender.send(Decided { decision, approver }) {
                Ok(()) => Ok(tool),
                Err(_) => {
                    slot.state = SlotState::Abandoned;
                    Err(LinkProblem::Abandoned)
                }
            },
            // `open` let only a waiting slot through.
            other => {
                slot.state = other;
                Err(LinkProblem::Used)
            }
        }
    }

    /// Lets the page of `waiting` offer a lease: `shown` says what it covers, `minutes` the
    /// lengths a person may choose. Without it the page approves once only.
    pub fn offer_lease(&self, waiting: &Waiting, shown: String, minutes: Vec<u32>) {
        if let Some(slot) = self.lock().get_mut(&waiting.key) {
            slot.lease = Some((shown, minutes));
        }
    }

    fn abandon(&self, key: &[u8; 32]) {
        if let Some(slot) = self.lock().get_mut(key)
            && matches!(slot.state, SlotState::Waiting(_))
        {
            slot.state = SlotState::Abandoned;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The person of a live session of `slot` whose secret is `session`.
fn signed_in(slot: &Slot, session: Option<&str>) -> Option<String> {
    let session = session?.trim();
    if session.len() != SECRET_BYTES * 2 {
        return None;
    }
    let presented = digest(session);
    let now = Instant::now();
    slot.sessions
        .iter()
        .find(|s| s.until > now && bool::from(s.digest.ct_eq(&presented)))
        .map(|s| s.label.clone())
}

/// Whether a slot can still decide; the seconds left if so.
fn open(slot: &Slot) -> Result<u64, LinkProblem> {
    match slot.state {
        SlotState::Used => return Err(LinkProblem::Used),
        SlotState::Abandoned => return Err(LinkProblem::Abandoned),
        SlotState::Waiting(_) => {}
    }
    let left = slot.deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(LinkProblem::Expired);
    }
    Ok(left.as_secs().max(1))
}

/// The store's key for a link id (or a session's for its secret): its SHA-256, so a lookup
/// never compares a presented id with a stored one, and anything never issued is not found.
fn digest(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

/// A fresh secret from the OS-seeded generator: link ids, anti-forgery tokens, sign-in state.
pub fn random() -> [u8; SECRET_BYTES] {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests;
