//! `harden`: Claude Code `permissions.ask` rules so that every confirm-gated tool (and each of
//! its aliases) the instance can list needs a person's approval, whatever the model sends.
//!
//! Invariants: the rule list comes from the catalog (a new confirm tool is covered with no edit
//! here) and holds only tools at or below the instance's tier — `--access-tier`, else the tier
//! its Claude Code entry starts the server with, else (nothing says) every tier; merging keeps
//! every other setting, appends only missing rules and is idempotent; a settings file of the
//! wrong shape is refused untouched.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value, json};

use super::CliError;
use super::clients::{self, ClientId};
use super::files::{self, FileError};
use super::scope_flag::parse_scope;
use crate::catalog::{self, Tier};
use crate::config::instances;
use crate::config::{Paths, ProcessEnv, Scope};
use crate::policy::Settings;

/// Flags of `harden`.
#[derive(Debug, Args, Default)]
pub struct HardenArgs {
    /// Instance (or Claude Code entry) to protect; it must exist — an unknown name is refused
    /// and nothing is written. Default: every configured instance.
    #[arg(long)]
    pub name: Option<String>,
    /// Scope of the Claude Code entry to protect when `--name` is an entry, not an instance
    /// file: project or user [default: project, then user].
    #[arg(long)]
    pub scope: Option<String>,
    /// Tier the instance runs with: read-only, read-execute or full [default: the tier of its
    /// Claude Code entry; every tier when it has none].
    #[arg(long, value_name = "TIER")]
    pub access_tier: Option<String>,
}

/// Outcome of one merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardenResult {
    /// The settings file.
    pub path: PathBuf,
    /// Rules appended now.
    pub added: usize,
    /// The rules appended now, in order.
    pub added_rules: Vec<String>,
    /// Rules in `permissions.ask` afterwards.
    pub total: usize,
    /// Whether the settings file was written now (only when a rule was added).
    pub written: bool,
}

impl HardenResult {
    /// One line about the settings file that names it only when it exists: written now,
    /// already holding every rule, or — no rule needed at `tier` — not created at all.
    pub fn summary(&self, tier: Tier) -> String {
        if self.written {
            format!(
                "{} ask rule(s) added to {} ({} total)",
                self.added,
                self.path.display(),
                self.total
            )
        } else if self.path.exists() {
            format!(
                "{} already asks for every gated tool ({} rule(s))",
                self.path.display(),
                self.total
            )
        } else {
            format!(
                "no tool at tier {} needs a person's approval; no settings file written",
                tier.as_str()
            )
        }
    }
}

/// Every tool name that needs a person and that a server at `tier` lists: each tool of
/// that tier or below whose calls can need a person (from the effects classifier — a tool
/// gated only for some arguments gets an `ask` rule too, since a rule cannot see
/// arguments), followed by its aliases. Tools whose calls can be routine changes (start,
/// snapshot, a template clone, an unpruned backup) get none: the server itself asks for
/// the calls that are not routine, with the target's facts, and a blanket rule would ask
/// for every start.
pub fn gated_tool_names(tier: Tier) -> Vec<&'static str> {
    catalog::all()
        .filter(|t| t.can_be_gated() && !t.can_be_routine() && t.tier <= tier)
        .flat_map(|t| std::iter::once(t.name).chain(t.aliases.iter().copied()))
        .collect()
}

/// Claude Code writes tool ids as `mcp__<server>__<tool>` with characters other than letters,
/// digits, `_` and `-` in the server name replaced by `_` — an instance named `lab.01` must be
/// written `lab_01` or the rule never matches.
pub fn rule_prefix(server_key: &str) -> String {
    let normalized: String = server_key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("mcp__{normalized}__")
}

/// The rules for one server key running at `tier`.
pub fn rules_for(server_key: &str, tier: Tier) -> Vec<String> {
    let prefix = rule_prefix(server_key);
    gated_tool_names(tier)
        .into_iter()
        .map(|t| format!("{prefix}{t}"))
        .collect()
}

/// `.claude/settings.json` of the scope.
pub fn settings_path(paths: &Paths, scope: Scope) -> Result<PathBuf, String> {
    match scope {
        Scope::Project => Ok(paths.cwd.join(".claude").join("settings.json")),
        Scope::User => paths
            .home
            .as_ref()
            .map(|h| h.join(".claude").join("settings.json"))
            .ok_or_else(|| "HOME is not set".to_owned()),
    }
}

/// Merges the rules for `server_key` running at `tier` into the settings file of `scope`.
pub fn apply(
    paths: &Paths,
    scope: Scope,
    server_key: &str,
    tier: Tier,
) -> Result<HardenResult, String> {
    let path = settings_path(paths, scope)?;
    merge_rules(&path, &rules_for(server_key, tier)).map_err(|e| e.to_string())
}

