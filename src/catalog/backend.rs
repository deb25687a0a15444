//! How a catalog row reaches Proxmox: a REST request, a per-node list, an SSH operation or a
//! composite handler, and the endpoints and commands each one stands for.
//!
//! Invariants: everything here is `Copy` and `const`, so rows stay static data; a composite
//! operation lists every endpoint its handler may request ([`CompositeOp::reaches`]), which the
//! privilege tables are built from; the SSH operations are fixed argv templates (`ssh::ops`), and
//! only the ones that run a caller's program say so ([`SshOp::runs_callers_program`]).

use std::fmt;

/// HTTP method of a REST backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Delete,
}

impl HttpMethod {
    /// Upper-case method name as in the PVE API schema.
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
        }
    }

    /// The method as listings show a PBS row's (`PBS GET`, …).
    pub const fn pbs_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "PBS GET",
            HttpMethod::Post => "PBS POST",
            HttpMethod::Put => "PBS PUT",
            HttpMethod::Delete => "PBS DELETE",
        }
    }

    /// GET and DELETE carry parameters in the query string; POST and PUT in a form body.
    pub const fn uses_query(self) -> bool {
        matches!(self, HttpMethod::Get | HttpMethod::Delete)
    }
}

impl fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a tool reaches Proxmox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One REST request; `path` is relative to `/api2/json` with `{param}` placeholders.
    Rest {
        /// HTTP method.
        method: HttpMethod,
        /// Path template, e.g. `/nodes/{node}/qemu/{vmid}/status/current`.
        path: &'static str,
    },
    /// Legacy multi-node list: `GET path` for the given node, or for every node of
    /// `GET /nodes` when `node` is omitted, results concatenated.
    PerNodeList {
        /// Path template containing `{node}`.
        path: &'static str,
    },
    /// One REST request to a Proxmox Backup Server (the call's `pbs` argument names which);
    /// `path` is relative to PBS's `/api2/json`, classified by PBS's own schema.
    Pbs {
        /// HTTP method.
        method: HttpMethod,
        /// Path template, e.g. `/admin/datastore/{store}/snapshots`.
        path: &'static str,
    },
    /// A command run over SSH from a fixed argv template (see `ssh::ops`).
    Ssh(SshOp),
    /// Several requests (or a guarded one) composed by a handler in `composite`.
    Composite(CompositeOp),
}

/// The composite operations; each is one handler in `composite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompositeOp {
    /// Guest-agent diagnosis: config flag, status, ping, info → findings.
    QemuAgentDiagnose,
    /// Boot diagnosis: config, status, boot order, agent, cloud-init → findings.
    QemuBootDiagnose,
    /// Guest-agent exec of an argv, followed through `agent/exec-status` to its output.
    QemuGuestExec,
    /// Cluster inventory from a few cluster-wide reads.
    InventoryOverview,
    /// Per guest, its newest backup on each backup storage, age and verify state.
    BackupHealth,
    /// What this server can do here: tools, SSH, PVE version, the token's permissions.
    Capabilities,
    /// Download-to-storage behind the address guard.
    DownloadToStorage,
    /// A generic API call checked against the cluster's own API schema.
    ApiCall,
    /// Follow a Proxmox task to its end.
    WaitTask,
    /// Every configured cluster's inventory, in parallel (several clusters only).
    ClustersOverview,
    /// The undo records of recorded changes (`undo`), newest first.
    ListChanges,
    /// Revert one recorded change, planned and checked before the gate.
    UndoChange,
    /// The caller's live leases (approvals a person granted for a while).
    ListLeases,
    /// The built-in plan: a template becomes a reachable guest, step by step under one
    /// approval (`pipeline::plan`); each step is a row of its own.
    ProvisionQemu,
    /// A plan of the caller's steps, each a row of its own, under one approval.
    ApplyPlan,
}

