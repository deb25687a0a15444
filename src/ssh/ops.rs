//! The five SSH-backed tools: fixed argv templates, input checks, result shapes.
//!
//! Every command is an argv built from constants plus validated inputs; the container
//! command of `pve_exec_in_container` is *meant* to be shell (it is one argv element handed
//! to `bash -lc` inside the container), while on the node it is only ever data. Invariants:
//! inputs are checked before any network I/O (`INVALID_CONTAINER_NAME`,
//! `DIAGNOSTIC_COMMAND_NOT_ALLOWED`, empty command); a non-zero exit is a failure that keeps
//! stdout, stderr and the exit code in `details`; nothing is retried here.

// Failures are the cold path and rendered once (as in `dispatch`).
#![allow(clippy::result_large_err)]

use std::sync::OnceLock;
use std::time::Duration;

use regex::Regex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::failure::{route_failure, ssh_disabled, ssh_failure};
use super::router::{Route, Router};
use super::{ExecOutput, RunOptions, codes};
use crate::catalog::{SshOp, ToolSpec};
use crate::envelope::{ToolFailure, codes as envelope_codes};
use crate::pve;
use crate::schema::{ArgValue, ValidArgs};

/// The commands `pve_run_remote_diagnostic` accepts, exactly (no trimming): the `command`
/// enum of its catalog row, the one place they are listed. Empty (everything refused) if the
/// row were ever missing.
pub fn diagnostic_allow_list() -> &'static [&'static str] {
    crate::catalog::find("pve_run_remote_diagnostic")
        .and_then(|spec| spec.param("command"))
        .map_or(&[], |param| param.one_of)
}

/// Docker container names as Docker accepts them (the reference's rule).
pub const CONTAINER_NAME_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$";

/// Default `tail` of `pve_docker_logs_in_container`.
pub const DEFAULT_TAIL: i64 = 200;

/// The four entry-host checks: name, fixed script (run by `sh -c`), hint on failure.
const BATCH_CHECKS: &[(&str, &str, &str)] = &[
    (
        "batch_echo",
        "echo batch-ok",
        "SSH in batch mode failed: key authentication must work without any prompt.",
    ),
    (
        "authorized_keys_permissions",
        "stat -c '%a %n' ~/.ssh ~/.ssh/authorized_keys",
        "~/.ssh should be mode 700 and ~/.ssh/authorized_keys 600, owned by the SSH user.",
    ),
    (
        "shell",
        "getent passwd \"$(id -un)\" | cut -d: -f7",
        "Could not read the SSH user's login shell; pct commands need a POSIX login shell (bash).",
    ),
    (
        "sshd_batch_related",
        "if [ \"$(id -u)\" = 0 ]; then sshd -T; else sudo -n sshd -T; fi | grep -E 'pubkeyauthentication|passwordauthentication|permitrootlogin|authorizedkeysfile'",
        "Could not read the effective sshd settings: needs root or passwordless sudo for `sshd -T`.",
    ),
];

