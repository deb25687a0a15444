//! Node routing: which SSH host serves a cluster node, and how a command gets there.
//!
//! A container's owning node comes from `/cluster/resources?type=vm` (entries of type
//! `lxc` only, asked on every call because containers migrate). The entry node — the one
//! `sshHost` points at — is served directly. Another node is reached directly at its
//! address (`sshNodes.<node>.host`, else its `ip` in `/cluster/status`, else its name) or
//! through a *hop*: a fixed `ssh` argv run on the entry node with the address as one
//! argv element. The route that worked is cached per node; the topology once per router.
//!
//! Invariants: an address or node name that is not a plain host name / IP is refused
//! before any connection (a spoofed API answer cannot smuggle options or shell syntax);
//! a command is never re-run — only a failure before the command started (connect,
//! unknown host key, refused authentication) moves on to the next route; an exit status,
//! including 255, is the command's answer.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex as StdMutex};

use serde_json::Value;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::{
    ExecOutput, Executor, FileOp, FileOutcome, RunOptions, SshError, Target, remote_command,
    valid_host,
};
use crate::config::{SshConfig, SshNodeOverride, SshStrategy};
use crate::pve::{self, ApiRequest, PveError, RetryPolicy};

/// How a command reached its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Our own SSH connection to the node.
    Direct,
    /// `ssh` run on the entry node towards the node.
    Hop,
}

impl Route {
    /// Wire form in results (`direct` / `hop`).
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Hop => "hop",
        }
    }
}

/// Why a routed command could not run.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The SSH layer failed.
    #[error(transparent)]
    Ssh(SshError),
    /// A Proxmox API lookup failed.
    #[error("Proxmox lookup failed: {0}")]
    Pve(PveError),
    /// No container with that id (or the id is a QEMU VM).
    #[error("{}", if *is_qemu { format!("{ctid} is a QEMU VM, not a container") } else { format!("no container with id {ctid} exists in this installation") })]
    GuestNotFound {
        /// The id asked for.
        ctid: u64,
        /// The id exists but is a QEMU VM.
        is_qemu: bool,
    },
}

impl From<SshError> for RouteError {
    fn from(e: SshError) -> Self {
        RouteError::Ssh(e)
    }
}

impl From<PveError> for RouteError {
    fn from(e: PveError) -> Self {
        RouteError::Pve(e)
    }
}

#[derive(Debug, Clone)]
struct TopologyNode {
    name: String,
    ip: Option<String>,
}

/// Routes commands to nodes over one [`Executor`]. One per process; caches are shared.
#[derive(Debug)]
pub struct Router {
    executor: Arc<dyn Executor>,
    entry: Target,
    strategy: SshStrategy,
    node_name: Option<String>,
    overrides: BTreeMap<String, SshNodeOverride>,
    topology: Mutex<Option<Vec<TopologyNode>>>,
    routes: StdMutex<HashMap<String, Route>>,
}

impl Router {
    /// A router for the validated SSH settings.
    pub fn new(executor: Arc<dyn Executor>, config: &SshConfig) -> Router {
        Router {
            executor,
            entry: Target {
                host: config.host.clone(),
                port: config.port,
                user: config.user.clone(),
                host_key_pin: config.host_key_fingerprint.clone(),
            },
            strategy: config.strategy,
            node_name: config.node_name.clone(),
            overrides: config.nodes.clone(),
            topology: Mutex::new(None),
            routes: StdMutex::new(HashMap::new()),
        }
    }

    /// The entry host (for diagnostics and messages).
    pub fn entry(&self) -> &Target {
        &self.entry
    }

    /// Runs `argv` on the entry host itself (not routed).
    pub async fn run_on_entry(
        &self,
        argv: &[String],
        options: RunOptions,
    ) -> Result<ExecOutput, SshError> {
        valid_host(&self.entry.host)?;
        self.executor.run(&self.entry, argv, options).await
    }

