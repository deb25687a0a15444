//! Progress read from a Proxmox task log: one parser per task type, picked by the UPID's
//! worker type.
//!
//! Invariant: a percentage is reported only where the log itself printed one (or printed
//! "X of Y" for a known total); every other task reports elapsed time and its last log
//! line. The value handed to the client never decreases: a worker that copies several
//! disks restarts at 0 % for each, and [`Meter`] turns that into a rising count of phases.

use std::sync::LazyLock;

use regex::Regex;

/// How a task's log shows progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Disk copies: `qmclone`, `qmmove`, `vzclone`, `move_volume` — `transferred X of Y (Z%)`,
    /// with a `drive-scsi0: ` prefix when QEMU's drive-mirror does the copy.
    DiskCopy,
    /// Backups (`vzdump`): `INFO:  42% (13.4 GiB of 32.0 GiB) in 1m 3s, read: …`.
    Backup,
    /// Migrations (`qmigrate`, `vzmigrate`): `migration active, transferred X of Y VM-state`,
    /// plus drive-mirror lines for local disks.
    Migration,
    /// Restores (`qmrestore`, `vzrestore`): `progress 42% (read N bytes, duration 3 sec)`.
    Restore,
    /// Anything else: elapsed time and the last line.
    Plain,
}

impl LogFormat {
    /// The format of a worker type as it appears in a UPID.
    pub fn of_worker(kind: &str) -> LogFormat {
        match kind {
            "qmclone" | "vzclone" | "qmmove" | "move_volume" | "qmmove_disk" => LogFormat::DiskCopy,
            "vzdump" => LogFormat::Backup,
            "qmigrate" | "vzmigrate" | "qmremotemigrate" => LogFormat::Migration,
            "qmrestore" | "vzrestore" => LogFormat::Restore,
            _ => LogFormat::Plain,
        }
    }

    /// The percentage one log line reports, if it reports one.
    pub fn percent(self, line: &str) -> Option<f64> {
        match self {
            LogFormat::DiskCopy => disk_copy(line),
            LogFormat::Backup => backup(line),
            LogFormat::Migration => migration(line),
            LogFormat::Restore => restore(line),
            LogFormat::Plain => None,
        }
    }
}

static TRANSFERRED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"transferred [0-9.]+ ?[KMGTP]?i?B of [0-9.]+ ?[KMGTP]?i?B \(([0-9]+(?:\.[0-9]+)?)%\)",
    )
    .ok()
});
static VZDUMP: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^INFO:\s+([0-9]+(?:\.[0-9]+)?)% \([0-9.]+ ?[KMGTP]?i?B of [0-9.]+ ?[KMGTP]?i?B\)")
        .ok()
});
static VM_STATE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"migration active, transferred ([0-9.]+) ?([KMGTP]?i?B) of ([0-9.]+) ?([KMGTP]?i?B) VM-state")
        .ok()
});
static RESTORE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^progress ([0-9]+(?:\.[0-9]+)?)% \(read [0-9]+ bytes").ok());

fn first_number(re: &LazyLock<Option<Regex>>, line: &str) -> Option<f64> {
    let captures = re.as_ref()?.captures(line)?;
    captures.get(1)?.as_str().parse().ok()
}

fn disk_copy(line: &str) -> Option<f64> {
    first_number(&TRANSFERRED, line)
}

fn backup(line: &str) -> Option<f64> {
    first_number(&VZDUMP, line)
}

fn restore(line: &str) -> Option<f64> {
    first_number(&RESTORE, line)
}

fn migration(line: &str) -> Option<f64> {
    if line.contains("migration status: completed") {
        return Some(100.0);
    }
    if let Some(captures) = VM_STATE.as_ref().and_then(|re| re.captures(line)) {
        let done = bytes(captures.get(1)?.as_str(), captures.get(2)?.as_str())?;
        let total = bytes(captures.get(3)?.as_str(), captures.get(4)?.as_str())?;
        return (total > 0.0).then(|| (done / total * 100.0).min(100.0));
    }
    disk_copy(line)
}

/// `12.5` `MiB` → bytes.
fn bytes(number: &str, unit: &str) -> Option<f64> {
    let value: f64 = number.parse().ok()?;
    let power = match unit.chars().next()? {
        'B' => 0,
        'K' => 1,
        'M' => 2,
        'G' => 3,
        'T' => 4,
        'P' => 5,
        _ => return None,
    };
    Some(value * 1024f64.powi(power))
}

/// One progress report for the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Never decreases between readings of the same task.
    pub progress: f64,
    /// `100` (per phase) when a percentage is known; `None` for elapsed-time readings.
    pub total: Option<f64>,
    /// What the task is doing, for a person.
    pub message: String,
}

