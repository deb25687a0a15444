//! Following one Proxmox task to its end: its status on a backing-off schedule, its log
//! when progress needs it and once at the end, progress notifications when the client asked
//! for them, the exit status and log tail at the end.
//!
//! Invariants: following only reads. Stopping the follower (MCP cancellation, timeout, the
//! session going away) never stops the Proxmox task; only `tasks/cancel` or `pve_stop_task`
//! do, after approval. Backend load is bounded: at most [`MAX_FOLLOWERS_PER_SESSION`]
//! followers per MCP session and [`MAX_FOLLOWERS_PER_PROCESS`] per process hold a
//! [`FollowerSlot`], each polls at most every [`POLL_CEILING`] once settled, none outlives
//! [`MAX_FOLLOW_SECS`] or its session.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{InitializeRequestParams, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::progress::{LogFormat, Meter, Reading};
use super::pve_io::{self, TaskState};
use crate::envelope::ToolFailure;
use crate::pve::{self, Upid};

/// Lines of the log returned with a finished task.
pub const TAIL_LINES: usize = 20;

/// Followers (waits and MCP-task progress loops) one MCP session may run at once. A model
/// rarely needs more than a handful of parallel waits; 16 lets a batch of clones or backups
/// be followed together, while one session alone stays near 16 × 2 reads per
/// [`POLL_CEILING`] (about 6 requests/s) once its followers settle.
pub const MAX_FOLLOWERS_PER_SESSION: usize = 16;

/// Followers the whole process may run at once, every session together (the HTTP transport
/// serves many). 64 settled followers poll at most about 26 requests/s, a load a Proxmox API
/// daemon (`pveproxy`, a few workers) absorbs beside its own web UI.
pub const MAX_FOLLOWERS_PER_PROCESS: usize = 64;

/// First pause between two status reads: most short tasks (start, stop, snapshot) end within
/// a second, so the first answers come quickly.
pub const POLL_FIRST: Duration = Duration::from_millis(250);

/// Longest pause between two status reads; each pause is 1.5 × the previous one until here.
/// A task that runs for minutes is then read every 5 s, which a person watching progress
/// does not notice and the cluster barely does.
pub const POLL_CEILING: Duration = Duration::from_secs(5);

/// Longest a follower runs, whatever the wait's timeout or the task TTL says (the schema
/// allows `wait_timeout` and `timeout` up to 86 400 s). An hour covers the common long tasks
/// (clones, backups and migrations of ordinary guests); a longer task is followed by calling
/// `pve_wait_task` again, which costs one call per hour instead of a slot held for a day
/// after the model may have long forgotten it.
pub const MAX_FOLLOW_SECS: u64 = 3_600;

/// With a progress sink, a task whose log has no percentages has its log read every this
/// many rounds (for the "last line" of its progress message), not every round.
const PLAIN_LOG_EVERY: u32 = 4;

/// How often a sleeping follower checks that its session is still there.
const SESSION_CHECK: Duration = Duration::from_millis(250);

/// Where progress goes: the client's peer and the token it sent.
#[derive(Debug, Clone)]
pub struct ProgressSink {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// The token of the request that asked for progress.
    pub token: ProgressToken,
    /// The cluster the task runs on, named in every message (several clusters only).
    pub cluster: Option<&'static str>,
}

impl ProgressSink {
    /// The same sink, naming `cluster` in its messages.
    pub fn in_cluster(mut self, cluster: Option<&'static str>) -> ProgressSink {
        self.cluster = cluster;
        self
    }
}

/// The MCP session a follower works for: the key its slots are counted under, and its
/// client, so the follower notices the session going away.
#[derive(Debug, Clone)]
pub struct Session {
    peer: Peer<RoleServer>,
}

impl Session {
    /// The session of a request.
    pub fn of(context: &RequestContext<RoleServer>) -> Session {
        Session {
            peer: context.peer.clone(),
        }
    }

    /// Whether the session's transport closed (client gone, session ended).
    pub fn is_gone(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// The session's identity: its `initialize` parameters, stored once per session and
    /// shared by every request of it. Sessions without one (none is stored for inline
    /// lifecycle requests) share one key, so they share one session's slots.
    fn identity(&self) -> Option<Arc<InitializeRequestParams>> {
        self.peer.peer_info()
    }
}

/// Why no follower slot was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// This session already runs [`MAX_FOLLOWERS_PER_SESSION`] followers.
    Session,
    /// The process already runs [`MAX_FOLLOWERS_PER_PROCESS`] followers.
    Process,
}

