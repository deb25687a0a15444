//! The russh executor against a real OpenSSH `sshd` on loopback: authentication, host key
//! verification, exit codes, timeouts, the output cap and argument quoting.
//!
//! Reported as ignored ("needs sshd") when `sshd` is not installed, except under `CI=true`
//! where it fails (build.rs decides; see the README's Tests section).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::sshd::{Sshd, keygen};
use nandi_proxmox_mcp::ssh::{Executor, RunOptions, RusshExecutor, SshError, Target};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

fn quick() -> RunOptions {
    RunOptions::with_timeout(Duration::from_secs(15))
}

fn executor(sshd: &Sshd, key: PathBuf, known_hosts: PathBuf) -> RusshExecutor {
    RusshExecutor::new(sshd.settings(key, known_hosts))
}

fn trusted(sshd: &Sshd) -> RusshExecutor {
    executor(sshd, sshd.client_key(), sshd.trusted_known_hosts())
}

fn marker(sshd: &Sshd) -> PathBuf {
    sshd.dir().join("pwned")
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn runs_a_command_and_reuses_the_connection() {
    let sshd = Sshd::start();
    let exec = trusted(&sshd);
    let target = sshd.target();
    let first = Instant::now();
    let out = exec
        .run(&target, &argv(&["echo", "hello"]), quick())
        .await
        .expect("runs");
    eprintln!(
        "first run (connect + auth + exec) took {:?}",
        first.elapsed()
    );
    assert_eq!(out.exit_status, Some(0));
    assert_eq!(out.stdout, "hello\n");
    assert_eq!(out.stderr, "");
    assert!(!out.truncated);
    let second = Instant::now();
    exec.run(&target, &argv(&["true"]), quick())
        .await
        .expect("pooled");
    eprintln!("second run (pooled connection) took {:?}", second.elapsed());
    // Later calls ride the pooled connection (no new handshake), and run concurrently.
    let started = Instant::now();
    let runs = (0..6).map(|i| {
        let exec = &exec;
        let target = &target;
        async move {
            exec.run(target, &argv(&["echo", &i.to_string()]), quick())
                .await
        }
    });
    for (i, out) in futures::future::join_all(runs)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(out.expect("pooled run").stdout, format!("{i}\n"));
    }
    eprintln!("6 pooled concurrent runs took {:?}", started.elapsed());
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn rsa_keys_authenticate_too() {
    let sshd = Sshd::start();
    let exec = executor(&sshd, sshd.client_rsa_key(), sshd.trusted_known_hosts());
    let out = exec
        .run(&sshd.target(), &argv(&["echo", "rsa"]), quick())
        .await
        .expect("RSA auth works");
    assert_eq!(out.stdout, "rsa\n");
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_non_zero_exit_is_passed_through_with_both_streams() {
    let sshd = Sshd::start();
    let out = trusted(&sshd)
        .run(
            &sshd.target(),
            &argv(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
            quick(),
        )
        .await
        .expect("a failing command is not an executor error");
    assert_eq!(out.exit_status, Some(3));
    assert_eq!(out.stdout, "out\n");
    assert_eq!(out.stderr, "err\n");
    // 255 is just an exit status here: the executor neither retries nor reinterprets it.
    let count = sshd.dir().join("runs");
    let script = format!("echo x >> {}; exit 255", count.display());
    let out = trusted(&sshd)
        .run(&sshd.target(), &argv(&["sh", "-c", &script]), quick())
        .await
        .expect("exit 255 is an exit status");
    assert_eq!(out.exit_status, Some(255));
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "x\n", "ran once");
}

fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie has ended; only its parent has yet to reap it.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_timeout_stops_the_remote_command() {
    let sshd = Sshd::start();
    let pidfile = sshd.dir().join("sleeper.pid");
    let script = format!(
        "echo $$ > {}; sleep 60; touch {}",
        pidfile.display(),
        marker(&sshd).display()
    );
    let options = RunOptions::with_timeout(Duration::from_millis(1500));
    let started = Instant::now();
    let err = trusted(&sshd)
        .run(&sshd.target(), &argv(&["sh", "-c", &script]), options)
        .await
        .expect_err("times out");
    assert!(matches!(err, SshError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the command started")
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(6);
    while !process_gone(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        process_gone(pid),
        "remote process {pid} still runs after the timeout"
    );
    assert!(!marker(&sshd).exists());
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_cancelled_call_stops_the_remote_command_long_before_its_deadline() {
    let sshd = Sshd::start();
    let pidfile = sshd.dir().join("cancelled.pid");
    let script = format!("echo $$ > {}; sleep 120", pidfile.display());
    let exec = trusted(&sshd);
    // Server-side deadline would be 62 s away; the caller gives up after 1 s.
    let options = RunOptions::with_timeout(Duration::from_secs(60));
    let args = argv(&["sh", "-c", &script]);
    let target = sshd.target();
    let run = exec.run(&target, &args, options);
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), run)
            .await
            .is_err(),
        "still running when dropped"
    );
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("the command started")
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(8);
    while !process_gone(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        process_gone(pid),
        "remote process {pid} survived the cancelled call"
    );
    // The pooled connection still serves the next call.
    let out = exec
        .run(&sshd.target(), &argv(&["echo", "next"]), quick())
        .await;
    assert_eq!(out.expect("next call").stdout, "next\n");
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn output_beyond_the_cap_is_cut_and_flagged() {
    let sshd = Sshd::start();
    let options = RunOptions {
        timeout: Duration::from_secs(15),
        output_cap: 10_000,
    };
    let out = trusted(&sshd)
        .run(
            &sshd.target(),
            &argv(&["sh", "-c", "yes 0123456789"]),
            options,
        )
        .await
        .expect("capped run");
    assert!(out.truncated);
    assert_eq!(out.stdout.len() + out.stderr.len(), 10_000);
    assert!(out.stdout.starts_with("0123456789\n"));
    assert_eq!(out.exit_status, None, "the endless command was stopped");
    // Under the cap nothing is flagged.
    let out = trusted(&sshd)
        .run(
            &sshd.target(),
            &argv(&["sh", "-c", "yes | head -c 5000"]),
            options,
        )
        .await
        .expect("run");
    assert!(!out.truncated);
    assert_eq!(out.stdout.len(), 5000);
}

async fn refused(exec: &RusshExecutor, target: &Target, sshd: &Sshd) -> SshError {
    let touch = format!("touch {}", marker(sshd).display());
    let err = exec
        .run(target, &argv(&["sh", "-c", &touch]), quick())
        .await
        .expect_err("refused");
    assert!(
        !marker(sshd).exists(),
        "a refused connection ran the command"
    );
    err
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn an_unknown_host_key_is_refused_and_nothing_runs() {
    let sshd = Sshd::start();
    let empty = sshd.dir().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    for known_hosts in [empty, sshd.dir().join("missing_known_hosts")] {
        let exec = executor(&sshd, sshd.client_key(), known_hosts);
        let err = refused(&exec, &sshd.target(), &sshd).await;
        assert!(matches!(err, SshError::HostKeyUnknown { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains(&sshd.host_fingerprint()), "{text}");
        assert!(text.contains("PROXMOX_SSH_HOST_KEY_FINGERPRINT"), "{text}");
        assert!(text.contains("sshHostKeyFingerprint"), "{text}");
        assert!(text.contains("known_hosts"), "{text}");
        assert_eq!(err.code(), "SSH_HOST_KEY_UNKNOWN");
    }
    // Nothing was learned: the file is still empty.
    let content = std::fs::read_to_string(sshd.dir().join("empty_known_hosts")).unwrap();
    assert!(content.is_empty());
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_changed_host_key_is_refused() {
    let sshd = Sshd::start();
    let other = sshd.dir().join("other_host");
    keygen(&other, "ed25519", "");
    let pubkey = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let blob: Vec<&str> = pubkey.split_whitespace().take(2).collect();
    let known_hosts = sshd.dir().join("changed_known_hosts");
    std::fs::write(
        &known_hosts,
        format!("# comment\n[127.0.0.1]:{} {}\n", sshd.port, blob.join(" ")),
    )
    .unwrap();
    let exec = executor(&sshd, sshd.client_key(), known_hosts);
    let err = refused(&exec, &sshd.target(), &sshd).await;
    assert!(matches!(err, SshError::HostKeyChanged { .. }), "{err:?}");
    assert!(err.to_string().contains(&sshd.host_fingerprint()));
    assert!(err.to_string().contains("records"), "{err}");
    assert!(
        !err.before_command(),
        "a changed key is never routed around"
    );
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_pinned_fingerprint_is_accepted_and_a_wrong_pin_refused() {
    let sshd = Sshd::start();
    let empty = sshd.dir().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let exec = executor(&sshd, sshd.client_key(), empty);
    let pinned = Target {
        host_key_pin: Some(sshd.host_fingerprint()),
        ..sshd.target()
    };
    let out = exec
        .run(&pinned, &argv(&["echo", "pinned"]), quick())
        .await
        .expect("pinned key accepted");
    assert_eq!(out.stdout, "pinned\n");
    let wrong = Target {
        host_key_pin: Some("SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into()),
        ..sshd.target()
    };
    let err = refused(&exec, &wrong, &sshd).await;
    assert!(matches!(err, SshError::HostKeyChanged { .. }), "{err:?}");
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn a_wrong_client_key_is_refused() {
    let sshd = Sshd::start();
    let stranger = sshd.dir().join("stranger");
    keygen(&stranger, "ed25519", "");
    let exec = executor(&sshd, stranger, sshd.trusted_known_hosts());
    let err = refused(&exec, &sshd.target(), &sshd).await;
    assert!(matches!(err, SshError::AuthRefused { .. }), "{err:?}");
    assert_eq!(err.code(), "SSH_AUTH_FAILED");
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn encrypted_or_missing_keys_are_refused_with_a_clear_message() {
    let sshd = Sshd::start();
    let locked = sshd.dir().join("locked");
    keygen(&locked, "ed25519", "correct horse battery");
    let exec = executor(&sshd, locked.clone(), sshd.trusted_known_hosts());
    let err = refused(&exec, &sshd.target(), &sshd).await;
    assert!(matches!(err, SshError::KeyEncrypted { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("passphrase") && text.contains(&locked.display().to_string()));
    assert!(!text.contains("correct horse"));
    let missing = executor(&sshd, sshd.dir().join("nope"), sshd.trusted_known_hosts());
    let err = refused(&missing, &sshd.target(), &sshd).await;
    assert!(matches!(err, SshError::KeyUnreadable { .. }), "{err:?}");
}

#[tokio::test]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn shell_metacharacters_arrive_as_literal_arguments() {
    let sshd = Sshd::start();
    let m = marker(&sshd).display().to_string();
    let hostile = [
        format!("; touch {m}"),
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("' ; touch {m}; echo '"),
        format!("\" ; touch {m}; echo \""),
        format!("a\ntouch {m}"),
        format!("| touch {m} &"),
        "*".to_owned(),
        "~".to_owned(),
        "$HOME".to_owned(),
        String::new(),
    ];
    let mut args = argv(&["printf", "<%s>\\n"]);
    args.extend(hostile.iter().cloned());
    let out = trusted(&sshd)
        .run(&sshd.target(), &args, quick())
        .await
        .expect("runs");
    let expected: String = hostile.iter().map(|h| format!("<{h}>\n")).collect();
    assert_eq!(out.stdout, expected);
    assert!(!Path::new(&m).exists(), "an argument was executed");
}
