//! Checks that need an optional fixture (`../shared`, `sshd`) never pass without running:
//! build.rs's verdict per fixture and run mode, and every test that reads a fixture carries
//! the `cfg_attr(no_…, ignore = "…")` that makes `cargo test` report it as ignored.

#[allow(dead_code)]
#[path = "../../build.rs"]
mod build_script;

use std::path::{Path, PathBuf};

use build_script::{PVE_API, REFERENCE_TOOLS, SSHD, Strictness, Verdict, verdict};

fn strictness(vars: &[(&str, &str)]) -> Strictness {
    Strictness::from_lookup(|key| {
        vars.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
    })
}

#[test]
fn a_missing_fixture_is_ignored_on_a_workstation_and_fails_under_ci() {
    let local = strictness(&[]);
    let ci = strictness(&[("CI", "true")]);
    for fixture in [PVE_API, REFERENCE_TOOLS, SSHD] {
        assert_eq!(
            verdict(&fixture, true, local),
            Verdict::Run,
            "{}",
            fixture.cfg
        );
        assert_eq!(verdict(&fixture, true, ci), Verdict::Run, "{}", fixture.cfg);
        assert_eq!(
            verdict(&fixture, false, local),
            Verdict::Ignore,
            "{}",
            fixture.cfg
        );
        assert_eq!(
            verdict(&fixture, false, ci),
            Verdict::RunAndFail,
            "{}",
            fixture.cfg
        );
    }
    assert_eq!(
        verdict(&PVE_API, false, strictness(&[("CI", "1")])),
        Verdict::RunAndFail
    );
    assert_eq!(
        verdict(&PVE_API, false, strictness(&[("CI", "false")])),
        Verdict::Ignore
    );
}

#[test]
fn shared_optional_excuses_only_the_shared_fixtures_under_ci() {
    let fork = strictness(&[("CI", "true"), ("NANDI_SHARED_OPTIONAL", "1")]);
    assert_eq!(verdict(&PVE_API, false, fork), Verdict::Ignore);
    assert_eq!(verdict(&REFERENCE_TOOLS, false, fork), Verdict::Ignore);
    assert_eq!(verdict(&SSHD, false, fork), Verdict::RunAndFail);
}

/// The Rust sources holding tests: every `.rs` under tests/ (tests/it and its helpers,
/// tests/follower_limits.rs) and under src/.
fn test_sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    walk(&root.join("tests"), &mut files);
    walk(&root.join("src"), &mut files);
    files.sort();
    files
}

/// Each test of `source`: the text from its `#[test]`/`#[tokio::test…]` line to the next one.
fn test_chunks(source: &str) -> Vec<&str> {
    let starts: Vec<usize> = source
        .match_indices("\n#[")
        .map(|(i, _)| i + 1)
        .filter(|&i| source[i..].starts_with("#[test]") || source[i..].starts_with("#[tokio::test"))
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| &source[start..starts.get(n + 1).copied().unwrap_or(source.len())])
        .collect()
}

/// Issue 12.4: no test skips at run time with a line libtest swallows; every test that uses
/// a fixture is ignored by `cfg` (with its reason) when the fixture is absent.
#[test]
fn every_fixture_test_is_ignored_by_cfg_never_skipped_at_run_time() {
    let needs = [
        ("Sshd::start(", "#[cfg_attr(no_sshd, ignore = "),
        ("pve_api_endpoints(", "#[cfg_attr(no_pve_api, ignore = "),
        (
            "reference_tools(",
            "#[cfg_attr(no_reference_tools, ignore = ",
        ),
        ("MockServer::start(", "#[cfg_attr(no_npx, ignore = "),
    ];
    let this_file = Path::new(file!()).file_name().expect("name");
    let mut problems = Vec::new();
    let mut fixture_tests = 0;
    for path in test_sources() {
        if path.file_name() == Some(this_file) {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("readable");
        for marker in [
            "eprintln!(\"SKIP",
            "eprintln!(\"skipping",
            "eprintln!(\"skipped",
            "Option<Sshd>",
        ] {
            if source.contains(marker) {
                problems.push(format!("{}: skips at run time ({marker})", path.display()));
            }
        }
        for chunk in test_chunks(&source) {
            let name = chunk
                .split("fn ")
                .nth(1)
                .and_then(|rest| rest.split('(').next())
                .unwrap_or("?");
            for (call, attribute) in needs {
                if chunk.contains(call) {
                    fixture_tests += 1;
                    if !chunk.contains(attribute) {
                        problems.push(format!("{}: {name} lacks {attribute}…", path.display()));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(
        fixture_tests >= 20,
        "found only {fixture_tests} fixture tests"
    );
}

/// The public workflow builds `../shared/spec/reference-tools.json` from the copy kept in
/// `tests/data`; the copy must stay the table the project's own CI judges by.
#[test]
#[cfg_attr(no_reference_tools, ignore = "needs ../shared/spec beside the project")]
fn the_kept_reference_table_is_the_shared_one() {
    let kept = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-tools.json"),
    )
    .expect("tests/data/reference-tools.json");
    let shared = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/spec/reference-tools.json"),
    )
    .expect("../shared/spec/reference-tools.json");
    let kept: serde_json::Value = serde_json::from_slice(&kept).expect("JSON");
    let shared: serde_json::Value = serde_json::from_slice(&shared).expect("JSON");
    assert!(
        kept == shared,
        "tests/data/reference-tools.json differs from ../shared/spec/reference-tools.json: copy it again"
    );
}

/// The public workflow makes `../shared/pve-api` from Proxmox's pve-docs package with
/// `scripts/pve-schema.py`; the script must turn the shared tree into the shared flat file and
/// pin the shared tree's hash, or what public CI checks would not be what this CI checks.
#[test]
#[cfg_attr(
    any(no_pve_api, no_python),
    ignore = "needs ../shared/pve-api and python3"
)]
fn the_schema_script_reproduces_the_shared_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/pve-schema.py"))
        .arg("check")
        .arg(root.join("../shared/pve-api"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("flat file matches"));
}
