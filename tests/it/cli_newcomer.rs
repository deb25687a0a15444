//! What a newcomer meets on the command line: one story about how many tools are exposed,
//! an aligned `tools` table, no stray TLS error line during `setup`, a re-run after a TLS
//! failure that fixes the first instance instead of adding a second, a wizard that never turns
//! certificate checks off without a typed confirmation, secret files that are about to be
//! committed, and VS Code's commented `mcp.json`.

use crate::common;

use common::{CliDirs, setup_flags, text_of};
use serde_json::Value;

const SECRET: &str = "emulator-secret-token\n";
const FULL: &[(&str, &str)] = &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")];

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Issue 12.9: the `tools` header, `tools --json` and the catalog agree, and the header says
/// how to see the rest.
#[tokio::test]
async fn the_tools_header_counts_exposed_of_all_and_says_how_to_see_more() {
    let d = CliDirs::new();
    // Superseded names (the per-timespan metrics) are callable but not counted as tools.
    // The cross-cluster overview is offered only by a process serving several clusters.
    let total = nandi_proxmox_mcp::catalog::all()
        .filter(|spec| spec.superseded_by.is_none() && !spec.spans_clusters())
        .count();
    let json = d.run(&["tools", "--json"], &[], None).await;
    let doc: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let exposed = doc["toolCount"].as_u64().expect("count");
    let aliases = doc["aliasCount"].as_u64().expect("count");
    let table = stdout_of(&d.run(&["tools"], &[], None).await);
    let header = table.lines().next().expect("header");
    assert!(
        header.starts_with(&format!(
            "{exposed} of {total} tools exposed, plus {aliases} legacy alias names (callable, not listed) (access tier read-only, module mode core)"
        )),
        "{header}"
    );
    assert!(
        header.contains(&format!(
            "PVE_ACCESS_TIER=full PVE_MODULE_MODE=advanced exposes all {total}"
        )),
        "{header}"
    );
    assert_eq!(
        table.lines().count() as u64,
        exposed + 1,
        "one row per tool"
    );
    let all = stdout_of(&d.run(&["tools", "--all-backends"], FULL, None).await);
    assert!(
        all.starts_with(&format!("{total} of {total} tools exposed")),
        "{all}"
    );
}

/// Issue 12.9: `--help` does not promise every tool from a default (read-only) demo.
#[tokio::test]
async fn help_says_the_demo_is_read_only_by_default() {
    let help = stdout_of(&CliDirs::new().run(&["--help"], &[], None).await);
    assert!(!help.contains("every tool"), "{help}");
    assert!(help.contains("read-only by default"), "{help}");
}

/// Issue 12.9: every column of the `tools` table starts at the same place on every row,
/// `monitoring` rows included.
#[tokio::test]
async fn the_tools_table_is_aligned() {
    let out = CliDirs::new()
        .run(&["tools", "--all-backends"], FULL, None)
        .await;
    let table = stdout_of(&out);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(rows.iter().any(|r| r.contains(" monitoring ")), "{table}");
    let column_starts = |row: &str| -> Vec<usize> {
        let mut starts = Vec::new();
        let mut previous = ' ';
        for (i, c) in row.char_indices() {
            if c != ' ' && previous == ' ' {
                starts.push(i);
            }
            previous = c;
        }
        starts.truncate(5);
        starts
    };
    let first = column_starts(rows[0]);
    assert_eq!(first.len(), 5, "{}", rows[0]);
    for row in &rows {
        assert_eq!(column_starts(row), first, "misaligned: {row}");
    }
}

/// Issue 12.9: the demo banner tells the same story as `tools`, and names the template VM.
#[tokio::test]
async fn the_demo_banner_matches_the_tools_header() {
    let d = CliDirs::new();
    let header = stdout_of(&d.run(&["tools"], &[], None).await)
        .lines()
        .next()
        .expect("header")
        .to_owned();
    let demo = d.run(&["run", "--demo"], &[], None).await;
    let stderr = String::from_utf8_lossy(&demo.stderr);
    // The demo has a Proxmox Backup Server too: its core reads are served besides.
    let default = nandi_proxmox_mcp::policy::Settings::default();
    let with_pbs = nandi_proxmox_mcp::registry::Registry::build_for(
        &default,
        nandi_proxmox_mcp::registry::Capabilities {
            ssh: false,
            pbs: true,
        },
    )
    .canonical_count();
    let counts = nandi_proxmox_mcp::registry::tool_counts();
    let header = header.replacen(
        &format!("{} of", counts.default),
        &format!("{with_pbs} of"),
        1,
    );
    assert!(stderr.contains(&header), "{stderr}");
    assert!(stderr.contains("template VM 9000"), "{stderr}");
}

