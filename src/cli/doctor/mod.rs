//! `doctor`: check an installation end to end and say how to fix what is wrong.
//!
//! Invariants: unknown check names are an error (nothing is contacted); the client entry is
//! validated under the instance's real server key; checks that cannot apply are SKIP, never a
//! false RED; the exit status is non-zero when anything is RED; no output contains the secret.

mod checks;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::clients::{self, ClientId, ServerEntry};
use super::report::{Item, Report, use_colour};
use super::{CliError, probe};
use crate::catalog::{Module, Tier};
use crate::config::instances;
use crate::config::{self, CONFIG_ENV_VAR, Config, ConfigSource, Paths, ProcessEnv, Scope};
use crate::pve;

/// Every check, in the order they run.
pub const CHECKS: [&str; 8] = [
    "mcp-config",
    "nodes",
    "vms",
    "cts",
    "node-status",
    "remote-op",
    "tls",
    "permissions",
];

/// Flags of `doctor`.
#[derive(Debug, Args, Default)]
pub struct DoctorArgs {
    /// Checks to run, comma-separated [default: all]: mcp-config, nodes, vms, cts, node-status,
    /// remote-op, tls, permissions.
    #[arg(long, value_name = "LIST")]
    pub check: Option<String>,
    /// Container id for the remote-op check (or NANDI_DOCTOR_CTID).
    #[arg(long, env = "NANDI_DOCTOR_CTID")]
    pub ctid: Option<u32>,
    /// Clients whose configuration to validate, comma-separated [default: every client file found].
    #[arg(long, value_name = "LIST")]
    pub clients: Option<String>,
    /// Instance to check (see `list`); default: the configuration `run` would load.
    #[arg(long)]
    pub name: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_checks(raw: Option<&str>) -> Result<BTreeSet<&'static str>, CliError> {
    let Some(raw) = raw else {
        return Ok(CHECKS.into_iter().collect());
    };
    let mut out = BTreeSet::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let found = CHECKS
            .into_iter()
            .find(|c| c.eq_ignore_ascii_case(part))
            .ok_or_else(|| {
                CliError::Config(format!(
                    "unknown check `{part}`; valid checks: {}",
                    CHECKS.join(", ")
                ))
            })?;
        out.insert(found);
    }
    if out.is_empty() {
        return Err(CliError::Config(format!(
            "--check is empty; valid checks: {}",
            CHECKS.join(", ")
        )));
    }
    Ok(out)
}

/// Runs `doctor`.
pub async fn run(args: DoctorArgs) -> Result<(), CliError> {
    let checks = parse_checks(args.check.as_deref())?;
    let wanted_clients = match &args.clients {
        Some(raw) => Some(clients::parse_clients(raw).map_err(CliError::Config)?),
        None => None,
    };
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let mut report = Report::default();
    let loaded = load_config(&args, &paths, &mut report);
    if let Some((config, key)) = loaded {
        let policy_env = if checks.contains("mcp-config") {
            check_clients(
                &paths,
                key.as_deref(),
                &config,
                wanted_clients.as_deref(),
                &mut report,
            )
        } else {
            None
        };
        check_cluster(&args, &checks, &config, policy_env, &mut report).await;
    }
    if args.json {
        let text = serde_json::to_string_pretty(&report.to_json())
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        println!("{text}");
    } else {
        print!(
            "{}",
            report.render("nandi-proxmox-mcp doctor", use_colour())
        );
        if report.is_red() {
            println!(
                "\nSomething is RED: follow the fix lines (docs/TROUBLESHOOTING.md has more)."
            );
        } else {
            println!("\nAll good. Restart your MCP client if you changed its configuration.");
        }
    }
    if report.is_red() {
        return Err(CliError::Red("doctor found RED items".into()));
    }
    Ok(())
}

