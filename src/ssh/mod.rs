//! SSH: running fixed commands on Proxmox nodes, in-process (no `ssh` binary on our side).
//!
//! Layers, each with one job:
//! - [`Executor`] runs one argv on one host and returns exit status, stdout, stderr and a
//!   `truncated` flag; [`RusshExecutor`] is the real client (russh, verified host keys,
//!   connection reuse, a concurrency limit, per-call timeout, output cap);
//! - [`router`] decides which host serves a cluster node (direct or a hop through the entry
//!   node) and never re-runs a command that ran;
//! - [`ops`] holds the five tools' fixed argv templates and result shapes.
//!
//! Invariants guarded here: untrusted text only ever travels as an argv *element*; the one
//! place argv becomes a shell string is [`remote_command`], which quotes with the `shlex`
//! library. A host key that is not already trusted (known_hosts or a pinned fingerprint) is
//! refused before authentication, so no command ever runs on an unverified host.

mod failure;
mod hostkey;
pub mod node_ops;
pub mod ops;
pub mod router;
mod russh;
pub mod sftp;

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use thiserror::Error;

pub use self::router::{Route, Router};
pub use self::russh::RusshExecutor;
pub use self::sftp::{FileOp, FileOutcome};

/// Default cap on stdout + stderr of one command (2 MiB, as the reference).
pub const DEFAULT_OUTPUT_CAP: usize = 2 * 1024 * 1024;

/// Error codes of SSH-backed tools (beside the reference's `SSH_DISABLED`, `GUEST_NOT_FOUND`…).
pub mod codes {
    /// SSH tools were called but SSH is not configured.
    pub const SSH_DISABLED: &str = "SSH_DISABLED";
    /// No container with that id exists in the cluster.
    pub const GUEST_NOT_FOUND: &str = "GUEST_NOT_FOUND";
    /// `containerName` failed its pattern; nothing was run.
    pub const INVALID_CONTAINER_NAME: &str = "INVALID_CONTAINER_NAME";
    /// The diagnostic command is not on the allow-list; nothing was run.
    pub const DIAGNOSTIC_COMMAND_NOT_ALLOWED: &str = "DIAGNOSTIC_COMMAND_NOT_ALLOWED";
    /// Docker is not installed in the container.
    pub const DOCKER_NOT_AVAILABLE: &str = "DOCKER_NOT_AVAILABLE";
    /// The command ran and exited non-zero (stdout, stderr and exit code in `details`).
    pub const REMOTE_COMMAND_FAILED: &str = "REMOTE_COMMAND_FAILED";
    /// The command did not finish in time; it was stopped on the server.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// The TCP connection or SSH handshake failed.
    pub const SSH_CONNECTION_FAILED: &str = "SSH_CONNECTION_FAILED";
    /// The host key is not in known_hosts and not pinned.
    pub const SSH_HOST_KEY_UNKNOWN: &str = "SSH_HOST_KEY_UNKNOWN";
    /// The host key differs from the recorded or pinned one.
    pub const SSH_HOST_KEY_CHANGED: &str = "SSH_HOST_KEY_CHANGED";
    /// The server refused our key.
    pub const SSH_AUTH_FAILED: &str = "SSH_AUTH_FAILED";
    /// The private key file cannot be used (missing, unreadable, encrypted, unsupported).
    pub const SSH_KEY_UNUSABLE: &str = "SSH_KEY_UNUSABLE";
    /// A node name or address is not a valid host name or IP address.
    pub const SSH_INVALID_TARGET: &str = "SSH_INVALID_TARGET";
    /// The SSH channel failed after the connection was up.
    pub const SSH_CHANNEL_ERROR: &str = "SSH_CHANNEL_ERROR";
    /// A path, file name, binary or size broke a file/command tool's rules; nothing was run.
    pub const NODE_ACCESS_REFUSED: &str = "NODE_ACCESS_REFUSED";
    /// A node file operation was refused or failed on the node (symbolic link, missing file,
    /// permission).
    pub const REMOTE_FILE_ERROR: &str = "REMOTE_FILE_ERROR";
}

