//! PBS worker tasks and their UPIDs.
//!
//! Invariant: a UPID is rendered and parsed in PBS's exact format
//! `UPID:<node>:<pid 8 hex>:<pstart 8 hex>:<task id 8 hex>:<starttime 8 hex>:<type>:<id>:<auth id>:`
//! with the worker id systemd-escaped (so it never holds a `:`), and a task is "running"
//! until its duration has elapsed or it was aborted — computed from the clock at read time,
//! as the PVE emulator's tasks are, so no timer is needed. What a task does to the
//! datastore (its [`Effect`]) happens once, when a reader first sees it finished.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// The decoded fields of a PBS UPID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Upid {
    /// Node that ran the worker.
    pub node: String,
    /// Worker process id (the proxy's pid).
    pub pid: u32,
    /// Process start time in clock ticks.
    pub pstart: u32,
    /// Per-process task counter.
    pub task_id: u32,
    /// Task start, Unix seconds.
    pub starttime: i64,
    /// Worker type (`garbage_collection`, `verify`, …).
    pub kind: String,
    /// Worker id, unescaped (`store1`, `store1:vm/101`).
    pub id: String,
    /// Auth id that started it (`mcp@pbs!mcp`).
    pub auth_id: String,
}

/// systemd's unit-name escaping, which PBS applies to worker ids inside a UPID: `/` becomes
/// `-`, ASCII letters, digits, `_` and (not leading) `.` stay, every other byte is `\xNN`.
pub(super) fn escape_unit(text: &str) -> String {
    let mut out = String::new();
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i > 0 => out.push('.'),
            b if b.is_ascii_alphanumeric() || b == b'_' => out.push(char::from(b)),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The inverse of [`escape_unit`]; `None` for a malformed escape.
pub(super) fn unescape_unit(text: &str) -> Option<String> {
    let mut bytes = Vec::new();
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        match b {
            b'-' => bytes.push(b'/'),
            b'\\' => {
                let hex = tail.get(1..3)?;
                if tail.first() != Some(&b'x') {
                    return None;
                }
                bytes.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                rest = &tail[3..];
                continue;
            }
            b => bytes.push(b),
        }
        rest = tail;
    }
    String::from_utf8(bytes).ok()
}

impl Upid {
    /// Renders the UPID string.
    pub fn render(&self) -> String {
        format!(
            "UPID:{}:{:08X}:{:08X}:{:08X}:{:08X}:{}:{}:{}:",
            self.node,
            self.pid,
            self.pstart,
            self.task_id,
            self.starttime,
            self.kind,
            escape_unit(&self.id),
            self.auth_id
        )
    }

    /// Parses a UPID string; `None` if it is not in PBS's format.
    pub fn parse(text: &str) -> Option<Upid> {
        let rest = text.strip_prefix("UPID:")?.strip_suffix(':')?;
        let parts: Vec<&str> = rest.split(':').collect();
        let [node, pid, pstart, task_id, starttime, kind, id, auth_id] = parts.as_slice() else {
            return None;
        };
        let hex = |s: &str, min: usize, max: usize| {
            if (min..=max).contains(&s.len()) {
                u64::from_str_radix(s, 16).ok()
            } else {
                None
            }
        };
        if node.is_empty() || kind.is_empty() || !auth_id.contains('@') {
            return None;
        }
        Some(Upid {
            node: (*node).to_owned(),
            pid: u32::try_from(hex(pid, 8, 8)?).ok()?,
            pstart: u32::try_from(hex(pstart, 8, 9)?).ok()?,
            task_id: u32::try_from(hex(task_id, 8, 16)?).ok()?,
            starttime: i64::try_from(hex(starttime, 8, 8)?).ok()?,
            kind: (*kind).to_owned(),
            id: unescape_unit(id)?,
            auth_id: (*auth_id).to_owned(),
        })
    }
}