impl Busy {
    /// The limit that was reached, and where ("this session" / "this server").
    pub fn limit(self) -> (usize, &'static str) {
        match self {
            Busy::Session => (MAX_FOLLOWERS_PER_SESSION, "this session"),
            Busy::Process => (MAX_FOLLOWERS_PER_PROCESS, "this server"),
        }
    }
}

/// Followers counted per session key and in all.
#[derive(Debug, Default)]
struct Slots {
    total: usize,
    by_session: HashMap<usize, usize>,
}

impl Slots {
    fn take(&mut self, key: usize, per_session: usize, per_process: usize) -> Result<(), Busy> {
        let mine = self.by_session.get(&key).copied().unwrap_or(0);
        if mine >= per_session {
            return Err(Busy::Session);
        }
        if self.total >= per_process {
            return Err(Busy::Process);
        }
        self.total += 1;
        self.by_session.insert(key, mine + 1);
        Ok(())
    }

    fn give_back(&mut self, key: usize) {
        self.total = self.total.saturating_sub(1);
        if let Some(count) = self.by_session.get_mut(&key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.by_session.remove(&key);
            }
        }
    }
}

/// The process's followers: a process-wide count is what bounds the load on the one
/// cluster every session of this process talks to.
static SLOTS: LazyLock<Mutex<Slots>> = LazyLock::new(|| Mutex::new(Slots::default()));

/// The right to follow one task; given back when dropped (the follower ended, however).
#[derive(Debug)]
pub struct FollowerSlot {
    key: usize,
    /// Keeps the session's identity alive, so its address (the key) cannot be reused by
    /// another session while this slot is counted under it.
    _identity: Option<Arc<InitializeRequestParams>>,
}

impl Drop for FollowerSlot {
    fn drop(&mut self) {
        SLOTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .give_back(self.key);
    }
}

/// A follower slot for `session` (`None`: a call outside any session, counted as one),
/// or why there is none.
pub fn claim(session: Option<&Session>) -> Result<FollowerSlot, Busy> {
    let identity = session.and_then(Session::identity);
    let key = identity
        .as_ref()
        .map_or(0, |info| Arc::as_ptr(info) as usize);
    SLOTS.lock().unwrap_or_else(PoisonError::into_inner).take(
        key,
        MAX_FOLLOWERS_PER_SESSION,
        MAX_FOLLOWERS_PER_PROCESS,
    )?;
    Ok(FollowerSlot {
        key,
        _identity: identity,
    })
}

/// Followers running now in the whole process.
pub fn running_followers() -> usize {
    SLOTS.lock().unwrap_or_else(PoisonError::into_inner).total
}

/// A wait's limit in seconds, capped at [`MAX_FOLLOW_SECS`].
pub fn capped_secs(requested: u64) -> u64 {
    requested.min(MAX_FOLLOW_SECS)
}

/// What a follower saw when it stopped.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The task.
    pub upid: Upid,
    /// Its last status.
    pub state: TaskState,
    /// The last lines of its log.
    pub tail: Vec<String>,
    /// Lines read in all.
    pub lines: u64,
    /// The last progress reading.
    pub reading: Reading,
}

/// How following ended.
#[derive(Debug)]
pub enum Ending {
    /// The task stopped.
    Stopped(Snapshot),
    /// The deadline passed first; the task is still running.
    TimedOut(Snapshot),
    /// The caller cancelled the wait, or its session ended; the task is still running.
    Cancelled,
}

/// The pauses between two status reads: [`POLL_FIRST`], growing 1.5× to [`POLL_CEILING`].
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff { next: POLL_FIRST }
    }
}

impl Backoff {
    /// The next pause.
    pub fn pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 3 / 2).min(POLL_CEILING);
        pause
    }
}