impl CompositeOp {
    /// The API endpoints (schema templates) the handler's requests reach, for privilege
    /// tables (`bootstrap`, `doctor permissions`). The generic call reaches whatever the
    /// caller names, so it lists none.
    pub const fn reaches(self) -> &'static [(HttpMethod, &'static str)] {
        use HttpMethod::{Delete, Get, Post, Put};
        match self {
            CompositeOp::QemuAgentDiagnose => &[
                (Get, "/nodes/{node}/qemu/{vmid}/config"),
                (Get, "/nodes/{node}/qemu/{vmid}/status/current"),
                (Post, "/nodes/{node}/qemu/{vmid}/agent/ping"),
                (Get, "/nodes/{node}/qemu/{vmid}/agent/info"),
            ],
            CompositeOp::QemuBootDiagnose => &[
                (Get, "/nodes/{node}/qemu/{vmid}/config"),
                (Get, "/nodes/{node}/qemu/{vmid}/status/current"),
                (Post, "/nodes/{node}/qemu/{vmid}/agent/ping"),
                (Get, "/nodes/{node}/qemu/{vmid}/cloudinit/dump"),
            ],
            CompositeOp::QemuGuestExec => &[
                (Post, "/nodes/{node}/qemu/{vmid}/agent/exec"),
                (Get, "/nodes/{node}/qemu/{vmid}/agent/exec-status"),
            ],
            CompositeOp::InventoryOverview | CompositeOp::ClustersOverview => &[
                (Get, "/cluster/resources"),
                (Get, "/version"),
                (Get, "/cluster/status"),
            ],
            CompositeOp::Capabilities => &[(Get, "/version"), (Get, "/access/permissions")],
            CompositeOp::BackupHealth => &[
                (Get, "/cluster/resources"),
                (Get, "/nodes/{node}/storage/{storage}/content"),
            ],
            CompositeOp::DownloadToStorage => {
                &[(Post, "/nodes/{node}/storage/{storage}/download-url")]
            }
            // Whatever its steps' rows reach; each step's privileges are its own row's.
            CompositeOp::ApiCall | CompositeOp::ApplyPlan => &[],
            CompositeOp::WaitTask => &[
                (Get, "/nodes/{node}/tasks/{upid}/status"),
                (Get, "/nodes/{node}/tasks/{upid}/log"),
            ],
            CompositeOp::ListChanges | CompositeOp::ListLeases => &[],
            // Every step's endpoint, and what a rollback sends (a stop, the clone's removal).
            CompositeOp::ProvisionQemu => &[
                (Get, "/cluster/nextid"),
                (Post, "/nodes/{node}/qemu/{vmid}/clone"),
                (Put, "/nodes/{node}/qemu/{vmid}/resize"),
                (Put, "/nodes/{node}/qemu/{vmid}/config"),
                (Post, "/nodes/{node}/qemu/{vmid}/status/start"),
                (
                    Get,
                    "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces",
                ),
                (Get, "/nodes/{node}/tasks/{upid}/status"),
                (Get, "/nodes/{node}/tasks/{upid}/log"),
                (Get, "/nodes/{node}/qemu/{vmid}/status/current"),
                (Post, "/nodes/{node}/qemu/{vmid}/status/stop"),
                (Delete, "/nodes/{node}/qemu/{vmid}"),
            ],
            // What a revert may read and send; which ones depends on the record.
            CompositeOp::UndoChange => &[
                (Get, "/nodes/{node}/qemu/{vmid}/config"),
                (Put, "/nodes/{node}/qemu/{vmid}/config"),
                (Get, "/nodes/{node}/lxc/{vmid}/config"),
                (Put, "/nodes/{node}/lxc/{vmid}/config"),
                (Get, "/nodes/{node}/qemu/{vmid}/status/current"),
                (Post, "/nodes/{node}/qemu/{vmid}/status/start"),
                (Post, "/nodes/{node}/qemu/{vmid}/status/shutdown"),
                (Post, "/nodes/{node}/qemu/{vmid}/status/suspend"),
                (Post, "/nodes/{node}/qemu/{vmid}/status/resume"),
                (Get, "/nodes/{node}/lxc/{vmid}/status/current"),
                (Post, "/nodes/{node}/lxc/{vmid}/status/start"),
                (Post, "/nodes/{node}/lxc/{vmid}/status/shutdown"),
                (Post, "/nodes/{node}/lxc/{vmid}/status/suspend"),
                (Post, "/nodes/{node}/lxc/{vmid}/status/resume"),
                (Get, "/nodes/{node}/qemu/{vmid}/snapshot"),
                (Delete, "/nodes/{node}/qemu/{vmid}/snapshot/{snapname}"),
                (Get, "/nodes/{node}/lxc/{vmid}/snapshot"),
                (Delete, "/nodes/{node}/lxc/{vmid}/snapshot/{snapname}"),
                (Delete, "/nodes/{node}/qemu/{vmid}"),
                (Delete, "/nodes/{node}/lxc/{vmid}"),
                (Get, "/pools"),
                (Put, "/pools"),
                (Get, "/nodes/{node}/storage/{storage}/content"),
                (Delete, "/nodes/{node}/storage/{storage}/content/{volume}"),
            ],
        }
    }

    /// Short description of what the handler requests, for docs and `tools` listings.
    pub const fn describe(self) -> &'static str {
        match self {
            CompositeOp::QemuAgentDiagnose => "config + status + agent ping/info",
            CompositeOp::QemuBootDiagnose => "config + status + agent + cloud-init dumps",
            CompositeOp::QemuGuestExec => "agent/exec then agent/exec-status until exited",
            CompositeOp::InventoryOverview => "/cluster/resources + /version + /cluster/status",
            CompositeOp::BackupHealth => "/cluster/resources + each backup storage's content",
            CompositeOp::Capabilities => "registry + SSH probe + /version + /access/permissions",
            CompositeOp::DownloadToStorage => "address guard, then storage download-url",
            CompositeOp::ApiCall => "checked against the cluster's apidata.js, then the call",
            CompositeOp::WaitTask => "task status + log until stopped",
            CompositeOp::ClustersOverview => {
                "the inventory of every configured cluster, in parallel"
            }
            CompositeOp::ListChanges => "the undo records beside the audit log",
            CompositeOp::ListLeases => "the leases held in this server process",
            CompositeOp::UndoChange => "record checked against Proxmox, then its revert",
            CompositeOp::ProvisionQemu => {
                "clone, grow, configure, start, agent wait — each step its own row, one approval"
            }
            CompositeOp::ApplyPlan => "the caller's steps, each its own row, one approval",
        }
    }
}

