//! Emulated worker tasks and their UPIDs.
//!
//! Invariant: a UPID is built and parsed in Proxmox's exact format
//! `UPID:<node>:<pid 8 hex>:<pstart 8 hex>:<starttime 8 hex>:<type>:<id>:<user>:`,
//! and a task is "running" until its duration has elapsed (or it was
//! stopped), then "stopped" with an exit status — computed from the clock at
//! read time, so no timer task is needed. Workers that print progress in real Proxmox
//! (clone, disk move, backup, migration, restore) print the same lines here, one step per
//! `progress_pace`, so followers see rising percentages.

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
    /// When it was stopped early (the log stops growing there).
    pub stopped_at: Option<Instant>,
    /// What the worker "did", for the log.
    pub description: String,
    /// The progress script of workers that print progress; `None` for the others.
    pub script: Option<Script>,
    /// Exit status once the duration has elapsed (`OK` unless a failure was injected).
    pub final_status: String,
}

/// A worker that prints progress: its log format, step count and pace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Script {
    /// Which real log format it imitates.
    pub format: ScriptFormat,
    /// Time between two progress lines.
    pub pace: Duration,
}

/// The real Proxmox task-log formats the emulator imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ScriptFormat {
    /// `qm clone` / `qm disk move`: `transferred X of Y (Z%)`.
    DiskCopy,
    /// `vzdump`: `INFO:  25% (8.0 GiB of 32.0 GiB) in 1s, read: …, write: …`.
    Backup,
    /// `qm migrate`: `migration active, transferred X of Y VM-state, …`.
    Migration,
    /// `qmrestore` of a VMA archive: `progress 25% (read N bytes, duration 1 sec)`.
    Restore,
}

/// Progress lines after the one at 0 %; the last one is 100 % and ends the task.
const STEPS: u32 = 4;
/// Size of the emulated disk (GiB) and VM state (GiB).
const DISK_GIB: f64 = 32.0;
const STATE_GIB: f64 = 4.0;

impl ScriptFormat {
    /// The format of a worker type, if it prints progress.
    pub fn of(kind: &str) -> Option<ScriptFormat> {
        match kind {
            "qmclone" | "qmmove" => Some(ScriptFormat::DiskCopy),
            "vzdump" => Some(ScriptFormat::Backup),
            "qmigrate" => Some(ScriptFormat::Migration),
            "qmrestore" => Some(ScriptFormat::Restore),
            _ => None,
        }
    }

    fn header(self, upid: &Upid, description: &str) -> Vec<String> {
        let id = &upid.id;
        match self {
            ScriptFormat::DiskCopy => vec![
                format!("create full clone of drive scsi0 (local-lvm:vm-{id}-disk-0)"),
                format!("  Logical volume \"vm-{id}-disk-1\" created."),
            ],
            ScriptFormat::Backup => vec![
                format!(
                    "INFO: starting new backup job: vzdump {id} --node {} --mode snapshot --compress zstd --storage local",
                    upid.node
                ),
                format!("INFO: Starting Backup of VM {id} (qemu)"),
                "INFO: status = running".into(),
                format!(
                    "INFO: creating vzdump archive '/var/lib/vz/dump/vzdump-qemu-{id}.vma.zst'"
                ),
                "INFO: started backup task 'c3a9b8e2-5d1f-4b7e-9a61-0f2d3e4c5b6a'".into(),
            ],
            ScriptFormat::Migration => {
                let target = description.rsplit(' ').next().unwrap_or("pve02");
                vec![
                    format!("starting migration of VM {id} to node '{target}'"),
                    format!("starting VM {id} on remote node '{target}'"),
                    "start remote tunnel".into(),
                    format!("starting online/live migration on unix:/run/qemu-server/{id}.migrate"),
                    "set migration capabilities".into(),
                    "migration downtime limit: 100 ms".into(),
                    format!("start migrate command to unix:/run/qemu-server/{id}.migrate"),
                ]
            }
            ScriptFormat::Restore => vec![
                format!(
                    "restore vma archive: zstd -q -d -c /var/lib/vz/dump/vzdump-qemu-{id}.vma.zst | vma extract -v -r /var/tmp/vzdumptmp{pid}.fifo - /var/tmp/vzdumptmp{pid}",
                    pid = upid.pid
                ),
                "CFG: size: 456 name: qemu-server.conf".into(),
                format!(
                    "DEV: dev_id=1 size: {} devname: drive-scsi0",
                    gib_bytes(DISK_GIB)
                ),
                format!("new volume ID is 'local-lvm:vm-{id}-disk-0'"),
                format!("map 'drive-scsi0' to '/dev/pve/vm-{id}-disk-0' (write zeros = 0)"),
            ],
        }
    }

