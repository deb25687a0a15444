//! The node-access tools: a shell command or an allow-listed Proxmox CLI argv on a node,
//! node file read/write over SFTP, and cloud-init snippets in a storage's `snippets/`
//! directory.
//!
//! Invariants: every input rule (allow-listed binary, absolute normalised path, snippet
//! file name, size caps) is checked before any SSH or API request, so a refusal runs
//! nothing; commands travel as argv elements quoted by `shlex` in `remote_command`, files
//! travel over SFTP with no command line at all; a snippet path is built only as
//! `<storage path>/snippets/<checked name>` from a storage whose content includes
//! `snippets`. Output is data: capped, returned with exit code and truncation flag, never
//! interpreted.

// Failures are the cold path and rendered once (as in `dispatch`).
#![allow(clippy::result_large_err)]

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::router::Router;
use super::sftp::{FILE_CAP, FileOp, FileOutcome, node_path};
use super::{RunOptions, codes};
use crate::catalog::{SshOp, ToolSpec};
use crate::envelope::{ToolFailure, failure_from, not_configured};
use crate::pve::{self, ApiRequest, RetryPolicy};
use crate::schema::{ArgValue, ValidArgs};

/// The binaries `pve_cli_run` runs, by bare name (resolved on the node's PATH).
pub const CLI_ALLOW_LIST: &[&str] = &[
    "pvesh", "qm", "pct", "pvesm", "pveum", "pvenode", "pvecm", "pveceph", "pvesr", "vzdump",
];

/// Snippet file names (no path, no leading dot).
pub const SNIPPET_NAME_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$";

/// Cap on stdout + stderr of a node command.
pub const COMMAND_OUTPUT_CAP: usize = 1024 * 1024;

/// What a checked call will do.
enum Plan {
    /// Run an argv on the node.
    Command(Vec<String>),
    /// A file operation on a node path.
    File(FileOp),
    /// A file operation on a snippet, once the storage's path is known.
    Snippet {
        storage: String,
        name: String,
        op: SnippetOp,
    },
}

enum SnippetOp {
    Get,
    Put(Vec<u8>),
    Delete,
}

fn refused(message: String, hint: &str) -> ToolFailure {
    ToolFailure::new(codes::NODE_ACCESS_REFUSED, message)
        .with_hint(format!("{hint} Nothing was run on the node."))
}

/// The input rules of a node-access tool, for the check before anyone is asked; no I/O.
pub fn precheck(op: SshOp, args: &ValidArgs) -> Result<(), ToolFailure> {
    plan(op, args).map(|_| ())
}

/// Checks the inputs of a node-access tool; no I/O.
fn plan(op: SshOp, args: &ValidArgs) -> Result<Plan, ToolFailure> {
    match op {
        SshOp::NodeShellRun => {
            let command = args.str("command").unwrap_or_default();
            if command.trim().is_empty() {
                return Err(refused(
                    "command must not be empty.".into(),
                    "Pass the shell command to run on the node.",
                ));
            }
            if command.contains('\0') {
                return Err(refused("command must not contain NUL.".into(), ""));
            }
            Ok(Plan::Command(vec![
                "bash".into(),
                "-c".into(),
                command.to_owned(),
            ]))
        }
        SshOp::CliRun => {
            let argv = match args.values.get("argv") {
                Some(ArgValue::List(items)) => items.clone(),
                _ => Vec::new(),
            };
            let binary = argv.first().map(String::as_str).unwrap_or_default();
            if !CLI_ALLOW_LIST.contains(&binary) {
                return Err(refused(
                    format!("{binary:?} is not an allowed Proxmox CLI."),
                    &format!(
                        "argv[0] must be exactly one of: {} (bare name, no path; argv is never run by a shell of ours). For anything else use pve_node_shell_run.",
                        CLI_ALLOW_LIST.join(", ")
                    ),
                ));
            }
            if argv.iter().any(|a| a.contains('\0')) {
                return Err(refused("argv must not contain NUL.".into(), ""));
            }
            Ok(Plan::Command(argv))
        }
        SshOp::NodeFileRead => {
            let path = checked_path(args.str("path").unwrap_or_default())?;
            let cap = match args.values.get("maxBytes") {
                Some(ArgValue::Int(n)) => usize::try_from(*n).unwrap_or(FILE_CAP).min(FILE_CAP),
                _ => FILE_CAP,
            };
            Ok(Plan::File(FileOp::Read { path, cap }))
        }
        SshOp::NodeFileWrite => {
            let path = checked_path(args.str("path").unwrap_or_default())?;
            let data = content(args)?;
            Ok(Plan::File(FileOp::Write { path, data }))
        }
        SshOp::SnippetGet | SshOp::SnippetPut | SshOp::SnippetDelete => {
            let name = args.str("name").unwrap_or_default();
            if !valid_snippet_name(name) {
                return Err(refused(
                    format!("Invalid snippet file name {name:?}."),
                    &format!(
                        "A snippet name is a plain file name matching {SNIPPET_NAME_PATTERN} (no '/', no leading dot)."
                    ),
                ));
            }
            let op = match op {
                SshOp::SnippetGet => SnippetOp::Get,
                SshOp::SnippetPut => SnippetOp::Put(content(args)?),
                _ => SnippetOp::Delete,
            };
            Ok(Plan::Snippet {
                storage: args.str("storage").unwrap_or_default().to_owned(),
                name: name.to_owned(),
                op,
            })
        }
        SshOp::RemoteDiagnostic
        | SshOp::BatchDiagnostics
        | SshOp::ExecInContainer
        | SshOp::DockerPs
        | SshOp::DockerLogs => Err(refused(
            format!("{} is not a node-access operation.", op.describe()),
            "",
        )),
    }
}