/// One host to run a command on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// Host name or IP address (validated with [`valid_host`]).
    pub host: String,
    /// SSH port.
    pub port: u16,
    /// Login user.
    pub user: String,
    /// Accept exactly this host key (`SHA256:…`) instead of consulting known_hosts.
    pub host_key_pin: Option<String>,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}@[{}]:{}", self.user, self.host, self.port)
        } else {
            write!(f, "{}@{}:{}", self.user, self.host, self.port)
        }
    }
}

/// Limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Wall time for the whole run (connect, execute, read); the command is stopped after it.
    pub timeout: Duration,
    /// Cap on stdout + stderr bytes; beyond it the command is stopped and `truncated` set.
    pub output_cap: usize,
}

impl RunOptions {
    /// The given timeout with the default output cap.
    pub fn with_timeout(timeout: Duration) -> RunOptions {
        RunOptions {
            timeout,
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }
}

/// What a command produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit status; `None` when the command was stopped (output cap) or died by a signal.
    pub exit_status: Option<u32>,
    /// Name of the signal that ended the command, when the server reported one.
    pub exit_signal: Option<String>,
    /// Standard output (lossy UTF-8).
    pub stdout: String,
    /// Standard error (lossy UTF-8).
    pub stderr: String,
    /// The output cap was reached: output is cut and the command was stopped.
    pub truncated: bool,
}

impl ExecOutput {
    /// Exit status 0.
    pub fn success(&self) -> bool {
        self.exit_status == Some(0)
    }
}

/// Runs one argv on one host.
pub trait Executor: Send + Sync + fmt::Debug {
    /// Runs `argv` on `target`. A non-zero exit is *not* an error here; an error means the
    /// command could not be run, was stopped by the timeout, or its channel broke.
    fn run<'a>(
        &'a self,
        target: &'a Target,
        argv: &'a [String],
        options: RunOptions,
    ) -> BoxFuture<'a, Result<ExecOutput, SshError>>;

    /// Runs one file operation over SFTP on `target` (no remote command line). Executors
    /// without SFTP refuse, which is the default.
    fn file<'a>(
        &'a self,
        target: &'a Target,
        op: &'a FileOp,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<FileOutcome, SshError>> {
        let _ = (op, timeout);
        Box::pin(async move {
            Err(SshError::Channel {
                target: target.to_string(),
                reason: "this executor has no SFTP".into(),
            })
        })
    }
}

