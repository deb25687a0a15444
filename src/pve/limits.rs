//! Per-cluster limits of the Proxmox client: how many requests may be in flight at once and how
//! long one call (queueing, every attempt and every backoff together) may take.
//!
//! Invariants: a value that cannot be honoured (not a number, zero, absurdly large) is a startup
//! error naming the variable, never a silent default; the defaults protect a cluster from a burst
//! of pipelined calls (16 in flight, the rest queued) and bound a call to 30 s unless the tool
//! itself declares a longer per-attempt timeout.

use std::time::Duration;

use crate::config::EnvVarDoc;

/// Variable that bounds the requests in flight to one cluster.
pub const ENV_MAX_INFLIGHT: &str = "PVE_MAX_INFLIGHT";
/// Variable that sets the per-call deadline, in seconds.
pub const ENV_CALL_DEADLINE: &str = "PVE_CALL_DEADLINE_SECS";

/// Requests in flight to one cluster when [`ENV_MAX_INFLIGHT`] is unset.
pub const DEFAULT_MAX_INFLIGHT: usize = 16;
/// Per-call deadline when [`ENV_CALL_DEADLINE`] is unset.
pub const DEFAULT_CALL_DEADLINE: Duration = Duration::from_secs(30);

/// Largest accepted [`ENV_MAX_INFLIGHT`]; pveproxy runs a handful of workers, so more is no help.
const MAX_INFLIGHT_CEILING: usize = 1024;
/// Largest accepted [`ENV_CALL_DEADLINE`] (one hour).
const DEADLINE_CEILING_SECS: u64 = 3600;

/// The client variables, documented (README table and registry descriptor are checked against it).
pub const ENV_VARS: &[EnvVarDoc] = &[
    EnvVarDoc {
        name: ENV_MAX_INFLIGHT,
        description: "Most Proxmox API requests in flight at once (1-1024); further calls wait in a queue.",
        default: "16",
        secret: false,
    },
    EnvVarDoc {
        name: ENV_CALL_DEADLINE,
        description: "Seconds one tool call may spend queueing, retrying and waiting for Proxmox (1-3600); a tool that declares a longer timeout gets that instead.",
        default: "30",
        secret: false,
    },
];

/// Limits shared by every call of one [`super::Client`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// Requests allowed in flight at once; the rest wait for a free slot.
    pub max_inflight: usize,
    /// Time allowed for one call from its start: queueing, attempts and backoff together.
    pub call_deadline: Duration,
}

impl Default for ClientLimits {
    fn default() -> Self {
        ClientLimits {
            max_inflight: DEFAULT_MAX_INFLIGHT,
            call_deadline: DEFAULT_CALL_DEADLINE,
        }
    }
}

/// A client limit that cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}={value:?} is not valid: {reason}")]
pub struct LimitsError {
    /// The variable.
    pub var: &'static str,
    /// The rejected value.
    pub value: String,
    /// What is accepted instead.
    pub reason: String,
}

impl ClientLimits {
    /// Reads [`ENV_MAX_INFLIGHT`] and [`ENV_CALL_DEADLINE`] through `lookup`; unset or blank
    /// variables keep their defaults.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, LimitsError> {
        let mut limits = ClientLimits::default();
        if let Some(n) = number(&lookup, ENV_MAX_INFLIGHT, MAX_INFLIGHT_CEILING as u64)? {
            limits.max_inflight = usize::try_from(n).unwrap_or(MAX_INFLIGHT_CEILING);
        }
        if let Some(secs) = number(&lookup, ENV_CALL_DEADLINE, DEADLINE_CEILING_SECS)? {
            limits.call_deadline = Duration::from_secs(secs);
        }
        Ok(limits)
    }
}

/// A whole number in `1..=ceiling`, or `None` when the variable is unset or blank.
fn number(
    lookup: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    ceiling: u64,
) -> Result<Option<u64>, LimitsError> {
    let Some(raw) = lookup(var)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
    else {
        return Ok(None);
    };
    match raw.parse::<u64>() {
        Ok(n) if (1..=ceiling).contains(&n) => Ok(Some(n)),
        _ => Err(LimitsError {
            var,
            value: raw,
            reason: format!("use a whole number from 1 to {ceiling}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn defaults_apply_when_unset_or_blank() {
        assert_eq!(
            ClientLimits::from_lookup(lookup(&[])).unwrap(),
            ClientLimits::default()
        );
        let blank = ClientLimits::from_lookup(lookup(&[(ENV_MAX_INFLIGHT, " ")])).unwrap();
        assert_eq!(blank.max_inflight, DEFAULT_MAX_INFLIGHT);
    }

    #[test]
    fn values_are_read_and_bounded() {
        let set = ClientLimits::from_lookup(lookup(&[
            (ENV_MAX_INFLIGHT, "4"),
            (ENV_CALL_DEADLINE, " 12 "),
        ]))
        .unwrap();
        assert_eq!(set.max_inflight, 4);
        assert_eq!(set.call_deadline, Duration::from_secs(12));
        for (var, value) in [
            (ENV_MAX_INFLIGHT, "0"),
            (ENV_MAX_INFLIGHT, "many"),
            (ENV_MAX_INFLIGHT, "5000"),
            (ENV_CALL_DEADLINE, "-1"),
            (ENV_CALL_DEADLINE, "1.5"),
            (ENV_CALL_DEADLINE, "99999"),
        ] {
            let pairs: &'static [(&str, &str)] = Box::leak(Box::new([(var, value)]));
            let err = ClientLimits::from_lookup(lookup(pairs)).unwrap_err();
            assert_eq!(err.var, var);
            assert!(err.to_string().contains(var), "{err}");
        }
    }
}
