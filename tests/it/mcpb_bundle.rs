//! The MCPB bundle's layout, as `packaging/mcpb/stage` builds it for the release workflow and
//! the dry run: every command the manifest names is an executable inside the bundle, and on
//! Linux the launcher starts the static binary for the CPU (x86_64 or aarch64) with the
//! arguments, standard input and exit status untouched — MCPB selects by operating system
//! only, so this launcher is what lets one bundle carry both Linux binaries.

#![cfg(unix)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn write_executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A stand-in binary that names itself, echoes its arguments one per line, copies stdin and
/// exits 7, so a test sees which one ran and what reached it.
fn fake_binary(path: &Path, label: &str) {
    write_executable(
        path,
        &format!(
            "#!/bin/sh\necho \"ran {label}\"\nfor a in \"$@\"; do echo \"arg[$a]\"; done\ncat\nexit 7\n"
        ),
    );
}

/// Runs `packaging/mcpb/stage OUT ARGS…`.
fn stage(out: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(root().join("packaging/mcpb/stage"))
        .arg(out)
        .args(args)
        .output()
        .expect("bash runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs the Linux launcher at `launcher` with `uname -m` answering `machine`, the given
/// arguments and `stdin`.
fn launch(launcher: &Path, machine: &str, args: &[&str], stdin: &str) -> Output {
    let fake_path = launcher.parent().expect("dir").join("fake-uname-bin");
    write_executable(
        &fake_path.join("uname"),
        &format!("#!/bin/sh\n[ \"$1\" = -m ] && echo {machine}\n"),
    );
    let mut child = Command::new(launcher)
        .args(args)
        .env("PATH", format!("{}:/usr/bin:/bin", fake_path.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("launcher starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("launcher ends")
}

/// All four platforms staged with stand-in binaries.
fn staged_bundle() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let bins = dir.path().join("bins");
    for name in ["linux-x86_64", "linux-aarch64", "darwin", "win32"] {
        fake_binary(&bins.join(name), name);
    }
    let out = dir.path().join("bundle");
    let bin = |name: &str| bins.join(name).display().to_string();
    let (x86, arm, mac, win) = (
        bin("linux-x86_64"),
        bin("linux-aarch64"),
        bin("darwin"),
        bin("win32"),
    );
    let result = stage(
        &out,
        &[
            "--linux-x86_64",
            &x86,
            "--linux-aarch64",
            &arm,
            "--darwin",
            &mac,
            "--win32",
            &win,
        ],
    );
    assert!(result.status.success(), "stage failed: {}", text(&result));
    (dir, out)
}

fn manifest_at(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("manifest")).expect("JSON")
}

#[test]
#[cfg_attr(
    no_python,
    ignore = "needs python3: packaging/mcpb/stage reads and writes the manifest with it"
)]
fn the_staged_bundle_holds_an_executable_for_every_command_the_manifest_names() {
    let (_dir, out) = staged_bundle();
    let staged = manifest_at(&out.join("manifest.json"));
    assert_eq!(
        staged,
        manifest_at(&root().join("packaging/mcpb/manifest.json")),
        "a release bundle carries the manifest unchanged"
    );
    let config = &staged["server"]["mcp_config"];
    let mut commands = vec![config["command"].as_str().expect("command").to_owned()];
    for (_, over) in config["platform_overrides"].as_object().expect("overrides") {
        commands.push(over["command"].as_str().expect("command").to_owned());
    }
    commands.push(format!(
        "${{__dirname}}/{}",
        staged["server"]["entry_point"]
            .as_str()
            .expect("entry_point")
    ));
    for command in &commands {
        let relative = command
            .strip_prefix("${__dirname}/")
            .unwrap_or_else(|| panic!("{command} is outside the bundle"));
        let path = out.join(relative);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{command}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "{command} is not executable");
    }
    // Both Linux binaries sit where the launcher looks for them.
    for arch in ["x86_64", "aarch64"] {
        let path = out.join(format!("server/linux/{arch}/nandi-proxmox-mcp"));
        let body = std::fs::read_to_string(&path).expect("binary staged");
        assert!(body.contains(&format!("ran linux-{arch}")), "{arch}");
    }
    assert!(out.join("LICENSE").is_file());
}