    fn step(self, step: u32, pace: Duration) -> String {
        let fraction = f64::from(step) / f64::from(STEPS);
        let percent = fraction * 100.0;
        let secs = (pace * step).as_secs();
        match self {
            ScriptFormat::DiskCopy => format!(
                "transferred {} of {DISK_GIB:.1} GiB ({percent:.2}%)",
                size(DISK_GIB * fraction)
            ),
            ScriptFormat::Backup => format!(
                "INFO: {:>3}% ({} of {DISK_GIB:.1} GiB) in {secs}s, read: 8.0 GiB/s, write: 7.6 GiB/s",
                percent.round(),
                size(DISK_GIB * fraction)
            ),
            ScriptFormat::Migration => format!(
                "migration active, transferred {} of {STATE_GIB:.1} GiB VM-state, 2.5 GiB/s",
                size(STATE_GIB * fraction)
            ),
            ScriptFormat::Restore => format!(
                "progress {}% (read {} bytes, duration {secs} sec)",
                percent.round(),
                gib_bytes(DISK_GIB * fraction)
            ),
        }
    }

    fn trailer(self, id: &str) -> Vec<String> {
        match self {
            ScriptFormat::DiskCopy => vec![],
            ScriptFormat::Backup => vec![
                "INFO: backup is sparse: 12.00 GiB (37%) total zero data".into(),
                format!("INFO: transferred {DISK_GIB:.2} GiB in 2 seconds (16.0 GiB/s)"),
                "INFO: archive file size: 9.81GB".into(),
                format!("INFO: Finished Backup of VM {id} (00:00:02)"),
                "INFO: Backup job finished successfully".into(),
            ],
            ScriptFormat::Migration => vec![
                "average migration speed: 2.5 GiB/s - downtime 42 ms".into(),
                "migration status: completed".into(),
                "migration finished successfully (duration 00:00:02)".into(),
            ],
            ScriptFormat::Restore => vec![
                format!(
                    "total bytes read {}, sparse bytes 12884901888 (37.5%)",
                    gib_bytes(DISK_GIB)
                ),
                "space reduction due to 4K zero blocks 0.41%".into(),
                "rescan volumes...".into(),
            ],
        }
    }

    /// Migration logs carry a timestamp on every line.
    fn stamp(self, line: String) -> String {
        if self == ScriptFormat::Migration {
            format!("{} {line}", chrono::Utc::now().format("%Y-%m-%d %H:%M:%S"))
        } else {
            line
        }
    }
}

/// `0.0 B`, `8.0 GiB`: how Proxmox renders sizes in task logs.
fn size(gib: f64) -> String {
    if gib == 0.0 {
        "0.0 B".into()
    } else {
        format!("{gib:.1} GiB")
    }
}

fn gib_bytes(gib: f64) -> u64 {
    (gib * 1024.0 * 1024.0 * 1024.0) as u64
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
                .map_or_else(|| self.final_status.clone(), |(_, s)| s.clone()),
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

    /// Time the worker has run: up to now, to its stop, at most its duration.
    fn ran_for(&self) -> Duration {
        let until = self
            .stopped_at
            .map_or_else(|| self.created.elapsed(), |at| at - self.created);
        until.min(self.duration)
    }

    /// The log lines written so far.
    pub fn log_lines(&self) -> Vec<String> {
        let mut lines = match self.script {
            Some(script) => self.script_lines(script),
            None => vec![
                format!("{}: started by {}", self.description, self.upid.user),
                format!("emulated worker {} for '{}'", self.upid.kind, self.upid.id),
                "waiting for the emulated operation to complete".to_string(),
            ],
        };
        match self.exitstatus() {
            None => {}
            Some(status) if status == "OK" => lines.push("TASK OK".into()),
            Some(status) => lines.push(format!("TASK ERROR: {status}")),
        }
        lines
    }
}

impl Task {
    /// A task started now; scripted (progress lines, `STEPS` × `pace`) when its worker type
    /// prints progress in real Proxmox, else running for `plain`.
    pub(super) fn started(
        upid: Upid,
        description: &str,
        plain: Duration,
        pace: Duration,
        final_status: String,
    ) -> Task {
        let script = ScriptFormat::of(&upid.kind).map(|format| Script { format, pace });
        let duration = script.map_or(plain, |s| s.pace * STEPS);
        Task {
            upid_text: upid.render(),
            upid,
            created: Instant::now(),
            duration,
            stopped: None,
            stopped_at: None,
            description: description.to_string(),
            script,
            final_status,
        }
    }

    /// The scripted log: header, one progress line per step reached, trailer once done.
    fn script_lines(&self, script: Script) -> Vec<String> {
        let format = script.format;
        let mut lines = format.header(&self.upid, &self.description);
        let pace_ms = script.pace.as_millis().max(1);
        let reached = u32::try_from(self.ran_for().as_millis() / pace_ms).unwrap_or(STEPS);
        let ok = self.exitstatus().is_none_or(|s| s == "OK");
        // A worker that fails never prints its 100 % line.
        let last = if ok { STEPS } else { STEPS - 1 };
        for step in 0..=reached.min(last) {
            lines.push(format.step(step, script.pace));
        }
        if self.exitstatus().as_deref() == Some("OK") {
            lines.extend(format.trailer(&self.upid.id));
        }
        lines.into_iter().map(|line| format.stamp(line)).collect()
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