/// Issue 12.9: an untrusted certificate during `setup` is reported once, as the RED item with
/// the fingerprint to pin — not also as a stray `ERROR rustls_platform_verifier` log line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_certificate_leaves_no_stray_error_line() {
    let emu = common::emulator().await;
    let fingerprint = emu.cert_fingerprint().expect("https");
    let flags: Vec<String> = setup_flags(&emu)
        .into_iter()
        .filter(|f| f != "--tls-fingerprint" && *f != fingerprint)
        .collect();
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["--clients", "cursor"]);
    for rust_log in ["warn", "info"] {
        let d = CliDirs::new();
        let out = d.run(&args, &[("RUST_LOG", rust_log)], Some(SECRET)).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stdout_of(&out).contains("[RED] listNodes: TLS failed"),
            "{}",
            text_of(&out)
        );
        assert!(!stderr.contains("rustls_platform_verifier"), "{stderr}");
        assert!(!stderr.contains("ERROR"), "{stderr}");
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Issue 12.6: a token secret file inside a git work tree that git does not ignore is
/// called out (it would be committed); once ignored, or outside any work tree, no warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_file_git_would_commit_is_called_out() {
    let emu = common::emulator().await;
    let flags: Vec<String> = setup_flags(&emu)
        .into_iter()
        .map(|f| {
            if f == "--token-secret-stdin" {
                "--token-secret-file=./token.txt".to_owned()
            } else {
                f
            }
        })
        .collect();
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["--clients", "cursor", "--skip-connectivity"]);
    let warning = "lies inside the git work tree";

    let d = CliDirs::new();
    std::fs::write(d.cwd.path().join("token.txt"), SECRET).unwrap();
    let outside = d.run(&args, &[], None).await;
    assert!(outside.status.success(), "{}", text_of(&outside));
    assert!(!String::from_utf8_lossy(&outside.stderr).contains(warning));

    git(d.cwd.path(), &["init", "-q"]);
    let inside = d.run(&args, &[], None).await;
    assert!(inside.status.success(), "{}", text_of(&inside));
    let stderr = String::from_utf8_lossy(&inside.stderr);
    assert!(stderr.contains(warning), "{stderr}");
    assert!(stderr.contains("token.txt"), "{stderr}");
    assert!(stderr.contains("--token-secret-stdin"), "{stderr}");
    assert!(
        !stderr.contains(SECRET.trim()),
        "the secret itself is never shown"
    );

    let ignore = d.cwd.path().join(".gitignore");
    let mut text = std::fs::read_to_string(&ignore).unwrap_or_default();
    text.push_str("token.txt\n");
    std::fs::write(&ignore, text).unwrap();
    let ignored = d.run(&args, &[], None).await;
    assert!(ignored.status.success(), "{}", text_of(&ignored));
    assert!(!String::from_utf8_lossy(&ignored.stderr).contains(warning));
}

/// Issue 12.7: VS Code's `.vscode/mcp.json` may hold comments and trailing commas (JSONC);
/// `setup` merges its entry and keeps every comment, and a re-run updates the entry in place.
/// When a comment sits inside our own entry it cannot be kept: nothing is written, and the
/// report says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vscode_jsonc_keeps_its_comments() {
    use nandi_proxmox_mcp::cli::clients::{ClientId, read_entry};
    let emu = common::emulator().await;
    let d = CliDirs::new();
    let file = d.cwd.path().join(".vscode/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = r#"{
  // My servers. Keep this note.
  "servers": {
    "other": {
      "command": "other-server", /* why: pinned */
    },
  },
  "inputs": [], // prompts go here
}
"#;
    std::fs::write(&file, original).unwrap();
    let flags = setup_flags(&emu);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend(["--clients", "vscode", "--skip-connectivity"]);
    let comments = [
        "// My servers. Keep this note.",
        "/* why: pinned */",
        "// prompts go here",
    ];
    for run in 0..2 {
        let out = d.run(&args, &[], Some(SECRET)).await;
        assert!(out.status.success(), "run {run}: {}", text_of(&out));
        let text = std::fs::read_to_string(&file).unwrap();
        for comment in comments {
            assert!(text.contains(comment), "run {run}: {comment} lost:\n{text}");
        }
        assert_eq!(text.matches("\"proxmox\"").count(), 1, "{text}");
        let ours = read_entry(ClientId::Vscode, &file, "proxmox")
            .expect("readable")
            .expect("our entry");
        assert!(ours.args.contains(&"run".to_owned()), "{ours:?}");
        let other = read_entry(ClientId::Vscode, &file, "other")
            .unwrap()
            .unwrap();
        assert_eq!(other.command, "other-server");
    }

    let inside = r#"{"servers": {"proxmox": {"command": "x", "args": [], "env": {} /* mine */}}}"#;
    std::fs::write(&file, inside).unwrap();
    let out = d.run(&args, &[], Some(SECRET)).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    assert!(
        stdout_of(&out).contains("its comments cannot be kept"),
        "{}",
        text_of(&out)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), inside);
}

