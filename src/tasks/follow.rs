//! Following one Proxmox task to its end: status and new log lines each round, progress
//! notifications when the client asked for them, the exit status and log tail at the end.
//!
//! Invariant: following only reads. Stopping the follower (MCP cancellation, timeout, the
//! peer going away) never stops the Proxmox task; only `tasks/cancel` or `pve_stop_task`
//! do, after approval.

// Failures are the cold path and are rendered once; boxing them would only add noise.
#![allow(clippy::result_large_err)]

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::progress::{LogFormat, Meter, Reading};
use super::pve_io::{self, TaskState};
use crate::envelope::ToolFailure;
use crate::pve::{self, Upid};

/// Lines of the log returned with a finished task.
pub const TAIL_LINES: usize = 20;

/// Where progress goes: the client's peer and the token it sent.
#[derive(Debug, Clone)]
pub struct ProgressSink {
    /// The client.
    pub peer: Peer<RoleServer>,
    /// The token of the request that asked for progress.
    pub token: ProgressToken,
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
    /// The caller cancelled the wait; the task is still running.
    Cancelled,
}

/// Follows `upid` until it stops, `deadline` passes or `cancel` fires. With
/// `only_for_progress`, following also ends when the client stops taking notifications.
pub async fn follow(
    client: &pve::Client,
    upid: &Upid,
    deadline: Option<Instant>,
    sink: Option<&ProgressSink>,
    only_for_progress: bool,
    cancel: &CancellationToken,
) -> Result<Ending, ToolFailure> {
    let mut watch = Watch::new(upid);
    let started = Instant::now();
    let mut last_sent = f64::NEG_INFINITY;
    loop {
        if cancel.is_cancelled() {
            return Ok(Ending::Cancelled);
        }
        let snapshot = watch.round(client, cancel).await?;
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
        let pause = poll_interval(started.elapsed());
        let pause = match deadline {
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(Ending::TimedOut(snapshot));
                }
                pause.min(left)
            }
            None => pause,
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = cancel.cancelled() => return Ok(Ending::Cancelled),
        }
    }
}

/// Fast at first (short tasks end within a second), then gentler on the cluster.
fn poll_interval(elapsed: Duration) -> Duration {
    if elapsed < Duration::from_secs(10) {
        Duration::from_millis(200)
    } else if elapsed < Duration::from_secs(60) {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(2)
    }
}

async fn notify(sink: &ProgressSink, reading: &Reading) -> Result<(), rmcp::service::ServiceError> {
    let mut params = ProgressNotificationParam::new(sink.token.clone(), reading.progress)
        .with_message(reading.message.clone());
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

    /// Reads the status, then every new log line (so a stopped task's log is complete).
    pub async fn round(
        &mut self,
        client: &pve::Client,
        cancel: &CancellationToken,
    ) -> Result<Snapshot, ToolFailure> {
        let state = pve_io::read_state(client, &self.upid, cancel).await?;
        let new = pve_io::read_log_from(client, &self.upid, self.cursor, cancel).await?;
        self.cursor += new.len() as u64;
        self.meter.feed(new.iter().map(String::as_str));
        for line in new {
            if self.tail.len() == TAIL_LINES {
                self.tail.pop_front();
            }
            self.tail.push_back(line);
        }
        Ok(Snapshot {
            upid: self.upid.clone(),
            state,
            tail: self.tail.iter().cloned().collect(),
            lines: self.cursor,
            reading: self.meter.reading(elapsed_secs(&self.upid)),
        })
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