/// Why a command could not be run (or finished).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SshError {
    /// TCP connect or SSH handshake failed.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// `user@host:port`.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The host key is neither in known_hosts nor pinned.
    #[error(
        "host key of {target} is not trusted: it offered {algorithm} key {fingerprint}, which is not in {known_hosts} and not pinned. Check the fingerprint on the host (`ssh-keygen -lf /etc/ssh/ssh_host_{key_file}_key.pub`), then pin it with PROXMOX_SSH_HOST_KEY_FINGERPRINT={fingerprint} (instance file: \"sshHostKeyFingerprint\") or add the host to {known_hosts} (e.g. `ssh-keyscan -p <port> <host> >> {known_hosts}` after checking the fingerprint). No command was run."
    )]
    HostKeyUnknown {
        /// `user@host:port`.
        target: String,
        /// Offered key, `SHA256:…`.
        fingerprint: String,
        /// Offered key algorithm, e.g. `ssh-ed25519`.
        algorithm: String,
        /// Short key file stem for the hint (`ed25519`, `rsa`, `ecdsa`).
        key_file: String,
        /// The known_hosts file consulted.
        known_hosts: String,
    },
    /// The host key differs from the one recorded or pinned.
    #[error(
        "HOST KEY CHANGED for {target}: it offered {fingerprint}, but {expected}. This may be an attack (man in the middle) or a reinstalled host; verify the host before updating the record. No command was run."
    )]
    HostKeyChanged {
        /// `user@host:port`.
        target: String,
        /// Offered key, `SHA256:…`.
        fingerprint: String,
        /// What was expected (pinned value or known_hosts line).
        expected: String,
    },
    /// known_hosts exists but cannot be read or parsed.
    #[error("cannot use the known_hosts file {path}: {reason}")]
    KnownHosts {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The server refused public-key authentication.
    #[error(
        "{target} refused public-key authentication for user {user} with the key {key_path}; add its public key to ~{user}/.ssh/authorized_keys on the host"
    )]
    AuthRefused {
        /// `user@host:port`.
        target: String,
        /// Login user.
        user: String,
        /// Private key used.
        key_path: String,
    },
    /// The private key file cannot be read or parsed.
    #[error("cannot use the SSH private key {path}: {reason}")]
    KeyUnreadable {
        /// The key file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The private key is protected by a passphrase.
    #[error(
        "the SSH private key {path} is encrypted with a passphrase; this server cannot prompt for it. Use a dedicated key without a passphrase, readable only by this user (chmod 600), e.g. `ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_ed25519_proxmox`"
    )]
    KeyEncrypted {
        /// The key file.
        path: String,
    },
    /// The run did not finish in time; the remote command was signalled and its channel closed.
    #[error("command on {target} timed out after {} ms and was stopped", after.as_millis())]
    Timeout {
        /// `user@host:port`.
        target: String,
        /// The limit.
        after: Duration,
    },
    /// The session channel failed after the connection was established.
    #[error("SSH channel to {target} failed: {reason}")]
    Channel {
        /// `user@host:port`.
        target: String,
        /// What failed.
        reason: String,
    },
    /// A host name or address is not valid (rejected before any connection).
    #[error("invalid SSH target {value:?}: {reason}")]
    InvalidTarget {
        /// The rejected value.
        value: String,
        /// Why.
        reason: String,
    },
    /// An argument cannot be passed safely (e.g. a NUL byte).
    #[error("argument cannot be sent over SSH: {0}")]
    InvalidArgument(String),
    /// A file operation was refused or failed on the node (SFTP).
    #[error("file operation on {target} failed: {reason}")]
    File {
        /// `user@host:port`.
        target: String,
        /// What the node answered or why it was refused.
        reason: String,
    },
}