/// The `fix:` line of a report, after the line that starts with `[RED] <check>`.
fn fix_after(stdout: &str, check: &str) -> Option<String> {
    let mut lines = stdout.lines();
    lines.find(|l| l.starts_with(&format!("[RED] {check}")))?;
    lines
        .next()
        .and_then(|l| l.trim_start().strip_prefix("fix: "))
        .map(str::to_owned)
}

/// "Newcomer with a real cluster": setup against a self-signed node fails TLS and says to pin
/// the fingerprint; the person re-runs the same command with `--tls-fingerprint` as the fix
/// line says. The re-run updates the instance the first run wrote (same host) — it does not
/// add a second one named after the cluster — and plain `doctor` is GREEN.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_failure_then_the_pinned_rerun_leaves_one_instance_and_a_green_doctor() {
    let emu = common::emulator().await;
    let fingerprint = emu.cert_fingerprint().expect("https");
    let flags: Vec<String> = setup_flags(&emu)
        .into_iter()
        .filter(|f| f != "--tls-fingerprint" && *f != fingerprint)
        .collect();
    let first: Vec<&str> = flags.iter().map(String::as_str).collect();
    let d = CliDirs::new();
    let out = d.run(&first, &[], Some(SECRET)).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let stdout = stdout_of(&out);
    let fix = fix_after(&stdout, "listNodes: TLS failed").expect("a fix line");
    let pin = format!("--tls-fingerprint {fingerprint}");
    assert!(fix.contains(&pin), "{stdout}");
    assert_eq!(
        stdout.matches(fingerprint.as_str()).count(),
        1,
        "the fingerprint is printed once: {stdout}"
    );
    let instances = d.cwd.path().join(".nandi-proxmox-mcp");
    assert!(instances.join("proxmox.json").is_file(), "{stdout}");
    // Doctor says the same: RED, with the pin as the fix of both the call and the tls check.
    let out = d.run(&["doctor"], &[], None).await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let report = stdout_of(&out);
    let tls_fix = fix_after(&report, "tls").expect("the RED tls line has a fix");
    assert!(tls_fix.contains(&pin), "{report}");
    assert!(tls_fix.contains("tlsCaFile"), "{report}");

    // The re-run, exactly as the fix line says.
    let mut second = first.clone();
    second.extend(["--tls-fingerprint", fingerprint.as_str()]);
    let out = d.run(&second, &[], Some(SECRET)).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("[GREEN] instance: `proxmox` updated"),
        "{stdout}"
    );
    let files: Vec<String> = std::fs::read_dir(&instances)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["proxmox.json"], "one instance for one host");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(instances.join("proxmox.json")).unwrap())
            .unwrap();
    assert_eq!(file["tlsFingerprint"], fingerprint.as_str());
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(d.cwd.path().join(".mcp.json")).unwrap())
            .unwrap();
    let servers: Vec<&String> = mcp["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["proxmox"], "one client entry: {mcp}");

    let out = d.run(&["doctor"], &[], None).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let report = stdout_of(&out);
    assert!(!report.contains("[RED]"), "{report}");
    assert!(report.contains("[GREEN] tls"), "{report}");
    assert!(report.contains("[GREEN] mcpConfig:claude-code"), "{report}");
}

/// The wizard's answers up to the certificate question (tier typed as given), then `tail`.
fn wizard_input(host: &str, port: u16, tier: &str, tail: &str) -> String {
    format!("y\n{tier}\n{host}\n{port}\nsvc_mcp\npve\nemu\nemulator-secret-token\n{tail}")
}

