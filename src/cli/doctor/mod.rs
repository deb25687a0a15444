//! `doctor`: check an installation end to end and say how to fix what is wrong.
//!
//! Invariants: unknown check names are an error (nothing is contacted); the client entry is
//! validated under the instance's real server key; when discovery finds several instances and
//! no `--name` picks one, each is checked in its own section; checks that cannot apply are SKIP,
//! never a false RED; the exit status is non-zero when anything is RED, in any section; no
//! output contains the secret.

mod checks;
mod clients;
mod pbs;
mod policy;

use std::collections::{BTreeMap, BTreeSet};

use clap::Args;
use serde_json::{Value, json};

use super::clients::ClientId;
use super::report::{Item, Report, Status, use_colour};
use super::{CliError, probe};
use crate::config::instances;
use crate::config::{self, Config, ConfigError, ConfigSource, Instance, Paths, ProcessEnv};
use crate::pve;

/// Every check, in the order they run.
pub const CHECKS: [&str; 9] = [
    "mcp-config",
    "nodes",
    "vms",
    "cts",
    "node-status",
    "remote-op",
    "tls",
    "permissions",
    "pbs",
];

/// Flags of `doctor`.
#[derive(Debug, Args, Default)]
pub struct DoctorArgs {
    /// Checks to run, comma-separated [default: all]: mcp-config, nodes, vms, cts, node-status,
    /// remote-op, tls, permissions, pbs.
    #[arg(long, value_name = "LIST")]
    pub check: Option<String>,
    /// Container id for the remote-op check (or NANDI_DOCTOR_CTID).
    #[arg(long, env = "NANDI_DOCTOR_CTID")]
    pub ctid: Option<u32>,
    /// Clients whose configuration to validate, comma-separated [default: every client file found].
    #[arg(long, value_name = "LIST")]
    pub clients: Option<String>,
    /// Instance to check (see `list`); default: the configuration `run` would load, or every
    /// instance when several are configured.
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

/// One instance's checks: the instance checked (`None` for the single configuration `run`
/// would load) and its report.
struct Section {
    instance: Option<Instance>,
    report: Report,
}

/// What `doctor` found to check.
enum Loaded {
    /// One configuration (and its client server key, when it comes from an instance file).
    One(Box<Config>, Option<String>),
    /// Nothing to check; the report says why.
    Nothing,
    /// Discovery found several instances; each is checked on its own.
    Several(Vec<Instance>),
}

/// Runs `doctor`.
pub async fn run(args: DoctorArgs) -> Result<(), CliError> {
    let checks = parse_checks(args.check.as_deref())?;
    let wanted_clients = match &args.clients {
        Some(raw) => Some(super::clients::parse_clients(raw).map_err(CliError::Config)?),
        None => None,
    };
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let wanted = wanted_clients.as_deref();
    let mut report = Report::default();
    // Loaded once, as `run` loads it: the configuration source is said once.
    let set = config::clusters::load_clusters(&ProcessEnv, &paths);
    let sections = match load_config(&args, &paths, &set, &mut report) {
        Loaded::One(config, key) => {
            check_loaded(&args, &checks, &paths, wanted, &config, key, &mut report).await;
            vec![Section {
                instance: None,
                report,
            }]
        }
        Loaded::Nothing => vec![Section {
            instance: None,
            report,
        }],
        Loaded::Several(found) => {
            let mut sections = Vec::new();
            for inst in found {
                let mut report = Report::default();
                if let Some((config, key)) = load_named(&inst, &paths, &mut report) {
                    check_loaded(&args, &checks, &paths, wanted, &config, key, &mut report).await;
                }
                sections.push(Section {
                    instance: Some(inst),
                    report,
                });
            }
            sections
        }
    };
    let mut sections = sections;
    if let Some(first) = sections.first_mut() {
        if checks.contains("mcp-config") {
            let demo = clients::demo_entries(&paths);
            let demo_works = demo.iter().any(|i| i.status == Status::Green);
            // Only the demo set up: no cluster is not a fault yet.
            for item in first.report.items.iter_mut().filter(|i| {
                demo_works
                    && i.check == "config"
                    && i.status == Status::Red
                    && i.detail.starts_with("no Proxmox connection is configured")
            }) {
                item.status = Status::Skip;
                item.detail.push_str(
                    "; only the demo entry is set up (checked below): run `nandi-proxmox-mcp setup` for a real cluster",
                );
                item.fix = None;
            }
            for item in demo {
                first.report.push(item);
            }
        }
        first.report.push(freeze_item());
        for item in policy::items(set.as_ref().ok()) {
            first.report.push(item);
        }
    }
    let red: Vec<&Section> = sections.iter().filter(|s| s.report.is_red()).collect();
    if args.json {
        let text = serde_json::to_string_pretty(&sections_json(&sections))
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        println!("{text}");
    } else {
        print_sections(&sections);
        let yellow = sections.iter().any(|s| s.report.is_yellow());
        if red.is_empty() && yellow {
            println!(
                "\nWorks, but something is YELLOW: follow its fix line (docs/TROUBLESHOOTING.md has more)."
            );
        } else if red.is_empty() {
            println!("\nAll good. Restart your MCP client if you changed its configuration.");
        } else {
            println!(
                "\nSomething is RED{}: follow the fix lines (docs/TROUBLESHOOTING.md has more).",
                red_names(&red)
            );
        }
    }
    if !red.is_empty() {
        return Err(CliError::Red(format!(
            "doctor found RED items{}",
            red_names(&red)
        )));
    }
    Ok(())
}

/// ` in instance `a`, `b`` when sections are per instance; empty otherwise.
fn red_names(red: &[&Section]) -> String {
    let names: Vec<String> = red
        .iter()
        .filter_map(|s| s.instance.as_ref().map(|i| format!("`{}`", i.name)))
        .collect();
    match names.len() {
        0 => String::new(),
        1 => format!(" in instance {}", names.join("")),
        _ => format!(" in instances {}", names.join(", ")),
    }
}

fn section_title(inst: &Instance) -> String {
    format!(
        "nandi-proxmox-mcp doctor — instance `{}` ({})",
        inst.name, inst.scope
    )
}

fn print_sections(sections: &[Section]) {
    let several = sections.len() > 1 || sections.iter().any(|s| s.instance.is_some());
    if several {
        let names: Vec<&str> = sections
            .iter()
            .filter_map(|s| s.instance.as_ref().map(|i| i.name.as_str()))
            .collect();
        println!(
            "{} Proxmox instances are configured ({}): checking each one. `nandi-proxmox-mcp \
             doctor --name NAME` checks only NAME; each MCP client entry names its own file, so \
             the server knows which one to use.",
            names.len(),
            names.join(", ")
        );
    }
    for section in sections {
        let title = match &section.instance {
            Some(inst) => section_title(inst),
            None => "nandi-proxmox-mcp doctor".to_owned(),
        };
        print!("{}", section.report.render(&title, use_colour()));
    }
}

/// The `--json` form: one report as before, or `{status, instances: [{instance, scope, path,
/// status, items}]}` when several instances were checked.
fn sections_json(sections: &[Section]) -> Value {
    match sections {
        [
            Section {
                instance: None,
                report,
            },
        ] => report.to_json(),
        _ => {
            let red = sections.iter().any(|s| s.report.is_red());
            let instances: Vec<Value> = sections
                .iter()
                .map(|s| {
                    let mut v = s.report.to_json();
                    if let (Some(inst), Value::Object(map)) = (&s.instance, &mut v) {
                        map.insert("instance".into(), json!(inst.name));
                        map.insert("scope".into(), json!(inst.scope.to_string()));
                        map.insert("path".into(), json!(inst.path.display().to_string()));
                    }
                    v
                })
                .collect();
            let yellow = sections.iter().any(|s| s.report.is_yellow());
            let status = match (red, yellow) {
                (true, _) => "RED",
                (false, true) => "YELLOW",
                _ => "GREEN",
            };
            json!({"status": status, "instances": instances})
        }
    }
}

/// Every check `checks` selects, for one loaded configuration.
async fn check_loaded(
    args: &DoctorArgs,
    checks: &BTreeSet<&'static str>,
    paths: &Paths,
    wanted: Option<&[ClientId]>,
    config: &Config,
    key: Option<String>,
    report: &mut Report,
) {
    let policy_env = if checks.contains("mcp-config") {
        clients::check_clients(paths, key.as_deref(), config, wanted, report)
    } else {
        None
    };
    // The tier the server runs with comes from the entry that launches it, checked or not.
    let policy_env = policy_env.or_else(|| match (&config.source, key.as_deref()) {
        (ConfigSource::File { path, .. }, Some(key)) => {
            super::served::entry_of(paths, key, path).map(|found| found.entry.env)
        }
        _ => None,
    });
    check_cluster(args, checks, config, policy_env, report).await;
}

/// Loads one named instance, with a GREEN or RED `instance` item.
fn load_named(
    inst: &Instance,
    paths: &Paths,
    report: &mut Report,
) -> Option<(Config, Option<String>)> {
    match config::load_instance(inst, &ProcessEnv, paths) {
        Ok(c) => {
            report.push(Item::green(
                "instance",
                format!("{} ({}, {})", inst.name, inst.scope, inst.path.display()),
            ));
            Some((c, Some(inst.server_key.clone())))
        }
        Err(e) => {
            report.push(Item::red("instance", e.to_string(), None));
            None
        }
    }
}

/// Loads the configuration to check: the `--name`d instance, else what `run` would load, else
/// every discovered instance when discovery cannot choose one.
fn load_config(
    args: &DoctorArgs,
    paths: &Paths,
    set: &Result<config::clusters::ClusterSet, ConfigError>,
    report: &mut Report,
) -> Loaded {
    if let Some(raw) = &args.name {
        let name = instances::sanitize_name(raw);
        return match instances::resolve_instance(paths, &name) {
            Ok(inst) => match load_named(&inst, paths, report) {
                Some((c, key)) => Loaded::One(Box::new(c), key),
                None => Loaded::Nothing,
            },
            Err(e) => {
                report.push(Item::red(
                    "instance",
                    e.to_string(),
                    Some("`nandi-proxmox-mcp list` shows the configured instances".into()),
                ));
                Loaded::Nothing
            }
        };
    }
    // Several clusters served by one process (a folder, a list, NANDI_PROXMOX_CLUSTERS=all):
    // each is checked in its own section.
    let c = match set {
        Ok(set) if set.clusters.len() > 1 => {
            return Loaded::Several(set.clusters.iter().map(cluster_instance).collect());
        }
        Ok(set) => match set.clusters.first() {
            Some(cluster) => cluster.config.clone(),
            None => return Loaded::Nothing,
        },
        Err(ConfigError::AmbiguousInstances { found })
            if !config::clusters::several_requested(&ProcessEnv, paths) =>
        {
            return Loaded::Several(found.clone());
        }
        Err(e) => {
            report.push(Item::red("config", e.to_string(), None));
            return Loaded::Nothing;
        }
    };
    if c.proxmox.is_none() {
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
        return Loaded::Nothing;
    }
    let key = match &c.source {
        ConfigSource::File { instance, .. } => instance.clone(),
        _ => None,
    };
    report.push(Item::green("config", source_detail(&c, paths)));
    Loaded::One(Box::new(c), key)
}

/// A loaded cluster as an instance to check (its file and scope; its name is its key).
fn cluster_instance(cluster: &config::clusters::ClusterConfig) -> Instance {
    let (path, scope) = match &cluster.config.source {
        ConfigSource::File { path, origin, .. } => (
            path.clone(),
            if *origin == config::FileOrigin::Trusted {
                config::Scope::Project
            } else {
                config::Scope::User
            },
        ),
        _ => (std::path::PathBuf::new(), config::Scope::User),
    };
    Instance {
        name: cluster.name.clone(),
        scope,
        path,
        server_key: cluster.name.clone(),
    }
}

/// Whether changes are frozen (the kill switch, `PVE_FREEZE_FILE`): said, never RED — a freeze
/// is a person's decision, not a fault; `unfreeze` lifts it.
fn freeze_item() -> Item {
    match config::freeze_file(&ProcessEnv) {
        Ok(Some(path)) => match crate::effects::FreezeSwitch::new(&path).check() {
            Ok(()) => Item::green(
                "freeze",
                format!("changes allowed (no freeze file at {})", path.display()),
            ),
            Err(frozen) => Item::skip("freeze", frozen.hint()),
        },
        Ok(None) => Item::skip(
            "freeze",
            "no freeze file can be placed (no HOME or XDG_STATE_HOME); set PVE_FREEZE_FILE",
        ),
        Err(e) => Item::red("freeze", e.to_string(), None),
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

/// The settings `run` gives this cluster: the variables (a client entry's over the process's),
/// then the instance file's policy keys (`accessTier`, `moduleMode`, …), which win.
fn served_settings(
    config: &Config,
    policy_env: Option<&BTreeMap<String, String>>,
) -> Result<crate::policy::Settings, String> {
    let empty = BTreeMap::new();
    let env = super::served::Overlay(policy_env.unwrap_or(&empty));
    let base = crate::policy::Settings::from_lookup(|k| config::EnvSource::var(&env, k))
        .map_err(|e| e.to_string())?;
    let name = match &config.source {
        ConfigSource::File { path, .. } => path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(config::clusters::SINGLE_CLUSTER_NAME)
            .to_owned(),
        _ => config::clusters::SINGLE_CLUSTER_NAME.to_owned(),
    };
    let cluster = config::clusters::ClusterConfig {
        name,
        config: config.clone(),
    };
    super::served::cluster_settings(&base, &cluster).map_err(|e| e.to_string())
}

async fn check_cluster(
    args: &DoctorArgs,
    checks: &BTreeSet<&'static str>,
    config: &Config,
    policy_env: Option<BTreeMap<String, String>>,
    report: &mut Report,
) {
    // How many tools this configuration serves (its tier, module, lists, SSH), not the catalog.
    match served_settings(config, policy_env.as_ref()) {
        Ok(settings) => {
            let registry = crate::registry::Registry::build_for(
                &settings,
                crate::registry::Capabilities {
                    ssh: config.ssh.is_some(),
                    pbs: !config.pbs.is_empty(),
                },
            );
            report.push(Item::green("tools", registry.exposure(&settings)));
        }
        Err(e) => report.push(Item::red("tools", e, None)),
    }
    if checks.contains("pbs") && !config.pbs.is_empty() {
        let tier = served_settings(config, policy_env.as_ref())
            .map_or(crate::catalog::Tier::ReadOnly, |s| s.tier);
        for item in pbs::items(&config.pbs, tier).await {
            report.push(item);
        }
    }
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
            let settings = served_settings(config, policy_env.as_ref());
            if let Ok(settings) = &settings {
                // Each person's own token (per-person identity), after the server's.
                let people = checks::people_permissions(&client, settings).await;
                report.push(
                    checks::permissions(&client, Ok(settings.clone()), config.ssh.is_some()).await,
                );
                people.into_iter().for_each(|item| report.push(item));
            } else {
                report.push(checks::permissions(&client, settings, config.ssh.is_some()).await);
            }
        }
    } else if needs_api {
        for c in ["vms", "cts", "node-status", "permissions"] {
            if checks.contains(c) {
                report.push(Item::skip(c, "needs a reachable node (see listNodes)"));
            }
        }
    }
    if checks.contains("tls") {
        report.push(checks::tls(proxmox, &client).await);
    }
    if checks.contains("remote-op") {
        checks::remote(args.ctid, config, &client, report).await;
    }
}
