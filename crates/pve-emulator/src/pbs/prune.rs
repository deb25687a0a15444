//! PBS's prune selection (`pbs-datastore`'s `compute_prune_info`), for one backup group.
//!
//! Invariant: the selection is PBS's — snapshots newest first, each keep-* rule in the
//! order last, hourly, daily, weekly, monthly, yearly keeps the newest snapshot of each of
//! its first N periods not already covered by a kept one; a protected snapshot is always
//! kept and never counts towards a rule; with no rule at all everything is kept. Periods
//! are computed in UTC (the emulated server's time zone).

use std::collections::{HashMap, HashSet};

use chrono::DateTime;

/// The keep-* options of a prune, in PBS's order of application.
pub(super) const KEEP_OPTIONS: [&str; 6] = [
    "keep-last",
    "keep-hourly",
    "keep-daily",
    "keep-weekly",
    "keep-monthly",
    "keep-yearly",
];

/// The period a snapshot falls in for rule `option` (`strftime` formats PBS uses).
fn period(option: &str, time: i64) -> String {
    let format = match option {
        "keep-hourly" => "%Y/%m/%d/%H",
        "keep-daily" => "%Y/%m/%d",
        "keep-weekly" => "%G/%V",
        "keep-monthly" => "%Y/%m",
        "keep-yearly" => "%Y",
        // keep-last: every snapshot is its own period.
        _ => return time.to_string(),
    };
    DateTime::from_timestamp(time, 0)
        .map(|t| t.format(format).to_string())
        .unwrap_or_default()
}

/// How one snapshot came out of the selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    /// Protected: kept whatever the rules say.
    Protected,
    /// Selected by a rule (or everything is kept).
    Keep,
    /// Not selected: removed unless it is a dry run.
    Remove,
}

/// One snapshot as the selection sees it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    /// Backup time, Unix seconds.
    pub time: i64,
    /// Protected from pruning.
    pub protected: bool,
}

/// Marks `list` (one group) by the `keeps` (option name, count). The result is in the order
/// of `list`.
pub(super) fn select(list: &[Candidate], keeps: &[(&str, u64)]) -> Vec<Mark> {
    let keep_all = keeps.iter().all(|(_, n)| *n == 0);
    if keep_all {
        return list
            .iter()
            .map(|c| {
                if c.protected {
                    Mark::Protected
                } else {
                    Mark::Keep
                }
            })
            .collect();
    }
    // Newest first, as PBS sorts before selecting.
    let mut order: Vec<usize> = (0..list.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(list[i].time));
    let mut mark: HashMap<usize, Mark> = HashMap::new();
    for option in KEEP_OPTIONS {
        let Some(&(_, keep)) = keeps.iter().find(|(name, _)| *name == option) else {
            continue;
        };
        mark_selections(
            &mut mark,
            list,
            &order,
            usize::try_from(keep).unwrap_or(usize::MAX),
            |t| period(option, t),
        );
    }
    (0..list.len())
        .map(|i| {
            if list[i].protected {
                Mark::Protected
            } else {
                mark.get(&i).copied().unwrap_or(Mark::Remove)
            }
        })
        .collect()
}

/// One rule: PBS's `mark_selections`.
fn mark_selections(
    mark: &mut HashMap<usize, Mark>,
    list: &[Candidate],
    order: &[usize],
    keep: usize,
    select_id: impl Fn(i64) -> String,
) {
    let already_included: HashSet<String> = order
        .iter()
        .filter(|i| mark.get(i) == Some(&Mark::Keep))
        .map(|&i| select_id(list[i].time))
        .collect();
    let mut include: HashSet<String> = HashSet::new();
    for &i in order {
        if mark.contains_key(&i) {
            continue;
        }
        if list[i].protected {
            mark.insert(i, Mark::Protected);
            continue;
        }
        let id = select_id(list[i].time);
        if already_included.contains(&id) {
            continue;
        }
        if include.contains(&id) {
            mark.insert(i, Mark::Remove);
        } else {
            if include.len() >= keep {
                break;
            }
            include.insert(id);
            mark.insert(i, Mark::Keep);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;
    /// 2024-12-01T00:00:00Z.
    const BASE: i64 = 1_733_011_200;

    fn c(time: i64) -> Candidate {
        Candidate {
            time,
            protected: false,
        }
    }

    #[test]
    fn keep_last_keeps_the_newest_and_skips_protected_ones() {
        let mut list = vec![c(BASE), c(BASE + 10), c(BASE + 20), c(BASE + 30)];
        list[3].protected = true;
        let marks = select(&list, &[("keep-last", 2)]);
        assert_eq!(
            marks,
            [Mark::Remove, Mark::Keep, Mark::Keep, Mark::Protected]
        );
    }

    #[test]
    fn keep_daily_keeps_the_newest_of_each_day() {
        let list = [
            c(BASE + 3600),           // day 1, 01:00
            c(BASE + 7200),           // day 1, 02:00 (newest of day 1)
            c(BASE + DAY + 3600),     // day 2 (only one)
            c(BASE + 2 * DAY + 60),   // day 3, 00:01
            c(BASE + 2 * DAY + 7200), // day 3, 02:00 (newest of day 3)
        ];
        let marks = select(&list, &[("keep-daily", 2)]);
        assert_eq!(
            marks,
            [
                Mark::Remove,
                Mark::Remove,
                Mark::Keep,
                Mark::Remove,
                Mark::Keep
            ]
        );
        // keep-last 1 takes the newest; keep-daily 2 then needs two more days.
        let marks = select(&list, &[("keep-last", 1), ("keep-daily", 2)]);
        assert_eq!(
            marks,
            [
                Mark::Remove,
                Mark::Keep,
                Mark::Keep,
                Mark::Remove,
                Mark::Keep
            ]
        );
    }

    #[test]
    fn no_rule_keeps_everything() {
        let list = [c(BASE), c(BASE + 1)];
        assert_eq!(select(&list, &[]), [Mark::Keep, Mark::Keep]);
    }
}
