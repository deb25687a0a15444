//! The demo contents of a PBS emulator: two datastores, a namespace, snapshots of the given
//! guests over about three weeks in every verification state, one protected, a sync job
//! and a verification job.
//!
//! Invariant: the seed depends only on its arguments (`guests`, `now`), so tests and
//! `run --demo` can rely on what it contains: "store1" (namespaces "" and "prod") and
//! "offsite", sync job "offsite-pull" into "offsite", verification job "weekly-verify"
//! over "store1".

use super::{PbsEmulator, PbsSnapshotSeed};

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
const GIB: u64 = 1 << 30;

/// Ages of the root-namespace snapshots of each guest in "store1", newest first.
const AGES: [i64; 5] = [
    3 * HOUR,
    DAY + 2 * HOUR,
    3 * DAY,
    7 * DAY + 5 * HOUR,
    20 * DAY,
];

impl PbsEmulator {
    /// Seeds the demo contents for `guests` (`("vm", 101)`, `("ct", 201)`, …) as of `now`
    /// (Unix seconds). In "store1": five snapshots per guest (3 h to 20 days old) — the
    /// newest never verified, the others verified ok except the 3-day-old one of the second
    /// guest, which failed (and is corrupt); the oldest of the first guest is protected.
    /// In "store1"/"prod": two snapshots of the first guest. In "offsite": one verified
    /// snapshot per guest a day old.
    pub fn seed_demo(&self, guests: &[(&str, u32)], now: i64) {
        self.add_datastore("store1", 2 << 40);
        self.add_namespace("store1", "prod");
        self.add_datastore("offsite", 4 << 40);
        for (index, (kind, id)) in guests.iter().enumerate() {
            let size = if *kind == "vm" { 12 * GIB } else { 2 * GIB };
            for (n, age) in AGES.iter().enumerate() {
                let failed = index == 1 && n == 2;
                self.add_snapshot(PbsSnapshotSeed {
                    store: "store1".into(),
                    ns: String::new(),
                    backup_type: (*kind).to_owned(),
                    backup_id: id.to_string(),
                    backup_time: now - age,
                    size: size + (n as u64) * (GIB / 4),
                    verified: match n {
                        0 => None,
                        _ => Some(!failed),
                    },
                    protected: index == 0 && n == AGES.len() - 1,
                    corrupt: failed,
                    comment: (n == 0).then(|| format!("{kind}/{id} nightly")),
                });
            }
            self.add_snapshot(PbsSnapshotSeed {
                store: "offsite".into(),
                ns: String::new(),
                backup_type: (*kind).to_owned(),
                backup_id: id.to_string(),
                backup_time: now - DAY,
                size,
                verified: Some(true),
                protected: false,
                corrupt: false,
                comment: None,
            });
        }
        if let Some((kind, id)) = guests.first() {
            for age in [6 * HOUR, 2 * DAY] {
                self.add_snapshot(PbsSnapshotSeed {
                    store: "store1".into(),
                    ns: "prod".into(),
                    backup_type: (*kind).to_owned(),
                    backup_id: id.to_string(),
                    backup_time: now - age,
                    size: 8 * GIB,
                    verified: Some(true),
                    protected: false,
                    corrupt: false,
                    comment: Some("production copy".into()),
                });
            }
        }
        self.add_sync_job("offsite-pull", "offsite", "pbs-main", "store1");
        self.add_verify_job("weekly-verify", "store1");
        tracing::debug!(guests = guests.len(), "PBS emulator demo seeded");
    }
}