/// The SSH-backed operations; each maps to one fixed argv template in `ssh::ops`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SshOp {
    /// One allow-listed diagnostic command inside a container.
    RemoteDiagnostic,
    /// Four fixed checks on the SSH entry host.
    BatchDiagnostics,
    /// An arbitrary shell command inside a container (confirm-gated).
    ExecInContainer,
    /// `docker ps` inside a container.
    DockerPs,
    /// `docker logs --tail N <name>` inside a container.
    DockerLogs,
    /// A shell command on a node (confirm-gated, output capped).
    NodeShellRun,
    /// An argv for an allow-listed Proxmox CLI on a node (no shell of ours).
    CliRun,
    /// Read a file on a node over SFTP (size-capped).
    NodeFileRead,
    /// Write a file on a node over SFTP (size-capped, confirm-gated).
    NodeFileWrite,
    /// Read a snippet of a storage's `snippets/` directory over SFTP.
    SnippetGet,
    /// Write a snippet into a storage's `snippets/` directory over SFTP.
    SnippetPut,
    /// Remove a snippet from a storage's `snippets/` directory over SFTP.
    SnippetDelete,
}

impl SshOp {
    /// What the operation is, for the effects classifier: a fixed diagnostic, a command the
    /// caller chose, or a file read/write/removal.
    pub const fn effect_kind(self) -> crate::effects::SshKind {
        use crate::effects::SshKind;
        match self {
            SshOp::BatchDiagnostics => SshKind::Diagnostic,
            // Allow-listed or not, a program started inside a guest is execution there.
            SshOp::RemoteDiagnostic
            | SshOp::DockerPs
            | SshOp::DockerLogs
            | SshOp::ExecInContainer
            | SshOp::NodeShellRun
            | SshOp::CliRun => SshKind::Command,
            SshOp::NodeFileRead | SshOp::SnippetGet => SshKind::FileRead,
            SshOp::NodeFileWrite | SshOp::SnippetPut => SshKind::FileWrite,
            SshOp::SnippetDelete => SshKind::FileRemove,
        }
    }

    /// Whether the operation runs a program the caller chooses (a shell command, an argv),
    /// which reaches whatever that program can: MCP `openWorldHint`. A fixed or
    /// allow-listed command (`docker ps`, the diagnostics) does not.
    pub const fn runs_callers_program(self) -> bool {
        matches!(
            self,
            SshOp::ExecInContainer | SshOp::NodeShellRun | SshOp::CliRun
        )
    }