/// Runs one SSH-backed tool. Returns the outcome and the attempts made (0 when rejected
/// before any I/O).
pub async fn execute(
    op: SshOp,
    spec: &ToolSpec,
    router: Option<&Router>,
    pve: Option<&pve::Client>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    // The SSH choke point: an operation whose effects the running call was not cleared for
    // never starts (see `effects::clearance`), nor, while changes are frozen, anything
    // beyond a plain read.
    if let Err(stopped) = crate::effects::admit_ssh(op.effect_kind(), op.describe()) {
        return (
            Err(crate::envelope::failure_from(pve::PveError::from(stopped))),
            0,
        );
    }
    if is_node_access(op) {
        return super::node_ops::execute(op, spec, router, pve, args, cancel).await;
    }
    let options = RunOptions::with_timeout(Duration::from_millis(spec.timeout_ms));
    let argv = match container_argv(op, args) {
        Err(failure) => return (Err(failure), 0),
        Ok(argv) => argv,
    };
    let Some(router) = router else {
        return (Err(ssh_disabled()), 0);
    };
    let work = async {
        match argv {
            None => batch_diagnostics(router, options).await,
            Some(argv) => {
                let Some(pve) = pve else {
                    return Err(crate::envelope::not_configured());
                };
                let ctid = int_arg(args, "ctid").unwrap_or_default();
                in_container(router, pve, ctid, &argv, options, cancel).await
            }
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        () = cancel.cancelled() => Err(ToolFailure::new(
            "CANCELLED",
            "The client cancelled the call; the remote command was signalled and its channel closed.",
        )),
    };
    (outcome, 1)
}

/// The input rules of an SSH-backed tool (allow-listed command, container name, non-empty
/// command, node path, snippet name), run before anyone is asked: no I/O.
pub fn precheck(op: SshOp, args: &ValidArgs) -> Result<(), ToolFailure> {
    if is_node_access(op) {
        super::node_ops::precheck(op, args)
    } else {
        container_argv(op, args).map(|_| ())
    }
}

/// The node-access operations, handled in `node_ops`.
fn is_node_access(op: SshOp) -> bool {
    matches!(
        op,
        SshOp::NodeShellRun
            | SshOp::CliRun
            | SshOp::NodeFileRead
            | SshOp::NodeFileWrite
            | SshOp::SnippetGet
            | SshOp::SnippetPut
            | SshOp::SnippetDelete
    )
}

/// The argv for a container tool (`None` for the entry-host batch), or the pre-flight refusal.
pub fn container_argv(op: SshOp, args: &ValidArgs) -> Result<Option<Vec<String>>, ToolFailure> {
    let ctid = int_arg(args, "ctid").unwrap_or_default().to_string();
    let inner: String = match op {
        SshOp::BatchDiagnostics => return Ok(None),
        SshOp::NodeShellRun
        | SshOp::CliRun
        | SshOp::NodeFileRead
        | SshOp::NodeFileWrite
        | SshOp::SnippetGet
        | SshOp::SnippetPut
        | SshOp::SnippetDelete => {
            return Err(ToolFailure::new(
                envelope_codes::TOOL_INPUT_REJECTED,
                format!("{} runs on a node, not in a container.", op.describe()),
            ));
        }
        SshOp::RemoteDiagnostic => {
            let command = args.str("command").unwrap_or_default();
            if !diagnostic_allow_list().contains(&command) {
                return Err(ToolFailure::new(
                    codes::DIAGNOSTIC_COMMAND_NOT_ALLOWED,
                    format!("Diagnostic command {command:?} is not allowed."),
                )
                .with_hint(format!(
                    "Use exactly one of: {}. For anything else use pve_exec_in_container (full tier, confirmation required). Nothing was run.",
                    diagnostic_allow_list()
                        .iter()
                        .map(|c| format!("{c:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            command.to_owned()
        }
        SshOp::ExecInContainer => {
            let command = args.str("command").unwrap_or_default();
            if command.trim().is_empty() {
                return Err(ToolFailure::new(
                    envelope_codes::TOOL_INPUT_REJECTED,
                    "command must not be empty.",
                )
                .with_hint(
                    "Pass the shell command to run inside the container. Nothing was run.",
                ));
            }
            command.to_owned()
        }
        SshOp::DockerPs => "docker ps".to_owned(),
        SshOp::DockerLogs => {
            let name = args.str("containerName").unwrap_or_default();
            if !valid_container_name(name) {
                return Err(ToolFailure::new(
                    codes::INVALID_CONTAINER_NAME,
                    format!("Invalid Docker container name {name:?}."),
                )
                .with_hint(format!(
                    "Use the name or id shown by pve_docker_ps_in_container; it must match {CONTAINER_NAME_PATTERN}. Nothing was run."
                )));
            }
            let tail = int_arg(args, "tail").unwrap_or(DEFAULT_TAIL).to_string();
            let words = ["docker", "logs", "--tail", tail.as_str(), name];
            // The name already passed the pattern; quoting is the second line of defence.
            let quoted = shlex::try_join(words).map_err(|e| {
                ToolFailure::new(envelope_codes::TOOL_INPUT_REJECTED, e.to_string())
            })?;
            // Docker replays the container's stderr on stderr: interleave it into stdout.
            format!("{quoted} 2>&1")
        }
    };
    Ok(Some(
        [
            "pct",
            "exec",
            ctid.as_str(),
            "--",
            "bash",
            "-lc",
            inner.as_str(),
        ]
        .map(String::from)
        .to_vec(),
    ))
}

async fn in_container(
    router: &Router,
    pve: &pve::Client,
    ctid: i64,
    argv: &[String],
    options: RunOptions,
    cancel: &CancellationToken,
) -> Result<Value, ToolFailure> {
    let ctid = u64::try_from(ctid).unwrap_or_default();
    let node = router
        .owning_node(pve, ctid, cancel)
        .await
        .map_err(route_failure)?;
    let (output, route) = router
        .run_on_node(pve, &node, argv, options, cancel)
        .await
        .map_err(route_failure)?;
    if output.success() || (output.truncated && output.exit_status.is_none()) {
        let mut data = json!({"stdout": output.stdout, "node": node, "route": route.as_str()});
        if output.truncated {
            data["truncated"] = Value::Bool(true);
        }
        return Ok(data);
    }
    Err(command_failed(&output, ctid, &node, route))
}

async fn batch_diagnostics(router: &Router, options: RunOptions) -> Result<Value, ToolFailure> {
    let mut results = Vec::new();
    for (check, script, hint) in BATCH_CHECKS {
        let argv = ["sh", "-c", script].map(String::from).to_vec();
        let output = router
            .run_on_entry(&argv, options)
            .await
            .map_err(ssh_failure)?;
        let ok = output.success();
        let stdout = output.stdout.trim();
        let detail = if ok {
            if stdout.is_empty() { "ok" } else { stdout }.to_owned()
        } else {
            format!("{hint} stderr={}", output.stderr.trim())
        };
        results.push(json!({"check": check, "ok": ok, "detail": detail}));
    }
    Ok(Value::Array(results))
}

fn command_failed(output: &ExecOutput, ctid: u64, node: &str, route: Route) -> ToolFailure {
    let not_found =
        |s: &str| s.contains("docker: command not found") || s.contains("docker: not found");
    let code = if not_found(&output.stderr) || not_found(&output.stdout) {
        codes::DOCKER_NOT_AVAILABLE
    } else {
        codes::REMOTE_COMMAND_FAILED
    };
    let status = match (&output.exit_status, &output.exit_signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "no exit status".to_owned(),
    };
    let stderr: String = output.stderr.trim().chars().take(500).collect();
    let mut failure = ToolFailure::new(
        code,
        format!(
            "pct exec failed for CT {ctid} on node {node} ({}): {status}{}{stderr}",
            route.as_str(),
            if stderr.is_empty() { "" } else { ": " }
        ),
    )
    .with_details(json!({
        "exitCode": output.exit_status,
        "exitSignal": output.exit_signal,
        "stdout": output.stdout,
        "stderr": output.stderr,
        "truncated": output.truncated,
        "node": node,
        "route": route.as_str(),
    }));
    failure.hint = Some(if code == codes::DOCKER_NOT_AVAILABLE {
        "Docker is not installed (or not on PATH) inside this container.".to_owned()
    } else {
        "The command ran and failed; read stderr and exitCode in error.details. It was not retried."
            .to_owned()
    });
    failure
}

fn int_arg(args: &ValidArgs, name: &str) -> Option<i64> {
    match args.values.get(name) {
        Some(ArgValue::Int(i)) => Some(*i),
        _ => None,
    }
}

/// Whether `name` is a valid Docker container name (fails closed if the pattern broke).
pub fn valid_container_name(name: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(CONTAINER_NAME_PATTERN).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&'static str, ArgValue)]) -> ValidArgs {
        ValidArgs {
            values: pairs.iter().cloned().collect(),
            confirmed: true,
            ..ValidArgs::default()
        }
    }

    #[test]
    fn the_allow_list_is_exact() {
        for command in diagnostic_allow_list() {
            let a = args(&[
                ("ctid", ArgValue::Int(201)),
                ("command", ArgValue::Str((*command).into())),
            ]);
            let argv = container_argv(SshOp::RemoteDiagnostic, &a)
                .unwrap()
                .unwrap();
            assert_eq!(argv, ["pct", "exec", "201", "--", "bash", "-lc", command]);
        }
        for command in [
            "uptime ",
            " uptime",
            "uptime; id",
            "df -h && id",
            "UPTIME",
            "",
        ] {
            let a = args(&[
                ("ctid", ArgValue::Int(201)),
                ("command", ArgValue::Str(command.into())),
            ]);
            let err = container_argv(SshOp::RemoteDiagnostic, &a).unwrap_err();
            assert_eq!(
                err.code,
                codes::DIAGNOSTIC_COMMAND_NOT_ALLOWED,
                "{command:?}"
            );
        }
    }

    #[test]
    fn docker_logs_validates_the_name_and_defaults_the_tail() {
        let a = args(&[
            ("ctid", ArgValue::Int(201)),
            ("containerName", ArgValue::Str("web-1.a_b".into())),
        ]);
        let argv = container_argv(SshOp::DockerLogs, &a).unwrap().unwrap();
        assert_eq!(argv[6], "docker logs --tail 200 web-1.a_b 2>&1");
        for bad in [
            "",
            "-f",
            "web;id",
            "$(id)",
            "a b",
            "web\n",
            ".hidden",
            &"a".repeat(129),
        ] {
            let a = args(&[
                ("ctid", ArgValue::Int(201)),
                ("containerName", ArgValue::Str(bad.into())),
            ]);
            let err = container_argv(SshOp::DockerLogs, &a).unwrap_err();
            assert_eq!(err.code, codes::INVALID_CONTAINER_NAME, "{bad:?}");
        }
    }

    #[test]
    fn exec_refuses_an_empty_command_and_passes_others_as_one_element() {
        let a = args(&[
            ("ctid", ArgValue::Int(201)),
            ("command", ArgValue::Str("  ".into())),
        ]);
        assert!(container_argv(SshOp::ExecInContainer, &a).is_err());
        let a = args(&[
            ("ctid", ArgValue::Int(201)),
            ("command", ArgValue::Str("a; b".into())),
        ]);
        let argv = container_argv(SshOp::ExecInContainer, &a).unwrap().unwrap();
        assert_eq!(argv.len(), 7);
        assert_eq!(argv[6], "a; b");
        assert!(
            container_argv(SshOp::BatchDiagnostics, &a)
                .unwrap()
                .is_none()
        );
    }
}