/// Loads the configuration; `None` (with a RED item) when there is none to check.
fn load_config(
    args: &DoctorArgs,
    paths: &Paths,
    report: &mut Report,
) -> Option<(Config, Option<String>)> {
    if let Some(raw) = &args.name {
        let name = instances::sanitize_name(raw);
        return match instances::resolve_instance(paths, &name) {
            Ok(inst) => match config::load_instance(&inst, &ProcessEnv, paths) {
                Ok(c) => {
                    report.push(Item::green(
                        "instance",
                        format!("{} ({}, {})", inst.name, inst.scope, inst.path.display()),
                    ));
                    Some((c, Some(inst.server_key)))
                }
                Err(e) => {
                    report.push(Item::red("instance", e.to_string(), None));
                    None
                }
            },
            Err(e) => {
                report.push(Item::red(
                    "instance",
                    e.to_string(),
                    Some("`nandi-proxmox-mcp list` shows the configured instances".into()),
                ));
                None
            }
        };
    }
    match config::load(&ProcessEnv, paths) {
        Ok(c) if c.proxmox.is_none() => {
            let untrusted = config::untrusted_project_files(&ProcessEnv, paths);
            let (detail, fix) = match untrusted.first() {
                None => (
                    "no Proxmox connection is configured (no instance file, no PROXMOX_* variables)"
                        .to_owned(),
                    "run `nandi-proxmox-mcp setup`".to_owned(),
                ),
                Some((path, changed)) => (
                    format!(
                        "no Proxmox connection is configured: the project-directory file {} is \
                         ignored because it {}",
                        path.display(),
                        if *changed {
                            "changed since you trusted it"
                        } else {
                            "is not trusted"
                        }
                    ),
                    format!(
                        "review it, then run `nandi-proxmox-mcp trust {}`",
                        path.display()
                    ),
                ),
            };
            report.push(Item::red("config", detail, Some(fix)));
            None
        }
        Ok(c) => {
            let key = match &c.source {
                ConfigSource::File { instance, .. } => instance.clone(),
                _ => None,
            };
            report.push(Item::green("config", source_detail(&c, paths)));
            Some((c, key))
        }
        Err(e) => {
            report.push(Item::red("config", e.to_string(), None));
            None
        }
    }
}

/// The source in use; for environment variables, also the discovered files they shadow (a
/// `.nandi-proxmox-mcp/` folder in the working directory is ignored, and the user should know).
fn source_detail(config: &Config, paths: &Paths) -> String {
    let source = config.source.to_string();
    if config.source != ConfigSource::Env {
        return source;
    }
    let ignored: Vec<String> = config::instances::list_instances(paths)
        .iter()
        .map(|i| i.path.display().to_string())
        .collect();
    if ignored.is_empty() {
        return source;
    }
    format!(
        "{source} (a complete PROXMOX_* environment wins over discovery; ignored: {})",
        ignored.join(", ")
    )
}

/// Validates the client entries; returns the env of the first valid entry (its tier/module).
fn check_clients(
    paths: &Paths,
    key: Option<&str>,
    config: &Config,
    wanted: Option<&[ClientId]>,
    report: &mut Report,
) -> Option<BTreeMap<String, String>> {
    let Some(key) = key else {
        report.push(Item::skip(
            "mcpConfig",
            "the configuration comes from environment variables, so no client entry is tied to it; pass --name to check one",
        ));
        return None;
    };
    let mut files: Vec<(ClientId, PathBuf)> = Vec::new();
    for client in wanted.unwrap_or(&ClientId::ALL) {
        for scope in [Scope::Project, Scope::User] {
            if let Ok(p) = client.config_path(paths, scope)
                && !files.iter().any(|(_, q)| q == &p)
            {
                files.push((*client, p));
            }
        }
    }
    let mut found_any = false;
    let mut first_env = None;
    for client in wanted.unwrap_or(&ClientId::ALL) {
        let check = format!("mcpConfig:{}", client.as_str());
        let mut found_here = false;
        let mut looked = Vec::new();
        for (_, path) in files.iter().filter(|(c, p)| c == client && p.exists()) {
            looked.push(path.display().to_string());
            match clients::read_entry(*client, path, key) {
                Ok(Some(entry)) => {
                    found_here = true;
                    let item = validate_entry(&check, path, &entry, config);
                    if item.status != super::report::Status::Red && first_env.is_none() {
                        first_env = Some(entry.env.clone());
                    }
                    report.push(item);
                }
                Ok(None) => {}
                Err(e) => {
                    found_here = true;
                    report.push(Item::red(&check, format!("{}: {e}", path.display()), None));
                }
            }
        }
        found_any |= found_here;
        // An explicitly requested client must have the entry somewhere.
        if wanted.is_some() && !found_here {
            let detail = if looked.is_empty() {
                format!("no {} configuration file exists", client.label())
            } else {
                format!("no entry `{key}` in {}", looked.join(", "))
            };
            report.push(Item::red(
                &check,
                detail,
                Some(format!(
                    "nandi-proxmox-mcp setup --name {key} --clients {}",
                    client.as_str()
                )),
            ));
        }
    }
    if !found_any && wanted.is_none() {
        report.push(Item::red(
            "mcpConfig",
            format!("no MCP client configuration has an entry `{key}`"),
            Some(format!("nandi-proxmox-mcp setup --name {key} --clients claude-code (or vscode, cursor, codex, claude-desktop)")),
        ));
    }
    first_env
}

