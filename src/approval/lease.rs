//! Leases: a person's scoped, expiring approval of one class of change to one target.
//!
//! When a person approves a call whose effects are leasable (a change, or one that touches
//! another guest — never a destroy, program, outbound contact, access change, sensitive read
//! or unplaced request), the question also offers *approve this class for this target for N
//! minutes*. Choosing it grants a [`Lease`]: later calls by the same holder (the stdio user,
//! the HTTP session, or the OAuth subject and client) to the same cluster and target, whose
//! effects and fired row rules are within the approved call's, then run without asking until
//! the lease expires, is revoked (`nandi-proxmox-mcp lease revoke`, which writes the
//! revocation file beside the freeze file) or the kill switch is thrown (`freeze` revokes all).
//!
//! Invariants: only a person's answer grants a lease — the answer's content on the form or
//! input-required round trip, or the page's own button — never an argument, `_meta`, alias,
//! compact call, sealed state or `confirm: true`; a lease never widens (a call beyond its
//! effects, rules, target, holder or cluster asks as before); the store is bounded
//! ([`CAPACITY`]); a revocation file that cannot be read ends every lease (fail closed).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::effects::{Effect, EffectSet};

/// The `tool` of a lease's own audit lines (`granted`, `ended`).
pub const AUDIT_TOOL: &str = "lease";

/// Most leases held at once; the one nearest its end is dropped first.
pub const CAPACITY: usize = 64;

/// Most bytes of the revocation file ever read; a longer file ends every lease.
const REVOCATION_BYTES: u64 = 64 * 1024;

/// The lengths a person may choose, in minutes (those up to the configured longest).
pub const CHOICES: [u32; 4] = [15, 30, 60, 240];

/// The effects a lease may cover: a change to the target, or one that touches another guest.
pub const LEASABLE: EffectSet =
    EffectSet::of(Effect::Change).union(EffectSet::of(Effect::CrossGuest));

/// What a lease is about: one guest, or (for calls that name none) one tool on one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A guest, by VMID (the call's `vmid` argument as sent).
    Guest(String),
    /// A call naming no guest: the tool and the object it names (node, path, pool…).
    Call {
        /// Canonical tool name.
        tool: &'static str,
        /// The object the call names, e.g. `node=pve01` or `POST /pools`.
        object: String,
    },
}

impl Target {
    /// The target in a person's words: `guest 101`, `pve_create_pool with these exact
    /// arguments`. The arguments themselves are never shown here: they are the model's text,
    /// shown (escaped) by the question above.
    pub fn shown(&self) -> String {
        match self {
            Target::Guest(vmid) => format!("guest {}", shown_vmid(vmid)),
            Target::Call { tool, object } if object.is_empty() => format!("{tool} calls"),
            Target::Call { tool, .. } => format!("{tool} with these exact arguments"),
        }
    }
}

/// A VMID as shown: digits and commas only (anything else is not a VMID and is not shown).
fn shown_vmid(vmid: &str) -> &str {
    if !vmid.is_empty() && vmid.bytes().all(|b| b.is_ascii_digit() || b == b',') {
        vmid
    } else {
        "(as named in the call)"
    }
}

/// Who a lease belongs to and what it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The holder: `stdio`, the HTTP session, or the OAuth subject and client.
    pub holder: String,
    /// The cluster the approved call went to (empty with one unnamed cluster).
    pub cluster: String,
    /// The guest or object.
    pub target: Target,
    /// The tool of the approved call (canonical name): a lease covers calls of that tool, and
    /// routine changes of any tool, to its target — never another tool's change (a lease from
    /// a description edit does not migrate the guest or grow its disk).
    pub tool: &'static str,
    /// Whether this call is a routine change (start, resume, snapshot, template clone, one
    /// unpruned backup) that asked only because of its target's facts.
    pub routine: bool,
    /// The effects covered (those of the approved call).
    pub effects: EffectSet,
    /// The row rules the approved call fired (conditions); a later call may fire only these.
    pub rules: Vec<String>,
}

impl Scope {
    /// Whether `call` falls within this scope: same holder, cluster and target, the same tool
    /// (or a routine change), and no effect or fired rule beyond it.
    pub fn covers(&self, call: &Scope) -> bool {
        self.holder == call.holder
            && self.cluster == call.cluster
            && self.target == call.target
            && (self.tool == call.tool || call.routine)
            && self.effects.covers(call.effects)
            && call.rules.iter().all(|rule| self.rules.contains(rule))
    }

    /// Whether a person may lease this scope at all: something beyond a read, nothing beyond
    /// [`LEASABLE`].
    pub fn leasable(&self) -> bool {
        !self.effects.is_read() && self.effects.beyond(LEASABLE).is_read()
    }

