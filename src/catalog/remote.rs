//! SSH-backed tools: commands inside LXC containers (`pct exec`) and entry-host checks.
//!
//! These rows exist in the registry only when SSH is configured (see `Registry::build_for`).
//! Their inputs are `Location::Argument`: the argv templates in `ssh::ops` place them, so
//! no input is ever spliced into a shell string by hand.

use super::types::{
    Backend, Category, Effect, Legs, Module, Param, ParamKind, SshOp, Tier, ToolSpec,
};

/// Runs something inside a guest but changes nothing by itself; safe to repeat.
const INSPECT: Effect = Effect::Write {
    destructive: false,
    idempotent: true,
};

/// The commands `pve_run_remote_diagnostic` accepts, exactly (no trimming): its `command`
/// enum, so clients and scanners see the closed set and validation refuses anything else.
pub(super) const DIAGNOSTIC_COMMANDS: &[&str] = &[
    "uname -a",
    "uptime",
    "df -h",
    "free -m",
    "docker ps --format '{{.Names}} {{.Status}}'",
];

/// SSH commands get the reference's 20 s.
const SSH_TIMEOUT_MS: u64 = 20_000;

const CTID: Param = Param::arg(
    "ctid",
    ParamKind::Integer,
    "Container ID; its node is found automatically.",
)
.required()
.range(100, 999_999_999);

/// Rows of the `remote` category.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_run_remote_diagnostic",
        title: "Run a diagnostic command in a container",
        description: "Run one fixed diagnostic in a container (pct exec); command is exactly one of: uname -a, uptime, df -h, free -m, docker ps --format '{{.Names}} {{.Status}}'. Returns {stdout, node, route}.",
        category: Category::Remote,
        legs: Legs::UNTRUSTED,
        tier: Tier::ReadExecute,
        effect: INSPECT,
        aliases: &["runRemoteDiagnostic"],
        params: &[
            CTID,
            Param::arg(
                "command",
                ParamKind::String,
                "The diagnostic to run, exactly as listed.",
            )
            .required()
            .one_of(DIAGNOSTIC_COMMANDS),
        ],
        backend: Backend::Ssh(SshOp::RemoteDiagnostic),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_ssh_batch_diagnostics",
        title: "Check the SSH entry host",
        description: "Check the SSH entry host (login, key permissions, shell, sshd settings). Returns [{check, ok, detail}]. Use when SSH tools fail.",
        category: Category::Remote,
        legs: Legs::UNTRUSTED,
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
        description: "Run any shell command as root in a container (pct exec, bash -lc). Powerful; never retried. Returns {stdout, node, route}.",
        category: Category::Remote,
        legs: Legs::EXECUTES,
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
                "Shell command, e.g. \"systemctl status nginx --no-pager\".",
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
        description: "Run `docker ps` in a container (pct exec). Returns {stdout, node, route}; DOCKER_NOT_AVAILABLE if absent.",
        category: Category::Remote,
        legs: Legs::UNTRUSTED,
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
        description: "Last `tail` lines of a Docker container's logs inside an LXC container. Returns {stdout, node, route} (stdout+stderr).",
        category: Category::Remote,
        legs: Legs::UNTRUSTED,
        tier: Tier::ReadExecute,
        module: Module::Advanced,
        effect: INSPECT,
        aliases: &["dockerLogsInContainer"],
        params: &[
            CTID,
            Param::arg(
                "containerName",
                ParamKind::String,
                "Docker container name or id (docker ps).",
            )
            .required(),
            Param::arg(
                "tail",
                ParamKind::Integer,
                "Lines from the end (default 200).",
            )
            .range(1, 2000),
        ],
        backend: Backend::Ssh(SshOp::DockerLogs),
        timeout_ms: SSH_TIMEOUT_MS,
        ..ToolSpec::BASE
    },
];

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::DIAGNOSTIC_COMMANDS;

    #[test]
    fn the_diagnostic_command_is_a_closed_enum_and_described_as_accepted() {
        let spec = crate::catalog::find("pve_run_remote_diagnostic").unwrap();
        let schema = crate::schema::input_schema(spec);
        assert_eq!(
            schema["properties"]["command"]["enum"],
            json!(DIAGNOSTIC_COMMANDS)
        );
        for command in DIAGNOSTIC_COMMANDS {
            assert!(spec.description.contains(command), "{command}");
        }
        let args = |command: &str| {
            let Value::Object(map) = json!({"ctid": 201, "command": command}) else {
                unreachable!()
            };
            map
        };
        let refused = crate::schema::validate(spec, Some(&args("docker ps"))).unwrap_err();
        assert!(refused.errors["command"].contains("must be one of"));
        assert!(crate::schema::validate(spec, Some(&args("uptime"))).is_ok());
    }
}