#[test]
#[cfg_attr(
    no_python,
    ignore = "needs python3: packaging/mcpb/stage reads and writes the manifest with it"
)]
fn the_linux_launcher_starts_the_binary_for_the_cpu_with_arguments_stdin_and_status_intact() {
    let (_dir, out) = staged_bundle();
    let launcher = out.join("server/linux/nandi-proxmox-mcp");
    for (machine, expected) in [
        ("x86_64", "linux-x86_64"),
        ("amd64", "linux-x86_64"),
        ("aarch64", "linux-aarch64"),
        ("arm64", "linux-aarch64"),
    ] {
        let result = launch(
            &launcher,
            machine,
            &["run", "two words", ""],
            "line on stdin\n",
        );
        assert_eq!(
            result.status.code(),
            Some(7),
            "{machine}: the binary's exit status"
        );
        assert_eq!(
            String::from_utf8_lossy(&result.stdout),
            format!("ran {expected}\narg[run]\narg[two words]\narg[]\nline on stdin\n"),
            "{machine}"
        );
        assert!(result.stderr.is_empty(), "{machine}: {}", text(&result));
    }
    // A CPU the bundle has no binary for: a clear refusal, nothing started.
    let result = launch(&launcher, "riscv64", &["run"], "");
    assert_eq!(result.status.code(), Some(1));
    assert!(result.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&result.stderr).contains("no binary for the CPU 'riscv64'"),
        "{}",
        text(&result)
    );
}

#[test]
#[cfg_attr(
    no_python,
    ignore = "needs python3: packaging/mcpb/stage reads and writes the manifest with it"
)]
fn the_launcher_on_this_machine_picks_its_own_cpu() {
    let (_dir, out) = staged_bundle();
    let result = Command::new(out.join("server/linux/nandi-proxmox-mcp"))
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .expect("launcher runs");
    let expected = match std::env::consts::ARCH {
        "x86_64" => "ran linux-x86_64",
        "aarch64" => "ran linux-aarch64",
        other => {
            assert_eq!(result.status.code(), Some(1), "{other}: {}", text(&result));
            return;
        }
    };
    assert_eq!(result.status.code(), Some(7), "{}", text(&result));
    assert!(
        String::from_utf8_lossy(&result.stdout).starts_with(expected),
        "{}",
        text(&result)
    );
}

#[test]
#[cfg_attr(
    no_python,
    ignore = "needs python3: packaging/mcpb/stage reads and writes the manifest with it"
)]
fn a_partial_stage_is_refused_unless_asked_for_and_then_lists_only_what_it_carries() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("x86");
    fake_binary(&bin, "linux-x86_64");
    let bin = bin.display().to_string();
    let out = dir.path().join("bundle");

    let refused = stage(&out, &["--linux-x86_64", &bin]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("--linux-aarch64 BIN is required"),
        "{}",
        text(&refused)
    );

    let partial = stage(&out, &["--linux-x86_64", &bin, "--partial"]);
    assert!(partial.status.success(), "{}", text(&partial));
    let staged = manifest_at(&out.join("manifest.json"));
    assert_eq!(
        staged["compatibility"]["platforms"],
        serde_json::json!(["linux"])
    );
    assert!(staged["server"]["mcp_config"]["platform_overrides"].is_null());
    // The aarch64 slot is empty: the launcher says so instead of failing obscurely.
    let result = launch(
        &out.join("server/linux/nandi-proxmox-mcp"),
        "aarch64",
        &[],
        "",
    );
    assert_eq!(result.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&result.stderr).contains("aarch64/nandi-proxmox-mcp is missing"),
        "{}",
        text(&result)
    );

    // No Linux binary at all: the manifest's base command would have nothing to start.
    let mac = dir.path().join("mac");
    fake_binary(&mac, "darwin");
    let no_linux = stage(&out, &["--darwin", &mac.display().to_string(), "--partial"]);
    assert!(!no_linux.status.success());
    assert!(
        text(&no_linux).contains("at least one Linux binary"),
        "{}",
        text(&no_linux)
    );
}
