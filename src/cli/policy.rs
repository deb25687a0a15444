//! `policy explain TOOL [key=value …]`: which of the operator's rules (docs/POLICY.md) would
//! decide a call, and why — the call's effects and class, every rule that matched, the
//! deciding one and the resulting action.
//!
//! Loads the configuration as `run` does (the policy variables, the cluster's instance file and
//! its `policy`), builds the call's gate offline, and reads the target guest's facts from
//! Proxmox only when a rule needs them (`pool`, `tag`, a template clone's class) and a cluster
//! is configured — plain reads, outside any clearance. Invariant: it decides with the very
//! functions the pipeline uses (`pipeline::policy::evaluate`), so what it prints is what a
//! call would get; it never sends a change.

use std::fmt::Write as _;

use clap::Args;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::CliError;
use crate::config::{self, Paths, ProcessEnv};
use crate::pipeline::policy::{self as decide, Ruled};
use crate::policy::{Action, Guest, Settings};

/// Arguments of `policy`.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PolicyCommand,
}

/// `policy` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PolicyCommand {
    /// Say which rule decides a call (`nandi-proxmox-mcp policy explain pve_start_qemu_vm node=pve01 vmid=101`).
    Explain(ExplainArgs),
}

/// Arguments of `policy explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The tool's canonical name.
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// The call's arguments as `key=value` (a value that reads as JSON is taken as JSON).
    #[arg(value_name = "KEY=VALUE")]
    pub args: Vec<String>,
    /// With several clusters: the cluster the call goes to (else the default one).
    #[arg(long)]
    pub cluster: Option<String>,
    /// Never read the target's facts from Proxmox (rules on pool or tag see them as unknown).
    #[arg(long)]
    pub offline: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `policy`.
pub async fn run(args: PolicyArgs) -> Result<(), CliError> {
    let PolicyCommand::Explain(args) = args.command;
    let out = explain(&args).await?;
    super::write_stdout(out.as_bytes())
}

async fn explain(args: &ExplainArgs) -> Result<String, CliError> {
    let spec = crate::catalog::find(&args.tool)
        .or_else(|| crate::catalog::all().find(|s| s.aliases.contains(&args.tool.as_str())))
        .ok_or_else(|| CliError::Config(format!("{:?} is not a tool", args.tool)))?;
    let arguments = parse_pairs(&args.args)?;
    let valid = crate::schema::validate(spec, Some(&arguments)).map_err(|e| {
        let why: Vec<String> = e.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        CliError::Config(format!(
            "invalid arguments for {}: {}",
            spec.name,
            why.join("; ")
        ))
    })?;
    let (settings, cluster, config) = load(args.cluster.as_deref())?;
    let gate = crate::gate::evaluate(spec, &valid);
    let client = match (&gate, args.offline) {
        (Some(_), false) => {
            let limits = crate::pve::ClientLimits::default();
            super::run::connect(config, limits)?.0
        }
        _ => None,
    };
    let cancel = CancellationToken::new();
    let several = cluster.as_deref();
    let ruled = decide::evaluate(
        spec.name,
        &settings.rules,
        client.as_ref(),
        several,
        gate.as_ref(),
        &valid,
        &cancel,
    )
    .await;
    let report = Report {
        tool: spec.name,
        gate: gate.as_ref(),
        settings: &settings,
        ruled: &ruled,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report.json())
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        return Ok(format!("{text}\n"));
    }
    Ok(report.text())
}

/// The settings in force for the chosen cluster, its name (several clusters only) and its
/// configuration.
fn load(wanted: Option<&str>) -> Result<(Settings, Option<String>, config::Config), CliError> {
    let settings = Settings::from_lookup(|key| std::env::var(key).ok())
        .map_err(|e| CliError::Config(e.to_string()))?;
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let set = config::clusters::load_clusters(&ProcessEnv, &paths)
        .map_err(|e| CliError::Config(e.to_string()))?;
    let several = set.clusters.len() > 1;
    let name = wanted.map(str::to_owned).or(set.default.clone());
    let chosen = match &name {
        Some(name) => set.clusters.into_iter().find(|c| &c.name == name),
        None => set.clusters.into_iter().next(),
    }
    .ok_or_else(|| CliError::Config(format!("no cluster named {name:?} is configured")))?;
    let settings = settings
        .for_cluster(&chosen.config.policy, &chosen.name)
        .map_err(|e| CliError::Config(e.to_string()))?;
    Ok((settings, several.then_some(chosen.name), chosen.config))
}

