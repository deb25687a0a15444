//! Module dependencies stay one-way: the file graph of the whole `src/` tree has no circle, nor
//! has the emulator crate's (`crates/pve-emulator/src/`).
//!
//! The graph is read from the sources the way a reviewer would grep them. Comments, string and
//! character literals and `#[cfg(test)]` items are removed first; files that exist only under
//! `#[cfg(test)] mod x;` are left out. Then every `crate::…`, `super::…` and `self::…` path, and
//! every path that starts with a child module of the file, is resolved to the file that defines it
//! (`src/a/b.rs` or `src/a/b/mod.rs`; a path to an item resolves to the file holding the item).
//! A name a file only re-exports (`pub use`) resolves to the file that defines it. `use`
//! statements (brace groups expanded) and inline paths in code both count.
//!
//! Not edges: a parent's use of its own direct children (declaring and dispatching to them — the
//! parent is `lib.rs`, a `mod.rs`, or a file with a folder of children) and `pub use` /
//! `pub(…) use` lines themselves (their users' paths count, see above). Siblings, upward and
//! cross-folder paths are edges. The strongly connected components (Tarjan) of that graph must
//! all be single files, and the top-level modules import only down the rows of [`LAYERS`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules, top to bottom (docs/ARCHITECTURE.md draws the same table). A module
/// imports only modules in rows below its own: never upward, never sideways. A new top-level
/// module must be placed here.
const LAYERS: &[&[&str]] = &[
    &["cli"],
    &["transport"],
    &["server"],
    &["pipeline"],
    &["gate", "dispatch"],
    &["composite"],
    &["tasks"],
    &["clusters"],
    &["state", "outcome", "preview", "prompts"],
    &["audit", "backends", "compact"],
    &["approval", "lean", "redact", "registry", "ssh", "undo"],
    &["docs", "envelope", "policy", "schema"],
    &["identity"],
    &["catalog", "pve"],
    &["config", "effects"],
];

/// A module path: `src/ssh/ops.rs` → `["ssh", "ops"]`; `src/lib.rs` → `[]`.
type Module = Vec<String>;

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
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The code without comments, string literals and character literals (each replaced by a space,
/// so no path can be read out of prose or text).
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if (ch == 'r' || (ch == 'b' && at(i + 1) == 'r'))
            && !at(i.wrapping_sub(1)).is_alphanumeric()
            && at(i.wrapping_sub(1)) != '_'
            && {
                let mut j = if ch == 'b' { i + 2 } else { i + 1 };
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            }
        {
            // Raw string: r"…", r#"…"#, br"…".
            let mut j = if ch == 'b' { i + 2 } else { i + 1 };
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push(' ');
        } else if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if ch == '\'' {
            // A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a): only the former
            // closes with a quote within a few characters.
            if at(i + 1) == '\\' {
                let mut j = i + 3;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push(' ');
            } else if at(i + 2) == '\'' {
                i += 3;
                out.push(' ');
            } else {
                out.push(ch);
                i += 1;
            }
        } else {
            out.push(ch);
            i += 1;
        }
    }
    out
}

/// The code without `#[cfg(test)]` items (up to their `;` or their matching `}`).
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(pos) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, ch) in after.char_indices() {
            match ch {
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Expands a `use` tree (`a::{b::{c, d as e}, self}`) into full paths (`a::b::d as e`).
fn expand_use(tree: &str) -> Vec<String> {
    fn split_top(s: &str) -> Vec<&str> {
        let (mut depth, mut start, mut parts) = (0, 0, Vec::new());
        for (k, ch) in s.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&s[start..k]);
                    start = k + 1;
                }
                _ => {}
            }
        }
        parts.push(&s[start..]);
        parts
    }
    fn walk(prefix: &str, tree: &str, out: &mut Vec<String>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::").trim();
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let base = join(prefix, head);
            for part in split_top(inner) {
                walk(&base, part, out);
            }
        } else {
            let mut parts = tree.split(" as ");
            let item = parts.next().unwrap_or_default().trim();
            let full = if item == "self" {
                prefix.to_owned()
            } else {
                join(prefix, item)
            };
            if !full.is_empty() {
                match parts.next() {
                    Some(alias) => out.push(format!("{full} as {}", alias.trim())),
                    None => out.push(full),
                }
            }
        }
    }
    fn join(a: &str, b: &str) -> String {
        match (a.is_empty(), b.is_empty()) {
            (true, _) => b.to_owned(),
            (_, true) => a.to_owned(),
            _ => format!("{a}::{b}"),
        }
    }
    let mut out = Vec::new();
    walk(
        "",
        &tree.split_whitespace().collect::<Vec<_>>().join(" "),
        &mut out,
    );
    out
}

