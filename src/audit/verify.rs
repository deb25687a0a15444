//! Verification of an audit file: walks the hash chain and names the first line that breaks it.
//!
//! Each line must have the audit shape, carry the next sequence number and the hash of its
//! body chained to the line before. The first line that does not is classified:
//! modified (right place, wrong hash), deleted (records missing before it), reordered (a
//! later record came early), inserted (a record that was already seen, or text that is not
//! a record at all) or truncated (the last line was cut short). Invariant: verification
//! only reads; line numbers are 1-based as an editor shows them. A chain cannot show that
//! whole lines were removed from the *end*: compare the reported count and last hash with a
//! copy kept elsewhere.

use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::{GENESIS, chain_hash, seq_of, split_line};

/// What is wrong with the first bad line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The line is in its place but its content no longer matches its hash.
    Modified,
    /// Records `from..=to` are missing before this line.
    Deleted {
        /// First missing sequence number.
        from: u64,
        /// Last missing sequence number.
        to: u64,
    },
    /// This line holds record `found` where record `expected` (found further down) belongs.
    Reordered {
        /// The sequence number on this line.
        found: u64,
        /// The sequence number that belongs here.
        expected: u64,
    },
    /// This line repeats record `seq`, already seen above: it was inserted.
    Inserted {
        /// The repeated sequence number.
        seq: u64,
    },
    /// The line is not an audit record (inserted or overwritten text).
    NotARecord,
    /// The last line has no line end: it was cut short.
    Truncated,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Modified => f.write_str("modified: its content does not match its hash"),
            Problem::Deleted { from, to } if from == to => {
                write!(f, "record {from} before this line was deleted")
            }
            Problem::Deleted { from, to } => {
                write!(f, "records {from} to {to} before this line were deleted")
            }
            Problem::Reordered { found, expected } => write!(
                f,
                "reordered: holds record {found} where record {expected} belongs"
            ),
            Problem::Inserted { seq } => {
                write!(f, "inserted: repeats record {seq}, which appears above")
            }
            Problem::NotARecord => f.write_str("inserted or overwritten: not an audit record"),
            Problem::Truncated => f.write_str("truncated: the last line was cut short"),
        }
    }
}

/// The first line that breaks the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: Problem,
}

/// The result of verifying a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Lines that verified before the first break (all of them when intact).
    pub verified: usize,
    /// Hash of the last verified line ([`GENESIS`] for an empty file).
    pub head: String,
    /// The first break, if any.
    pub first_break: Option<Break>,
}

impl Report {
    /// Whether the whole file verified.
    pub fn is_intact(&self) -> bool {
        self.first_break.is_none()
    }
}

/// Reads and verifies the file at `path`, streaming: memory stays one line long whatever
/// the file's size.
pub fn verify_file(path: &Path) -> std::io::Result<Report> {
    let file = std::fs::File::open(path)?;
    verify_reader(BufReader::with_capacity(64 * 1024, file))
}

struct Parsed {
    seq: u64,
    body: String,
    hash: String,
}

fn parse(line: &[u8]) -> Option<Parsed> {
    let text = std::str::from_utf8(line).ok()?;
    let (body, hash) = split_line(text)?;
    let seq = seq_of(&body)?;
    Some(Parsed {
        seq,
        hash: hash.to_owned(),
        body,
    })
}

/// Verifies the content of an audit file held in memory.
pub fn verify_bytes(content: &[u8]) -> Report {
    // Reading from a slice cannot fail.
    verify_reader(content).unwrap_or_else(|_| Report {
        verified: 0,
        head: GENESIS.to_owned(),
        first_break: None,
    })
}

/// Verifies an audit file read line by line. Only the line at hand, the next sequence
/// number and the last hash are held; where a record is missing, the rest is read to tell a
/// deletion (the record never comes) from a reordering (it comes later).
pub fn verify_reader<R: BufRead>(mut reader: R) -> std::io::Result<Report> {
    let mut line: Vec<u8> = Vec::new();
    let mut head = GENESIS.to_owned();
    let mut verified = 0usize;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(Report {
                verified,
                head,
                first_break: None,
            });
        }
        let complete = line.last() == Some(&b'\n');
        if complete {
            line.pop();
        }
        let expected = verified as u64 + 1;
        let broken = |problem| Report {
            verified,
            head: head.clone(),
            first_break: Some(Break {
                line: verified + 1,
                problem,
            }),
        };
        // A line without its newline is the last one, cut short (or appended to by hand),
        // whether or not what is left of it parses.
        if !complete {
            return Ok(broken(Problem::Truncated));
        }
        let Some(record) = parse(&line) else {
            return Ok(broken(Problem::NotARecord));
        };
        // Every verified line carried the next number, so a smaller one was seen above.
        if record.seq < expected {
            return Ok(broken(Problem::Inserted { seq: record.seq }));
        }
        if record.seq > expected {
            let later = comes_later(&mut reader, expected)?;
            return Ok(broken(if later {
                Problem::Reordered {
                    found: record.seq,
                    expected,
                }
            } else {
                Problem::Deleted {
                    from: expected,
                    to: record.seq - 1,
                }
            }));
        }
        if chain_hash(&head, &record.body) != record.hash {
            return Ok(broken(Problem::Modified));
        }
        verified += 1;
        head = record.hash;
    }
}

