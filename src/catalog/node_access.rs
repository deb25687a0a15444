//! Node access over SSH: a shell command, an allow-listed Proxmox CLI argv, node files and
//! cloud-init snippets (SFTP).
//!
//! Invariant: every row here executes commands or reads/writes node files, so every row is
//! tier `full` and module `advanced` (none is listed with default settings), and every row
//! that executes or writes is `confirm: true` and destructive. The rows exist in the
//! registry only when SSH is configured; their inputs are `Location::Argument`, checked and
//! placed by `ssh::node_ops` (argv elements or SFTP paths, never shell text of ours).

use super::params::{NODE_PATTERN, STORAGE_PATTERN};
use super::types::{
    Backend, Category, Effect, Legs, Module, Param, ParamKind, SshOp, Tier, ToolSpec,
};

const EXECUTES: Effect = Effect::Write {
    destructive: true,
    idempotent: false,
};

const NODE: Param = Param::arg("node", ParamKind::String, "Node name.")
    .required()
    .pattern(NODE_PATTERN, 63);

const STORAGE: Param = Param::arg(
    "storage",
    ParamKind::String,
    "File-based storage whose content includes snippets, e.g. local.",
)
.required()
.pattern(STORAGE_PATTERN, 100);

const SNIPPET: Param = Param::arg(
    "name",
    ParamKind::String,
    "Snippet file name inside <storage path>/snippets/, e.g. user-data.yaml.",
)
.required()
.pattern("^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", 128);

const PATH: Param = Param::arg(
    "path",
    ParamKind::String,
    "Absolute, normalised path of a regular file on the node (no .., no symlinks).",
)
.required()
.pattern("^/.*$", 4096);

const CONTENT: Param = Param::arg(
    "content",
    ParamKind::String,
    "New file content (at most 1 MiB), UTF-8 text or base64 with encoding=base64.",
)
.required();

const ENCODING: Param = Param::arg("encoding", ParamKind::String, "How content is written.")
    .one_of(&["utf8", "base64"])
    .default("utf8");

/// Runs what the caller chose and returns its output (anything the node prints).
const RUNS: Legs = Legs {
    untrusted: true,
    sensitive: true,
    executes: true,
};

/// SSH file and command tools get 60 s.
const TIMEOUT_MS: u64 = 60_000;

/// Rows of the node-access tools.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_node_shell_run",
        title: "Run a shell command on a node",
        description: "Run a shell command (bash -c) on a node over SSH after a person approves. Returns {exitCode, stdout, stderr, truncated} as data; output capped at 1 MiB.",
        category: Category::Nodes,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: EXECUTES,
        confirm: true,
        params: &[
            NODE,
            Param::arg("command", ParamKind::String, "Shell command line run by bash -c on the node.")
                .required()
                .pattern("^[^\\x00]+$", 8192),
        ],
        legs: RUNS,
        backend: Backend::Ssh(SshOp::NodeShellRun),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_cli_run",
        title: "Run a Proxmox CLI on a node",
        description: "Run pvesh, qm, pct, pvesm, pveum, pvenode, pvecm, pveceph, pvesr or vzdump with an argv (no shell) on a node after approval. Returns {exitCode, stdout, stderr, truncated}.",
        category: Category::Nodes,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: EXECUTES,
        confirm: true,
        params: &[
            NODE,
            Param::arg("argv", ParamKind::StringArray, "Binary then arguments, e.g. [\"qm\", \"config\", \"100\"]; each item stays one word.")
                .required(),
        ],
        legs: RUNS,
        backend: Backend::Ssh(SshOp::CliRun),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_node_file_read",
        title: "Read a file on a node",
        description: "Read a regular file on a node over SFTP (symlinks refused). Returns {size, content, encoding (utf8|base64), truncated}; at most 1 MiB.",
        category: Category::Nodes,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Read,
        params: &[
            NODE,
            PATH,
            Param::arg("maxBytes", ParamKind::Integer, "Bytes to return at most (default and limit 1048576).")
                .range(1, 1_048_576),
        ],
        legs: Legs::SENSITIVE_UNTRUSTED,
        backend: Backend::Ssh(SshOp::NodeFileRead),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_node_file_write",
        title: "Write a file on a node",
        description: "Create or replace a regular file on a node over SFTP after a person approves (symlinks refused, at most 1 MiB). Returns {bytesWritten, created}.",
        category: Category::Nodes,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: true,
            idempotent: true,
        },
        confirm: true,
        params: &[NODE, PATH, CONTENT, ENCODING],
        backend: Backend::Ssh(SshOp::NodeFileWrite),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_get_cloudinit_snippet",
        title: "Read a cloud-init snippet",
        description: "Read a snippet from a storage's snippets/ directory on a node over SFTP. Returns {volid, content, encoding, truncated}; at most 1 MiB.",
        category: Category::Storage,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Read,
        params: &[NODE, STORAGE, SNIPPET],
        legs: Legs::SENSITIVE_UNTRUSTED,
        backend: Backend::Ssh(SshOp::SnippetGet),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_put_cloudinit_snippet",
        title: "Write a cloud-init snippet",
        description: "Create or replace a snippet in a storage's snippets/ directory over SFTP after approval (at most 1 MiB). Returns {volid, bytesWritten, created}; use volid in cicustom.",
        category: Category::Storage,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: true,
            idempotent: true,
        },
        confirm: true,
        params: &[NODE, STORAGE, SNIPPET, CONTENT, ENCODING],
        backend: Backend::Ssh(SshOp::SnippetPut),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_delete_cloudinit_snippet",
        title: "Delete a cloud-init snippet",
        description: "Remove a snippet from a storage's snippets/ directory over SFTP after approval. Returns {volid, removed}.",
        category: Category::Storage,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        params: &[NODE, STORAGE, SNIPPET],
        backend: Backend::Ssh(SshOp::SnippetDelete),
        timeout_ms: TIMEOUT_MS,
        ..ToolSpec::BASE
    },
];
