//! One version everywhere. `version-places.toml` lists every place the release version lives;
//! `scripts/set-version` writes them and these tests validate them: every place must say what
//! `Cargo.toml` says, and a scan of the whole tree for the current version finds no occurrence
//! that neither a place nor a listed mention claims — so a new place cannot hide. A failure
//! names the file and line.
//!
//! `NANDI_VERSION_SYNC_ROOT=<dir>` checks another tree (the release dry run points it at the
//! scratch copy `scripts/set-version` rewrote).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;

/// A semantic version as the places hold it (pre-release and build metadata allowed).
const SEMVER: &str = r"(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)";

fn root() -> PathBuf {
    match std::env::var_os("NANDI_VERSION_SYNC_ROOT") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")),
    }
}

#[derive(Debug, Clone)]
struct Place {
    file: String,
    regex: Regex,
    count: usize,
    first: bool,
}

#[derive(Debug, Clone)]
struct Mention {
    file: String,
    contains: Option<String>,
    lockfile: bool,
}

fn read(root: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(root.join(file)).ok()
}

/// The places and mentions of `version-places.toml`.
fn load(root: &Path) -> (Vec<Place>, Vec<Mention>) {
    let text = read(root, "version-places.toml").expect("version-places.toml");
    let doc: toml_edit::DocumentMut = text.parse().expect("version-places.toml is TOML");
    let str_of =
        |t: &toml_edit::Table, key: &str| t.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let mut places = Vec::new();
    for t in doc["place"].as_array_of_tables().expect("[[place]]").iter() {
        let file = str_of(t, "file").expect("place.file");
        let pattern = str_of(t, "pattern").expect("place.pattern");
        assert!(
            pattern.contains("{V}"),
            "{file}: a place pattern needs {{V}}"
        );
        let regex = Regex::new(&pattern.replace("{V}", SEMVER))
            .unwrap_or_else(|e| panic!("{file}: pattern {pattern:?}: {e}"));
        let count = t
            .get("count")
            .and_then(|v| v.as_integer())
            .map_or(1, |n| n as usize);
        let first = t.get("first").and_then(|v| v.as_bool()).unwrap_or(false);
        places.push(Place {
            file,
            regex,
            count,
            first,
        });
    }
    let mut mentions = Vec::new();
    if let Some(list) = doc.get("mention").and_then(|m| m.as_array_of_tables()) {
        for t in list.iter() {
            mentions.push(Mention {
                file: str_of(t, "file").expect("mention.file"),
                contains: str_of(t, "contains"),
                lockfile: t.get("lockfile").and_then(|v| v.as_bool()).unwrap_or(false),
            });
        }
    }
    (places, mentions)
}