/// Whether record `seq` is on one of the lines left in `reader`.
fn comes_later<R: BufRead>(reader: &mut R, seq: u64) -> std::io::Result<bool> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(false);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if parse(&line).is_some_and(|p| p.seq == seq) {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AuditLog, AuditTarget, tests::entry};
    use super::*;

    fn log_of(n: usize) -> (tempfile::TempDir, std::path::PathBuf, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(AuditTarget::File(path.clone()));
        for i in 0..n {
            log.append_blocking(&entry(&format!("tool{i}"))).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = text.lines().map(str::to_owned).collect();
        (dir, path, lines)
    }

    fn check(lines: &[String]) -> Report {
        let mut text = lines.join("\n");
        text.push('\n');
        verify_bytes(text.as_bytes())
    }

    fn first(report: &Report) -> (usize, Problem) {
        let b = report.first_break.clone().expect("a break");
        (b.line, b.problem)
    }

    #[test]
    fn intact_and_empty() {
        let (_dir, path, lines) = log_of(4);
        let report = verify_file(&path).unwrap();
        assert!(report.is_intact());
        assert_eq!(report.verified, 4);
        assert_eq!(report, check(&lines));
        assert!(verify_bytes(b"").is_intact());
    }

    #[test]
    fn each_kind_of_tampering_is_named_at_its_line() {
        let (_dir, _path, lines) = log_of(5);
        let mut modified = lines.clone();
        modified[2] = modified[2].replace("tool2", "tool9");
        assert_eq!(first(&check(&modified)), (3, Problem::Modified));

        let mut deleted = lines.clone();
        deleted.remove(1);
        assert_eq!(
            first(&check(&deleted)),
            (2, Problem::Deleted { from: 2, to: 2 })
        );

        let mut reordered = lines.clone();
        reordered.swap(1, 3);
        assert_eq!(
            first(&check(&reordered)),
            (
                2,
                Problem::Reordered {
                    found: 4,
                    expected: 2
                }
            )
        );

        let mut inserted = lines.clone();
        inserted.insert(3, lines[0].clone());
        assert_eq!(first(&check(&inserted)), (4, Problem::Inserted { seq: 1 }));

        let mut forged = lines.clone();
        forged.insert(1, "{\"tool\":\"pve_delete_vm\"}".into());
        assert_eq!(first(&check(&forged)), (2, Problem::NotARecord));

        let mut text = lines.join("\n");
        text.push('\n');
        let cut = &text.as_bytes()[..text.len() - 20];
        assert_eq!(first(&verify_bytes(cut)), (5, Problem::Truncated));
    }

    #[test]
    fn a_deletion_says_how_many_records_went() {
        let one = Problem::Deleted { from: 2, to: 2 };
        let three = Problem::Deleted { from: 2, to: 4 };
        assert_eq!(one.to_string(), "record 2 before this line was deleted");
        assert_eq!(
            three.to_string(),
            "records 2 to 4 before this line were deleted"
        );
    }

    #[test]
    fn a_broken_file_is_not_intact() {
        let (_dir, _path, lines) = log_of(3);
        let mut modified = lines.clone();
        modified[1] = modified[1].replace("tool1", "tool7");
        let report = check(&modified);
        assert!(!report.is_intact());
        assert_eq!(report.verified, 1);
    }

    #[test]
    fn only_a_last_line_without_its_line_end_is_truncated() {
        let (_dir, _path, lines) = log_of(3);
        // A complete file whose last line is not a record: forged, not cut.
        let mut garbage_last = lines.clone();
        garbage_last.push("not json".into());
        assert_eq!(first(&check(&garbage_last)), (4, Problem::NotARecord));
        // A garbage line in the middle of a file whose last line was cut: the first break is
        // the garbage, and it is not called a truncation.
        let mut text = format!("{}\nnot json\n{}\n{}", lines[0], lines[1], lines[2]);
        text.truncate(text.len() - 10);
        assert_eq!(
            first(&verify_bytes(text.as_bytes())),
            (2, Problem::NotARecord)
        );
        // A record that parses but lost its newline was still cut.
        let whole = format!("{}\n{}", lines[0], lines[1]);
        assert_eq!(
            first(&verify_bytes(whole.as_bytes())),
            (2, Problem::Truncated)
        );
    }

    #[test]
    fn a_line_numbered_zero_is_an_insertion() {
        let (_dir, _path, lines) = log_of(2);
        let zero = lines[0].replacen("\"seq\":1", "\"seq\":0", 1);
        assert_ne!(zero, lines[0], "the record starts with its seq");
        let mut inserted = vec![zero];
        inserted.extend(lines.iter().cloned());
        assert_eq!(first(&check(&inserted)), (1, Problem::Inserted { seq: 0 }));
    }
}
