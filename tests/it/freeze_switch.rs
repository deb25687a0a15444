//! The kill switch's own edges, through its public API on a real temporary folder: a note's
//! field is shown whole up to exactly `FIELD_CHARS` characters and cut with `…` beyond, and an
//! unfreeze that cannot remove the freeze entry (a folder in its place) is an error that
//! leaves changes frozen — never reported as "was not frozen". (Found by the `freeze` mutation
//! group: `scripts/mutants freeze`.)

use nandi_proxmox_mcp::effects::freeze::{FIELD_CHARS, shown};
use nandi_proxmox_mcp::effects::{FreezeNote, FreezeSwitch};

#[test]
fn a_note_field_is_cut_only_beyond_its_bound() {
    let exactly = "a".repeat(FIELD_CHARS);
    assert_eq!(shown(&exactly), exactly, "exactly the bound: shown whole");
    let cut = format!("{exactly}…");
    assert_eq!(shown(&format!("{exactly}b")), cut, "one beyond: cut");
    assert_eq!(shown(&"a".repeat(3 * FIELD_CHARS)), cut, "far beyond: cut");
    // Counted in characters, not bytes.
    let wide = "é".repeat(FIELD_CHARS);
    assert_eq!(shown(&wide), wide);

    // The refusal a caller reads shows the same bound.
    let dir = tempfile::tempdir().expect("temp dir");
    let switch = FreezeSwitch::new(dir.path().join("frozen"));
    switch
        .freeze(&FreezeNote {
            reason: Some(exactly.clone()),
            ..FreezeNote::default()
        })
        .expect("frozen");
    let summary = switch.check().expect_err("frozen").summary();
    assert_eq!(summary, format!("changes are frozen: {exactly}"));
}

#[test]
fn an_unfreeze_that_cannot_remove_the_entry_fails_and_stays_frozen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("frozen");
    let switch = FreezeSwitch::new(&path);
    // A folder freezes too, and `unfreeze` (which removes a file) cannot lift it.
    std::fs::create_dir(&path).expect("folder");
    let lifted = switch.unfreeze();
    assert!(lifted.is_err(), "{lifted:?}");
    assert!(switch.check().is_err(), "still frozen");
    // Absent: not frozen, and nothing to lift.
    std::fs::remove_dir(&path).expect("removed");
    assert!(!switch.unfreeze().expect("nothing to lift"));
}