/// Turns log lines into readings for one task, keeping the value monotonic.
#[derive(Debug)]
pub struct Meter {
    format: LogFormat,
    last_percent: Option<f64>,
    phase: u32,
    last_line: String,
    percent_line: String,
}

impl Meter {
    /// A meter for a task of `format`.
    pub fn new(format: LogFormat) -> Meter {
        Meter {
            format,
            last_percent: None,
            phase: 0,
            last_line: String::new(),
            percent_line: String::new(),
        }
    }

    /// Feeds newly read log lines (oldest first).
    pub fn feed<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        for line in lines {
            if let Some(percent) = self.format.percent(line) {
                if self.last_percent.is_some_and(|last| percent < last) {
                    // A new disk (or a new drive-mirror job) starts again at 0 %.
                    self.phase += 1;
                }
                self.last_percent = Some(percent);
                line.trim().clone_into(&mut self.percent_line);
            }
            if !line.trim().is_empty() {
                self.last_line = line.trim().to_owned();
            }
        }
    }

    /// The reading now; `elapsed_secs` is used where the log gives no percentage.
    pub fn reading(&self, elapsed_secs: u64) -> Reading {
        match self.last_percent {
            Some(percent) => {
                let phase = f64::from(self.phase);
                let message = if self.phase == 0 {
                    format!("{percent:.1}% — {}", self.percent_line)
                } else {
                    format!(
                        "{percent:.1}% (part {}) — {}",
                        self.phase + 1,
                        self.percent_line
                    )
                };
                Reading {
                    progress: phase * 100.0 + percent,
                    total: (self.phase == 0).then_some(100.0),
                    message,
                }
            }
            None => Reading {
                progress: elapsed_secs as f64,
                total: None,
                message: format!("running for {elapsed_secs} s — {}", self.last_line),
            },
        }
    }

    /// Whether the log printed a percentage yet.
    pub fn has_percent(&self) -> bool {
        self.last_percent.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_and_move_disk_lines() {
        let f = LogFormat::of_worker("qmclone");
        assert_eq!(f, LogFormat::DiskCopy);
        assert_eq!(
            f.percent("transferred 330.2 MiB of 32.0 GiB (1.01%)"),
            Some(1.01)
        );
        assert_eq!(
            f.percent("drive-scsi0: transferred 16.0 GiB of 32.0 GiB (50.00%) in 31s"),
            Some(50.0)
        );
        assert_eq!(
            f.percent("drive-scsi0: transferred 32.0 GiB of 32.0 GiB (100.00%) in 1m 2s, ready"),
            Some(100.0)
        );
        assert_eq!(
            f.percent("create full clone of drive scsi0 (local-lvm:vm-100-disk-0)"),
            None
        );
        assert_eq!(LogFormat::of_worker("qmmove"), LogFormat::DiskCopy);
    }

    #[test]
    fn vzdump_lines() {
        let f = LogFormat::of_worker("vzdump");
        assert_eq!(
            f.percent(
                "INFO:  42% (13.4 GiB of 32.0 GiB) in 1m 3s, read: 218.1 MiB/s, write: 201.7 MiB/s"
            ),
            Some(42.0)
        );
        assert_eq!(
            f.percent(
                "INFO: 100% (32.0 GiB of 32.0 GiB) in 4m 50s, read: 113.0 MiB/s, write: 98.3 MiB/s"
            ),
            Some(100.0)
        );
        assert_eq!(f.percent("INFO: Starting Backup of VM 101 (qemu)"), None);
        assert_eq!(
            f.percent("INFO: transferred 32.00 GiB in 290 seconds (113.0 MiB/s)"),
            None
        );
    }

    #[test]
    fn migration_lines() {
        let f = LogFormat::of_worker("qmigrate");
        let p = f
            .percent("2025-11-23 10:00:05 migration active, transferred 1.0 GiB of 4.0 GiB VM-state, 115.2 MiB/s")
            .unwrap();
        assert!((p - 25.0).abs() < 1e-9, "{p}");
        let p = f
            .percent("2025-11-23 10:00:05 migration active, transferred 512.0 MiB of 4.0 GiB VM-state, 115.2 MiB/s")
            .unwrap();
        assert!((p - 12.5).abs() < 1e-9, "{p}");
        assert_eq!(
            f.percent("2025-11-23 10:00:40 migration status: completed"),
            Some(100.0)
        );
        assert_eq!(
            f.percent(
                "2025-11-23 10:00:02 drive-scsi0: transferred 3.2 GiB of 32.0 GiB (10.00%) in 20s"
            ),
            Some(10.0)
        );
        assert_eq!(
            f.percent(
                "2025-11-23 10:00:00 starting migration of VM 101 to node 'pve02' (10.0.0.2)"
            ),
            None
        );
    }

    #[test]
    fn restore_lines() {
        let f = LogFormat::of_worker("qmrestore");
        assert_eq!(
            f.percent("progress 7% (read 2405181685 bytes, duration 4 sec)"),
            Some(7.0)
        );
        assert_eq!(
            f.percent("progress 10% (read 3435973836 bytes, zeroes = 5% (171798691 bytes), duration 2 sec)"),
            Some(10.0)
        );
        assert_eq!(
            f.percent("total bytes read 34359738368, sparse bytes 20000000000 (58.2%)"),
            None
        );
    }

    #[test]
    fn meter_rises_across_disks_and_falls_back_to_elapsed_time() {
        let mut meter = Meter::new(LogFormat::DiskCopy);
        meter.feed(["create full clone of drive scsi0 (local-lvm:vm-100-disk-0)"]);
        assert!(!meter.has_percent());
        let r = meter.reading(3);
        assert_eq!((r.progress, r.total), (3.0, None));
        assert!(r.message.contains("create full clone"), "{}", r.message);
        meter.feed(["transferred 16.0 GiB of 32.0 GiB (50.00%)"]);
        assert_eq!(meter.reading(4).progress, 50.0);
        assert_eq!(meter.reading(4).total, Some(100.0));
        meter.feed([
            "transferred 32.0 GiB of 32.0 GiB (100.00%)",
            "create full clone of drive scsi1 (local-lvm:vm-100-disk-1)",
            "transferred 1.0 GiB of 8.0 GiB (12.50%)",
        ]);
        meter.feed(["  Logical volume \"vm-777-disk-1\" created."]);
        let r = meter.reading(5);
        assert_eq!(r.progress, 112.5);
        assert!(r.message.ends_with("(12.50%)"), "{}", r.message);
        assert!(r.message.contains("part 2"), "{}", r.message);
    }

    #[test]
    fn plain_tasks_report_elapsed_time_and_the_last_line() {
        let mut meter = Meter::new(LogFormat::of_worker("qmstart"));
        meter.feed(["starting VM 101", "", "generating cloud-init ISO"]);
        let r = meter.reading(7);
        assert_eq!(r.progress, 7.0);
        assert!(r.message.ends_with("generating cloud-init ISO"));
    }
}