/// The tier the Claude Code entry `server_key` of `scope` starts the server with (its
/// `PVE_ACCESS_TIER`, read the way the server reads it); `None` without such an entry.
fn entry_tier(paths: &Paths, scope: Scope, server_key: &str) -> Result<Option<Tier>, String> {
    let path = ClientId::ClaudeCode.config_path(paths, scope)?;
    if !path.exists() {
        return Ok(None);
    }
    let Some(entry) = clients::read_entry(ClientId::ClaudeCode, &path, server_key)? else {
        return Ok(None);
    };
    Settings::from_lookup(|key| entry.env.get(key).cloned())
        .map(|settings| Some(settings.tier))
        .map_err(|e| format!("entry `{server_key}` in {}: {e}", path.display()))
}

/// Whether the Claude Code configuration of `scope` has an entry `key` (of any shape).
fn entry_exists(paths: &Paths, scope: Scope, key: &str) -> bool {
    ClientId::ClaudeCode
        .config_path(paths, scope)
        .ok()
        .filter(|path| path.exists())
        .is_some_and(|path| {
            files::read_json_object(&path)
                .ok()
                .and_then(|root| root.get("mcpServers").and_then(|s| s.get(key)).cloned())
                .is_some()
        })
}

fn merge_rules(path: &std::path::Path, rules: &[String]) -> Result<HardenResult, FileError> {
    let mut root = files::read_json_object(path)?;
    let permissions = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(permissions) = permissions else {
        return Err(files::malformed(path, "`permissions` must be an object"));
    };
    let ask = permissions
        .entry("ask")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(ask) = ask else {
        return Err(files::malformed(path, "`permissions.ask` must be an array"));
    };
    let mut added_rules = Vec::new();
    for rule in rules {
        if !ask.iter().any(|r| r.as_str() == Some(rule)) {
            ask.push(json!(rule));
            added_rules.push(rule.clone());
        }
    }
    let added = added_rules.len();
    let total = ask.len();
    let written = added > 0;
    if written {
        files::write_atomic(path, &files::pretty(&Value::Object(root)), false)?;
    }
    Ok(HardenResult {
        path: path.to_path_buf(),
        added,
        added_rules,
        total,
        written,
    })
}

/// One settings file to write rules into: the client entry's name (the `<server>` of the
/// rules), its scope, the tier the instance file sets (with the file), and how the instance
/// is reached when it is a cluster of another entry.
struct Target {
    key: String,
    scope: Scope,
    file_tier: Option<(Tier, PathBuf)>,
    note: String,
}

/// The instances `harden` protects: the `--name`d one (an instance, or a Claude Code entry of
/// that name in `scope`, then the other scope — it must exist), else every one. A cluster
/// that `setup` added to another entry is protected under that entry's name.
fn targets(paths: &Paths, args: &HardenArgs, scope: Scope) -> Result<Vec<Target>, CliError> {
    let chosen = match &args.name {
        Some(raw) => {
            let name = instances::sanitize_name(raw);
            match instances::resolve_instance(paths, &name) {
                Ok(inst) => vec![inst],
                Err(_) => {
                    let other = match scope {
                        Scope::Project => Scope::User,
                        Scope::User => Scope::Project,
                    };
                    for scope in [scope, other] {
                        if entry_exists(paths, scope, &name) {
                            return Ok(vec![Target {
                                key: name,
                                scope,
                                file_tier: None,
                                note: String::new(),
                            }]);
                        }
                    }
                    let known: Vec<String> = instances::list_instances(paths)
                        .into_iter()
                        .map(|i| i.name)
                        .collect();
                    let known = if known.is_empty() {
                        "none is configured yet (run `nandi-proxmox-mcp setup`)".to_owned()
                    } else {
                        format!("known: {}", known.join(", "))
                    };
                    return Err(CliError::Config(format!(
                        "no instance named `{name}`; {known}. Nothing was written (`nandi-proxmox-mcp list` shows them)"
                    )));
                }
            }
        }
        None => {
            let all = instances::list_instances(paths);
            if all.is_empty() {
                return Err(CliError::Config(
                    "no Proxmox instance is configured yet; run `nandi-proxmox-mcp setup`, or \
                     name one with `harden --name <name>`"
                        .into(),
                ));
            }
            all
        }
    };
    Ok(chosen
        .into_iter()
        .map(|inst| {
            let file_tier = crate::config::clusters::policy_of(&inst.path)
                .and_then(|p| p.access_tier)
                .and_then(|t| Tier::parse(t.trim()))
                .map(|t| (t, inst.path.clone()));
            match super::served::entry_of(paths, &inst.server_key, &inst.path) {
                Some(found) if found.key != inst.server_key => Target {
                    note: format!(" (cluster `{}` of entry `{}`)", inst.name, found.key),
                    key: found.key,
                    scope: found.scope,
                    file_tier,
                },
                _ => Target {
                    key: inst.server_key,
                    scope: inst.scope,
                    file_tier,
                    note: String::new(),
                },
            }
        })
        .collect())
}