/// `[package] version` of `Cargo.toml`.
fn cargo_version(root: &Path) -> String {
    let doc: toml_edit::DocumentMut = read(root, "Cargo.toml")
        .expect("Cargo.toml")
        .parse()
        .expect("Cargo.toml is TOML");
    doc["package"]["version"]
        .as_str()
        .expect("[package] version")
        .to_owned()
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// The byte ranges, in `text`, of the versions a place holds (its matches' groups).
fn place_spans(place: &Place, text: &str) -> Vec<(usize, usize, String)> {
    let mut caps: Vec<_> = place.regex.captures_iter(text).collect();
    if place.first {
        caps.truncate(1);
    }
    caps.iter()
        .flat_map(|c| {
            c.iter()
                .skip(1)
                .flatten()
                .map(|m| (m.start(), m.end(), m.as_str().to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every disagreement between a place and `Cargo.toml`, each naming the file and line.
fn disagreements(root: &Path) -> Vec<String> {
    let version = cargo_version(root);
    let (places, _) = load(root);
    let mut problems = Vec::new();
    for place in &places {
        let Some(text) = read(root, &place.file) else {
            problems.push(format!(
                "{}: missing (a version place in version-places.toml)",
                place.file
            ));
            continue;
        };
        let found = place.regex.find_iter(&text).count();
        if place.first && found == 0 || !place.first && found != place.count {
            problems.push(format!(
                "{}: the pattern {:?} of version-places.toml matched {found} times, expected {}",
                place.file,
                place.regex.as_str(),
                if place.first { 1 } else { place.count }
            ));
            continue;
        }
        for (start, _, value) in place_spans(place, &text) {
            if value != version {
                problems.push(format!(
                    "{}:{}: says {value}, Cargo.toml says {version}",
                    place.file,
                    line_of(&text, start)
                ));
            }
        }
    }
    problems
}

/// The files to scan: tracked and untracked-but-not-ignored files when `root` is a git work
/// tree, else every file outside `target/`, `.git/` and `node_modules/`.
fn tree_files(root: &Path) -> Vec<String> {
    let git = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output();
    if let Ok(out) = git
        && out.status.success()
        && root.join(".git").exists()
    {
        let files: BTreeSet<String> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| root.join(p).is_file())
            .collect();
        return files.into_iter().collect();
    }
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if !matches!(name.to_str(), Some("target" | ".git" | "node_modules")) {
                    walk(&path, base, out);
                }
            } else if let Ok(rel) = path.strip_prefix(base) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut files = Vec::new();
    walk(root, root, &mut files);
    files.sort();
    files
}

/// Occurrences of `version` in `text` standing alone (not part of a longer number).
fn occurrences(text: &str, version: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    text.match_indices(version)
        .map(|(i, _)| i)
        .filter(|&i| {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + version.len()).copied();
            let after2 = bytes.get(i + version.len() + 1).copied();
            let longer_before = before.is_some_and(|b| b.is_ascii_digit() || b == b'.');
            let longer_after = after.is_some_and(|b| b.is_ascii_digit())
                || (after == Some(b'.') && after2.is_some_and(|b| b.is_ascii_digit()));
            !(longer_before || longer_after)
        })
        .collect()
}

/// Whether a `version = "…"` line of a lock file belongs to another crate than ours.
fn another_crates_lock_line(text: &str, offset: usize) -> bool {
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("");
    if !line.starts_with("version = \"") {
        return false;
    }
    let previous = text[..start.saturating_sub(1)].lines().last().unwrap_or("");
    previous.starts_with("name = \"") && previous != "name = \"nandi-proxmox-mcp\""
}

/// Every occurrence of the current version that no place and no mention claims.
fn unclaimed(root: &Path) -> Vec<String> {
    let version = cargo_version(root);
    let (places, mentions) = load(root);
    let mut problems = Vec::new();
    for file in tree_files(root) {
        if file == "version-places.toml" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue; // not UTF-8: not a place a person edits
        };
        let found = occurrences(&text, &version);
        if found.is_empty() {
            continue;
        }
        let spans: Vec<(usize, usize)> = places
            .iter()
            .filter(|p| p.file == file)
            .flat_map(|p| place_spans(p, &text))
            .map(|(s, e, _)| (s, e))
            .collect();
        for offset in found {
            if spans.iter().any(|&(s, e)| s <= offset && offset < e) {
                continue;
            }
            let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let line = text[start..].lines().next().unwrap_or("");
            let mentioned = mentions.iter().filter(|m| m.file == file).any(|m| {
                (m.lockfile && another_crates_lock_line(&text, offset))
                    || m.contains.as_deref().is_some_and(|c| line.contains(c))
            });
            if !mentioned {
                problems.push(format!(
                    "{file}:{}: `{}` holds the version {version}, but version-places.toml has no \
                     [[place]] for it (so scripts/set-version would not write it) and no \
                     [[mention]] saying why it is not one",
                    line_of(&text, offset),
                    line.trim()
                ));
            }
        }
    }
    problems
}

#[test]
fn every_version_place_agrees_with_cargo_toml() {
    let problems = disagreements(&root());
    assert!(
        problems.is_empty(),
        "version places disagree (scripts/set-version <version> writes them all):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn no_occurrence_of_the_version_hides_outside_the_places() {
    let problems = unclaimed(&root());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A copy of the files the places live in (and Cargo.toml, version-places.toml) in a fresh
/// directory that is not a git work tree.
fn copy_of_places() -> (tempfile::TempDir, Vec<Place>) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let (places, mentions) = load(&src);
    let files: BTreeSet<&str> = places
        .iter()
        .map(|p| p.file.as_str())
        .chain(mentions.iter().map(|m| m.file.as_str()))
        .chain(["Cargo.toml", "version-places.toml"])
        .collect();
    for file in files {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(file), &to).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    (dir, places)
}

/// The acceptance of the issue: the version changed in one place only makes the check fail,
/// naming that place (file and line) — for every place of the list.
#[test]
fn a_version_changed_in_one_place_only_is_named() {
    let (dir, places) = copy_of_places();
    let version = cargo_version(dir.path());
    assert!(disagreements(dir.path()).is_empty());
    assert!(
        unclaimed(dir.path()).is_empty(),
        "{:?}",
        unclaimed(dir.path())
    );
    let other = "97.98.99";
    for place in places.iter().filter(|p| p.file != "Cargo.toml") {
        let path = dir.path().join(&place.file);
        let original = std::fs::read_to_string(&path).unwrap();
        let (start, end, _) = place_spans(place, &original)[0].clone();
        let edited = format!("{}{other}{}", &original[..start], &original[end..]);
        std::fs::write(&path, &edited).unwrap();
        let problems = disagreements(dir.path());
        let expected = format!(
            "{}:{}: says {other}, Cargo.toml says {version}",
            place.file,
            line_of(&original, start)
        );
        assert_eq!(problems, vec![expected], "{}", place.file);
        std::fs::write(&path, original).unwrap();
    }
    // Cargo.toml alone: every other place is named as disagreeing with it.
    let cargo = dir.path().join("Cargo.toml");
    let original = std::fs::read_to_string(&cargo).unwrap();
    std::fs::write(
        &cargo,
        original.replacen(
            &format!("version = \"{version}\""),
            &format!("version = \"{other}\""),
            1,
        ),
    )
    .unwrap();
    let problems = disagreements(dir.path());
    for place in places.iter().filter(|p| p.file != "Cargo.toml") {
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with(&format!("{}:", place.file))
                    && p.ends_with(&format!("Cargo.toml says {other}"))),
            "{} not named: {problems:?}",
            place.file
        );
    }
    std::fs::write(&cargo, original).unwrap();
    assert!(disagreements(dir.path()).is_empty());
}

/// A new place (the version written somewhere the list does not know) is found by the scan,
/// named with its line; a place that moved (its pattern no longer matches) is named too.
#[test]
fn a_new_or_moved_place_is_named() {
    let (dir, places) = copy_of_places();
    let version = cargo_version(dir.path());
    std::fs::write(
        dir.path().join("INSTALL.md"),
        format!(
            "# Install\n\n    docker pull ghcr.io/nandi-services/nandi-proxmox-mcp:{version}\n"
        ),
    )
    .unwrap();
    let problems = unclaimed(dir.path());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with(&format!(
            "INSTALL.md:3: `docker pull ghcr.io/nandi-services/nandi-proxmox-mcp:{version}` holds the version {version}"
        )),
        "{problems:?}"
    );
    // A longer number that merely contains the version is not an occurrence.
    std::fs::write(
        dir.path().join("INSTALL.md"),
        format!("1{version} {version}.1\n"),
    )
    .unwrap();
    assert!(unclaimed(dir.path()).is_empty());

    let dockerfile = places.iter().find(|p| p.file == "Dockerfile").unwrap();
    let path = dir.path().join(&dockerfile.file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("ARG VERSION=", "ARG APP_VERSION=")).unwrap();
    let problems = disagreements(dir.path());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("Dockerfile: the pattern")
            && problems[0].contains("matched 0 times"),
        "{problems:?}"
    );
    let problems = unclaimed(dir.path());
    assert!(
        problems.iter().any(|p| p.starts_with("Dockerfile:")),
        "the moved place is unclaimed: {problems:?}"
    );
}

