//! A real OpenSSH `sshd` on 127.0.0.1 for the SSH tests: random port, throwaway host and
//! client keys in a temp dir, and `pct`, `docker` and `ssh` stubs first on the session PATH.
//!
//! The stubs stand in for a Proxmox node: `pct exec <ctid> -- cmd…` runs `cmd…` locally
//! (so the argv that arrived is what runs), `docker ps` / `docker logs --tail N name` print
//! canned output, and `ssh … -- <address> <command>` emulates the entry node's own client on
//! a hop by running `<command>` with `sh -c`. Every stub records its argv (NUL-separated,
//! one file per call) so tests can count runs and compare arguments byte for byte.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nandi_proxmox_mcp::ssh::{ClientSettings, Target};

/// A running `sshd`. Dropping it stops the daemon.
pub struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    /// Listening port on 127.0.0.1.
    pub port: u16,
    /// Login user (the current user).
    pub user: String,
}

fn sshd_binary() -> Option<PathBuf> {
    for candidate in ["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"] {
        if Path::new(candidate).is_file() {
            return Some(candidate.into());
        }
    }
    let out = Command::new("sh")
        .args(["-c", "command -v sshd"])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (!path.is_empty()).then(|| PathBuf::from(path))
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Generates a key pair at `path` (`path.pub` beside it).
pub fn keygen(path: &Path, kind: &str, passphrase: &str) {
    let mut cmd = Command::new("ssh-keygen");
    cmd.args(["-q", "-t", kind, "-N", passphrase, "-C", "test", "-f"])
        .arg(path);
    if kind == "rsa" {
        cmd.args(["-b", "2048"]);
    }
    run(&mut cmd);
}

/// `SHA256:…` fingerprint of a public key file, as `ssh-keygen -lf` prints it.
pub fn fingerprint_of(pub_path: &Path) -> String {
    let out = run(Command::new("ssh-keygen").arg("-lf").arg(pub_path));
    out.split_whitespace()
        .nth(1)
        .expect("fingerprint")
        .to_owned()
}

const PCT_STUB: &str = r#"#!/bin/bash
# pct stub: records argv, then emulates `pct exec <ctid> -- cmd...` by running cmd here.
log="__DIR__/calls/pct"
mkdir -p "$log"
printf '%s\0' "$@" > "$log/$(date +%s%N).$$"
if [ "${1:-}" != exec ] || [ -z "${2:-}" ]; then
  echo "pct stub: only 'pct exec <ctid> -- cmd' is implemented" >&2
  exit 255
fi
ctid="$2"; shift 2
[ "${1:-}" = "--" ] && shift
if [ "$ctid" = 9999 ]; then echo "CT $ctid does not exist" >&2; exit 2; fi
# A container's login profile would keep docker on PATH; the host's /etc/profile would not.
if [ "${1:-}" = bash ] && [ "${2:-}" = -lc ]; then exec bash --noprofile -c "$3"; fi
exec "$@"
"#;

const DOCKER_STUB: &str = r#"#!/bin/bash
log="__DIR__/calls/docker"
mkdir -p "$log"
printf '%s\0' "$@" > "$log/$(date +%s%N).$$"
case "${1:-}" in
  ps)
    echo "CONTAINER ID   IMAGE        COMMAND   CREATED       STATUS       PORTS    NAMES"
    echo "0a1b2c3d4e5f   nginx:1.27   \"nginx\"   2 hours ago   Up 2 hours   80/tcp   web"
    ;;
  logs)
    [ "${2:-}" = --tail ] || { echo "docker stub: expected --tail" >&2; exit 2; }
    n="$3"; name="$4"
    [ "$name" = web ] || { echo "Error: No such container: $name" >&2; exit 1; }
    for i in $(seq 1 "$n"); do echo "$name log line $i"; done
    echo "$name stderr line" >&2
    ;;
  *) echo "docker stub: unsupported" >&2; exit 1 ;;
esac
"#;

const SSH_STUB: &str = r#"#!/bin/bash
# ssh stub on the entry node: records argv; `ssh [opts] -- <address> <command>` runs
# <command> here (standing in for the node), or exits 255 for *.invalid addresses.
log="__DIR__/calls/ssh"
mkdir -p "$log"
printf '%s\0' "$@" > "$log/$(date +%s%N).$$"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
[ "${1:-}" = "--" ] || { echo "ssh stub: expected --" >&2; exit 255; }
address="$2"; command="$3"
case "$address" in *.invalid) echo "ssh: Could not resolve hostname $address" >&2; exit 255 ;; esac
exec sh -c "$command"
"#;

