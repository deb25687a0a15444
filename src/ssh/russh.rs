//! The real [`Executor`]: an in-process SSH client on russh (ring crypto backend).
//!
//! One authenticated connection per `(host, port, user, pin)` is kept and reused; commands
//! on it are separate session channels, and a semaphore caps how many run at once. Each run
//! has a deadline: when it passes (or the caller drops the call) the remote command gets
//! `SIGTERM` — through an SSH `signal` request and, because sshd refuses those for root
//! sessions, by `pkill` of its run tag from a second channel — and its channel is closed.
//! The command itself runs under coreutils `timeout`, so it ends on the server even if we
//! are gone. Invariant: the server's host key is verified *before* authentication and before
//! any channel is opened; an untrusted key ends the connection attempt.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rand::Rng;
use russh::client::{self, Handle, Msg};
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh::{Channel, ChannelMsg, Sig};
use tokio::sync::{Mutex, Semaphore};

use super::sftp::{self, FileOp, FileOutcome};
use super::{ClientSettings, ExecOutput, Executor, RunOptions, SshError, Target, hostkey};

type Connection = Arc<Handle<Verifier>>;

/// The russh-backed executor. Cheap to share behind an `Arc`.
pub struct RusshExecutor {
    settings: ClientSettings,
    config: Arc<client::Config>,
    pool: StdMutex<HashMap<Target, Arc<Mutex<Option<Connection>>>>>,
    limit: Arc<Semaphore>,
}

impl std::fmt::Debug for RusshExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RusshExecutor")
            .field("key_path", &self.settings.key_path)
            .field("known_hosts", &self.settings.known_hosts)
            .field("max_concurrent", &self.settings.max_concurrent)
            .finish_non_exhaustive()
    }
}

impl RusshExecutor {
    /// An executor with no open connection yet (start-up does no I/O).
    pub fn new(settings: ClientSettings) -> RusshExecutor {
        let config = client::Config {
            // Idle pooled connections are dropped by the server or by us after this.
            inactivity_timeout: Some(Duration::from_secs(300)),
            keepalive_interval: Some(Duration::from_secs(15)),
            keepalive_max: 2,
            nodelay: true,
            ..client::Config::default()
        };
        RusshExecutor {
            limit: Arc::new(Semaphore::new(settings.max_concurrent.max(1))),
            settings,
            config: Arc::new(config),
            pool: StdMutex::new(HashMap::new()),
        }
    }

    /// Reads the private key: a clear error for a missing, unreadable, encrypted or
    /// unsupported key (so `doctor`/start-up can report it before any call).
    pub fn load_key(path: &Path) -> Result<PrivateKey, SshError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SshError::KeyUnreadable {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        if text.contains("ENCRYPTED") {
            // PEM `Proc-Type: 4,ENCRYPTED` and PKCS#8 `ENCRYPTED PRIVATE KEY`.
            return Err(SshError::KeyEncrypted { path: shown });
        }
        match russh::keys::decode_secret_key(&text, None) {
            Ok(key) if key.is_encrypted() => Err(SshError::KeyEncrypted { path: shown }),
            Ok(key) => Ok(key),
            Err(russh::keys::Error::KeyIsEncrypted) => Err(SshError::KeyEncrypted { path: shown }),
            Err(e) => Err(SshError::KeyUnreadable {
                path: shown,
                reason: format!(
                    "not a supported private key (ed25519 or RSA, OpenSSH or PEM format): {e}"
                ),
            }),
        }
    }