impl SshError {
    /// Stable envelope code.
    pub fn code(&self) -> &'static str {
        match self {
            SshError::Connect { .. } => codes::SSH_CONNECTION_FAILED,
            SshError::HostKeyUnknown { .. } | SshError::KnownHosts { .. } => {
                codes::SSH_HOST_KEY_UNKNOWN
            }
            SshError::HostKeyChanged { .. } => codes::SSH_HOST_KEY_CHANGED,
            SshError::AuthRefused { .. } => codes::SSH_AUTH_FAILED,
            SshError::KeyUnreadable { .. } | SshError::KeyEncrypted { .. } => {
                codes::SSH_KEY_UNUSABLE
            }
            SshError::Timeout { .. } => codes::TIMEOUT,
            SshError::Channel { .. } => codes::SSH_CHANNEL_ERROR,
            SshError::InvalidTarget { .. } | SshError::InvalidArgument(_) => {
                codes::SSH_INVALID_TARGET
            }
            SshError::File { .. } => codes::REMOTE_FILE_ERROR,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            SshError::Connect { .. } => {
                "Check PROXMOX_SSH_HOST / sshHost and PROXMOX_SSH_PORT, that sshd runs on the node and that this machine can reach it (VPN, firewall)."
            }
            SshError::HostKeyUnknown { .. } => {
                "Host keys are never trusted on first use: pin the fingerprint or add the host to known_hosts, as the message says."
            }
            SshError::HostKeyChanged { .. } => {
                "Do not simply accept the new key: confirm on the node console that its host key changed, then update known_hosts or the pinned fingerprint."
            }
            SshError::KnownHosts { .. } => {
                "Fix or replace the known_hosts file (PROXMOX_SSH_KNOWN_HOSTS / sshKnownHostsPath)."
            }
            SshError::AuthRefused { .. } => {
                "Install the public key for the SSH user on the node, or set PROXMOX_SSH_USER / PROXMOX_SSH_KEY_PATH to a working pair."
            }
            SshError::KeyUnreadable { .. } | SshError::KeyEncrypted { .. } => {
                "Point PROXMOX_SSH_KEY_PATH / sshKeyPath at an unencrypted ed25519 or RSA private key in OpenSSH or PEM format."
            }
            SshError::Timeout { .. } => {
                "The command was stopped. Retry if the node was busy; long-running work does not belong in an MCP call."
            }
            SshError::Channel { .. } => "Retry; if it persists check the node's sshd logs.",
            SshError::InvalidTarget { .. } => {
                "Node names and addresses from the cluster must be plain host names or IP addresses; fix the node's address or set sshNodes.<node>.host."
            }
            SshError::InvalidArgument(_) => "Remove NUL characters from the arguments.",
            SshError::File { .. } => {
                "Nothing was changed unless the message says so. Give the real, absolute path of a regular file the SSH user may access."
            }
        };
        Some(hint.to_owned())
    }

    /// True when the failure happened before any command started, so trying another route
    /// cannot run the command twice. A changed host key is deliberately not in this set: it
    /// is reported, never routed around.
    pub fn before_command(&self) -> bool {
        matches!(
            self,
            SshError::Connect { .. }
                | SshError::HostKeyUnknown { .. }
                | SshError::AuthRefused { .. }
        )
    }
}

/// Settings the real executor needs besides the per-call [`Target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSettings {
    /// Private key (ed25519 or RSA, unencrypted).
    pub key_path: PathBuf,
    /// known_hosts file consulted when no fingerprint is pinned.
    pub known_hosts: PathBuf,
    /// Limit on the TCP connect + handshake.
    pub connect_timeout: Duration,
    /// Commands running at once across all hosts.
    pub max_concurrent: usize,
}

impl ClientSettings {
    /// Settings from the validated configuration; known_hosts defaults to `~/.ssh/known_hosts`.
    pub fn from_config(config: &crate::config::SshConfig, home: Option<&std::path::Path>) -> Self {
        let known_hosts = config.known_hosts.clone().unwrap_or_else(|| {
            home.map(|h| h.join(".ssh").join("known_hosts"))
                .unwrap_or_else(|| PathBuf::from(".ssh/known_hosts"))
        });
        ClientSettings {
            key_path: config.key_path.clone(),
            known_hosts,
            connect_timeout: Duration::from_secs(10),
            max_concurrent: 8,
        }
    }
}

/// Extra seconds the server-side deadline gives over the client timeout, so the client's
/// own timeout (which signals the command) normally fires first.
const SERVER_DEADLINE_MARGIN_SECS: u64 = 2;

/// Environment variable that tags a run so it can be found and stopped from another channel.
pub const RUN_TAG_VAR: &str = "NANDI_MCP_RUN";

/// Builds the command string sent in the SSH `exec` request for `argv`.
///
/// SSH hands this string to the login shell of the remote user, so a shell cannot be
/// avoided; every element is quoted by `shlex`. The argv is wrapped in coreutils `timeout`
/// so the command is stopped on the server at its deadline even when our connection is gone.
pub fn remote_command(argv: &[String], timeout: Duration) -> Result<String, SshError> {
    build_command(argv, timeout, None)
}

/// Like [`remote_command`], with `env NANDI_MCP_RUN=<tag>` after `timeout`, so the
/// `timeout` process (whose command line keeps the tag) can be signalled by [`stop_command`].
pub(crate) fn tagged_command(
    argv: &[String],
    timeout: Duration,
    tag: &str,
) -> Result<String, SshError> {
    build_command(argv, timeout, Some(tag))
}