/// Every path a file's code names: `use` trees expanded, then `a::b` paths in the rest.
/// `pub use` re-exports and `pub(in …)` visibility paths are dropped.
fn paths_in(code: &str) -> Vec<String> {
    let reexport = regex::Regex::new(r"\bpub\s*(?:\([^)]*\))?\s*use\s[^;]*;").unwrap();
    let code = reexport.replace_all(code, " ");
    // `pub(in super::super)` restricts visibility; it imports nothing.
    let visibility = regex::Regex::new(r"\bpub\s*\(\s*in\s[^)]*\)").unwrap();
    let code = visibility.replace_all(&code, "pub");
    let uses = regex::Regex::new(r"\buse\s([^;]*);").unwrap();
    let mut out: Vec<String> = uses
        .captures_iter(&code)
        .flat_map(|m| expand_use(&m[1]))
        .map(|p| p.split(" as ").next().unwrap_or_default().to_owned())
        .collect();
    let rest = uses.replace_all(&code, " ");
    let plain =
        regex::Regex::new(r"\b[a-z_][a-z0-9_]*(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    out.extend(
        plain
            .find_iter(&rest)
            .map(|m| m.as_str().split_whitespace().collect::<String>()),
    );
    out
}

/// The files of the tree and, per file, the names it re-exports (`pub use`) → the path written.
struct Tree {
    files: BTreeSet<Module>,
    reexports: BTreeMap<Module, BTreeMap<String, String>>,
}

/// The names a file re-exports: `pub use a::{B, c as D};` → `B` → `a::B`, `D` → `a::c`.
fn reexports_in(code: &str) -> BTreeMap<String, String> {
    let reexport = regex::Regex::new(r"\bpub\s*(?:\([^)]*\))?\s*use\s([^;]*);").unwrap();
    let mut out = BTreeMap::new();
    for m in reexport.captures_iter(code) {
        for path in expand_use(&m[1]) {
            let mut parts = path.split(" as ");
            let target = parts.next().unwrap_or_default().trim().to_owned();
            let name = parts
                .next()
                .or_else(|| target.rsplit("::").next())
                .unwrap_or_default()
                .trim()
                .to_owned();
            if name != "*" && !name.is_empty() {
                out.insert(name, target);
            }
        }
    }
    out
}

/// The file (its module path) that `path`, written in `module`, names — if it is in the tree.
/// A name a file only re-exports resolves to the file that defines it.
fn resolve(module: &Module, path: &str, tree: &Tree) -> Option<Module> {
    resolve_at(module, path, tree, 0)
}