impl Sshd {
    /// Starts `sshd`. Tests that call this carry
    /// `#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]`, set by
    /// build.rs when it is absent outside CI; reaching here without it means CI lacks it: fail.
    pub fn start() -> Sshd {
        let Some(binary) = sshd_binary() else {
            panic!(
                "sshd is not installed: CI=true runs the SSH tests (.ci/run installs \
                 openssh-server)"
            );
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let user = run(Command::new("id").arg("-un")).trim().to_owned();
        keygen(&root.join("host_ed25519"), "ed25519", "");
        keygen(&root.join("client_ed25519"), "ed25519", "");
        keygen(&root.join("client_rsa"), "rsa", "");
        let authorized = [
            std::fs::read_to_string(root.join("client_ed25519.pub")).expect("pub"),
            std::fs::read_to_string(root.join("client_rsa.pub")).expect("pub"),
        ]
        .concat();
        std::fs::write(root.join("authorized_keys"), authorized).expect("write");
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).expect("bin");
        for (name, script) in [
            ("pct", PCT_STUB),
            ("docker", DOCKER_STUB),
            ("ssh", SSH_STUB),
        ] {
            let path = bin.join(name);
            std::fs::write(
                &path,
                script.replace("__DIR__", &root.display().to_string()),
            )
            .expect("stub");
            run(Command::new("chmod").arg("755").arg(&path));
        }
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").expect("free port");
            listener.local_addr().expect("addr").port()
        };
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/host_ed25519\nPidFile {root}/sshd.pid\n\
AuthorizedKeysFile {root}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
MaxSessions 30\nMaxStartups 50\nLogLevel ERROR\nSubsystem sftp internal-sftp\n\
SetEnv PATH={bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n",
            root = root.display(),
            bin = bin.display(),
        );
        std::fs::write(root.join("sshd_config"), config).expect("config");
        // Privilege separation directory sshd insists on when started as root.
        let _ = std::fs::create_dir_all("/run/sshd");
        let child = Command::new(&binary)
            .args(["-D", "-e", "-f"])
            .arg(root.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("sshd starts");
        let sshd = Sshd {
            dir,
            child,
            port,
            user,
        };
        sshd.wait_ready();
        sshd
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                use std::io::Read;
                let mut banner = [0u8; 8];
                stream
                    .set_read_timeout(Some(Duration::from_secs(2)))
                    .expect("timeout");
                if stream.read_exact(&mut banner).is_ok() && banner.starts_with(b"SSH-2.0") {
                    // Identify ourselves so sshd logs no error for the probe.
                    use std::io::Write;
                    let _ = stream.write_all(b"SSH-2.0-readiness-probe\r\n");
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("sshd did not come up on port {}", self.port);
    }

    /// The temp dir holding keys, stubs and call logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Private key accepted by the server (ed25519).
    pub fn client_key(&self) -> PathBuf {
        self.dir().join("client_ed25519")
    }

    /// Private key accepted by the server (RSA).
    pub fn client_rsa_key(&self) -> PathBuf {
        self.dir().join("client_rsa")
    }

    /// The host key's `SHA256:…` fingerprint.
    pub fn host_fingerprint(&self) -> String {
        fingerprint_of(&self.dir().join("host_ed25519.pub"))
    }

    /// A known_hosts line trusting this server's host key.
    pub fn known_hosts_line(&self) -> String {
        let key = std::fs::read_to_string(self.dir().join("host_ed25519.pub")).expect("pub");
        let mut fields = key.split_whitespace();
        let (kind, blob) = (fields.next().expect("kind"), fields.next().expect("blob"));
        format!("[127.0.0.1]:{} {kind} {blob}\n", self.port)
    }

    /// Writes a known_hosts file that trusts this server and returns its path.
    pub fn trusted_known_hosts(&self) -> PathBuf {
        let path = self.dir().join("known_hosts");
        std::fs::write(&path, self.known_hosts_line()).expect("known_hosts");
        path
    }

    /// The `PROXMOX_SSH_*` variables that point the built binary at this server, trusting
    /// the host keys in `known_hosts`.
    pub fn server_vars(&self, known_hosts: &Path) -> Vec<(String, String)> {
        vec![
            ("PROXMOX_SSH_HOST".into(), "127.0.0.1".into()),
            ("PROXMOX_SSH_PORT".into(), self.port.to_string()),
            ("PROXMOX_SSH_USER".into(), self.user.clone()),
            (
                "PROXMOX_SSH_KEY_PATH".into(),
                self.client_key().display().to_string(),
            ),
            (
                "PROXMOX_SSH_KNOWN_HOSTS".into(),
                known_hosts.display().to_string(),
            ),
        ]
    }

    /// The target for this server.
    pub fn target(&self) -> Target {
        Target {
            host: "127.0.0.1".into(),
            port: self.port,
            user: self.user.clone(),
            host_key_pin: None,
        }
    }

    /// Client settings with `key` and `known_hosts`.
    pub fn settings(&self, key: PathBuf, known_hosts: PathBuf) -> ClientSettings {
        ClientSettings {
            key_path: key,
            known_hosts,
            connect_timeout: Duration::from_secs(10),
            max_concurrent: 8,
        }
    }

    /// Every recorded call of stub `name` (`pct`, `docker`, `ssh`), oldest first.
    pub fn calls(&self, name: &str) -> Vec<Vec<String>> {
        let dir = self.dir().join("calls").join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                let bytes = std::fs::read(f).expect("call log");
                let mut args: Vec<String> = bytes
                    .split(|b| *b == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                args.pop(); // after the trailing NUL
                args
            })
            .collect()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
