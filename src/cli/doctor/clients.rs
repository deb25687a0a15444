//! The `mcp-config` check of `doctor`: every MCP client entry for the instance's server key.
//!
//! Invariants: an entry is validated under the instance's real server key and must launch an
//! executable with `run`, valid policy variables and the very file `doctor` loaded; a client the
//! user asked for by name must hold the entry; nothing here contacts Proxmox.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::super::clients::{self, ClientId, ServerEntry};
use super::super::report::{Item, Report, Status};
use crate::catalog::{Module, Tier};
use crate::config::{self, CONFIG_ENV_VAR, Config, ConfigSource, Paths, Scope};

/// Validates the client entries; returns the env of the first valid entry (its tier/module).
pub(super) fn check_clients(
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
            match find_entry(*client, path, key, paths, config) {
                Ok(Some(entry)) => {
                    found_here = true;
                    let item = validate_entry(&check, path, &entry, config);
                    if item.status != Status::Red && first_env.is_none() {
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
    let Some(list) = entry.env.get(CONFIG_ENV_VAR) else {
        return Item::red(
            check,
            format!("{where_}: env.{CONFIG_ENV_VAR} is missing"),
            Some("re-run setup".into()),
        );
    };
    // One entry may serve several clusters: a comma-separated list of instance files.
    for one in config_files(list) {
        if let Err(e) = config::load_file(std::path::Path::new(one)) {
            return Item::red(
                check,
                format!("{where_}: {CONFIG_ENV_VAR} does not load: {e}"),
                None,
            );
        }
    }
    let file = list.as_str();
    if let ConfigSource::File { path: loaded, .. } = &config.source {
        let same = names_file(list, loaded);
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
    let several = config_files(list).count();
    let mut detail = format!(
        "{where_}: launches `{} {}`{}",
        entry.command,
        entry.args.join(" "),
        if several > 1 {
            format!(" serving {several} clusters")
        } else {
            String::new()
        }
    );
    if legacy_npx {
        detail.push_str(" (legacy npx launcher; re-run setup to launch this binary directly)");
    }
    Item::green(check, detail)
}

/// The instance files an entry's `NANDI_PROXMOX_CONFIG` names (one, or a comma-separated list).
fn config_files(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|f| !f.is_empty())
}

/// Whether an entry's `NANDI_PROXMOX_CONFIG` names `loaded` (alone or in its list).
fn names_file(list: &str, loaded: &std::path::Path) -> bool {
    let loaded = std::fs::canonicalize(loaded).ok();
    config_files(list).any(|f| std::fs::canonicalize(f).ok() == loaded)
}

/// The entry of ours for this instance in a client file: the one under its own key, else an
/// entry of another instance that serves it too (several clusters, one server entry).
fn find_entry(
    client: ClientId,
    path: &std::path::Path,
    key: &str,
    paths: &Paths,
    config: &Config,
) -> Result<Option<ServerEntry>, String> {
    if let Some(entry) = clients::read_entry(client, path, key)? {
        return Ok(Some(entry));
    }
    let ConfigSource::File { path: loaded, .. } = &config.source else {
        return Ok(None);
    };
    for other in crate::config::instances::list_instances(paths) {
        if other.server_key == key {
            continue;
        }
        if let Ok(Some(entry)) = clients::read_entry(client, path, &other.server_key)
            && entry
                .env
                .get(CONFIG_ENV_VAR)
                .is_some_and(|list| names_file(list, loaded))
        {
            return Ok(Some(entry));
        }
    }
    Ok(None)
}

/// Each Claude Code entry that starts the built-in demo (`run --demo`): said as the demo — it
/// talks to an emulator, not to Proxmox — and its command checked like any other entry.
pub(super) fn demo_entries(paths: &Paths) -> Vec<Item> {
    let mut out = Vec::new();
    for scope in [Scope::Project, Scope::User] {
        let Ok(path) = ClientId::ClaudeCode.config_path(paths, scope) else {
            continue;
        };
        let Ok(root) = super::super::files::read_json_object(&path) else {
            continue;
        };
        let Some(servers) = root.get("mcpServers").and_then(|s| s.as_object()) else {
            continue;
        };
        for (key, value) in servers {
            let Some(entry) = ServerEntry::from_json(value) else {
                continue;
            };
            if !entry.args.iter().any(|a| a == "--demo") {
                continue;
            }
            let check = format!("mcpConfig:demo:{key}");
            let launch = format!("`{} {}`", entry.command, entry.args.join(" "));
            let found = if std::path::Path::new(&entry.command).is_absolute() {
                clients::is_executable(std::path::Path::new(&entry.command))
            } else {
                clients::find_on_path(&entry.command).is_some()
            };
            out.push(if !found {
                Item::red(
                    &check,
                    format!(
                        "{}: the demo entry `{key}` launches {launch}, which is not an executable file or not on PATH",
                        path.display()
                    ),
                    Some("re-run `nandi-proxmox-mcp setup`, or point `command` at the installed binary".into()),
                )
            } else if entry.args.first().map(String::as_str) != Some("run") {
                Item::red(
                    &check,
                    format!("{}: the demo entry `{key}` must start with `run --demo` (got {launch})", path.display()),
                    Some("use \"args\": [\"run\", \"--demo\"]".into()),
                )
            } else {
                Item::green(
                    &check,
                    format!(
                        "{}: entry `{key}` is the demo — {launch} serves a built-in emulator, no Proxmox is contacted",
                        path.display()
                    ),
                )
            });
        }
    }
    out
}