    fn slot(&self, target: &Target) -> Arc<Mutex<Option<Connection>>> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.entry(target.clone()).or_default().clone()
    }

    /// A live authenticated connection to `target`, reusing the pooled one when it is open.
    async fn connection(&self, target: &Target, fresh: bool) -> Result<Connection, SshError> {
        let slot = self.slot(target);
        let mut guard = slot.lock().await;
        if let Some(conn) = guard.as_ref().filter(|c| !fresh && !c.is_closed()) {
            return Ok(conn.clone());
        }
        *guard = None;
        let conn = Arc::new(self.connect(target).await?);
        *guard = Some(conn.clone());
        Ok(conn)
    }

    async fn connect(&self, target: &Target) -> Result<Handle<Verifier>, SshError> {
        let key = Self::load_key(&self.settings.key_path)?;
        let verdict = Arc::new(StdMutex::new(None));
        let verifier = Verifier {
            target: target.clone(),
            known_hosts: self.settings.known_hosts.clone(),
            verdict: verdict.clone(),
        };
        let shown = target.to_string();
        let connect = client::connect(
            self.config.clone(),
            (target.host.as_str(), target.port),
            verifier,
        );
        let connected = tokio::time::timeout(self.settings.connect_timeout, connect).await;
        let mut handle = match connected {
            Err(_) => {
                return Err(SshError::Connect {
                    target: shown,
                    reason: format!(
                        "no SSH handshake within {} s",
                        self.settings.connect_timeout.as_secs()
                    ),
                });
            }
            Ok(Err(e)) => {
                let rejected = verdict.lock().unwrap_or_else(|p| p.into_inner()).take();
                return Err(rejected.unwrap_or(SshError::Connect {
                    target: shown,
                    reason: e.to_string(),
                }));
            }
            Ok(Ok(handle)) => handle,
        };
        let hash = if key.algorithm().is_rsa() {
            // rsa-sha2-512/256 when the server announces them; never the SHA-1 `ssh-rsa`.
            let best = tokio::time::timeout(
                self.settings.connect_timeout,
                handle.best_supported_rsa_hash(),
            )
            .await;
            best.ok()
                .and_then(Result::ok)
                .flatten()
                .flatten()
                .or(Some(HashAlg::Sha256))
        } else {
            None
        };
        let auth = handle.authenticate_publickey(
            target.user.clone(),
            PrivateKeyWithHashAlg::new(Arc::new(key), hash),
        );
        let result = tokio::time::timeout(self.settings.connect_timeout, auth)
            .await
            .map_err(|_| SshError::Connect {
                target: shown.clone(),
                reason: "authentication did not finish in time".into(),
            })?
            .map_err(|e| SshError::Connect {
                target: shown.clone(),
                reason: e.to_string(),
            })?;
        if !result.success() {
            return Err(SshError::AuthRefused {
                target: shown,
                user: target.user.clone(),
                key_path: self.settings.key_path.display().to_string(),
            });
        }
        tracing::debug!(target = %target, "SSH connection established");
        Ok(handle)
    }

    /// Opens a session channel, reconnecting once if the pooled connection has died (safe:
    /// nothing has been executed yet).
    async fn open_channel(&self, target: &Target) -> Result<(Connection, Channel<Msg>), SshError> {
        let conn = self.connection(target, false).await?;
        match conn.channel_open_session().await {
            Ok(channel) => Ok((conn, channel)),
            Err(first) => {
                tracing::debug!(target = %target, error = %first, "pooled SSH connection unusable; reconnecting");
                let conn = self.connection(target, true).await?;
                let channel = conn
                    .channel_open_session()
                    .await
                    .map_err(|e| SshError::Channel {
                        target: target.to_string(),
                        reason: e.to_string(),
                    })?;
                Ok((conn, channel))
            }
        }
    }

    async fn run_inner(
        &self,
        target: &Target,
        argv: &[String],
        options: RunOptions,
    ) -> Result<ExecOutput, SshError> {
        let tag = format!("{:016x}", rand::rng().random::<u64>());
        let command = super::tagged_command(argv, options.timeout, &tag)?;
        let _permit = self.limit.acquire().await.map_err(|e| SshError::Channel {
            target: target.to_string(),
            reason: e.to_string(),
        })?;
        let deadline = tokio::time::Instant::now() + options.timeout;
        let timed_out = || SshError::Timeout {
            target: target.to_string(),
            after: options.timeout,
        };
        let (conn, channel) = tokio::time::timeout_at(deadline, self.open_channel(target))
            .await
            .map_err(|_| timed_out())??;
        let mut running = Running(Some(Run { conn, channel, tag }));
        let outcome = match running.0.as_mut().map(|run| &mut run.channel) {
            Some(channel) => {
                tokio::time::timeout_at(
                    deadline,
                    collect(channel, &command, options.output_cap, target),
                )
                .await
            }
            None => Ok(Err(SshError::Channel {
                target: target.to_string(),
                reason: "channel lost".into(),
            })),
        };
        match outcome {
            Ok(Ok(output)) => {
                if output.truncated {
                    running.stop().await;
                } else {
                    running.0 = None;
                }
                Ok(output)
            }
            Ok(Err(e)) => {
                running.stop().await;
                Err(e)
            }
            Err(_) => {
                tracing::warn!(target = %target, "SSH command timed out; signalling and closing its channel");
                running.stop().await;
                Err(timed_out())
            }
        }
    }
}

impl RusshExecutor {
    /// One SFTP session on a pooled connection: the `sftp` subsystem, the checked operation
    /// (`sftp::run`), close; all within `timeout`.
    async fn file_inner(
        &self,
        target: &Target,
        op: &FileOp,
        timeout: Duration,
    ) -> Result<FileOutcome, SshError> {
        let _permit = self.limit.acquire().await.map_err(|e| SshError::Channel {
            target: target.to_string(),
            reason: e.to_string(),
        })?;
        let channel_error = |reason: String| SshError::Channel {
            target: target.to_string(),
            reason,
        };
        let work = async {
            let (_conn, channel) = self.open_channel(target).await?;
            channel
                .request_subsystem(true, "sftp")
                .await
                .map_err(|e| channel_error(format!("the sftp subsystem was refused: {e}")))?;
            let session = russh_sftp::client::SftpSession::new(channel.into_stream())
                .await
                .map_err(|e| channel_error(format!("the sftp subsystem did not start: {e}")))?;
            let outcome = sftp::run(&session, op).await;
            let _ = session.close().await;
            outcome.map_err(|e| SshError::File {
                target: target.to_string(),
                reason: e.0,
            })
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| SshError::Timeout {
                target: target.to_string(),
                after: timeout,
            })?
    }
}