    /// The node that owns container `ctid`, from `/cluster/resources?type=vm`.
    pub async fn owning_node(
        &self,
        pve: &pve::Client,
        ctid: u64,
        cancel: &CancellationToken,
    ) -> Result<String, RouteError> {
        let resources = api_get(pve, "/cluster/resources", &[("type", "vm")], cancel).await?;
        let found = resources
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| vmid_of(r) == Some(ctid));
        let Some(found) = found else {
            return Err(RouteError::GuestNotFound {
                ctid,
                is_qemu: false,
            });
        };
        if found.get("type").and_then(Value::as_str) != Some("lxc") {
            return Err(RouteError::GuestNotFound {
                ctid,
                is_qemu: true,
            });
        }
        let node = found
            .get("node")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        valid_host(&node)?;
        Ok(node)
    }

    /// Runs `argv` on `node`, choosing the route as the module docs describe.
    pub async fn run_on_node(
        &self,
        pve: &pve::Client,
        node: &str,
        argv: &[String],
        options: RunOptions,
        cancel: &CancellationToken,
    ) -> Result<(ExecOutput, Route), RouteError> {
        valid_host(node)?;
        if self.is_entry(pve, node, cancel).await? {
            let target = self.target_for(node, self.entry.host.clone(), true);
            valid_host(&target.host)?;
            let output = self.executor.run(&target, argv, options).await?;
            return Ok((output, Route::Direct));
        }
        let address = self.address_of(pve, node, cancel).await?;
        valid_host(&address)?;
        let cached = self
            .routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(node)
            .copied();
        let routes: Vec<Route> = match (self.strategy, cached) {
            (SshStrategy::Direct, _) => vec![Route::Direct],
            (SshStrategy::Hop, _) => vec![Route::Hop],
            (_, Some(route)) => vec![route],
            _ => vec![Route::Direct, Route::Hop],
        };
        let mut last = None;
        for (i, route) in routes.iter().enumerate() {
            let result = match route {
                Route::Direct => {
                    let target = self.target_for(node, address.clone(), false);
                    self.executor.run(&target, argv, options).await
                }
                Route::Hop => {
                    let hop = hop_argv(&address, self.overrides.get(node), argv, options)?;
                    valid_host(&self.entry.host)?;
                    self.executor.run(&self.entry, &hop, options).await
                }
            };
            match result {
                Ok(output) => {
                    // A hop that exited 255 may not have reached the node: don't pin it.
                    if *route == Route::Direct || output.exit_status != Some(255) {
                        self.routes
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(node.to_owned(), *route);
                    }
                    return Ok((output, *route));
                }
                Err(e) if e.before_command() && i + 1 < routes.len() => {
                    tracing::info!(node, route = route.as_str(), error = %e, "route failed before the command started; trying the next route");
                    last = Some(e);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(last
            .unwrap_or(SshError::Channel {
                target: node.to_owned(),
                reason: "no route".into(),
            })
            .into())
    }

    /// Runs one SFTP file operation on `node`. SFTP needs our own connection to the node:
    /// the entry node, or another node reached directly (a hop runs a command line on the
    /// entry node, which file transfer must not), so the `hop` strategy refuses it.
    pub async fn file_on_node(
        &self,
        pve: &pve::Client,
        node: &str,
        op: &FileOp,
        timeout: std::time::Duration,
        cancel: &CancellationToken,
    ) -> Result<(FileOutcome, Route), RouteError> {
        valid_host(node)?;
        let target = if self.is_entry(pve, node, cancel).await? {
            self.target_for(node, self.entry.host.clone(), true)
        } else if self.strategy == SshStrategy::Hop {
            return Err(RouteError::Ssh(SshError::Connect {
                target: node.to_owned(),
                reason: "file transfer needs a direct SSH connection to the node, and sshStrategy is \"hop\"; set sshNodes.<node>.host or use the auto/direct strategy".into(),
            }));
        } else {
            let address = self.address_of(pve, node, cancel).await?;
            self.target_for(node, address, false)
        };
        valid_host(&target.host)?;
        let outcome = self.executor.file(&target, op, timeout).await?;
        Ok((outcome, Route::Direct))
    }

    fn target_for(&self, node: &str, host: String, entry: bool) -> Target {
        let over = self.overrides.get(node);
        Target {
            host,
            port: over.and_then(|o| o.port).unwrap_or(self.entry.port),
            user: over
                .and_then(|o| o.user.clone())
                .unwrap_or_else(|| self.entry.user.clone()),
            // The pinned fingerprint is the entry host's; other nodes use known_hosts.
            host_key_pin: if entry {
                self.entry.host_key_pin.clone()
            } else {
                None
            },
        }
    }

    async fn is_entry(
        &self,
        pve: &pve::Client,
        node: &str,
        cancel: &CancellationToken,
    ) -> Result<bool, RouteError> {
        if let Some(name) = &self.node_name {
            return Ok(name == node);
        }
        if self.entry.host == node {
            return Ok(true);
        }
        let topology = self.topology(pve, cancel).await?;
        if topology
            .iter()
            .any(|n| n.name == node && n.ip.as_deref() == Some(self.entry.host.as_str()))
        {
            return Ok(true);
        }
        Ok(topology.len() <= 1)
    }

    async fn address_of(
        &self,
        pve: &pve::Client,
        node: &str,
        cancel: &CancellationToken,
    ) -> Result<String, RouteError> {
        if let Some(over) = self.overrides.get(node) {
            return Ok(over.host.clone());
        }
        let topology = self.topology(pve, cancel).await?;
        Ok(topology
            .iter()
            .find(|n| n.name == node)
            .and_then(|n| n.ip.clone())
            .unwrap_or_else(|| node.to_owned()))
    }

    async fn topology(
        &self,
        pve: &pve::Client,
        cancel: &CancellationToken,
    ) -> Result<Vec<TopologyNode>, RouteError> {
        let mut cached = self.topology.lock().await;
        if let Some(nodes) = cached.as_ref() {
            return Ok(nodes.clone());
        }
        let status = api_get(pve, "/cluster/status", &[], cancel).await?;
        let nodes: Vec<TopologyNode> = status
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("node"))
            .filter_map(|e| {
                Some(TopologyNode {
                    name: e.get("name")?.as_str()?.to_owned(),
                    ip: e.get("ip").and_then(Value::as_str).map(str::to_owned),
                })
            })
            .collect();
        *cached = Some(nodes.clone());
        Ok(nodes)
    }
}

/// The argv run on the entry node to reach `address`: a fixed `ssh` invocation in batch
/// mode with strict host key checking (the cluster's shared known_hosts), the address as
/// its own argv element after `--`, and the node command quoted by `shlex` as the last
/// element. Nothing from the API is ever pasted into a shell string unquoted.
pub fn hop_argv(
    address: &str,
    over: Option<&SshNodeOverride>,
    argv: &[String],
    options: RunOptions,
) -> Result<Vec<String>, SshError> {
    valid_host(address)?;
    let mut hop: Vec<String> = [
        "ssh",
        "-o",
        "BatchMode=yes",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "ConnectTimeout=10",
        "-o",
        "LogLevel=ERROR",
    ]
    .map(String::from)
    .to_vec();
    if let Some(port) = over.and_then(|o| o.port) {
        hop.extend(["-p".to_owned(), port.to_string()]);
    }
    if let Some(user) = over.and_then(|o| o.user.as_deref()) {
        hop.extend(["-l".to_owned(), user.to_owned()]);
    }
    hop.extend(["--".to_owned(), address.to_owned()]);
    hop.push(remote_command(argv, options.timeout)?);
    Ok(hop)
}

fn vmid_of(resource: &Value) -> Option<u64> {
    match resource.get("vmid")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

async fn api_get(
    pve: &pve::Client,
    path: &str,
    params: &[(&str, &str)],
    cancel: &CancellationToken,
) -> Result<Value, PveError> {
    let request = ApiRequest {
        method: pve::Method::Get,
        path: path.to_owned(),
        params: params
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        timeout: pve::DEFAULT_TIMEOUT,
        retry: RetryPolicy::Reads,
    };
    pve.call(request, cancel).await.result
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn hop_keeps_the_address_and_command_as_single_elements() {
        let argv: Vec<String> = [
            "pct",
            "exec",
            "201",
            "--",
            "bash",
            "-lc",
            "echo $(id); rm x",
        ]
        .map(String::from)
        .to_vec();
        let options = RunOptions::with_timeout(Duration::from_secs(5));
        let hop = hop_argv("10.0.0.2", None, &argv, options).unwrap();
        let dash = hop.iter().position(|a| a == "--").unwrap();
        assert_eq!(hop[dash + 1], "10.0.0.2");
        assert_eq!(hop.len(), dash + 3);
        let inner = shlex::split(&hop[dash + 2]).unwrap();
        assert_eq!(inner[5..], argv[..]);
        for hostile in ["-oProxyCommand=touch /tmp/x", "a;b", "$(id)", "x y"] {
            assert!(
                hop_argv(hostile, None, &argv, options).is_err(),
                "{hostile}"
            );
        }
    }
}