fn validate_entry(
    check: &str,
    path: &std::path::Path,
    entry: &ServerEntry,
    config: &Config,
) -> Item {
    let where_ = path.display();
    let legacy_npx = entry.command == "npx" && entry.args.iter().any(|a| a == "nandi-proxmox-mcp");
    let command_ok = legacy_npx
        || if std::path::Path::new(&entry.command).is_absolute() {
            clients::is_executable(std::path::Path::new(&entry.command))
        } else {
            clients::find_on_path(&entry.command).is_some()
        };
    if !command_ok {
        return Item::red(
            check,
            format!(
                "{where_}: command `{}` is not an executable file or not on PATH",
                entry.command
            ),
            Some("re-run `nandi-proxmox-mcp setup` with the installed binary".into()),
        );
    }
    if entry.args.last().map(String::as_str) != Some("run") {
        return Item::red(
            check,
            format!("{where_}: args must end with `run` (got {:?})", entry.args),
            Some("re-run setup".into()),
        );
    }
    for (var, ok) in [
        (
            "PVE_ACCESS_TIER",
            entry
                .env
                .get("PVE_ACCESS_TIER")
                .is_none_or(|v| Tier::parse(v).is_some()),
        ),
        (
            "PVE_MODULE_MODE",
            entry
                .env
                .get("PVE_MODULE_MODE")
                .is_none_or(|v| Module::parse(v).is_some()),
        ),
    ] {
        if !ok {
            return Item::red(
                check,
                format!("{where_}: {var} has an invalid value"),
                Some("valid tiers: read-only, read-execute, full; modes: core, advanced".into()),
            );
        }
    }
    let Some(file) = entry.env.get(CONFIG_ENV_VAR) else {
        return Item::red(
            check,
            format!("{where_}: env.{CONFIG_ENV_VAR} is missing"),
            Some("re-run setup".into()),
        );
    };
    if let Err(e) = config::load_file(std::path::Path::new(file)) {
        return Item::red(
            check,
            format!("{where_}: {CONFIG_ENV_VAR} does not load: {e}"),
            None,
        );
    }
    if let ConfigSource::File { path: loaded, .. } = &config.source {
        let same = std::fs::canonicalize(file).ok() == std::fs::canonicalize(loaded).ok();
        if !same {
            return Item::red(
                check,
                format!(
                    "{where_}: the entry points at {file}, not at {}",
                    loaded.display()
                ),
                Some("re-run setup for this instance".into()),
            );
        }
    }
    let mut detail = format!(
        "{where_}: launches `{} {}`",
        entry.command,
        entry.args.join(" ")
    );
    if legacy_npx {
        detail.push_str(" (legacy npx launcher; re-run setup to launch this binary directly)");
    }
    Item::green(check, detail)
}

async fn check_cluster(
    args: &DoctorArgs,
    checks: &BTreeSet<&'static str>,
    config: &Config,
    policy_env: Option<BTreeMap<String, String>>,
    report: &mut Report,
) {
    let Some(proxmox) = &config.proxmox else {
        return;
    };
    let client = match pve::Client::new(&probe::connection(proxmox)) {
        Ok(c) => c,
        Err(e) => {
            report.push(Item::red("connection", e.to_string(), e.hint()));
            return;
        }
    };
    let mut first_node = None;
    let api_checks = ["nodes", "vms", "cts", "node-status", "permissions"];
    let needs_api = api_checks.iter().any(|c| checks.contains(c));
    if needs_api {
        match probe::get(&client, "/nodes").await {
            Ok(v) => {
                let nodes = v.as_array().cloned().unwrap_or_default();
                first_node = nodes
                    .iter()
                    .find_map(|n| n["node"].as_str().map(str::to_owned));
                if checks.contains("nodes") {
                    report.push(Item::green(
                        "listNodes",
                        format!("Found {} nodes", nodes.len()),
                    ));
                }
            }
            Err(e) => {
                report.push(probe::diagnose("listNodes", proxmox, &e).await);
            }
        }
    }
    if let Some(node) = &first_node {
        for (check, name, path) in [
            ("vms", "listVMs", format!("/nodes/{node}/qemu")),
            ("cts", "listContainers", format!("/nodes/{node}/lxc")),
            (
                "node-status",
                "getNodeStatus",
                format!("/nodes/{node}/status"),
            ),
        ] {
            if !checks.contains(check) {
                continue;
            }
            match probe::get(&client, &path).await {
                Ok(Value::Array(a)) => report.push(Item::green(
                    name,
                    format!("{} on {node}: {}", name, a.len()),
                )),
                Ok(Value::Object(o)) => {
                    report.push(Item::green(name, format!("Status keys: {}", o.len())))
                }
                Ok(_) => report.push(Item::green(name, "answered")),
                Err(e) => report.push(probe::diagnose(name, proxmox, &e).await),
            }
        }
        if checks.contains("permissions") {
            report.push(checks::permissions(&client, policy_env.as_ref()).await);
        }
    } else if needs_api {
        for c in ["vms", "cts", "node-status", "permissions"] {
            if checks.contains(c) {
                report.push(Item::skip(c, "needs a reachable node (see listNodes)"));
            }
        }
    }
    if checks.contains("tls") {
        report.push(checks::tls(proxmox).await);
    }
    if checks.contains("remote-op") {
        checks::remote(args.ctid, config, &client, report).await;
    }
}