/// `key=value` words as the call's arguments.
fn parse_pairs(words: &[String]) -> Result<Map<String, Value>, CliError> {
    let mut map = Map::new();
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| CliError::Config(format!("{word:?} is not key=value")))?;
        let value = serde_json::from_str::<Value>(value)
            .ok()
            .filter(|v| !v.is_string())
            .unwrap_or_else(|| Value::String(value.to_owned()));
        map.insert(key.to_owned(), value);
    }
    Ok(map)
}

/// What `explain` prints.
struct Report<'a> {
    tool: &'static str,
    gate: Option<&'a crate::gate::Gate>,
    settings: &'a Settings,
    ruled: &'a Ruled,
}

impl Report<'_> {
    fn effects(&self) -> Vec<&'static str> {
        self.gate
            .map(|g| g.planned.effects.names())
            .unwrap_or_default()
    }

    fn class(&self) -> &'static str {
        match (self.gate, self.ruled.class) {
            (None, _) => "read",
            (Some(_), Some(class)) => class.as_str(),
            (Some(g), None) if g.routine.is_some() => "routine",
            (Some(_), None) => "consequential",
        }
    }

    /// The resulting action in words.
    fn result(&self) -> String {
        let Some(gate) = self.gate else {
            return "runs: a plain read (the policy decides only calls beyond a plain read)"
                .to_owned();
        };
        match self.ruled.action() {
            Some(Action::Deny) => "refused (POLICY_DENIED); nothing is sent".to_owned(),
            Some(Action::Ask) => "a person is asked".to_owned(),
            Some(Action::Allow) => format!(
                "runs without a person (audited as {})",
                self.ruled.approval().unwrap_or("policy")
            ),
            None if gate.routine.is_some() && self.settings.routine.unasked => {
                "runs without a person if the target is not protected (tags, pool, HA, protection=1); else a person is asked".to_owned()
            }
            None => "a person is asked".to_owned(),
        }
    }

    fn decided_by(&self) -> String {
        match self.ruled.decision.as_ref().and_then(|d| d.rule.as_ref()) {
            Some(rule) => format!("{}: {}", rule.id, rule.text),
            None => "built-in default".to_owned(),
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        let effects = self.effects();
        let _ = writeln!(out, "tool:       {}", self.tool);
        let _ = writeln!(
            out,
            "effects:    {}",
            if effects.is_empty() {
                "read".to_owned()
            } else {
                effects.join(", ")
            }
        );
        let _ = writeln!(out, "class:      {}", self.class());
        let _ = writeln!(out, "policy:     {}", self.source());
        if let Some(ignored) = &self.settings.rules.ignored {
            let _ = writeln!(out, "warning:    {ignored}");
        }
        let matched = self.matched();
        if matched.is_empty() {
            let _ = writeln!(out, "matched:    none");
        } else {
            for (i, m) in matched.iter().enumerate() {
                let label = if i == 0 { "matched:" } else { "" };
                let _ = writeln!(out, "{label:<12}{m}");
            }
        }
        let _ = writeln!(out, "decided by: {}", self.decided_by());
        if let Some(d) = &self.ruled.decision {
            let _ = writeln!(out, "why:        {}", d.why);
        }
        if let Some(Guest::Unknown(why)) = &self.ruled.guest {
            let _ = writeln!(
                out,
                "guest:      facts unknown ({why}): rules on pool or tag hold for ask and deny, never for allow"
            );
        }
        if !self.ruled.reads.is_empty() {
            let _ = writeln!(out, "read:       {}", self.ruled.reads.join(", "));
        }
        let _ = writeln!(out, "result:     {}", self.result());
        out
    }

    fn matched(&self) -> Vec<String> {
        self.ruled
            .decision
            .as_ref()
            .map(|d| {
                d.matched
                    .iter()
                    .map(|r| format!("{}: {}", r.id, r.text))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn source(&self) -> String {
        let rules = &self.settings.rules;
        match &rules.source {
            Some(source) => format!("{} ({} rules)", source, rules.rules.len()),
            None => "built-in default (no rules)".to_owned(),
        }
    }

    fn json(&self) -> Value {
        json!({
            "tool": self.tool,
            "effects": self.effects(),
            "class": self.class(),
            "policy": self.source(),
            "ignored": self.settings.rules.ignored,
            "matched": self.matched(),
            "decidedBy": self.decided_by(),
            "action": self.ruled.action().map_or("default", Action::as_str),
            "why": self.ruled.decision.as_ref().map(|d| d.why.clone()),
            "read": self.ruled.reads,
            "guestFactsUnknown": match &self.ruled.guest {
                Some(Guest::Unknown(why)) => Some(why.clone()),
                _ => None,
            },
            "result": self.result(),
        })
    }
}
