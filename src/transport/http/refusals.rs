//! Bounded logging of refused HTTP requests (401, 429, 403, 503 …).
//!
//! Invariant: however many requests are refused, at most one line per [`SUMMARY_INTERVAL`] is
//! written (plus the first refusal after a quiet interval, logged in full): a flood of bad tokens
//! cannot fill the disk through the log. Counts are kept per reason, and a few client addresses
//! are kept as a sample; nothing from the request's headers (never a token) is recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Shortest time between two refusal log lines.
pub const SUMMARY_INTERVAL: Duration = Duration::from_secs(10);
/// Most client addresses named in one summary line.
const SAMPLE_PEERS: usize = 8;

#[derive(Debug, Default)]
struct Pending {
    by_reason: BTreeMap<&'static str, u64>,
    peers: BTreeSet<IpAddr>,
    more_peers: bool,
}

#[derive(Debug)]
struct State {
    last_line: Option<Instant>,
    pending: Pending,
}

/// Collects refusals and writes them at a bounded rate.
#[derive(Debug)]
pub struct RefusalLog {
    interval: Duration,
    state: Mutex<State>,
}

impl Default for RefusalLog {
    fn default() -> Self {
        RefusalLog::new(SUMMARY_INTERVAL)
    }
}

impl RefusalLog {
    /// At most one line per `interval`.
    pub fn new(interval: Duration) -> RefusalLog {
        RefusalLog {
            interval,
            state: Mutex::new(State {
                last_line: None,
                pending: Pending::default(),
            }),
        }
    }

    /// Records one refusal: logged at once when the log has been quiet for an interval, else
    /// counted for the next summary.
    pub fn note(&self, reason: &'static str, peer: IpAddr, method: &str, path: &str) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let quiet = state
            .last_line
            .is_none_or(|at| at.elapsed() >= self.interval);
        if quiet && state.pending.by_reason.is_empty() {
            state.last_line = Some(Instant::now());
            drop(state);
            tracing::warn!(%method, path, remote = %peer, reason, "HTTP request refused: {reason}");
            return;
        }
        let pending = &mut state.pending;
        *pending.by_reason.entry(reason).or_default() += 1;
        if pending.peers.len() < SAMPLE_PEERS {
            pending.peers.insert(peer);
        } else if !pending.peers.contains(&peer) {
            pending.more_peers = true;
        }
        if quiet {
            Self::summarise(&mut state);
        }
    }

    /// Writes the pending summary if an interval has passed (called periodically), or at once
    /// when `now` (at shutdown, so no count is lost).
    pub fn flush(&self, now: bool) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let due = now
            || state
                .last_line
                .is_none_or(|at| at.elapsed() >= self.interval);
        if due && !state.pending.by_reason.is_empty() {
            Self::summarise(&mut state);
        }
    }

    fn summarise(state: &mut State) {
        let pending = std::mem::take(&mut state.pending);
        let since = state.last_line.map_or(0, |at| at.elapsed().as_secs());
        state.last_line = Some(Instant::now());
        let total: u64 = pending.by_reason.values().sum();
        let reasons = pending
            .by_reason
            .iter()
            .map(|(reason, n)| format!("{n}× {reason}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut peers = pending
            .peers
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        if pending.more_peers {
            peers.push_str(", …");
        }
        tracing::warn!(
            refused = total,
            seconds = since,
            remote = %peers,
            "HTTP requests refused in the last {since} s: {reasons}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_between_lines() {
        let log = RefusalLog::new(Duration::from_secs(3600));
        let peer = IpAddr::from([10, 0, 0, 1]);
        log.note("unauthorized", peer, "POST", "/mcp");
        for _ in 0..1000 {
            log.note("unauthorized", peer, "POST", "/mcp");
        }
        {
            let state = log.state.lock().unwrap();
            assert_eq!(state.pending.by_reason["unauthorized"], 1000);
            assert_eq!(state.pending.peers.len(), 1);
        }
        log.flush(false);
        assert!(!log.state.lock().unwrap().pending.by_reason.is_empty());
        log.flush(true);
        assert!(log.state.lock().unwrap().pending.by_reason.is_empty());
    }
}