/// Issue "Newcomer with a real cluster", item 2: declining the pin, or a certificate that cannot
/// be read, does not quietly write `allowInsecureTls: true`. Only the typed word turns checks
/// off; Enter (the default) or a casual `y` stops setup with a fix line and writes nothing;
/// when checks are off, the summary says so in plain words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wizard_turns_certificate_checks_off_only_when_told_in_words() {
    let emu = common::emulator().await;
    let fingerprint = emu.cert_fingerprint().expect("https");
    let host = emu.host().to_owned();
    // Self-signed: yes; pin: no; then Enter, or a casual yes.
    for refusal in ["\n", "y\n"] {
        let d = CliDirs::new();
        let input = wizard_input(&host, emu.port(), "1", &format!("y\nn\n{refusal}"));
        let out = d
            .run(&["setup", "--clients", "claude-code"], &[], Some(&input))
            .await;
        assert_eq!(out.status.code(), Some(1), "{refusal:?}: {}", text_of(&out));
        let stdout = stdout_of(&out);
        assert!(
            stdout.contains("Type `insecure` to turn certificate checks OFF"),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("fix: run setup again and pin the certificate (answer yes, or pass `--tls-fingerprint {fingerprint}`)")),
            "{stdout}"
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("certificate checks stay on"),
            "{}",
            text_of(&out)
        );
        assert_eq!(
            std::fs::read_dir(d.cwd.path()).unwrap().count(),
            0,
            "nothing written: {stdout}"
        );
    }
    // A certificate that cannot be read (nothing listens): the same question, the same stop.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let d = CliDirs::new();
    let input = wizard_input("127.0.0.1", port, "1", "y\n\n");
    let out = d
        .run(&["setup", "--clients", "claude-code"], &[], Some(&input))
        .await;
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("Could not read the certificate"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "fix: check that 127.0.0.1:{port} is the node's API"
        )),
        "{stdout}"
    );
    assert_eq!(std::fs::read_dir(d.cwd.path()).unwrap().count(), 0);

    // Typed: checks are off, and the summary says so. The tier typed as `1` is a choice,
    // not "the default".
    let d = CliDirs::new();
    let input = wizard_input(&host, emu.port(), "1", "y\nn\ninsecure\nn\n");
    let out = d
        .run(&["setup", "--clients", "claude-code"], &[], Some(&input))
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = stdout_of(&out);
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(d.cwd.path().join(".nandi-proxmox-mcp/emu-cluster.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(file["allowInsecureTls"], true);
    assert!(stdout.contains("Certificate checks: OFF."), "{stdout}");
    assert!(stdout.contains("read the API token"), "{stdout}");
    assert!(stdout.contains("Access tier: read-only\n"), "{stdout}");
    assert!(!stdout.contains("the default;"), "{stdout}");

    // Pinned, tier left at its default: the summary says checks are on, and "the default".
    let d = CliDirs::new();
    let input = wizard_input(&host, emu.port(), "", "y\ny\nn\n");
    let out = d
        .run(&["setup", "--clients", "claude-code"], &[], Some(&input))
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("Certificate checks: on (pinned SHA-256 fingerprint)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Access tier: read-only (the default;"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches(fingerprint.as_str()).count(),
        1,
        "the fingerprint is shown once, when the pin is offered: {stdout}"
    );
}

/// The scripted flag is an explicit choice, but the summary still says checks are OFF.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_insecure_tls_is_named_in_the_summary() {
    let d = CliDirs::new();
    let out = d
        .run(
            &[
                "setup",
                "--proxmox-host",
                "pve.example",
                "--proxmox-user",
                "mcp",
                "--token-name",
                "nandi",
                "--token-secret-stdin",
                "--allow-insecure-tls",
                "--skip-connectivity",
                "--clients",
                "cursor",
            ],
            &[],
            Some(SECRET),
        )
        .await;
    assert!(out.status.success(), "{}", text_of(&out));
    assert!(
        stdout_of(&out).contains("Certificate checks: OFF."),
        "{}",
        text_of(&out)
    );
}

/// A pasted full token id (or a blank) in `--token-name` is refused before anything is
/// written, in plain words — not as "the API token token name …" from the HTTP client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_token_name_is_refused_up_front() {
    let d = CliDirs::new();
    for bad in ["mcp@pve!nandi", "my token"] {
        let out = d
            .run(
                &[
                    "setup",
                    "--proxmox-host",
                    "127.0.0.1",
                    "--proxmox-user",
                    "mcp",
                    "--token-name",
                    bad,
                    "--token-secret-stdin",
                    "--clients",
                    "cursor",
                ],
                &[],
                Some(SECRET),
            )
            .await;
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text_of(&out));
        let all = text_of(&out);
        assert!(all.contains("--token-name: the token name"), "{all}");
        assert!(!all.contains("token token"), "{all}");
        assert_eq!(std::fs::read_dir(d.cwd.path()).unwrap().count(), 0);
    }
}
