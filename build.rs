//! Build script: probes the optional test fixtures and tells the compiler which are absent,
//! so the checks that need them are reported by `cargo test` as `ignored` with the reason
//! instead of passing without having run.
//!
//! Invariant: a check is ignored only when its fixture is missing AND the run is not CI.
//! Under `CI=true` (or `CI=1`) no ignore is emitted, so a missing fixture makes its checks
//! run and fail loudly; `NANDI_SHARED_OPTIONAL=1` lets a CI without `../shared` (a public
//! fork) ignore the schema checks, never the SSH ones.

use std::path::{Path, PathBuf};

/// One optional fixture: the `cfg` set when its checks are ignored, and where to find it.
pub struct Fixture {
    /// The `cfg` name, set when the fixture is absent and its checks may be ignored.
    pub cfg: &'static str,
    /// Whether `NANDI_SHARED_OPTIONAL=1` may excuse its absence under CI.
    pub in_shared: bool,
    /// What is missing, for the build warning under CI.
    pub what: &'static str,
}

/// The official PVE 9.1 API schema: catalog, privilege and emulator-route checks.
pub const PVE_API: Fixture = Fixture {
    cfg: "no_pve_api",
    in_shared: true,
    what: "../shared/pve-api/endpoints-pve-9.1.json.gz",
};

/// The reference implementation's tool table: tool-surface parity checks.
pub const REFERENCE_TOOLS: Fixture = Fixture {
    cfg: "no_reference_tools",
    in_shared: true,
    what: "../shared/spec/reference-tools.json",
};

/// An OpenSSH `sshd` binary: the SSH tests run one on loopback.
pub const SSHD: Fixture = Fixture {
    cfg: "no_sshd",
    in_shared: false,
    what: "sshd (apt-get install openssh-server)",
};

/// `python3` with `venv`: the Kubernetes example is checked by kubernetes-validate from PyPI.
pub const PYTHON: Fixture = Fixture {
    cfg: "no_python",
    in_shared: false,
    what: "python3 (the Kubernetes example check installs kubernetes-validate into a venv)",
};

/// `npx`: the MCPB manifest is checked by the official `@anthropic-ai/mcpb` CLI from npm.
pub const NPX: Fixture = Fixture {
    cfg: "no_npx",
    in_shared: false,
    what: "npx (Node.js; the MCPB manifest check runs @anthropic-ai/mcpb)",
};

/// The first `name` on `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// How the run treats missing fixtures, read from the environment.
#[derive(Clone, Copy, Debug, Default)]
pub struct Strictness {
    /// `CI=true` or `CI=1`: missing fixtures are failures.
    pub ci: bool,
    /// `NANDI_SHARED_OPTIONAL=1`: this CI has no `../shared` on purpose.
    pub shared_optional: bool,
}

impl Strictness {
    /// Reads `CI` and `NANDI_SHARED_OPTIONAL` through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Strictness {
        let flag =
            |key: &str, values: &[&str]| lookup(key).is_some_and(|v| values.contains(&v.trim()));
        Strictness {
            ci: flag("CI", &["true", "1"]),
            shared_optional: flag("NANDI_SHARED_OPTIONAL", &["1"]),
        }
    }
}

/// What to do with a fixture's checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The fixture is there: run the checks.
    Run,
    /// Absent outside CI: report the checks as ignored, with the reason.
    Ignore,
    /// Absent under CI: run the checks so they fail, and warn at build time.
    RunAndFail,
}

/// The verdict for `fixture`, given whether it is present and how strict the run is.
pub fn verdict(fixture: &Fixture, present: bool, strictness: Strictness) -> Verdict {
    let excused = fixture.in_shared && strictness.shared_optional;
    match (present, strictness.ci && !excused) {
        (true, _) => Verdict::Run,
        (false, false) => Verdict::Ignore,
        (false, true) => Verdict::RunAndFail,
    }
}

/// The `sshd` binary the SSH tests would start: the usual sbin folders, then `PATH`.
fn find_sshd() -> Option<PathBuf> {
    let fixed = ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"].map(PathBuf::from);
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("sshd"))
                .collect()
        })
        .unwrap_or_default();
    fixed.into_iter().chain(on_path).find(|p| p.is_file())
}

/// Asks Cargo to rerun this script when `path` appears, changes or goes. A missing path
/// cannot be watched without rebuilding on every run, so its nearest existing ancestor inside
/// `../shared` is watched instead; when `../shared` itself is absent nothing more is watched
/// (the README says to `touch build.rs` after adding it).
fn watch(path: &Path, shared: &Path) {
    let mut candidate = Some(path);
    while let Some(p) = candidate {
        if !p.starts_with(shared) {
            return;
        }
        if p.exists() {
            println!("cargo::rerun-if-changed={}", p.display());
            return;
        }
        candidate = p.parent();
    }
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=NANDI_SHARED_OPTIONAL");
    let strictness = Strictness::from_lookup(|key| std::env::var(key).ok());
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let shared = manifest.join("../shared");
    let pve_api = shared.join("pve-api/endpoints-pve-9.1.json.gz");
    let reference = shared.join("spec/reference-tools.json");
    let sshd = find_sshd();
    watch(&pve_api, &shared);
    watch(&reference, &shared);
    match &sshd {
        Some(path) => println!("cargo::rerun-if-changed={}", path.display()),
        // Installing openssh-server adds a file to one of these folders, which reruns this
        // script, so the SSH checks stop being ignored without a `touch build.rs`.
        None => ["/usr/sbin", "/usr/local/sbin", "/sbin"]
            .iter()
            .map(Path::new)
            .filter(|dir| dir.is_dir())
            .for_each(|dir| println!("cargo::rerun-if-changed={}", dir.display())),
    }
    for (fixture, present) in [
        (PVE_API, pve_api.is_file()),
        (REFERENCE_TOOLS, reference.is_file()),
        (SSHD, sshd.is_some()),
        (PYTHON, on_path("python3").is_some()),
        (NPX, on_path("npx").is_some()),
    ] {
        println!("cargo::rustc-check-cfg=cfg({})", fixture.cfg);
        match verdict(&fixture, present, strictness) {
            Verdict::Run => {}
            Verdict::Ignore => println!("cargo::rustc-cfg={}", fixture.cfg),
            Verdict::RunAndFail => println!(
                "cargo::warning=CI: {} is missing; the checks that need it will fail",
                fixture.what
            ),
        }
    }
}