/// Follows `upid` until it stops, `deadline` passes, `cancel` fires or `session` ends.
/// The log is read each round only when progress goes to a `sink` (it is parsed from the
/// log), else once when the task stops or the deadline passes. With `only_for_progress`,
/// following also ends when the client stops taking notifications. The caller holds a
/// [`FollowerSlot`] for the whole call.
pub async fn follow(
    client: &pve::Client,
    upid: &Upid,
    deadline: Option<Instant>,
    sink: Option<&ProgressSink>,
    session: Option<&Session>,
    only_for_progress: bool,
    cancel: &CancellationToken,
) -> Result<Ending, ToolFailure> {
    let mut watch = Watch::new(upid);
    let mut backoff = Backoff::default();
    let mut last_sent = f64::NEG_INFINITY;
    let mut rounds: u32 = 0;
    loop {
        if cancel.is_cancelled() || session.is_some_and(Session::is_gone) {
            return Ok(Ending::Cancelled);
        }
        let state = watch.status(client, cancel).await?;
        // Percentages need every new line; a task without them shows elapsed time and its
        // last line, which may lag a few rounds.
        let progress_wants_log =
            sink.is_some() && (watch.parses_progress() || rounds.is_multiple_of(PLAIN_LOG_EVERY));
        if progress_wants_log || !state.running {
            watch.catch_up(client, cancel).await?;
        }
        rounds = rounds.wrapping_add(1);
        let snapshot = watch.snapshot(state);
        if let Some(sink) = sink
            && snapshot.reading.progress > last_sent
        {
            last_sent = snapshot.reading.progress;
            if notify(sink, &snapshot.reading).await.is_err() {
                tracing::debug!("progress notification not delivered");
                if only_for_progress {
                    return Ok(Ending::Cancelled);
                }
            }
        }
        if !snapshot.state.running {
            return Ok(Ending::Stopped(snapshot));
        }
        let pause = backoff.pause();
        let pause = match deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    if sink.is_none() {
                        watch.catch_up(client, cancel).await?;
                    }
                    return Ok(Ending::TimedOut(watch.snapshot(snapshot.state)));
                }
                pause.min(left)
            }
            None => pause,
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = cancel.cancelled() => return Ok(Ending::Cancelled),
            () = gone(session) => return Ok(Ending::Cancelled),
        }
    }
}

/// Resolves when `session` ends (never without one).
async fn gone(session: Option<&Session>) {
    let Some(session) = session else {
        return std::future::pending().await;
    };
    while !session.is_gone() {
        tokio::time::sleep(SESSION_CHECK).await;
    }
}

async fn notify(sink: &ProgressSink, reading: &Reading) -> Result<(), rmcp::service::ServiceError> {
    let message = match sink.cluster {
        Some(cluster) => format!("[{cluster}] {}", reading.message),
        None => reading.message.clone(),
    };
    let mut params =
        ProgressNotificationParam::new(sink.token.clone(), reading.progress).with_message(message);
    if let Some(total) = reading.total {
        params = params.with_total(total);
    }
    sink.peer.notify_progress(params).await
}

/// One task's log cursor, tail and progress meter.
#[derive(Debug)]
pub struct Watch {
    upid: Upid,
    cursor: u64,
    tail: VecDeque<String>,
    meter: Meter,
}

impl Watch {
    /// A watch from the first log line.
    pub fn new(upid: &Upid) -> Watch {
        Watch {
            upid: upid.clone(),
            cursor: 0,
            tail: VecDeque::with_capacity(TAIL_LINES),
            meter: Meter::new(LogFormat::of_worker(&upid.kind)),
        }
    }

    /// Whether the task's log reports percentages (so progress needs the log).
    pub fn parses_progress(&self) -> bool {
        LogFormat::of_worker(&self.upid.kind) != LogFormat::Plain
    }

    /// Reads the status, then every new log line (so a stopped task's log is complete).
    pub async fn round(
        &mut self,
        client: &pve::Client,
        cancel: &CancellationToken,
    ) -> Result<Snapshot, ToolFailure> {
        let state = self.status(client, cancel).await?;
        self.catch_up(client, cancel).await?;
        Ok(self.snapshot(state))
    }

    /// Reads the task's status only.
    pub async fn status(
        &mut self,
        client: &pve::Client,
        cancel: &CancellationToken,
    ) -> Result<TaskState, ToolFailure> {
        pve_io::read_state(client, &self.upid, cancel).await
    }