fn resolve_at(module: &Module, path: &str, tree: &Tree, depth: usize) -> Option<Module> {
    let files = &tree.files;
    let mut segments = path.split("::").map(str::trim).filter(|s| !s.is_empty());
    let first = segments.next()?;
    let mut abs: Module = match first {
        "crate" | "$crate" => Vec::new(),
        "self" => module.clone(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        child => {
            let mut m = module.clone();
            m.push(child.to_owned());
            if !files.contains(&m) {
                return None; // std, an external crate, a type or a local name
            }
            m
        }
    };
    for s in segments {
        match s {
            "super" => {
                abs.pop()?;
            }
            "self" => {}
            word => abs.push(word.to_owned()),
        }
    }
    // The longest prefix that is a file: items inside a file resolve to that file.
    let n = (0..=abs.len())
        .rev()
        .find(|n| files.contains(&abs[..*n].to_vec()))?;
    let file = abs[..n].to_vec();
    let through = abs
        .get(n)
        .and_then(|name| tree.reexports.get(&file)?.get(name));
    if let Some(target) = through
        && depth < 8
    {
        let rest = abs[n + 1..]
            .iter()
            .fold(target.clone(), |p, s| format!("{p}::{s}"));
        if let Some(source) = resolve_at(&file, &rest, tree, depth + 1) {
            return Some(source);
        }
    }
    Some(file)
}

/// The file graph of `sources` (module path → source text): edges by module path.
fn graph_of(sources: &BTreeMap<Module, String>) -> BTreeMap<Module, BTreeSet<Module>> {
    let test_mod =
        regex::Regex::new(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;").unwrap();
    let mut test_only: Vec<Module> = Vec::new();
    let mut code: BTreeMap<Module, String> = BTreeMap::new();
    for (module, text) in sources {
        let stripped = strip(text);
        for m in test_mod.captures_iter(&stripped) {
            test_only.push(module.iter().cloned().chain([m[1].to_owned()]).collect());
        }
        code.insert(module.clone(), without_test_items(&stripped));
    }
    code.retain(|m, _| !test_only.iter().any(|t| m.starts_with(t)));
    let tree = Tree {
        files: code.keys().cloned().collect(),
        reexports: code
            .iter()
            .map(|(m, c)| (m.clone(), reexports_in(c)))
            .collect(),
    };
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, text) in &code {
        let out = edges.entry(module.clone()).or_default();
        for path in paths_in(text) {
            let Some(to) = resolve(module, &path, &tree) else {
                continue;
            };
            let own_child = to.len() == module.len() + 1 && to.starts_with(module);
            if to != *module && !own_child {
                out.insert(to);
            }
        }
    }
    edges
}

/// The strongly connected components with more than one file (Tarjan).
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        out: Vec<Vec<Module>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            let edges = self.edges;
            for w in edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out.sort();
    t.out
}

/// `["ssh", "ops"]` → `src/ssh/ops.rs` (or `…/mod.rs`, `lib.rs`), as it is on disk.
fn file_name(src: &Path, module: &Module) -> String {
    let base = module.iter().fold(src.to_path_buf(), |p, s| p.join(s));
    let plain = base.with_extension("rs");
    let name = if module.is_empty() {
        src.join("lib.rs")
    } else if plain.is_file() {
        plain
    } else {
        base.join("mod.rs")
    };
    name.strip_prefix(src.parent().unwrap())
        .unwrap()
        .display()
        .to_string()
}

/// Each circle as its files and the imports between them.
fn report(src: &Path, edges: &BTreeMap<Module, BTreeSet<Module>>, found: &[Vec<Module>]) -> String {
    let mut text = String::new();
    for (n, component) in found.iter().enumerate() {
        text.push_str(&format!("circle {} ({} files):\n", n + 1, component.len()));
        for from in component {
            let inside: Vec<String> = edges[from]
                .iter()
                .filter(|to| component.contains(to))
                .map(|to| file_name(src, to))
                .collect();
            text.push_str(&format!(
                "  {} → {}\n",
                file_name(src, from),
                inside.join(", ")
            ));
        }
    }
    text
}

