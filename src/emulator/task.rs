//! Emulated worker tasks and their UPIDs.
//!
//! Invariant: a UPID is built and parsed in Proxmox's exact format
//! `UPID:<node>:<pid 8 hex>:<pstart 8 hex>:<starttime 8 hex>:<type>:<id>:<user>:`,
//! and a task is "running" until its duration has elapsed (or it was
//! stopped), then "stopped" with an exit status — computed from the clock at
//! read time, so no timer task is needed.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

/// The decoded fields of a UPID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Upid {
    /// Node that ran the worker.
    pub node: String,
    /// Worker process id.
    pub pid: u32,
    /// Process start time in clock ticks since boot.
    pub pstart: u32,
    /// Task start, Unix seconds.
    pub starttime: u32,
    /// Worker type (`qmstart`, `vzstop`, ...).
    pub kind: String,
    /// Object the task works on (usually a vmid), may be empty.
    pub id: String,
    /// `user@realm` or `user@realm!token`.
    pub user: String,
}

impl Upid {
    /// Renders the UPID string.
    pub fn render(&self) -> String {
        format!(
            "UPID:{}:{:08X}:{:08X}:{:08X}:{}:{}:{}:",
            self.node, self.pid, self.pstart, self.starttime, self.kind, self.id, self.user
        )
    }

    /// Parses a UPID string; `None` if it is not in Proxmox's format.
    pub fn parse(text: &str) -> Option<Upid> {
        let rest = text.strip_prefix("UPID:")?.strip_suffix(':')?;
        let parts: Vec<&str> = rest.split(':').collect();
        // node, pid, pstart, starttime, type, id, user: the id and user
        // cannot contain ':' in Proxmox either.
        let [node, pid, pstart, starttime, kind, id, user] = parts.as_slice() else {
            return None;
        };
        let hex8 = |s: &str| {
            if s.len() == 8 {
                u32::from_str_radix(s, 16).ok()
            } else {
                None
            }
        };
        let valid_word = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if !valid_word(node) || !valid_word(kind) || !user.contains('@') {
            return None;
        }
        Some(Upid {
            node: (*node).to_string(),
            pid: hex8(pid)?,
            pstart: hex8(pstart)?,
            starttime: hex8(starttime)?,
            kind: (*kind).to_string(),
            id: (*id).to_string(),
            user: (*user).to_string(),
        })
    }
}

/// One worker task.
#[derive(Debug, Clone)]
pub(super) struct Task {
    /// Decoded UPID.
    pub upid: Upid,
    /// The UPID string.
    pub upid_text: String,
    /// When it was created.
    pub created: Instant,
    /// How long it runs.
    pub duration: Duration,
    /// Set when it was stopped early: (end time, exit status).
    pub stopped: Option<(u64, String)>,
    /// What the worker "did", for the log.
    pub description: String,
}

impl Task {
    /// Whether the worker is still running.
    pub fn is_running(&self) -> bool {
        self.stopped.is_none() && self.created.elapsed() < self.duration
    }

    /// Exit status once stopped (`OK`, or the reason it was interrupted).
    pub fn exitstatus(&self) -> Option<String> {
        if self.is_running() {
            return None;
        }
        Some(
            self.stopped
                .as_ref()
                .map_or_else(|| "OK".to_string(), |(_, s)| s.clone()),
        )
    }

    /// End time in Unix seconds once stopped.
    pub fn endtime(&self) -> Option<u64> {
        if self.is_running() {
            return None;
        }
        Some(self.stopped.as_ref().map_or_else(
            || u64::from(self.upid.starttime) + self.duration.as_secs(),
            |(end, _)| *end,
        ))
    }

    /// User without the token part (`svc_mcp@pve`) and the token id, split
    /// the way Proxmox's task API reports them.
    fn user_and_token(&self) -> (String, Option<String>) {
        match self.upid.user.split_once('!') {
            Some((user, token)) => (user.to_string(), Some(token.to_string())),
            None => (self.upid.user.clone(), None),
        }
    }

    /// Fields shared by the task list and the task status.
    fn common(&self) -> Map<String, Value> {
        let (user, token) = self.user_and_token();
        let mut map = Map::new();
        map.insert("upid".into(), json!(self.upid_text));
        map.insert("node".into(), json!(self.upid.node));
        map.insert("pid".into(), json!(self.upid.pid));
        map.insert("pstart".into(), json!(self.upid.pstart));
        map.insert("starttime".into(), json!(self.upid.starttime));
        map.insert("type".into(), json!(self.upid.kind));
        map.insert("id".into(), json!(self.upid.id));
        map.insert("user".into(), json!(user));
        if let Some(token) = token {
            map.insert("tokenid".into(), json!(token));
        }
        map
    }

    /// An entry of `GET /nodes/{node}/tasks`: `status` and `endtime` only
    /// once the task has finished.
    pub fn list_entry(&self) -> Value {
        let mut map = self.common();
        if let (Some(status), Some(end)) = (self.exitstatus(), self.endtime()) {
            map.insert("status".into(), json!(status));
            map.insert("endtime".into(), json!(end));
        }
        Value::Object(map)
    }

    /// `GET /nodes/{node}/tasks/{upid}/status`.
    pub fn status_entry(&self) -> Value {
        let mut map = self.common();
        map.insert(
            "status".into(),
            json!(if self.is_running() {
                "running"
            } else {
                "stopped"
            }),
        );
        if let Some(exit) = self.exitstatus() {
            map.insert("exitstatus".into(), json!(exit));
        }
        Value::Object(map)
    }

    /// The log lines written so far.
    pub fn log_lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!("{}: started by {}", self.description, self.upid.user),
            format!("emulated worker {} for '{}'", self.upid.kind, self.upid.id),
            "waiting for the emulated operation to complete".to_string(),
        ];
        match self.exitstatus() {
            None => {}
            Some(status) if status == "OK" => lines.push("TASK OK".into()),
            Some(status) => lines.push(format!("TASK ERROR: {status}")),
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upid_round_trip() {
        let text = "UPID:pve01:0000ABCD:0001E240:674F1C2A:qmstart:101:svc_mcp@pve!emu:";
        let upid = Upid::parse(text).unwrap();
        assert_eq!(upid.node, "pve01");
        assert_eq!(upid.pid, 0xABCD);
        assert_eq!(upid.starttime, 0x674F_1C2A);
        assert_eq!(upid.kind, "qmstart");
        assert_eq!(upid.id, "101");
        assert_eq!(upid.user, "svc_mcp@pve!emu");
        assert_eq!(upid.render(), text);
    }

    #[test]
    fn malformed_upids_are_rejected() {
        for bad in [
            "",
            "UPID:pve01",
            "UPID:pve01:0000ABCD:0001E240:674F1C2A:qmstart:101:svc_mcp@pve!emu",
            "UPID:pve01:ABCD:0001E240:674F1C2A:qmstart:101:svc_mcp@pve!emu:",
            "UPID:pve01:0000ABCD:0001E240:674F1C2A:qmstart:101:nouser:",
            "XUPID:pve01:0000ABCD:0001E240:674F1C2A:qmstart:101:svc_mcp@pve!emu:",
        ] {
            assert!(Upid::parse(bad).is_none(), "{bad}");
        }
    }
}
