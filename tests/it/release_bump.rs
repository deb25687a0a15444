//! The bump table of the automatic release (cliff.toml, with the pinned git-cliff from npm) on
//! scratch repositories: `feat` → minor (from 0.x too), `fix`/`perf`/`revert` → patch, `type!:`
//! or a `BREAKING CHANGE:` footer → major (0.x → 1.0.0, strict semver), and every other type
//! (and merges) → nothing; scripts/auto-release then ends green, lists what it skipped and changes
//! nothing, also in a repository without a v* tag (its base is the commit that set the version).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Also pinned in scripts/auto-release and scripts/set-version.
const GIT_CLIFF: &str = "git-cliff@2.14.2";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A version built at run time, so this file holds no literal the version scan could mistake
/// for a place.
fn ver(major: u32, minor: u32, patch: u32) -> String {
    format!("{major}.{minor}.{patch}")
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@localhost")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@localhost")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn commit(dir: &Path, message: &str) {
    run(
        dir,
        "git",
        &["commit", "-q", "--allow-empty", "-m", message],
    );
}

/// A repository holding cliff.toml, with `base` tagged as released.
fn repo(base: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), "git", &["init", "-q", "-b", "main"]);
    std::fs::copy(root().join("cliff.toml"), dir.path().join("cliff.toml")).unwrap();
    run(dir.path(), "git", &["add", "cliff.toml"]);
    commit(dir.path(), &format!("chore(release): v{base}"));
    run(dir.path(), "git", &["tag", &format!("v{base}")]);
    dir
}

