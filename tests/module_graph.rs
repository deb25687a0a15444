//! Module dependencies stay one-way: no import circle among the CLI's `setup`/`harden` and the
//! emulator's route, dispatch, state and task modules.
//!
//! The graph is read from the sources the way a reviewer would grep it: every `crate::…` and
//! `super::…` path outside the `#[cfg(test)]` tail, resolved to the watched module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules whose mutual imports must form no circle (a module covers its children).
const WATCHED: &[&str] = &[
    "cli::setup",
    "cli::harden",
    "cli::scope_flag",
    "emulator::dispatch",
    "emulator::route",
    "emulator::routes",
    "emulator::routes_guests",
    "emulator::routes_infra",
    "emulator::routes_security",
    "emulator::state",
    "emulator::state_infra",
    "emulator::state_security",
    "emulator::stamps",
    "emulator::task",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/cli/setup/apply.rs` → `[cli, setup, apply]`; `src/cli/setup/mod.rs` → `[cli, setup]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The watched module a path (absolute, as segments) falls in.
fn watched(path: &[String]) -> Option<&'static str> {
    let joined = path.join("::");
    WATCHED
        .iter()
        .filter(|w| joined == **w || joined.starts_with(&format!("{w}::")))
        .max_by_key(|w| w.len())
        .copied()
}

/// Resolves `crate::a::b` / `super::super::c` written in `module` to absolute segments.
fn resolve(module: &[String], path: &str) -> Vec<String> {
    let mut segments = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let mut out: Vec<String> = Vec::new();
    match segments.next() {
        Some("crate") => {}
        Some("super") => {
            out = module[..module.len().saturating_sub(1)].to_vec();
        }
        _ => return Vec::new(),
    }
    for s in segments {
        match s {
            "super" => {
                out.pop();
            }
            "self" => {}
            word => out.push(word.to_owned()),
        }
    }
    out
}

/// Every `crate::`/`super::` path in `text`, brace groups of `use` lines expanded.
fn paths_in(text: &str) -> Vec<String> {
    let group =
        regex::Regex::new(r"\b((?:crate|super)(?:::(?:super|\w+))*)::\{([^{}]*)\}").unwrap();
    let plain = regex::Regex::new(r"\b(?:crate|super)(?:::(?:super|\w+))+").unwrap();
    let mut out = Vec::new();
    for m in group.captures_iter(text) {
        for item in m[2].split(',') {
            let item = item.trim().split(" as ").next().unwrap_or_default().trim();
            if !item.is_empty() {
                out.push(format!("{}::{item}", &m[1]));
            }
        }
    }
    out.extend(plain.find_iter(text).map(|m| m.as_str().to_owned()));
    out
}

fn graph() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<&'static str, BTreeSet<&'static str>> = BTreeMap::new();
    for file in files {
        let module = module_of(&src, &file);
        let Some(from) = watched(&module) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for path in paths_in(code) {
            if let Some(to) = watched(&resolve(&module, &path))
                && to != from
            {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    edges
}

/// One circle through `start`, if any (depth-first).
fn circle_from(
    start: &'static str,
    edges: &BTreeMap<&'static str, BTreeSet<&'static str>>,
) -> Option<Vec<&'static str>> {
    fn walk(
        node: &'static str,
        start: &'static str,
        edges: &BTreeMap<&'static str, BTreeSet<&'static str>>,
        path: &mut Vec<&'static str>,
        seen: &mut BTreeSet<&'static str>,
    ) -> bool {
        for next in edges.get(node).into_iter().flatten() {
            if *next == start {
                path.push(next);
                return true;
            }
            if seen.insert(next) {
                path.push(next);
                if walk(next, start, edges, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start];
    let mut seen = BTreeSet::new();
    walk(start, start, edges, &mut path, &mut seen).then_some(path)
}

#[test]
fn watched_modules_import_one_way() {
    let edges = graph();
    // The reader must see the real imports, or an empty graph would pass trivially.
    assert!(
        edges
            .get("emulator::dispatch")
            .is_some_and(|d| d.contains("emulator::routes")),
        "{edges:#?}"
    );
    assert!(
        edges
            .get("cli::setup")
            .is_some_and(|d| d.contains("cli::harden")),
        "{edges:#?}"
    );
    let circles: Vec<String> = WATCHED
        .iter()
        .filter_map(|m| circle_from(m, &edges))
        .map(|c| c.join(" → "))
        .collect();
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_reader_finds_a_circle_when_there_is_one() {
    let module: Vec<String> = ["emulator", "routes"].map(String::from).to_vec();
    let paths = paths_in("use super::dispatch::{Route, get};\nuse super::api::Param;");
    let resolved: Vec<Option<&str>> = paths
        .iter()
        .map(|p| watched(&resolve(&module, p)))
        .collect();
    assert!(resolved.contains(&Some("emulator::dispatch")), "{paths:?}");
    let mut edges = BTreeMap::new();
    edges.insert("a", BTreeSet::from(["b"]));
    edges.insert("b", BTreeSet::from(["a"]));
    assert_eq!(circle_from("a", &edges), Some(vec!["a", "b", "a"]));
}