    /// Short description of the remote command, for docs and `tools` listings.
    pub const fn describe(self) -> &'static str {
        match self {
            SshOp::RemoteDiagnostic => "pct exec <ctid> -- bash -lc <allow-listed command>",
            SshOp::BatchDiagnostics => "4 fixed checks on the SSH entry host",
            SshOp::ExecInContainer => "pct exec <ctid> -- bash -lc <command>",
            SshOp::DockerPs => "pct exec <ctid> -- bash -lc 'docker ps'",
            SshOp::DockerLogs => "pct exec <ctid> -- bash -lc 'docker logs --tail <n> <name>'",
            SshOp::NodeShellRun => "bash -c <command> on the node",
            SshOp::CliRun => {
                "<pvesh|qm|pct|pvesm|pveum|pvenode|pvecm|pveceph|pvesr|vzdump> <args…>"
            }
            SshOp::NodeFileRead => "SFTP read of <path> (lstat + realpath checked)",
            SshOp::NodeFileWrite => "SFTP write of <path> (lstat + realpath checked)",
            SshOp::SnippetGet => "SFTP read of <storage path>/snippets/<name>",
            SshOp::SnippetPut => "SFTP write of <storage path>/snippets/<name>",
            SshOp::SnippetDelete => "SFTP remove of <storage path>/snippets/<name>",
        }
    }
}

impl Backend {
    /// Whether this backend runs a program the caller chooses: the SSH command tools
    /// ([`SshOp::runs_callers_program`]) and the guest-agent exec.
    pub const fn runs_callers_program(self) -> bool {
        match self {
            Backend::Ssh(op) => op.runs_callers_program(),
            Backend::Composite(op) => matches!(op, CompositeOp::QemuGuestExec),
            _ => false,
        }
    }

    /// The REST method and path template this backend requests (for docs and checks);
    /// `None` for SSH-backed tools.
    pub const fn method_and_path(self) -> Option<(HttpMethod, &'static str)> {
        match self {
            Backend::Rest { method, path } => Some((method, path)),
            Backend::PerNodeList { path } => Some((HttpMethod::Get, path)),
            Backend::Pbs { .. } | Backend::Ssh(_) | Backend::Composite(_) => None,
        }
    }

    /// `(method, target)` for listings: the REST method and path, or `SSH` and the command.
    pub const fn summary(self) -> (&'static str, &'static str) {
        match self {
            Backend::Rest { method, path } => (method.as_str(), path),
            Backend::PerNodeList { path } => ("GET", path),
            Backend::Pbs { method, path } => (method.pbs_str(), path),
            Backend::Ssh(op) => ("SSH", op.describe()),
            Backend::Composite(op) => ("COMPOSITE", op.describe()),
        }
    }

    /// Whether the tool runs over SSH (and so exists only when SSH is configured).
    pub const fn is_ssh(self) -> bool {
        matches!(self, Backend::Ssh(_))
    }

    /// Whether the tool asks a Proxmox Backup Server (and so exists only where one is
    /// configured).
    pub const fn is_pbs(self) -> bool {
        matches!(self, Backend::Pbs { .. })
    }

    /// The PBS method and path template, for PBS rows.
    pub const fn pbs_method_and_path(self) -> Option<(HttpMethod, &'static str)> {
        match self {
            Backend::Pbs { method, path } => Some((method, path)),
            _ => None,
        }
    }
}

/// Shorthand for a GET backend.
pub const fn get(path: &'static str) -> Backend {
    Backend::Rest {
        method: HttpMethod::Get,
        path,
    }
}

/// Shorthand for a POST backend.
pub const fn post(path: &'static str) -> Backend {
    Backend::Rest {
        method: HttpMethod::Post,
        path,
    }
}

/// Shorthand for a DELETE backend.
pub const fn delete(path: &'static str) -> Backend {
    Backend::Rest {
        method: HttpMethod::Delete,
        path,
    }
}

/// Shorthand for a PUT backend.
pub const fn put(path: &'static str) -> Backend {
    Backend::Rest {
        method: HttpMethod::Put,
        path,
    }
}

/// Shorthand for a PBS backend.
pub const fn pbs(method: HttpMethod, path: &'static str) -> Backend {
    Backend::Pbs { method, path }
}