/// Runs `harden`.
pub fn run(args: HardenArgs) -> Result<(), CliError> {
    let scope = parse_scope(args.scope.as_deref())?;
    let tier_flag = match args.access_tier.as_deref() {
        None => None,
        Some(raw) => Some(Tier::parse(raw.trim()).ok_or_else(|| {
            CliError::Config(format!(
                "--access-tier `{raw}` is not a tier; valid tiers: read-only, read-execute, full"
            ))
        })?),
    };
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let targets = targets(&paths, &args, scope)?;
    println!("Requiring human approval for the confirm-gated tools each instance can list.");
    let mut failed = false;
    let mut wrote_any = false;
    for target in targets {
        let Target {
            key,
            scope,
            file_tier,
            note,
        } = target;
        let tier = match (tier_flag, file_tier) {
            (Some(tier), _) => Ok((tier, "--access-tier".to_owned())),
            (None, Some((tier, file))) => Ok((tier, format!("accessTier in {}", file.display()))),
            (None, None) => match entry_tier(&paths, scope, &key) {
                Ok(Some(tier)) => Ok((tier, "its Claude Code entry".to_owned())),
                Ok(None) => Ok((Tier::Full, "no client entry found: every tier".to_owned())),
                Err(e) => Err(e),
            },
        };
        let (tier, source) = match tier {
            Ok(found) => found,
            Err(e) => {
                println!("\n{key} ({scope})\n  FAILED: {e}");
                failed = true;
                continue;
            }
        };
        println!(
            "\n{key}{note} ({scope}, tier {} from {source}): {} gated tool name(s)",
            tier.as_str(),
            gated_tool_names(tier).len()
        );
        match apply(&paths, scope, &key, tier) {
            Ok(r) if r.written => {
                wrote_any = true;
                println!("  {}", r.path.display());
                println!("  {} rule(s) added ({} total):", r.added, r.total);
                for rule in &r.added_rules {
                    println!("    {rule}");
                }
            }
            Ok(r) if r.path.exists() => {
                println!("  {}", r.path.display());
                println!("  already covered ({} rules)", r.total);
            }
            Ok(r) => println!("  {}", r.summary(tier)),
            Err(e) => {
                println!("  FAILED: {e}");
                failed = true;
            }
        }
    }
    if wrote_any {
        println!("\nRestart your Claude Code session so the rules take effect.");
    }
    if failed {
        return Err(CliError::Red(
            "harden could not update every settings file".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_idempotent_and_keep_other_settings() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".claude/settings.json");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            r#"{"permissions":{"allow":["Bash(ls)"],"ask":["x"]},"env":{"A":"1"}}"#,
        )
        .unwrap();
        let rules = rules_for("lab.01", Tier::Full);
        assert!(rules.iter().all(|r| r.starts_with("mcp__lab_01__")));
        let first = merge_rules(&p, &rules).unwrap();
        assert_eq!(first.added, rules.len());
        let second = merge_rules(&p, &rules).unwrap();
        assert_eq!(second.added, 0);
        assert_eq!(second.total, rules.len() + 1);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v["env"]["A"], "1");
        assert_eq!(v["permissions"]["allow"][0], "Bash(ls)");
    }

    #[test]
    fn no_rule_means_no_file_and_no_mention_of_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(".claude/settings.json");
        let none = merge_rules(&p, &[]).unwrap();
        assert!(!none.written && !p.exists());
        let line = none.summary(Tier::ReadOnly);
        assert!(!line.contains("settings.json"), "{line}");
        assert!(line.contains("no settings file written"), "{line}");
        let some = merge_rules(&p, &rules_for("lab", Tier::ReadOnly)).unwrap();
        assert!(some.written && p.is_file());
        assert!(some.summary(Tier::ReadOnly).contains("added to"));
        let again = merge_rules(&p, &rules_for("lab", Tier::ReadOnly)).unwrap();
        assert!(!again.written);
        assert!(again.summary(Tier::ReadOnly).contains("already asks"));
    }

    #[test]
    fn rules_cover_only_the_tools_a_tier_lists() {
        // At read-only only the generic API call can need a person (a GET that reaches out).
        assert_eq!(gated_tool_names(Tier::ReadOnly), vec!["pve_api_call"]);
        let read_execute = gated_tool_names(Tier::ReadExecute);
        assert!(read_execute.contains(&"pve_stop_qemu_vm"));
        assert!(!read_execute.contains(&"pve_qemu_delete"));
        let full = gated_tool_names(Tier::Full);
        assert!(full.contains(&"pve_qemu_delete") && full.contains(&"pve_exec_in_container"));
        for name in &full {
            let spec = catalog::find(name)
                .or_else(|| catalog::all().find(|s| s.aliases.contains(name)))
                .unwrap();
            assert!(spec.can_be_gated());
        }
    }
}
