//! docs/PERFORMANCE.md's goal table cannot drift from the measurement behind it: the block
//! between its `bench-figures` markers must be exactly what `scripts/bench_driver.py --render`
//! prints for docs/bench-figures.json, the file `scripts/bench --record` writes and
//! `scripts/bench --check` measures against.

use std::path::Path;
use std::process::Command;

const START: &str = "<!-- bench-figures:start (rendered from docs/bench-figures.json) -->\n";
const END: &str = "<!-- bench-figures:end -->";

#[test]
#[cfg_attr(no_python, ignore = "needs python3 to render docs/bench-figures.json")]
fn the_performance_goal_table_is_rendered_from_the_recorded_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(root.join("scripts/bench_driver.py"))
        .args(["--binary", "-", "--emulator", "-", "--render"])
        .arg(root.join("docs/bench-figures.json"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = String::from_utf8(out.stdout).unwrap();
    let doc = std::fs::read_to_string(root.join("docs/PERFORMANCE.md")).unwrap();
    let start = doc.find(START).expect("start marker") + START.len();
    let end = doc[start..].find(END).expect("end marker") + start;
    assert_eq!(
        &doc[start..end],
        rendered,
        "docs/PERFORMANCE.md's goal table differs from docs/bench-figures.json: paste the output of `python3 scripts/bench_driver.py --binary - --emulator - --render docs/bench-figures.json`"
    );
}
