//! Whether routine changes run without a person, and which targets are protected from that.
//!
//! A routine change (see `effects::routine`: start, resume, snapshot, tags and description, a
//! linked clone of a template, a backup that prunes nothing) runs without a person by default
//! — recorded in the audit as `routine` — unless its target is protected: `protection=1`,
//! HA-managed, or carrying a protected tag (`PVE_PROTECTED_TAGS`, default `prod,production`)
//! or sitting in a protected pool (`PVE_PROTECTED_POOLS`). `PVE_ROUTINE=ask` asks for every
//! change, as the previous release did. Invariant: these settings can only move a routine change to "ask";
//! nothing here lets a consequential change run without a person.

use super::{PolicyError, split_list};

/// `PVE_ROUTINE`: `auto` (routine changes run unasked) or `ask`.
pub const ENV_ROUTINE: &str = "PVE_ROUTINE";
/// `PVE_PROTECTED_TAGS`: comma list of guest tags whose guests are always asked about.
pub const ENV_PROTECTED_TAGS: &str = "PVE_PROTECTED_TAGS";
/// `PVE_PROTECTED_POOLS`: comma list of pools whose guests are always asked about.
pub const ENV_PROTECTED_POOLS: &str = "PVE_PROTECTED_POOLS";
/// The default protected tags.
pub const DEFAULT_PROTECTED_TAGS: &str = "prod,production";
/// Longest lease a person may grant, in minutes (`0`: no lease is ever offered).
pub const ENV_LEASE_MAX_MINUTES: &str = "PVE_LEASE_MAX_MINUTES";
/// The default longest lease: an hour.
pub const DEFAULT_LEASE_MAX_MINUTES: u32 = 60;
/// The longest lease the setting accepts: a working day.
pub const MOST_LEASE_MINUTES: u32 = 480;

/// What the gate does with routine changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutineSettings {
    /// Routine changes to unprotected targets run without a person.
    pub unasked: bool,
    /// Tags (lower-cased) that make a guest protected.
    pub protected_tags: Vec<String>,
    /// Pools (lower-cased) that make a guest protected.
    pub protected_pools: Vec<String>,
    /// Longest lease a person may grant, in minutes (0: leases are off).
    pub lease_max_minutes: u32,
}

impl Default for RoutineSettings {
    fn default() -> Self {
        RoutineSettings {
            unasked: true,
            protected_tags: split_list(DEFAULT_PROTECTED_TAGS)
                .map(str::to_owned)
                .collect(),
            protected_pools: Vec::new(),
            lease_max_minutes: DEFAULT_LEASE_MAX_MINUTES,
        }
    }
}

impl RoutineSettings {
    /// Reads the three variables through `get` (trimmed, unset when empty).
    pub fn read(get: impl Fn(&str) -> Option<String>) -> Result<RoutineSettings, PolicyError> {
        let mut out = RoutineSettings::default();
        if let Some(value) = get(ENV_ROUTINE) {
            out.unasked = match value.to_ascii_lowercase().as_str() {
                "auto" => true,
                "ask" => false,
                _ => return Err(PolicyError::InvalidRoutine { value }),
            };
        }
        let lower = |value: String| -> Vec<String> {
            split_list(&value).map(str::to_ascii_lowercase).collect()
        };
        if let Some(value) = get(ENV_PROTECTED_TAGS) {
            out.protected_tags = lower(value);
        }
        if let Some(value) = get(ENV_PROTECTED_POOLS) {
            out.protected_pools = lower(value);
        }
        if let Some(value) = get(ENV_LEASE_MAX_MINUTES) {
            out.lease_max_minutes = value
                .parse()
                .ok()
                .filter(|m| *m <= MOST_LEASE_MINUTES)
                .ok_or(PolicyError::InvalidLeaseMinutes { value })?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let none = RoutineSettings::read(|_| None).expect("defaults");
        assert!(none.unasked);
        assert_eq!(none.protected_tags, ["prod", "production"]);
        let set = RoutineSettings::read(|k| match k {
            ENV_ROUTINE => Some("ASK".into()),
            ENV_PROTECTED_TAGS => Some("Critical, db".into()),
            ENV_PROTECTED_POOLS => Some("Prod".into()),
            _ => None,
        })
        .expect("valid");
        assert!(!set.unasked);
        assert_eq!(set.protected_tags, ["critical", "db"]);
        assert_eq!(set.protected_pools, ["prod"]);
        assert!(RoutineSettings::read(|k| (k == ENV_ROUTINE).then(|| "yes".into())).is_err());
        assert_eq!(none.lease_max_minutes, 60);
        let lease = |v: &str| {
            RoutineSettings::read(|k| (k == ENV_LEASE_MAX_MINUTES).then(|| v.to_owned()))
                .map(|s| s.lease_max_minutes)
        };
        assert_eq!(lease("0").ok(), Some(0));
        assert_eq!(lease("480").ok(), Some(480));
        assert!(lease("481").is_err());
        assert!(lease("-1").is_err());
    }
}
