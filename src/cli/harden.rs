//! `harden`: Claude Code `permissions.ask` rules so that every confirm-gated tool (and each of
//! its aliases) needs a person's approval, whatever the model sends.
//!
//! Invariants: the rule list comes from the catalog (a new confirm tool is covered with no edit
//! here); merging keeps every other setting, appends only missing rules and is idempotent; a
//! settings file of the wrong shape is refused untouched.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value, json};

use super::files::{self, FileError};
use super::{CliError, setup};
use crate::catalog;
use crate::config::instances::{self, Instance};
use crate::config::{Paths, ProcessEnv, Scope};

/// Flags of `harden`.
#[derive(Debug, Args, Default)]
pub struct HardenArgs {
    /// Instance to protect (free text is sanitised); default: every configured instance.
    #[arg(long)]
    pub name: Option<String>,
    /// Settings file scope used when the named instance is not configured: project or user.
    #[arg(long)]
    pub scope: Option<String>,
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
}

/// Every tool name that needs a person: each confirm tool followed by its aliases.
pub fn gated_tool_names() -> Vec<&'static str> {
    catalog::all()
        .filter(|t| t.confirm)
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

/// The rules for one server key.
pub fn rules_for(server_key: &str) -> Vec<String> {
    let prefix = rule_prefix(server_key);
    gated_tool_names()
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

/// Merges the rules for `server_key` into the settings file of `scope`.
pub fn apply(paths: &Paths, scope: Scope, server_key: &str) -> Result<HardenResult, String> {
    let path = settings_path(paths, scope)?;
    merge_rules(&path, &rules_for(server_key)).map_err(|e| e.to_string())
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
    if added > 0 {
        files::write_atomic(path, &files::pretty(&Value::Object(root)), false)?;
    }
    Ok(HardenResult {
        path: path.to_path_buf(),
        added,
        added_rules,
        total,
    })
}

/// Runs `harden`.
pub fn run(args: HardenArgs) -> Result<(), CliError> {
    let scope = setup::parse_scope(args.scope.as_deref())?;
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    let targets: Vec<(String, Scope)> = match &args.name {
        Some(raw) => {
            let name = instances::sanitize_name(raw);
            match instances::resolve_instance(&paths, &name) {
                Ok(Instance {
                    server_key, scope, ..
                }) => vec![(server_key, scope)],
                Err(_) => vec![(name, scope)],
            }
        }
        None => {
            let all = instances::list_instances(&paths);
            if all.is_empty() {
                return Err(CliError::Config(
                    "no Proxmox instance is configured yet; run `nandi-proxmox-mcp setup`, or \
                     name one with `harden --name <name>`"
                        .into(),
                ));
            }
            all.into_iter().map(|i| (i.server_key, i.scope)).collect()
        }
    };
    let names = gated_tool_names();
    println!(
        "Requiring human approval for {} destructive tools.",
        names.len()
    );
    let mut failed = false;
    for (key, scope) in targets {
        println!("\n{key} ({scope})");
        match apply(&paths, scope, &key) {
            Ok(r) => {
                println!("  {}", r.path.display());
                if r.added == 0 {
                    println!("  already covered ({} rules)", r.total);
                } else {
                    println!("  {} rule(s) added ({} total):", r.added, r.total);
                    for rule in &r.added_rules {
                        println!("    {rule}");
                    }
                }
            }
            Err(e) => {
                println!("  FAILED: {e}");
                failed = true;
            }
        }
    }
    println!("\nRestart your Claude Code session so the rules take effect.");
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
        let rules = rules_for("lab.01");
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
}