/// A snapshot a task works on: (namespace, type, id, time).
pub(super) type SnapRef = (String, String, String, i64);

/// What a task does to the datastore when it finishes (not when it is aborted).
#[derive(Debug, Clone)]
pub(super) enum Effect {
    /// A garbage collection of the store ran.
    Gc(String),
    /// These snapshots of the store were verified; a verification job's run counts.
    Verify {
        /// The datastore.
        store: String,
        /// The snapshots checked.
        targets: Vec<SnapRef>,
        /// The verification job that ran, if any.
        job: Option<String>,
    },
    /// A sync job ran.
    Sync(String),
}

/// The exit status of an aborted worker.
pub(super) const ABORTED: &str = "abort requested - aborting task";

/// One worker task.
#[derive(Debug, Clone)]
pub(super) struct PbsTask {
    /// Decoded UPID.
    pub upid: Upid,
    /// The UPID string.
    pub text: String,
    created: Instant,
    duration: Duration,
    /// End time (Unix seconds) when it was aborted.
    pub aborted: Option<i64>,
    /// The effect not yet applied; taken once the task is seen finished.
    pub effect: Option<Effect>,
    /// The error the worker ends with, `None` for `OK`.
    failure: Option<String>,
    /// Lines written right at the start.
    head: Vec<String>,
    /// Lines written when the work is done (before the result line).
    tail: Vec<String>,
}

/// `2024-12-04T10:00:00+00:00`: the stamp of a PBS task log line.
fn stamp(epoch: i64) -> String {
    chrono::DateTime::from_timestamp(epoch, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string())
        .unwrap_or_default()
}

impl PbsTask {
    /// A task started now that runs for `duration`, then ends `OK` or with `failure`.
    pub fn started(
        upid: Upid,
        duration: Duration,
        effect: Option<Effect>,
        failure: Option<String>,
        head: Vec<String>,
        tail: Vec<String>,
    ) -> PbsTask {
        PbsTask {
            text: upid.render(),
            upid,
            created: Instant::now(),
            duration,
            aborted: None,
            effect,
            failure,
            head,
            tail,
        }
    }

    /// Whether the worker still runs.
    pub fn is_running(&self) -> bool {
        self.aborted.is_none() && self.created.elapsed() < self.duration
    }

    /// Whether it ran to its end (not aborted) and its effect is still to apply.
    pub fn effect_due(&self) -> bool {
        self.aborted.is_none() && !self.is_running() && self.effect.is_some()
    }

    /// Exit status once stopped: `OK` or the error message (as PBS's `TaskState` shows it).
    pub fn exitstatus(&self) -> Option<String> {
        if self.is_running() {
            return None;
        }
        if self.aborted.is_some() {
            return Some(ABORTED.to_owned());
        }
        Some(self.failure.clone().unwrap_or_else(|| "OK".to_owned()))
    }

    /// End time once stopped.
    pub fn endtime(&self) -> Option<i64> {
        if self.is_running() {
            return None;
        }
        let secs = i64::try_from(self.duration.as_secs()).unwrap_or(0);
        Some(self.aborted.unwrap_or(self.upid.starttime + secs))
    }

    /// An entry of `GET /nodes/{node}/tasks`.
    pub fn list_entry(&self) -> Value {
        let mut map = Map::new();
        map.insert("upid".into(), json!(self.text));
        map.insert("node".into(), json!(self.upid.node));
        map.insert("pid".into(), json!(self.upid.pid));
        map.insert("pstart".into(), json!(self.upid.pstart));
        map.insert("starttime".into(), json!(self.upid.starttime));
        map.insert("worker_type".into(), json!(self.upid.kind));
        map.insert("worker_id".into(), json!(self.upid.id));
        map.insert("user".into(), json!(self.upid.auth_id));
        if let (Some(end), Some(status)) = (self.endtime(), self.exitstatus()) {
            map.insert("endtime".into(), json!(end));
            map.insert("status".into(), json!(status));
        }
        Value::Object(map)
    }