fn bumped(dir: &Path) -> String {
    let out = run(
        dir,
        "npx",
        &[
            "-y",
            GIT_CLIFF,
            "--config",
            "cliff.toml",
            "--bumped-version",
        ],
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
#[cfg_attr(no_npx, ignore = "needs npx (Node.js) to run git-cliff from npm")]
fn the_bump_table_holds_from_0x_on() {
    let base = ver(0, 5, 0);
    let cases: &[(&[&str], String)] = &[
        (
            &[
                "docs: a guide",
                "chore: tidy",
                "test: more",
                "ci: cache",
                "build: flags",
                "style: fmt",
                "refactor: split",
                "Merge branch 'x'",
                "not conventional",
            ],
            format!("v{base}"),
        ),
        (&["fix: a bug"], format!("v{}", ver(0, 5, 1))),
        (&["perf: faster"], format!("v{}", ver(0, 5, 1))),
        (&["revert: feat: x"], format!("v{}", ver(0, 5, 1))),
        (
            &["docs: x", "feat(cli): a command"],
            format!("v{}", ver(0, 6, 0)),
        ),
        (
            &["fix: y", "feat!: a new surface"],
            format!("v{}", ver(1, 0, 0)),
        ),
        (
            &["refactor!: remove the old names"],
            format!("v{}", ver(1, 0, 0)),
        ),
        (
            &["docs: rename\n\nBREAKING CHANGE: the old flag is gone"],
            format!("v{}", ver(1, 0, 0)),
        ),
    ];
    for (messages, expected) in cases {
        let dir = repo(&base);
        for m in *messages {
            commit(dir.path(), m);
        }
        assert_eq!(&bumped(dir.path()), expected, "{messages:?}");
    }
    // After 1.0: the same table.
    let dir = repo(&ver(1, 4, 2));
    commit(dir.path(), "feat: more");
    assert_eq!(bumped(dir.path()), format!("v{}", ver(1, 5, 0)));
    commit(dir.path(), "fix!: changed answer");
    assert_eq!(bumped(dir.path()), format!("v{}", ver(2, 0, 0)));
}

/// scripts/auto-release on a repository with only non-releasing commits, with and without a tag:
/// exit 0, "nothing to release", every commit listed as skipped, nothing written.
#[test]
#[cfg_attr(no_npx, ignore = "needs npx (Node.js) to run git-cliff from npm")]
fn nothing_releasable_ends_green_and_lists_what_it_skipped() {
    for tagged in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        run(d, "git", &["init", "-q", "-b", "main"]);
        for file in [
            "cliff.toml",
            "version-places.toml",
            "scripts/set-version",
            "scripts/auto-release",
        ] {
            std::fs::create_dir_all(d.join(file).parent().unwrap()).unwrap();
            std::fs::copy(root().join(file), d.join(file)).unwrap();
        }
        let current = ver(0, 7, 3);
        std::fs::write(
            d.join("Cargo.toml"),
            format!(
                "[package]\nname = \"demo\"\nversion = \"{}\"\n",
                ver(0, 7, 2)
            ),
        )
        .unwrap();
        run(d, "git", &["add", "-A"]);
        commit(d, "feat: the start");
        std::fs::write(
            d.join("Cargo.toml"),
            format!("[package]\nname = \"demo\"\nversion = \"{current}\"\n"),
        )
        .unwrap();
        run(d, "git", &["add", "-A"]);
        commit(d, &format!("chore(release): v{current}"));
        if tagged {
            run(d, "git", &["tag", &format!("v{current}")]);
        }
        commit(d, "docs: explain");
        commit(d, "refactor: tidy");
        let out = run(d, "bash", &["scripts/auto-release", "--dry-run"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("nothing to release: no feat/fix/perf/revert or breaking commit since the base; {current} stays")),
            "tagged={tagged}:\n{text}"
        );
        assert!(
            text.contains("skipped                      docs: explain"),
            "{text}"
        );
        assert!(
            text.contains("skipped                      refactor: tidy"),
            "{text}"
        );
        if !tagged {
            assert!(
                text.contains("base: no v* tag; the commit that set version"),
                "{text}"
            );
            let tags = run(d, "git", &["tag"]);
            assert!(tags.stdout.is_empty(), "a dry run tagged the repository");
        }
        let status = run(d, "git", &["status", "--porcelain"]);
        assert!(status.stdout.is_empty(), "the dry run changed the tree");
    }
}

/// Issue 38: scripts/set-version needs nothing but bash and python3 — no cargo-edit: on a copy
/// of the tree, with a `cargo` on PATH that knows no `set-version` (a fresh machine), it writes
/// the new version into Cargo.toml's [package] table and our own entry of Cargo.lock, and
/// changes no other line of either file.
#[test]
fn set_version_writes_cargo_toml_and_lock_without_cargo_edit() {
    let src = root();
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&src)
        .output()
        .expect("git runs");
    assert!(listed.status.success(), "git ls-files");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("tree");
    for file in listed.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let file = String::from_utf8_lossy(file).into_owned();
        let from = src.join(&file);
        if !from.is_file() {
            continue;
        }
        let to = d.join(&file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    // A cargo without cargo-edit, which cannot resolve anything either.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("cargo");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"error: no such command: \\`$1\\`\" >&2\nexit 101\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let toml_before = std::fs::read_to_string(d.join("Cargo.toml")).unwrap();
    let lock_before = std::fs::read_to_string(d.join("Cargo.lock")).unwrap();
    let old = toml_before
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap()
        .to_owned();
    let new = ver(9, 8, 7);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(d.join("scripts/set-version"))
        .arg(&new)
        .arg("--date")
        .arg("2026-01-02")
        .env("PATH", path)
        .current_dir(&d)
        .output()
        .expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "set-version failed:\n{text}");
    let toml_after = std::fs::read_to_string(d.join("Cargo.toml")).unwrap();
    let lock_after = std::fs::read_to_string(d.join("Cargo.lock")).unwrap();
    let changed = |before: &str, after: &str| -> Vec<(String, String)> {
        assert_eq!(before.lines().count(), after.lines().count());
        before
            .lines()
            .zip(after.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .collect()
    };
    let line = |v: &str| format!("version = \"{v}\"");
    // The package's version, and the emulator crate's exact requirement beside it (published
    // together at one version).
    let emulator = |v: &str| {
        format!("pve-emulator = {{ path = \"crates/pve-emulator\", version = \"={v}\" }}")
    };
    assert_eq!(
        changed(&toml_before, &toml_after),
        vec![(line(&old), line(&new)), (emulator(&old), emulator(&new))],
        "Cargo.toml"
    );
    // Our own entry and the emulator crate's.
    assert_eq!(
        changed(&lock_before, &lock_after),
        vec![(line(&old), line(&new)), (line(&old), line(&new))],
        "Cargo.lock"
    );
    assert!(
        lock_after.contains(&format!("name = \"pve-emulator\"\n{}", line(&new))),
        "Cargo.lock: the emulator's entry"
    );
    assert!(
        lock_after.contains(&format!("name = \"nandi-proxmox-mcp\"\n{}", line(&new))),
        "Cargo.lock: our own entry"
    );
    assert!(!text.contains("cargo set-version"), "{text}");
}