/// Another crate of the lock file with the same version is not a place; our own is.
#[test]
fn lock_files_tell_our_crate_from_others() {
    let lock = "[[package]]\nname = \"heck\"\nversion = \"3.2.1\"\n\n[[package]]\nname = \"nandi-proxmox-mcp\"\nversion = \"3.2.1\"\n";
    let found = occurrences(lock, "3.2.1");
    assert_eq!(found.len(), 2);
    assert!(another_crates_lock_line(lock, found[0]));
    assert!(!another_crates_lock_line(lock, found[1]));
}

/// `scripts/set-version` on a copy of the tree writes every place: afterwards the check passes
/// for the new version, and no place holds the old one.
#[test]
fn set_version_writes_every_place() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for file in tree_files(&src) {
        let to = dir.path().join(&file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(&file), &to).unwrap();
    }
    let old = cargo_version(dir.path());
    // Built at run time, so this file does not hold the new version for the scan to find.
    let new = &format!("{}.{}.{}", 9, 8, 7);
    let out = Command::new("bash")
        .arg(dir.path().join("scripts/set-version"))
        .arg(new)
        .current_dir(dir.path())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "set-version failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(&cargo_version(dir.path()), new);
    assert_eq!(disagreements(dir.path()), Vec::<String>::new());
    assert_eq!(unclaimed(dir.path()), Vec::<String>::new());
    let (places, _) = load(dir.path());
    for place in &places {
        let text = read(dir.path(), &place.file).unwrap();
        for (_, _, value) in place_spans(place, &text) {
            assert_ne!(value, old, "{} still says {old}", place.file);
        }
    }
    let changelog = read(dir.path(), "CHANGELOG.md").unwrap();
    let unreleased = changelog.find("## [Unreleased]").expect("Unreleased kept");
    let heading = changelog
        .find(&format!("## [{new}] - "))
        .expect("new heading");
    let previous = changelog
        .find(&format!("## [{old}] - "))
        .expect("history kept");
    assert!(unreleased < heading && heading < previous);
}