    /// Reads every log line after the cursor and feeds the tail and the meter.
    pub async fn catch_up(
        &mut self,
        client: &pve::Client,
        cancel: &CancellationToken,
    ) -> Result<(), ToolFailure> {
        let new = pve_io::read_log_from(client, &self.upid, self.cursor, cancel).await?;
        self.cursor += new.len() as u64;
        self.meter.feed(new.iter().map(String::as_str));
        for line in new {
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
        Ok(())
    }

    /// What the watch knows now, with the status `state`.
    pub fn snapshot(&self, state: TaskState) -> Snapshot {
        Snapshot {
            upid: self.upid.clone(),
            state,
            tail: self.tail.iter().cloned().collect(),
            lines: self.cursor,
            reading: self.meter.reading(elapsed_secs(&self.upid)),
        }
    }
}

/// Seconds since the task started, by the UPID's start time.
fn elapsed_secs(upid: &Upid) -> u64 {
    u64::try_from(
        chrono::Utc::now()
            .timestamp()
            .saturating_sub(upid.starttime),
    )
    .unwrap_or(0)
}

impl Snapshot {
    /// The JSON a caller gets: task identity, status, exit status and log tail.
    /// The snapshot as returned to clients: the log tail is Proxmox-written text, so the
    /// redaction text rules (passwords, keys, tokens) run over every line.
    pub fn to_json(&self) -> Value {
        let tail: Vec<String> = self
            .tail
            .iter()
            .map(|line| crate::redact::mask_text(line))
            .collect();
        json!({
            "upid": self.upid.to_string(),
            "node": self.upid.node,
            "type": self.upid.kind,
            "id": self.upid.id,
            "status": if self.state.running { "running" } else { "stopped" },
            "exitstatus": self.state.exitstatus,
            "succeeded": self.state.succeeded(),
            "progress": self.reading.message,
            "logLines": self.lines,
            "logTail": tail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_grows_by_half_to_its_ceiling() {
        let mut backoff = Backoff::default();
        let pauses: Vec<Duration> = (0..12).map(|_| backoff.pause()).collect();
        assert_eq!(pauses[0], POLL_FIRST);
        assert_eq!(pauses[1], POLL_FIRST * 3 / 2);
        assert!(pauses.windows(2).all(|w| w[0] <= w[1]), "{pauses:?}");
        assert_eq!(pauses[11], POLL_CEILING);
        // Reads in the first minute of a long task, against 200 ms for 10 s before.
        let mut backoff = Backoff::default();
        let (mut at, mut reads) = (Duration::ZERO, 0);
        while at < Duration::from_secs(60) {
            at += backoff.pause();
            reads += 1;
        }
        assert!(reads <= 20, "{reads}");
    }

    #[test]
    fn slots_hold_per_session_and_per_process() {
        let mut slots = Slots::default();
        for _ in 0..3 {
            slots.take(1, 3, 5).expect("within the session cap");
        }
        assert_eq!(slots.take(1, 3, 5), Err(Busy::Session));
        slots.take(2, 3, 5).expect("another session");
        slots.take(2, 3, 5).expect("another session");
        assert_eq!(slots.take(3, 3, 5), Err(Busy::Process));
        slots.give_back(1);
        slots.take(3, 3, 5).expect("a slot was given back");
        for key in [1, 1, 2, 2, 3] {
            slots.give_back(key);
        }
        assert_eq!(slots.total, 0);
        assert!(slots.by_session.is_empty(), "{:?}", slots.by_session);
    }

    #[test]
    fn a_claimed_slot_is_given_back_when_dropped() {
        let slot = claim(None).expect("a slot");
        assert!(running_followers() >= 1);
        drop(slot);
        assert_eq!(capped_secs(86_400), MAX_FOLLOW_SECS);
        assert_eq!(capped_secs(30), 30);
    }

    #[test]
    fn a_log_tail_is_returned_with_its_secrets_masked() {
        let upid: Upid = "UPID:pve01:00001234:00005678:6561A1B2:vzdump:101:root@pam:"
            .parse()
            .expect("valid upid");
        let snapshot = Snapshot {
            upid,
            state: TaskState {
                running: false,
                exitstatus: Some("OK".into()),
            },
            tail: vec!["password: hunter2-canary".into(), "INFO: done".into()],
            lines: 2,
            reading: Reading {
                progress: 100.0,
                total: Some(100.0),
                message: "done".into(),
            },
        };
        let json = snapshot.to_json().to_string();
        assert!(!json.contains("hunter2-canary"), "{json}");
        assert!(json.contains("INFO: done"));
    }
}