fn checked_path(raw: &str) -> Result<String, ToolFailure> {
    node_path(raw).map_err(|why| {
        refused(
            format!("path {raw:?} {why}."),
            "Give an absolute, normalised path to a regular file (no '..', '.', '//', trailing '/', NUL or control characters).",
        )
    })
}

/// The bytes to write: `content` as UTF-8 text, or base64-decoded with `encoding=base64`.
fn content(args: &ValidArgs) -> Result<Vec<u8>, ToolFailure> {
    let text = args.str("content").unwrap_or_default();
    let data = match args.str("encoding").unwrap_or("utf8") {
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|e| refused(format!("content is not valid base64: {e}."), ""))?,
        _ => text.as_bytes().to_vec(),
    };
    if data.len() > FILE_CAP {
        return Err(refused(
            format!(
                "content is {} bytes; the limit is {FILE_CAP} bytes (1 MiB).",
                data.len()
            ),
            "Write smaller files.",
        ));
    }
    Ok(data)
}

/// Whether `name` is a valid snippet file name.
pub fn valid_snippet_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.len() <= 128
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Runs one node-access tool. Returns the outcome and the attempts (0 when refused before
/// any I/O).
pub async fn execute(
    op: SshOp,
    spec: &ToolSpec,
    router: Option<&Router>,
    pve: Option<&pve::Client>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> (Result<Value, ToolFailure>, u32) {
    let plan = match plan(op, args) {
        Ok(plan) => plan,
        Err(failure) => return (Err(failure), 0),
    };
    let Some(router) = router else {
        return (Err(super::failure::ssh_disabled()), 0);
    };
    let Some(pve) = pve else {
        return (Err(not_configured()), 0);
    };
    let node = args.str("node").unwrap_or_default().to_owned();
    let timeout = Duration::from_millis(spec.timeout_ms);
    let work = async {
        match plan {
            Plan::Command(argv) => run_command(router, pve, &node, argv, timeout, cancel).await,
            Plan::File(file) => {
                let outcome = file_op(router, pve, &node, &file, timeout, cancel).await?;
                Ok(file_result(&node, &file, outcome))
            }
            Plan::Snippet { storage, name, op } => {
                let dir = snippet_dir(pve, &storage, cancel).await?;
                let path = checked_path(&format!("{dir}/{name}"))?;
                let file = match op {
                    SnippetOp::Get => FileOp::Read {
                        path,
                        cap: FILE_CAP,
                    },
                    SnippetOp::Put(data) => FileOp::Write { path, data },
                    SnippetOp::Delete => FileOp::Remove { path },
                };
                let outcome = file_op(router, pve, &node, &file, timeout, cancel).await?;
                let mut data = file_result(&node, &file, outcome);
                data["storage"] = json!(storage);
                data["volid"] = json!(format!("{storage}:snippets/{name}"));
                Ok(data)
            }
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        () = cancel.cancelled() => Err(ToolFailure::new(
            "CANCELLED",
            "The client cancelled the call; a running command was signalled and its channel closed.",
        )),
    };
    (outcome, 1)
}

async fn run_command(
    router: &Router,
    pve: &pve::Client,
    node: &str,
    argv: Vec<String>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<Value, ToolFailure> {
    let options = RunOptions {
        timeout,
        output_cap: COMMAND_OUTPUT_CAP,
    };
    let (output, route) = router
        .run_on_node(pve, node, &argv, options, cancel)
        .await
        .map_err(super::failure::route_failure)?;
    Ok(json!({
        "node": node,
        "route": route.as_str(),
        "argv": argv,
        "exitCode": output.exit_status,
        "exitSignal": output.exit_signal,
        "stdout": output.stdout,
        "stderr": output.stderr,
        "truncated": output.truncated,
        "outputCapBytes": COMMAND_OUTPUT_CAP,
    }))
}

async fn file_op(
    router: &Router,
    pve: &pve::Client,
    node: &str,
    op: &FileOp,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<FileOutcome, ToolFailure> {
    router
        .file_on_node(pve, node, op, timeout, cancel)
        .await
        .map(|(outcome, _)| outcome)
        .map_err(super::failure::route_failure)
}

fn file_result(node: &str, op: &FileOp, outcome: FileOutcome) -> Value {
    let path = op.path();
    match outcome {
        FileOutcome::Read {
            bytes,
            size,
            truncated,
        } => {
            let returned = bytes.len();
            let (encoding, content) = match String::from_utf8(bytes) {
                Ok(text) => ("utf8", text),
                Err(e) => (
                    "base64",
                    base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
                ),
            };
            json!({
                "node": node, "path": path, "size": size, "bytesReturned": returned,
                "truncated": truncated, "encoding": encoding, "content": content,
            })
        }
        FileOutcome::Written { bytes, created } => {
            json!({"node": node, "path": path, "bytesWritten": bytes, "created": created})
        }
        FileOutcome::Removed => json!({"node": node, "path": path, "removed": true}),
    }
}

/// `<path>/snippets` of a storage whose content includes `snippets`, checked like any node
/// path. Read from the `GET /storage` list (needs only `Datastore.Audit`, where
/// `GET /storage/{storage}` needs `Datastore.Allocate`).
async fn snippet_dir(
    pve: &pve::Client,
    storage: &str,
    cancel: &CancellationToken,
) -> Result<String, ToolFailure> {
    let request = ApiRequest::get("/storage").retry(RetryPolicy::Reads);
    let list = pve
        .call(request, cancel)
        .await
        .result
        .map_err(failure_from)?;
    let Some(config) = list
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s.get("storage").and_then(Value::as_str) == Some(storage))
    else {
        return Err(refused(
            format!("Storage {storage} does not exist (or this token cannot see it)."),
            "List storages with pve_list_storage.",
        ));
    };
    let content = config.get("content").and_then(Value::as_str).unwrap_or("");
    if !content.split(',').any(|c| c.trim() == "snippets") {
        return Err(refused(
            format!("Storage {storage} does not hold snippets (content: {content:?})."),
            "Use a file-based storage whose content includes \"snippets\" (pve_update_storage can add it).",
        ));
    }
    let Some(path) = config.get("path").and_then(Value::as_str) else {
        return Err(refused(
            format!(
                "Storage {storage} has no local path; snippets need a file-based storage (dir, nfs, cifs, cephfs)."
            ),
            "",
        ));
    };
    let base = node_path(path).map_err(|why| {
        refused(
            format!("Storage {storage} has the path {path:?}, which {why}."),
            "",
        )
    })?;
    Ok(format!("{base}/snippets"))
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
    fn only_allow_listed_binaries_run_and_argv_stays_whole() {
        let list = |items: &[&str]| {
            args(&[(
                "argv",
                ArgValue::List(items.iter().map(|s| (*s).to_owned()).collect()),
            )])
        };
        for bad in [
            &["bash", "-c", "id"][..],
            &["/usr/bin/qm", "list"],
            &["qm;id"],
            &[],
        ] {
            let Err(e) = plan(SshOp::CliRun, &list(bad)) else {
                panic!("{bad:?} accepted")
            };
            assert_eq!(e.code, codes::NODE_ACCESS_REFUSED);
        }
        let Ok(Plan::Command(argv)) = plan(
            SshOp::CliRun,
            &list(&["qm", "set", "100", "--name", "$(id); x"]),
        ) else {
            panic!("qm refused")
        };
        assert_eq!(argv[4], "$(id); x");
    }

    #[test]
    fn snippet_names_and_sizes_are_checked() {
        for good in ["user-data.yaml", "a", "Vm_100.cfg"] {
            assert!(valid_snippet_name(good), "{good}");
        }
        for bad in ["", ".hidden", "../x", "a/b", "a b", "x;y", &"a".repeat(129)] {
            assert!(!valid_snippet_name(bad), "{bad:?}");
        }
        let big = args(&[("content", ArgValue::Str("x".repeat(FILE_CAP + 1)))]);
        assert!(content(&big).is_err());
        let b64 = args(&[
            ("content", ArgValue::Str("AAEC".into())),
            ("encoding", ArgValue::Str("base64".into())),
        ]);
        assert_eq!(content(&b64).unwrap(), [0, 1, 2]);
    }
}
