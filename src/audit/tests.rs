//! Unit tests of the audit log: appending and the hash chain, the fail-closed writes (a full
//! disk, `/dev/full`, a cut line), reading the last line back, and the shape of a line.

use super::*;
use serde_json::json;

pub(crate) fn entry(tool: &str) -> AuditEntry {
    AuditEntry {
        tool: tool.into(),
        canonical: None,
        arguments: json!({"node": "pve01", "vmid": 101}),
        decision: "executed".into(),
        approval: Some("confirm-flag".into()),
        outcome: "ok".into(),
        pve_status: Some(200),
        upid: None,
        duration: Duration::from_millis(12),
        caller: Some("static token".into()),
        approver: None,
        plan: None,
    }
}

#[test]
fn lines_chain_and_continue_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/audit.jsonl");
    let log = AuditLog::new(AuditTarget::File(path.clone()));
    log.ensure_writable().unwrap();
    let first = log.append_blocking(&entry("a")).unwrap().unwrap();
    let again = AuditLog::new(AuditTarget::File(path.clone()));
    let second = again.append_blocking(&entry("b")).unwrap().unwrap();
    assert_eq!((first.seq, second.seq), (1, 2));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (body, hash) = split_line(lines[1]).unwrap();
    assert_eq!(hash, chain_hash(&first.hash, &body));
    let (body, hash) = split_line(lines[0]).unwrap();
    assert_eq!(hash, chain_hash(GENESIS, &body));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn a_cut_last_line_stops_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::new(AuditTarget::File(path.clone()));
    log.append_blocking(&entry("a")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, &text[..text.len() - 10]).unwrap();
    let err = log.ensure_writable().unwrap_err();
    assert!(matches!(err, AuditError::Corrupt { .. }), "{err}");
    assert!(log.append_blocking(&entry("b")).is_err());
}

#[cfg(target_os = "linux")]
#[test]
fn dev_full_opens_but_every_append_fails() {
    // `/dev/full` opens (so the early check passes) and fails every write with ENOSPC.
    let log = AuditLog::new(AuditTarget::File("/dev/full".into()));
    log.ensure_writable().unwrap();
    for _ in 0..2 {
        let err = log.append_blocking(&entry("a")).unwrap_err();
        let AuditError::Io { source, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(source.raw_os_error(), Some(28), "ENOSPC: {err}");
    }
}

#[test]
fn the_chain_continues_after_lines_longer_than_a_read_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::new(AuditTarget::File(path.clone()));
    let long = |tool: &str, bytes: usize| AuditEntry {
        arguments: json!({"note": "n".repeat(bytes)}),
        ..entry(tool)
    };
    // One short line, then lines of about 1, 2 and 3 read chunks: the last line must be
    // found whole every time, however many chunks back its start lies.
    assert_eq!(log.append_blocking(&entry("a")).unwrap().unwrap().seq, 1);
    for (seq, bytes) in [(2, 5_000), (3, 9_000), (4, 13_000), (5, 10)] {
        let appended = log.append_blocking(&long("b", bytes)).unwrap().unwrap();
        assert_eq!(appended.seq, seq);
    }
    assert!(verify::verify_file(&path).unwrap().is_intact());
    // A file holding only one long line.
    let single = dir.path().join("single.jsonl");
    let log = AuditLog::new(AuditTarget::File(single.clone()));
    log.append_blocking(&long("c", 9_000)).unwrap();
    assert_eq!(log.append_blocking(&entry("d")).unwrap().unwrap().seq, 2);
    assert!(verify::verify_file(&single).unwrap().is_intact());
}

#[test]
fn a_line_that_does_not_start_as_a_record_has_no_hash() {
    let good = "0123456789abcdef".repeat(4);
    for prefix in ["\n", "}", " ", "x"] {
        let line = format!("{prefix}{{\"seq\":1{HASH_KEY}{good}\"}}");
        assert_eq!(split_line(&line), None, "{line:?}");
    }
}

#[test]
fn a_failed_line_is_cut_back_and_the_chain_continues() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::new(AuditTarget::File(path.clone()));
    log.append_blocking(&entry("a")).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    // What a short write before ENOSPC leaves behind.
    let mut file = open_append(&path).unwrap();
    file.write_all(b"{\"seq\":2,\"time\":\"20").unwrap();
    assert!(log.ensure_writable().is_err(), "a cut line stops the chain");
    assert_eq!(cut_back(&file, &path, len), CutBack::Cut);
    assert_eq!(
        cut_back(&file, &path, len),
        CutBack::NothingWritten,
        "a file no longer than before is left alone"
    );
    drop(file);
    let next = log.append_blocking(&entry("b")).unwrap().unwrap();
    assert_eq!(next.seq, 2);
    assert!(verify::verify_file(&path).unwrap().is_intact());
}

#[test]
fn a_line_cut_inside_a_character_is_not_an_audit_line() {
    // Two-byte characters up to the closing `"}`: for some padding the hash, or the key in
    // front of it, would start inside a character. That is "not an audit line", never a
    // panic of the verifier.
    for pad in 0..4 {
        for chars in [30, 40, 60] {
            for tail in ["", "x"] {
                let line = format!("{{{}{}{tail}\"}}", "a".repeat(pad), "é".repeat(chars));
                assert_eq!(split_line(&line), None, "{line}");
            }
        }
    }
}

#[test]
fn a_hash_is_64_lower_case_hex_digits() {
    let line = |hash: &str| format!("{{\"seq\":1{HASH_KEY}{hash}\"}}");
    let good = "0123456789abcdef".repeat(4);
    let well_formed = line(&good);
    let (body, hash) = split_line(&well_formed).expect("a well-formed line");
    assert_eq!((body.as_str(), hash), ("{\"seq\":1}", good.as_str()));
    for bad in ['A', 'F', 'g', 'z', '-', ' '] {
        let hash = format!("{bad}{}", &good[1..]);
        assert_eq!(split_line(&line(&hash)), None, "hash starting with {bad:?}");
    }
}

#[test]
fn off_and_unavailable() {
    assert_eq!(AuditLog::off().append_blocking(&entry("a")).unwrap(), None);
    let log = AuditLog::new(AuditTarget::Unavailable("no home".into()));
    assert!(
        log.ensure_writable()
            .unwrap_err()
            .to_string()
            .contains("no home")
    );
}