impl Executor for RusshExecutor {
    fn run<'a>(
        &'a self,
        target: &'a Target,
        argv: &'a [String],
        options: RunOptions,
    ) -> BoxFuture<'a, Result<ExecOutput, SshError>> {
        Box::pin(self.run_inner(target, argv, options))
    }

    fn file<'a>(
        &'a self,
        target: &'a Target,
        op: &'a FileOp,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<FileOutcome, SshError>> {
        Box::pin(self.file_inner(target, op, timeout))
    }
}

/// Sends the exec request and reads until the channel closes or the cap is reached.
async fn collect(
    channel: &mut Channel<Msg>,
    command: &str,
    cap: usize,
    target: &Target,
) -> Result<ExecOutput, SshError> {
    let channel_error = |reason: String| SshError::Channel {
        target: target.to_string(),
        reason,
    };
    channel
        .exec(true, command.as_bytes())
        .await
        .map_err(|e| channel_error(e.to_string()))?;
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut output = ExecOutput::default();
    while let Some(message) = channel.wait().await {
        let (is_stderr, data) = match message {
            ChannelMsg::Data { data } => (false, data),
            ChannelMsg::ExtendedData { data, ext: 1 } => (true, data),
            ChannelMsg::ExitStatus { exit_status } => {
                output.exit_status = Some(exit_status);
                continue;
            }
            ChannelMsg::ExitSignal { signal_name, .. } => {
                output.exit_signal = Some(format!("{signal_name:?}"));
                continue;
            }
            ChannelMsg::Failure => {
                return Err(channel_error(
                    "the server refused to execute the command".into(),
                ));
            }
            ChannelMsg::Close => break,
            _ => continue,
        };
        let room = cap.saturating_sub(stdout.len() + stderr.len());
        let buffer = if is_stderr { &mut stderr } else { &mut stdout };
        if data.len() > room {
            buffer.extend_from_slice(&data[..room]);
            output.truncated = true;
            output.exit_status = None;
            break;
        }
        buffer.extend_from_slice(&data);
    }
    output.stdout = String::from_utf8_lossy(&stdout).into_owned();
    output.stderr = String::from_utf8_lossy(&stderr).into_owned();
    Ok(output)
}

/// A command that may still be running on the server.
struct Run {
    conn: Connection,
    channel: Channel<Msg>,
    tag: String,
}

/// Owns a [`Run`] until it finished; stopping it (or dropping it mid-run, e.g. when the
/// client cancels the call) stops the remote command.
struct Running(Option<Run>);

impl Running {
    async fn stop(&mut self) {
        if let Some(run) = self.0.take() {
            stop_run(run).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(run) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(stop_run(run));
        }
    }
}

/// How long stopping a run may take before we give up on it (its server-side deadline
/// still ends it).
const STOP_LIMIT: Duration = Duration::from_secs(5);

async fn stop_run(run: Run) {
    let Run { conn, channel, tag } = run;
    // sshd delivers `signal` requests with killpg() — but refuses them for root sessions,
    // so the tagged `timeout` process is also signalled from a second channel.
    let _ = channel.signal(Sig::TERM).await;
    let stop = async {
        let command = super::stop_command(&tag).ok()?;
        let mut killer = conn.channel_open_session().await.ok()?;
        killer.exec(true, command.as_bytes()).await.ok()?;
        while let Some(message) = killer.wait().await {
            if matches!(message, ChannelMsg::Close) {
                break;
            }
        }
        Some(())
    };
    if tokio::time::timeout(STOP_LIMIT, stop).await.is_err() {
        tracing::warn!(
            "could not signal a stopped SSH command in time; its server-side deadline ends it"
        );
    }
    let _ = channel.eof().await;
    let _ = channel.close().await;
}

/// russh callback object: checks the server key against the policy for this target.
pub struct Verifier {
    target: Target,
    known_hosts: PathBuf,
    /// Why the key was refused, read back after `connect` fails.
    verdict: Arc<StdMutex<Option<SshError>>>,
}

impl client::Handler for Verifier {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_public_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let result = match server_public_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => {
                hostkey::verify(&self.target, key, &self.known_hosts)
            }
            PublicKeyOrCertificate::Certificate(cert) => Err(SshError::Connect {
                target: self.target.to_string(),
                reason: format!(
                    "the server presented a host certificate ({}); only plain host keys are verified",
                    cert.algorithm().as_str()
                ),
            }),
        };
        match result {
            Ok(()) => Ok(true),
            Err(refusal) => {
                tracing::warn!(target = %self.target, error = %refusal, "SSH host key refused");
                *self.verdict.lock().unwrap_or_else(|p| p.into_inner()) = Some(refusal);
                Ok(false)
            }
        }
    }
}