    /// `pve_qemu_update_config calls (change) and routine changes to guest 150 on cluster
    /// lab`, for questions, listings and the audit.
    pub fn shown(&self) -> String {
        let effects = self.effects.names().join(" + ");
        let cluster = if self.cluster.is_empty() {
            String::new()
        } else {
            format!(" on cluster {}", self.cluster)
        };
        match &self.target {
            Target::Guest(_) => format!(
                "{} calls ({effects}) and routine changes to {}{cluster}",
                self.tool,
                self.target.shown()
            ),
            Target::Call { .. } => format!("{} ({effects}){cluster}", self.target.shown()),
        }
    }
}

/// What the question offers: the scope a lease would cover and the lengths to choose from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOffer {
    /// What the lease would cover.
    pub scope: Scope,
    /// Minutes the person may choose (ascending).
    pub minutes: Vec<u32>,
}

impl LeaseOffer {
    /// Whether `minutes` is one of the offered lengths.
    pub fn allows(&self, minutes: u32) -> bool {
        self.minutes.contains(&minutes)
    }
}

/// One granted lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Random id (hex), shown in listings and the audit, named by `lease revoke`.
    pub id: String,
    /// What it covers.
    pub scope: Scope,
    /// When a person granted it.
    pub granted: SystemTime,
    /// When it ends.
    pub expires: SystemTime,
    /// How it was granted (`person`, `person-link`).
    pub granted_by: &'static str,
    /// Calls it let through.
    pub uses: u32,
}

/// Why a lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Its time ran out.
    Expired,
    /// `lease revoke` named it, or revoked all.
    Revoked,
    /// The kill switch was thrown.
    Frozen,
    /// The store was full and it was nearest its end.
    Evicted,
}

impl Ending {
    /// The audit outcome word.
    pub const fn as_str(self) -> &'static str {
        match self {
            Ending::Expired => "expired",
            Ending::Revoked => "revoked",
            Ending::Frozen => "frozen",
            Ending::Evicted => "evicted",
        }
    }
}

/// What a lookup found: the lease that covers the call (if any, its use counted) and the leases
/// that ended since the last lookup (each to be audited).
#[derive(Debug, Default)]
pub struct Found {
    /// The covering lease, after counting this use.
    pub lease: Option<Lease>,
    /// Leases that ended, with why.
    pub ended: Vec<(Lease, Ending)>,
}

/// The leases of one server process (every cluster's; each lease names its cluster).
#[derive(Debug)]
pub struct Leases {
    longest: u32,
    held: Mutex<Vec<Lease>>,
}

impl Leases {
    /// A store whose leases last at most `longest_minutes` (0: no lease is ever offered).
    pub fn new(longest_minutes: u32) -> Leases {
        Leases {
            longest: longest_minutes,
            held: Mutex::new(Vec::new()),
        }
    }

    /// The offer for an approved call of `scope`, or `None` when it may not be leased.
    pub fn offer(&self, scope: Scope) -> Option<LeaseOffer> {
        let mut minutes: Vec<u32> = CHOICES.into_iter().filter(|m| *m <= self.longest).collect();
        if self.longest > 0 && !minutes.contains(&self.longest) && minutes.len() < CHOICES.len() {
            minutes.push(self.longest);
        }
        (scope.leasable() && !minutes.is_empty()).then_some(LeaseOffer { scope, minutes })
    }

    /// Grants the lease a person chose on `offer`; `None` when `minutes` was not offered.
    /// Returns the lease and any lease evicted to make room.
    pub fn grant(
        &self,
        offer: &LeaseOffer,
        minutes: u32,
        granted_by: &'static str,
    ) -> Option<(Lease, Option<Lease>)> {
        if !offer.allows(minutes) || !offer.scope.leasable() {
            return None;
        }
        let granted = SystemTime::now();
        let lease = Lease {
            id: hex::encode(crate::approval::random_secret())[..16].to_owned(),
            scope: offer.scope.clone(),
            granted,
            expires: granted + Duration::from_secs(u64::from(minutes) * 60),
            granted_by,
            uses: 0,
        };
        let mut held = self.lock();
        let evicted = if held.len() >= CAPACITY {
            let nearest = held
                .iter()
                .enumerate()
                .min_by_key(|(_, l)| l.expires)
                .map(|(i, _)| i);
            nearest.map(|i| held.remove(i))
        } else {
            None
        };
        held.push(lease.clone());
        Some((lease, evicted))
    }

