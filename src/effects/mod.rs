//! What a request does to the cluster — its *effects* — classified at the one place requests
//! leave the server.
//!
//! Every REST request (method, rendered path, parameters) and every SSH/SFTP operation is
//! placed here before it is sent: a plain read, or any of [`Effect`]. The facts come from
//! Proxmox's own API schema (the privileges an endpoint's permission check demands, its
//! parameter formats and patterns — see [`derive`] and the generated `endpoints.tsv`), plus
//! one small hand-kept table for what the schema cannot say (Proxmox's own defaults, such as
//! `vzdump` pruning unless `remove=0`; see [`request`]).
//!
//! Invariants guarded here:
//! - a request the classifier cannot place is **not** a read ([`Effect::Unplaced`]);
//! - the gate is a pure function of (tier, effects, whether the client can ask a person):
//!   every effect but a plain read needs a person, a sensitive read also needs tier `full`
//!   (see [`needs_person`] and [`needs_full_tier`]);
//! - [`clearance`] is checked by the REST client and the SSH entry point for every request:
//!   a request whose effects were not cleared for the running call is refused before it
//!   leaves, so no tool, composite handler or follower can send more than was approved;
//! - while the freeze file exists ([`freeze`]), every request beyond a plain read is refused
//!   there too, whatever was approved.
//!
//! This module sits below `pve` and `ssh` and imports neither.

pub mod clearance;
pub mod derive;
pub mod freeze;
pub mod pbs;
pub mod request;
pub mod reviewed;
pub mod routine;
mod table;

use std::fmt;

pub use clearance::{
    Refusal, Stopped, admit, admit_classified, admit_pbs, admit_ssh, with_clearance,
};
pub use freeze::{FreezeNote, FreezeSwitch, Frozen};
pub use pbs::classify_pbs;
pub use request::{SshKind, classify_rest, classify_rest_with, classify_ssh};
pub use table::{Endpoint, endpoint, endpoints, endpoints_for_template, render as table_render};

/// One thing a request can do beyond reading. A request with none of these is a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// Reads data Proxmox guards with more than an auditor's privilege: guest files,
    /// program output, console tickets, firewall logs, secrets.
    SensitiveRead,
    /// Changes the cluster's state or configuration.
    Change,
    /// The node contacts a host or URL the caller chose, or sends mail/notifications.
    Egress,
    /// Runs a program or command: guest-agent exec, shells, consoles, CLI, hookscripts, snippets.
    Exec,
    /// Touches a guest the call does not target: another guest's volume, `import-from`, a
    /// clone, several guests at once (vmid lists, pools, `all`).
    CrossGuest,
    /// Removes, prunes, rolls back, stops, resets or overwrites something.
    Destroy,
    /// Users, tokens, ACLs, keys, passwords, privileged containers, features, host mounts.
    Access,
    /// The classifier could not place the request (unknown endpoint): never treated as a read.
    Unplaced,
}

impl Effect {
    /// Every effect, in the order reasons are listed.
    pub const ALL: [Effect; 8] = [
        Effect::Unplaced,
        Effect::Access,
        Effect::Exec,
        Effect::Egress,
        Effect::CrossGuest,
        Effect::Destroy,
        Effect::SensitiveRead,
        Effect::Change,
    ];

    /// The wire name used in `tools --json`, docs and `_meta`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::SensitiveRead => "sensitive-read",
            Effect::Change => "change",
            Effect::Egress => "egress",
            Effect::Exec => "exec",
            Effect::CrossGuest => "cross-guest",
            Effect::Destroy => "destroy",
            Effect::Access => "access",
            Effect::Unplaced => "unplaced",
        }
    }

    /// What the effect means, in a person's words (the first line of a reason).
    pub const fn meaning(self) -> &'static str {
        match self {
            Effect::SensitiveRead => "reads data Proxmox guards beyond an auditor's view",
            Effect::Change => "changes the cluster",
            Effect::Egress => "makes the node contact an address chosen by the caller",
            Effect::Exec => "runs a program or command",
            Effect::CrossGuest => "touches a guest other than the one named, or several guests",
            Effect::Destroy => "removes, stops, rolls back or overwrites something",
            Effect::Access => "changes who or what can get in",
            Effect::Unplaced => "is a request this server cannot classify",
        }
    }

    const fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of effects. The empty set is a plain read.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EffectSet(u16);

impl EffectSet {
    /// A plain read.
    pub const READ: EffectSet = EffectSet(0);
    /// Every effect (an operator at a terminal, or an approval that covers anything).
    pub const ANY: EffectSet = EffectSet(u16::MAX);

    /// The set holding one effect.
    pub const fn of(effect: Effect) -> EffectSet {
        EffectSet(effect.bit())
    }

    /// Adds an effect.
    pub fn insert(&mut self, effect: Effect) {
        self.0 |= effect.bit();
    }

    /// Whether the set holds `effect`.
    pub const fn contains(self, effect: Effect) -> bool {
        self.0 & effect.bit() != 0
    }

    /// Whether every effect of `other` is in this set.
    pub const fn covers(self, other: EffectSet) -> bool {
        other.0 & !self.0 == 0
    }

    /// The union of two sets.
    #[must_use]
    pub const fn union(self, other: EffectSet) -> EffectSet {
        EffectSet(self.0 | other.0)
    }

    /// The effects of `self` missing from `allowed`.
    #[must_use]
    pub const fn beyond(self, allowed: EffectSet) -> EffectSet {
        EffectSet(self.0 & !allowed.0)
    }