fn src_graph() -> (PathBuf, BTreeMap<Module, BTreeSet<Module>>) {
    graph_at(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The graph of one crate's source folder (its `lib.rs` is the root module).
fn graph_at(src: PathBuf) -> (PathBuf, BTreeMap<Module, BTreeSet<Module>>) {
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let sources: BTreeMap<Module, String> = files
        .iter()
        // main.rs is the binary's own crate root; it reaches the library by its crate name.
        .filter(|f| *f != &src.join("main.rs"))
        .map(|f| (module_of(&src, f), std::fs::read_to_string(f).unwrap()))
        .collect();
    (src, graph_of(&sources))
}

fn m(path: &str) -> Module {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn the_source_tree_has_no_import_circle() {
    let (src, edges) = src_graph();
    // The reader must see the real imports, or an empty graph would pass trivially.
    assert!(
        edges[&m("pipeline")].contains(&m("gate")),
        "{:#?}",
        edges[&m("pipeline")]
    );
    assert!(edges[&m("cli::setup::apply")].contains(&m("cli::harden")));
    let found = circles(&edges);
    assert!(
        found.is_empty(),
        "import circles (each file → the files of its circle it imports):\n{}",
        report(&src, &edges, &found)
    );
}

#[test]
fn the_emulator_crate_has_no_import_circle() {
    let (src, edges) =
        graph_at(Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/pve-emulator/src"));
    assert!(edges[&m("dispatch")].contains(&m("routes")));
    let found = circles(&edges);
    assert!(
        found.is_empty(),
        "import circles in crates/pve-emulator (each file → the files of its circle it imports):\n{}",
        report(&src, &edges, &found)
    );
}

#[test]
fn the_reader_finds_a_circle_when_there_is_one() {
    let sources: BTreeMap<Module, String> = [
        ("", "pub mod a;\npub mod b;\npub mod low;\npub use a::Thing;"),
        // a parent dispatching to its own children: not an edge
        ("a", "mod kid;\npub struct Thing;\nfn f() { kid::run(); self::kid::run() }"),
        ("a::kid", "use super::super::b::{x::{Y as Z}, self};\npub fn run() {}"),
        ("b", "pub mod x;\n// crate::low::nothing\nconst S: &str = \"crate::low::q\";\nfn g() { crate::a::Thing; }"),
        ("b::x", "pub struct Y;\npub use crate::low::Q;"),
        ("low", "pub struct Q;\n#[cfg(test)]\nmod tests { use crate::a::Thing; }"),
    ]
    .into_iter()
    .map(|(k, v)| (m(k), v.to_owned()))
    .collect();
    let edges = graph_of(&sources);
    assert_eq!(edges[&m("")], BTreeSet::new(), "{edges:#?}");
    assert_eq!(edges[&m("a")], BTreeSet::new(), "{edges:#?}");
    assert_eq!(edges[&m("a::kid")], BTreeSet::from([m("b"), m("b::x")]));
    assert_eq!(edges[&m("b")], BTreeSet::from([m("a")]), "{edges:#?}");
    assert_eq!(edges[&m("b::x")], BTreeSet::new(), "{edges:#?}");
    assert_eq!(edges[&m("low")], BTreeSet::new(), "{edges:#?}");
    // a::kid → b → a, and a only declares a::kid: no circle yet.
    assert!(circles(&edges).is_empty(), "{edges:#?}");
    // Close a loop: a::kid → b → a::kid.
    // A name a file only re-exports resolves to the file that defines it.
    let mut through = sources.clone();
    through.insert(
        m("low"),
        "pub struct Q;\nfn q() { crate::b::x::Q }".to_owned(),
    );
    through.insert(
        m("b::x"),
        "pub struct Y;\npub use crate::a::Thing as Q;".to_owned(),
    );
    assert_eq!(graph_of(&through)[&m("low")], BTreeSet::from([m("a")]));
    let mut looped = sources.clone();
    looped.insert(
        m("b"),
        "pub mod x;\nfn g() { crate::a::kid::run(); }".to_owned(),
    );
    let found = circles(&graph_of(&looped));
    assert_eq!(found, vec![vec![m("a::kid"), m("b")]]);
    let mut big = looped;
    big.insert(m("low"), "use crate::a::kid::run;".to_owned());
    big.insert(m("b::x"), "fn h() { crate::low::Q }".to_owned());
    big.insert(m("b"), "pub mod x;".to_owned());
    big.insert(m("a::kid"), "fn r() { crate::b::x::h() }".to_owned());
    let found = circles(&graph_of(&big));
    assert_eq!(found, vec![vec![m("a::kid"), m("b::x"), m("low")]]);
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let (src, edges) = src_graph();
    let row = |name: &str| LAYERS.iter().position(|r| r.contains(&name));
    let mut wrong = Vec::new();
    for (from, tos) in &edges {
        let Some(top) = from.first() else { continue }; // lib.rs: the table of contents
        let Some(level) = row(top) else {
            wrong.push(format!("{} is in no row of LAYERS", file_name(&src, from)));
            continue;
        };
        for to in tos.iter().filter(|to| to.first() != Some(top)) {
            let target = to.first().map_or("lib", String::as_str);
            if row(target).is_none_or(|r| r <= level) {
                wrong.push(format!(
                    "{} → {}",
                    file_name(&src, from),
                    file_name(&src, to)
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that do not go down the layers:\n{}",
        wrong.join("\n")
    );
}
