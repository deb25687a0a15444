//! The two hand-kept tables the schema cannot replace, read once at first use.
//!
//! - `reviewed.tsv`: every endpoint whose real permission rule is prose in the schema
//!   (`permissions.description`), and every non-GET whose schema check an auditor satisfies,
//!   reviewed once with the schema's own words beside the verdict. A verdict adds effects,
//!   defers to a value rule (`request.rs`), or — for a non-GET only — says it is a reviewed
//!   read, the one way a method other than GET is ever a read.
//! - `pve-9.2.tsv`: the operations PVE 9.2 adds that the embedded schema lacks, each with its
//!   judged effects; a GET among them is never a read (no permission check is known).
//!
//! Invariant: a row can remove nothing but the default `change` of a reviewed non-GET read,
//! and `tests/effects_schema.rs` fails when a non-GET is a read without a `read` row here, when
//! a prose endpoint of a carried schema has no row, or when a 9.2 operation has no row.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::Effect;

const REVIEWED: &str = include_str!("reviewed.tsv");
const NEWER: &str = include_str!("pve-9.2.tsv");

/// What a reviewed row says about its endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The prose adds no effect beyond the derived ones.
    Nothing,
    /// The prose (or what the endpoint does) adds these effects.
    Adds(Vec<Effect>),
    /// Decided from argument values by a rule in `request.rs`.
    ByValue,
    /// A non-GET that only looks: its default `change` is not added.
    Read,
    /// A non-GET whose default `change` is not added because a value rule in `request.rs`
    /// says what every value does, and adds an effect for each (`monitor`: `info` is a
    /// sensitive read, anything else exec and destroy).
    ReadByValue,
}

/// One reviewed endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reviewed {
    /// HTTP method.
    pub method: &'static str,
    /// Path template as the schema spells it.
    pub path: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a person's words.
    pub reason: &'static str,
    /// The schema's own words (`-` when there were none).
    pub words: &'static str,
}

/// One operation of a newer PVE that the embedded schema lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Newer {
    /// HTTP method.
    pub method: &'static str,
    /// Path template.
    pub path: &'static str,
    /// Its effects; empty for a GET with no known permission check (never a read: unplaced).
    pub effects: Vec<Effect>,
    /// What it does.
    pub reason: &'static str,
}

fn effects_of(field: &str) -> Option<Vec<Effect>> {
    field
        .split(',')
        .map(|name| Effect::ALL.into_iter().find(|e| e.as_str() == name))
        .collect()
}

fn rows(text: &'static str) -> impl Iterator<Item = Vec<&'static str>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').collect::<Vec<_>>())
}

/// Every reviewed row.
pub fn reviewed_rows() -> &'static [Reviewed] {
    static ROWS: OnceLock<Vec<Reviewed>> = OnceLock::new();
    ROWS.get_or_init(|| {
        rows(REVIEWED)
            .filter_map(|f| {
                let verdict = match *f.get(2)? {
                    "-" => Verdict::Nothing,
                    "value" => Verdict::ByValue,
                    "read" if f[0] != "GET" => Verdict::Read,
                    "value-read" if f[0] != "GET" => Verdict::ReadByValue,
                    list => Verdict::Adds(effects_of(list)?),
                };
                Some(Reviewed {
                    method: f[0],
                    path: f.get(1)?,
                    verdict,
                    reason: f.get(3)?,
                    words: f.get(4).copied().unwrap_or("-"),
                })
            })
            .collect()
    })
}

/// The reviewed row of one endpoint (method and template exactly), if any. Indexed once:
/// every request the doors classify asks this.
pub fn reviewed(method: &str, template: &str) -> Option<&'static Reviewed> {
    static INDEX: OnceLock<HashMap<(String, &'static str), &'static Reviewed>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            reviewed_rows()
                .iter()
                .map(|r| ((r.method.to_ascii_uppercase(), r.path), r))
                .collect()
        })
        .get(&(method.to_ascii_uppercase(), template))
        .copied()
}

/// Every newer operation's row.
pub fn newer_rows() -> &'static [Newer] {
    static ROWS: OnceLock<Vec<Newer>> = OnceLock::new();
    ROWS.get_or_init(|| {
        rows(NEWER)
            .filter_map(|f| {
                let effects = match *f.get(2)? {
                    "unproven" => Vec::new(),
                    list => effects_of(list)?,
                };
                Some(Newer {
                    method: f[0],
                    path: f.get(1)?,
                    effects,
                    reason: f.get(3)?,
                })
            })
            .collect()
    })
}

/// The newer operation a method and rendered path reach (a `{placeholder}` matches any one
/// non-empty segment; an exact segment beats a placeholder).
pub fn newer(method: &str, path: &str) -> Option<&'static Newer> {
    let path = path.split('?').next().unwrap_or(path);
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    newer_rows()
        .iter()
        .filter(|row| row.method.eq_ignore_ascii_case(method))
        .filter_map(|row| {
            let want: Vec<&str> = row.path.trim_matches('/').split('/').collect();
            if want.len() != got.len() {
                return None;
            }
            let mut exact = 0;
            for (w, g) in want.iter().zip(&got) {
                if w.starts_with('{') {
                    if g.is_empty() {
                        return None;
                    }
                } else if w == g {
                    exact += 1;
                } else {
                    return None;
                }
            }
            Some((exact, row))
        })
        .max_by_key(|(exact, _)| *exact)
        .map(|(_, row)| row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses() {
        let reviewed = REVIEWED
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count();
        assert_eq!(
            reviewed_rows().len(),
            reviewed,
            "a reviewed row did not parse"
        );
        let newer = NEWER
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .count();
        assert_eq!(newer_rows().len(), newer, "a 9.2 row did not parse");
    }

    #[test]
    fn the_only_non_get_reads_are_the_agents_two_questions() {
        let reads: Vec<&str> = reviewed_rows()
            .iter()
            .filter(|r| r.verdict == Verdict::Read)
            .map(|r| r.path)
            .collect();
        assert_eq!(
            reads,
            [
                "/nodes/{node}/qemu/{vmid}/agent/fsfreeze-status",
                "/nodes/{node}/qemu/{vmid}/agent/ping"
            ]
        );
    }

    #[test]
    fn newer_paths_match_segment_by_segment() {
        let row = newer("POST", "/cluster/ceph/restart-bulk").expect("a 9.2 row");
        assert!(row.effects.contains(&Effect::Destroy));
        assert!(newer("POST", "/cluster/ceph/restart-bulk/x").is_none());
        let got = newer("GET", "/cluster/sdn/prefix-lists/p1/entries/10").expect("row");
        assert_eq!(got.path, "/cluster/sdn/prefix-lists/{id}/entries/{url_seq}");
        assert!(got.effects.is_empty());
        assert!(newer("GET", "/cluster/sdn/prefix-lists//entries/10").is_none());
    }
}