    /// Looks up a lease covering `call`, ending first every lease that expired or that the
    /// revocation file (`revocations`, beside the freeze file) names.
    pub fn find(&self, call: &Scope, revocations: Option<&Path>) -> Found {
        let revoked = revocations.map(read_revocations);
        let now = SystemTime::now();
        let mut held = self.lock();
        let mut found = Found::default();
        held.retain(|lease| {
            let ending = if lease.expires <= now {
                Some(Ending::Expired)
            } else if revoked.as_ref().is_some_and(|r| r.ends(lease)) {
                Some(Ending::Revoked)
            } else {
                None
            };
            if let Some(ending) = ending {
                found.ended.push((lease.clone(), ending));
            }
            ending.is_none()
        });
        if let Some(lease) = held.iter_mut().find(|l| l.scope.covers(call)) {
            lease.uses += 1;
            found.lease = Some(lease.clone());
        }
        found
    }

    /// The live lease that would cover `call`, without counting a use or ending anything (a
    /// dry run's view; the real call looks again with [`Leases::find`]).
    pub fn peek(&self, call: &Scope) -> Option<Lease> {
        let now = SystemTime::now();
        self.lock()
            .iter()
            .find(|l| l.expires > now && l.scope.covers(call))
            .cloned()
    }

    /// Ends every lease (the kill switch was seen); returns them for the audit.
    pub fn end_all(&self) -> Vec<Lease> {
        std::mem::take(&mut *self.lock())
    }

    /// The live leases of `holder` (all holders with `None`), soonest end first.
    pub fn list(&self, holder: Option<&str>) -> Vec<Lease> {
        let now = SystemTime::now();
        let mut live: Vec<Lease> = self
            .lock()
            .iter()
            .filter(|l| l.expires > now && holder.is_none_or(|h| l.scope.holder == h))
            .cloned()
            .collect();
        live.sort_by_key(|l| l.expires);
        live
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Lease>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A lease in listings and audit lines (never the holder's session secret: the session id is
/// an identifier, not a credential, and is cut to its first characters).
pub fn describe(lease: &Lease) -> serde_json::Value {
    let secs = unix_seconds;
    serde_json::json!({
        "id": lease.id,
        "covers": lease.scope.shown(),
        "effects": lease.scope.effects.names(),
        "target": lease.scope.target.shown(),
        "cluster": lease.scope.cluster,
        "holder": shown_holder(&lease.scope.holder),
        "grantedBy": lease.granted_by,
        "grantedAt": secs(lease.granted),
        "expiresAt": secs(lease.expires),
        "uses": lease.uses,
    })
}

/// The holder as shown: a session id is cut to 8 characters.
fn shown_holder(holder: &str) -> String {
    match holder.split_once(" session ") {
        Some((who, session)) => {
            let cut: String = session.chars().take(8).collect();
            format!("{who} session {cut}…")
        }
        None => holder.to_owned(),
    }
}

/// The revocation file beside a freeze file: `<folder>/leases-revoked`.
pub fn revocation_file(freeze_file: &Path) -> PathBuf {
    freeze_file.with_file_name("leases-revoked")
}

/// Appends a revocation line (`all <unix seconds>` or `lease <id>`) and syncs it.
pub fn write_revocation(file: &Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(folder) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)?;
    }
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    writeln!(out, "{line}")?;
    out.sync_all()
}

/// The revocation line that ends every lease granted up to now.
pub fn revoke_all_line() -> String {
    format!("all {}", unix_seconds(SystemTime::now()))
}

/// Seconds since the epoch (0 before it).
pub fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What the revocation file says.
#[derive(Debug, Default)]
struct Revocations {
    /// Leases granted at or before this second are revoked (`all <secs>`).
    all_before: Option<u64>,
    /// Leases revoked by id.
    ids: Vec<String>,
}

impl Revocations {
    fn ends(&self, lease: &Lease) -> bool {
        self.all_before
            .is_some_and(|t| unix_seconds(lease.granted) <= t)
            || self.ids.contains(&lease.id)
    }
}

/// Reads the revocation file. Absent: nothing revoked. Unreadable or too long: everything
/// revoked (fail closed).
fn read_revocations(file: &Path) -> Revocations {
    let everything = Revocations {
        all_before: Some(u64::MAX),
        ids: Vec::new(),
    };
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Revocations::default(),
        Err(_) => return everything,
    };
    let mut text = String::new();
    if opened
        .take(REVOCATION_BYTES + 1)
        .read_to_string(&mut text)
        .is_err()
        || text.len() as u64 > REVOCATION_BYTES
    {
        return everything;
    }
    let mut revoked = Revocations::default();
    for line in text.lines() {
        match line.trim().split_once(' ') {
            Some(("all", secs)) => {
                let secs = secs.trim().parse().unwrap_or(u64::MAX);
                revoked.all_before = revoked.all_before.max(Some(secs));
            }
            Some(("lease", id)) => revoked.ids.push(id.trim().to_owned()),
            _ => {}
        }
    }
    revoked
}

#[cfg(test)]
#[path = "lease_tests.rs"]
mod tests;
