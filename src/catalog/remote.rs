//! SSH-backed tools: commands inside LXC containers (`pct exec`) and entry-host checks.
//!
//! These rows exist in the registry only when SSH is configured (see `Registry::build_for`).
//! Their inputs are `Location::Argument`: the argv templates in `ssh::ops` place them, so
//! no input is ever spliced into a shell string by hand.

use super::types::{Backend, Category, Effect, Module, Param, ParamKind, SshOp, Tier, ToolSpec};

/// Runs something inside a guest but changes nothing by itself; safe to repeat.
const INSPECT: Effect = Effect::Write {
    destructive: false,
    idempotent: true,
};

/// SSH commands get the reference's 20 s.
const SSH_TIMEOUT_MS: u64 = 20_000;

const CTID: Param = Param::arg(
    "ctid",
    ParamKind::Integer,
    "ID of the LXC container (e.g. 201); its node is found automatically via pve_list_cluster_resources data.",
)
.required()
.range(100, 999_999_999);

/// Rows of the `remote` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_run_remote_diagnostic",
        title: "Run a diagnostic command in a container",
        description: "Run one of five fixed read-only diagnostic commands inside an LXC container via `pct exec` on its node: \"uname -a\", \"uptime\", \"df -h\", \"free -m\" or \"docker ps --format '{{.Names}} {{.Status}}'\" (the command must be exactly one of these, else DIAGNOSTIC_COMMAND_NOT_ALLOWED). Returns {stdout, node, route}; a non-zero exit returns REMOTE_COMMAND_FAILED with stdout, stderr and exitCode in error.details.",
        category: Category::Remote,
        tier: Tier::ReadExecute,
        effect: INSPECT,
        aliases: &["runRemoteDiagnostic"],
        params: &[
            CTID,
            Param::arg(
                "command",
                ParamKind::String,
                "Exactly one of: \"uname -a\", \"uptime\", \"df -h\", \"free -m\", \"docker ps --format '{{.Names}} {{.Status}}'\".",
            )
            .required(),
        ],
        backend: Backend::Ssh(SshOp::RemoteDiagnostic),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_ssh_batch_diagnostics",
        title: "Check the SSH entry host",
        description: "Probe the configured SSH entry host with four fixed checks and report each: batch_echo (SSH works), authorized_keys_permissions (modes of ~/.ssh and authorized_keys), shell (login shell of the SSH user), sshd_batch_related (key/password/root login settings from `sshd -T`, needs passwordless sudo or root). Returns an array of {check, ok, detail}. Use it when SSH-backed tools fail.",
        category: Category::Remote,
        tier: Tier::ReadExecute,
        effect: Effect::Read,
        aliases: &["sshBatchDiagnostics"],
        backend: Backend::Ssh(SshOp::BatchDiagnostics),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_exec_in_container",
        title: "Run a shell command in a container",
        description: "Run an arbitrary shell command inside an LXC container as root, via `pct exec <ctid> -- bash -lc <command>` on the container's node. Powerful and irreversible: ask the user first and pass confirm=true. Returns {stdout, node, route}; a non-zero exit returns REMOTE_COMMAND_FAILED with stdout, stderr and exitCode in error.details. Never retried.",
        category: Category::Remote,
        tier: Tier::Full,
        module: Module::Advanced,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        confirm: true,
        aliases: &["execInContainer"],
        params: &[
            CTID,
            Param::arg(
                "command",
                ParamKind::String,
                "Shell command run by bash inside the container, e.g. \"systemctl status nginx --no-pager\". Not empty.",
            )
            .required(),
        ],
        backend: Backend::Ssh(SshOp::ExecInContainer),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_docker_ps_in_container",
        title: "List Docker containers in a container",
        description: "Run `docker ps` inside an LXC container (via pct exec on its node) and return {stdout, node, route} with Docker's table of running containers. DOCKER_NOT_AVAILABLE when Docker is not installed there.",
        category: Category::Remote,
        tier: Tier::ReadExecute,
        module: Module::Advanced,
        effect: INSPECT,
        aliases: &["dockerPsInContainer"],
        params: &[CTID],
        backend: Backend::Ssh(SshOp::DockerPs),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_docker_logs_in_container",
        title: "Tail Docker logs in a container",
        description: "Return the last `tail` lines (default 200) of one Docker container's logs inside an LXC container, via `docker logs --tail` under pct exec on its node. Returns {stdout, node, route} where stdout holds the container's stdout and stderr lines interleaved. INVALID_CONTAINER_NAME when the name is not a Docker name.",
        category: Category::Remote,
        tier: Tier::ReadExecute,
        module: Module::Advanced,
        effect: INSPECT,
        aliases: &["dockerLogsInContainer"],
        params: &[
            CTID,
            Param::arg(
                "containerName",
                ParamKind::String,
                "Docker container name or id as `docker ps` shows it: starts with a letter or digit, then letters, digits, _ . - (max 128).",
            )
            .required(),
            Param::arg(
                "tail",
                ParamKind::Integer,
                "Number of log lines from the end, 1–2000 (default 200).",
            )
            .range(1, 2000),
        ],
        backend: Backend::Ssh(SshOp::DockerLogs),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
];