    /// `GET /nodes/{node}/tasks/{upid}/status`.
    pub fn status_entry(&self) -> Value {
        let mut map = Map::new();
        map.insert("upid".into(), json!(self.text));
        map.insert("node".into(), json!(self.upid.node));
        map.insert("pid".into(), json!(self.upid.pid));
        map.insert("pstart".into(), json!(self.upid.pstart));
        map.insert("starttime".into(), json!(self.upid.starttime));
        map.insert("type".into(), json!(self.upid.kind));
        map.insert("id".into(), json!(self.upid.id));
        let (user, token) = self
            .upid
            .auth_id
            .split_once('!')
            .map_or((self.upid.auth_id.as_str(), None), |(u, t)| (u, Some(t)));
        map.insert("user".into(), json!(user));
        if let Some(token) = token {
            map.insert("tokenid".into(), json!(token));
        }
        let running = self.is_running();
        map.insert(
            "status".into(),
            json!(if running { "running" } else { "stopped" }),
        );
        if let (Some(end), Some(status)) = (self.endtime(), self.exitstatus()) {
            map.insert("endtime".into(), json!(end));
            map.insert("exitstatus".into(), json!(status));
        }
        Value::Object(map)
    }

    /// The log lines written so far, each stamped as PBS writes them.
    pub fn log_lines(&self) -> Vec<String> {
        let start = stamp(self.upid.starttime);
        let mut lines: Vec<String> = self.head.iter().map(|l| format!("{start}: {l}")).collect();
        let Some(end) = self.endtime() else {
            return lines;
        };
        let end = stamp(end);
        if self.aborted.is_none() {
            lines.extend(self.tail.iter().map(|l| format!("{end}: {l}")));
        }
        let result = match self.exitstatus().as_deref() {
            Some("OK") | None => "TASK OK".to_owned(),
            Some(message) => format!("TASK ERROR: {message}"),
        };
        lines.push(format!("{end}: {result}"));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upid_round_trips_with_an_escaped_worker_id() {
        let upid = Upid {
            node: "pbs01".into(),
            pid: 0x12AB,
            pstart: 0x1A2B3,
            task_id: 3,
            starttime: 0x6750_A1B2,
            kind: "verify".into(),
            id: "store1:vm/101".into(),
            auth_id: "mcp@pbs!mcp".into(),
        };
        let text = upid.render();
        assert_eq!(
            text,
            "UPID:pbs01:000012AB:0001A2B3:00000003:6750A1B2:verify:store1\\x3avm-101:mcp@pbs!mcp:"
        );
        assert_eq!(Upid::parse(&text), Some(upid));
        let gc =
            "UPID:pbs01:000012AB:0001A2B3:00000003:6750A1B2:garbage_collection:store1:mcp@pbs!mcp:";
        assert_eq!(Upid::parse(gc).map(|u| u.id), Some("store1".into()));
    }

    #[test]
    fn malformed_upids_are_refused() {
        for bad in [
            "",
            "UPID:pbs01:000012AB:0001A2B3:6750A1B2:gc:store1:mcp@pbs!mcp:",
            "UPID:pbs01:12AB:0001A2B3:00000003:6750A1B2:gc:store1:mcp@pbs!mcp:",
            "UPID:pbs01:000012AB:0001A2B3:00000003:6750A1B2:gc:store1:nobody:",
            "UPID:pbs01:000012AB:0001A2B3:00000003:6750A1B2:gc:bad\\q:mcp@pbs!mcp:",
        ] {
            assert!(Upid::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn escaping_is_systemds() {
        assert_eq!(escape_unit("a-b/c.d"), "a\\x2db-c.d");
        assert_eq!(unescape_unit("a\\x2db-c.d").as_deref(), Some("a-b/c.d"));
        assert_eq!(escape_unit(".x"), "\\x2ex");
    }
}