    /// Whether this is a plain read (no effect at all).
    pub const fn is_read(self) -> bool {
        self.0 == 0
    }

    /// The effects, in [`Effect::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Effect> {
        Effect::ALL.into_iter().filter(move |e| self.contains(*e))
    }

    /// The wire names, in order.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Effect::as_str).collect()
    }
}

impl fmt::Debug for EffectSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_read() {
            return f.write_str("{read}");
        }
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<Effect> for EffectSet {
    fn from_iter<I: IntoIterator<Item = Effect>>(iter: I) -> Self {
        let mut set = EffectSet::READ;
        iter.into_iter().for_each(|e| set.insert(e));
        set
    }
}

/// One reason a request has an effect, for the person's question and refusals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The effect.
    pub effect: Effect,
    /// What in the request causes it, e.g. `POST /nodes/{node}/vzdump without remove=0`.
    pub because: String,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.effect, self.because)
    }
}

/// A classified request: its effects and why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Classified {
    /// Every effect (empty: a plain read).
    pub effects: EffectSet,
    /// One entry per effect cause, in the order found.
    pub reasons: Vec<Reason>,
}

impl Classified {
    /// A plain read.
    pub fn read() -> Classified {
        Classified::default()
    }

    /// Records an effect and its cause (one reason per distinct cause).
    pub fn add(&mut self, effect: Effect, because: impl Into<String>) {
        let because = because.into();
        self.effects.insert(effect);
        if !self
            .reasons
            .iter()
            .any(|r| r.effect == effect && r.because == because)
        {
            self.reasons.push(Reason { effect, because });
        }
    }

    /// Merges another classification into this one.
    pub fn merge(&mut self, other: Classified) {
        for reason in other.reasons {
            self.add(reason.effect, reason.because);
        }
        self.effects = self.effects.union(other.effects);
    }

    /// Reasons as lines for people, ordered by effect (most serious first), one line per
    /// cause naming all its effects (`destroy, change: DELETE /nodes/{node}/qemu/{vmid}`): a
    /// bare endpoint (`POST /access/users`) joins the line that says more about the same one
    /// (`POST /access/users needs User.Modify`), so no endpoint is listed twice.
    pub fn reason_lines(&self) -> Vec<String> {
        let mut reasons: Vec<&Reason> = self.reasons.iter().collect();
        reasons.sort_by_key(|r| Effect::ALL.iter().position(|e| *e == r.effect));
        let mut lines: Vec<(Vec<Effect>, &str)> = Vec::new();
        for reason in reasons {
            match lines
                .iter_mut()
                .find(|(_, because)| *because == reason.because)
            {
                Some((effects, _)) if !effects.contains(&reason.effect) => {
                    effects.push(reason.effect)
                }
                Some(_) => {}
                None => lines.push((vec![reason.effect], &reason.because)),
            }
        }
        // A bare cause that opens a longer one (followed by ' ' or ':') is the same endpoint.
        let opens = |short: &str, long: &str| {
            long.len() > short.len()
                && long.starts_with(short)
                && matches!(long.as_bytes()[short.len()], b' ' | b':')
        };
        let join = |into: &mut Vec<Effect>, more: &[Effect]| {
            for effect in more {
                if !into.contains(effect) {
                    into.push(*effect);
                }
            }
        };
        let mut merged: Vec<(Vec<Effect>, &str)> = Vec::new();
        for (effects, because) in &lines {
            let (home, start) = match lines.iter().find(|(_, long)| opens(because, long)) {
                Some((theirs, long)) => (*long, theirs.as_slice()),
                None => (*because, &[][..]),
            };
            match merged.iter_mut().find(|(_, b)| *b == home) {
                Some((into, _)) => join(into, effects),
                None => {
                    let mut into = start.to_vec();
                    join(&mut into, effects);
                    merged.push((into, home));
                }
            }
        }
        merged
            .into_iter()
            .map(|(mut effects, because)| {
                effects.sort_by_key(|e| Effect::ALL.iter().position(|x| x == e));
                let names: Vec<String> = effects.iter().map(ToString::to_string).collect();
                format!("{}: {because}", names.join(", "))
            })
            .collect()
    }
}

/// Whether a request with these effects needs a person's approval: anything but a plain read.
pub const fn needs_person(effects: EffectSet) -> bool {
    !effects.is_read()
}

/// Whether a request with these effects may be sent at all below tier `full`: a sensitive
/// read needs `full` (and a person).
pub const fn needs_full_tier(effects: EffectSet) -> bool {
    effects.contains(Effect::SensitiveRead)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_cover_and_report_what_is_beyond() {
        let mut set = EffectSet::READ;
        assert!(set.is_read());
        set.insert(Effect::Egress);
        set.insert(Effect::Change);
        assert!(set.covers(EffectSet::of(Effect::Egress)));
        assert!(!set.covers(EffectSet::of(Effect::Exec)));
        let wanted: EffectSet = [Effect::Exec, Effect::Change].into_iter().collect();
        assert_eq!(wanted.beyond(set), EffectSet::of(Effect::Exec));
        assert!(EffectSet::ANY.covers(wanted));
        assert_eq!(set.names(), vec!["egress", "change"]);
    }

    #[test]
    fn only_a_read_goes_without_a_person() {
        assert!(!needs_person(EffectSet::READ));
        for effect in Effect::ALL {
            assert!(needs_person(EffectSet::of(effect)), "{effect}");
        }
        assert!(needs_full_tier(EffectSet::of(Effect::SensitiveRead)));
        assert!(!needs_full_tier(EffectSet::of(Effect::Exec)));
    }
}