/// The command that stops a tagged run: `SIGTERM` to its `timeout` process, which passes it
/// on to the whole command (and sends `SIGKILL` 2 s later). `exec` so `pkill` never matches
/// the shell that runs it.
pub(crate) fn stop_command(tag: &str) -> Result<String, SshError> {
    let pattern = format!("{RUN_TAG_VAR}={tag}");
    shlex::try_join(["exec", "pkill", "-TERM", "-f", "--", pattern.as_str()])
        .map_err(|e| SshError::InvalidArgument(e.to_string()))
}

fn build_command(
    argv: &[String],
    timeout: Duration,
    tag: Option<&str>,
) -> Result<String, SshError> {
    if argv.is_empty() {
        return Err(SshError::InvalidArgument("empty command".into()));
    }
    let secs = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    let deadline = (secs + SERVER_DEADLINE_MARGIN_SECS).to_string();
    let tag_word = tag.map(|t| format!("{RUN_TAG_VAR}={t}"));
    let mut words: Vec<&str> = vec!["exec", "timeout", "-k", "2", &deadline];
    if let Some(tag_word) = &tag_word {
        words.extend(["env", tag_word.as_str()]);
    }
    words.extend(argv.iter().map(String::as_str));
    shlex::try_join(words).map_err(|e| SshError::InvalidArgument(e.to_string()))
}

/// A host name (RFC 1123 labels) or an IP address. Refuses anything that could be read as
/// an option (`-…`) or contains spaces, shell metacharacters, `@`, `:` (outside IPv6) or `/`.
pub fn valid_host(value: &str) -> Result<(), SshError> {
    let fail = |reason: &str| {
        Err(SshError::InvalidTarget {
            value: value.to_owned(),
            reason: reason.to_owned(),
        })
    };
    if value.is_empty() || value.len() > 253 {
        return fail("must be 1 to 253 characters");
    }
    if value.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let host = value.strip_suffix('.').unwrap_or(value);
    for label in host.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return fail(
                "not a host name or IP address (letters, digits, inner hyphens and dots only)",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_plain_names_or_addresses() {
        for good in [
            "pve01",
            "pve-02.example.org",
            "10.0.0.5",
            "fe80::1",
            "node.",
        ] {
            assert!(valid_host(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-oProxyCommand=x",
            "a b",
            "a;touch x",
            "$(id)",
            "`id`",
            "host\nname",
            "user@host",
            "a/b",
            "-pve",
            "pve-",
            "a..b",
        ] {
            assert!(valid_host(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn remote_command_quotes_every_word() {
        let argv: Vec<String> = ["printf", "%s", "; touch /tmp/x", "$(id)", "a'b"]
            .map(String::from)
            .to_vec();
        let line = remote_command(&argv, Duration::from_millis(1500)).unwrap();
        assert!(line.starts_with("exec timeout -k 2 4 printf "), "{line}");
        let tagged = tagged_command(&argv, Duration::from_secs(3), "ab12").unwrap();
        let words = shlex::split(&tagged).unwrap();
        let head = [
            "exec",
            "timeout",
            "-k",
            "2",
            "5",
            "env",
            "NANDI_MCP_RUN=ab12",
            "printf",
        ];
        assert_eq!(words[..8], head);
        let stop = shlex::split(&stop_command("ab12").unwrap()).unwrap();
        assert_eq!(
            stop,
            ["exec", "pkill", "-TERM", "-f", "--", "NANDI_MCP_RUN=ab12"]
        );
        assert_eq!(
            shlex::split(&line).unwrap()[5..],
            argv[..],
            "round trip through a POSIX shell parser"
        );
        assert!(remote_command(&["a\0b".into()], Duration::from_secs(1)).is_err());
    }
}
