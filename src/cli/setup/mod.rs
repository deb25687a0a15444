//! `setup`: write an instance file and merge a server entry into each chosen MCP client.
//!
//! Scripted when any connection flag is given (then all four of host, user, token name and
//! secret are required), otherwise an interactive wizard on standard input. Invariants: bad
//! input (tier, module, scope, clients, values) is refused before anything is written; the
//! instance file is validated by the same loader `run` uses before it is written, created 0600,
//! and hand-added keys of an existing file survive (a project-directory file only when this user
//! trusted it: an untrusted one is refused); the exit status is non-zero when the final status is
//! RED.

mod apply;
mod clusters;
mod instance;
mod wizard;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value, json};

use super::CliError;
use super::clients::{self, ClientId, DEFAULT_CLIENTS, ServerEntry};
use super::scope_flag::parse_scope;
use crate::catalog::{Module, Tier};
use crate::config::instances::{self, DEFAULT_INSTANCE_NAME};
use crate::config::{CONFIG_ENV_VAR, Paths, ProcessEnv, Scope};
use crate::pve;

pub(crate) use instance::SshChoice;

/// Default SSH key path, shared with `bootstrap --new-ssh-key` (relative to the home folder).
pub const DEFAULT_SSH_KEY: &str = ".ssh/id_ed25519_proxmox";

/// Flags of `setup`.
#[derive(Debug, Args, Default, Clone)]
pub struct SetupArgs {
    /// Proxmox host name or IP address (scripted mode).
    #[arg(long)]
    pub proxmox_host: Option<String>,
    /// Proxmox API port [default: 8006].
    #[arg(long)]
    pub proxmox_port: Option<u16>,
    /// API user without realm, e.g. `mcp`.
    #[arg(long)]
    pub proxmox_user: Option<String>,
    /// Realm of the API user [default: pve].
    #[arg(long)]
    pub proxmox_realm: Option<String>,
    /// API token id (the part after `!`).
    #[arg(long)]
    pub token_name: Option<String>,
    /// API token secret. Avoid: it lands in shell history and process lists; prefer
    /// --token-secret-file or --token-secret-stdin.
    #[arg(long)]
    pub token_secret: Option<String>,
    /// Read the token secret from this file (`-` reads standard input).
    #[arg(long, value_name = "PATH")]
    pub token_secret_file: Option<PathBuf>,
    /// Read the token secret from the first line of standard input.
    #[arg(long)]
    pub token_secret_stdin: bool,
    /// Turn certificate checks off (last resort; prefer --tls-fingerprint).
    #[arg(long)]
    pub allow_insecure_tls: bool,
    /// Pin the Proxmox certificate's SHA-256 fingerprint (`AB:CD:…`).
    #[arg(long, value_name = "SHA256")]
    pub tls_fingerprint: Option<String>,
    /// Verify the Proxmox certificate against this CA file (PEM).
    #[arg(long, value_name = "PATH")]
    pub tls_ca_file: Option<PathBuf>,
    /// SSH entry host [default: the Proxmox host]. Enables SSH.
    #[arg(long)]
    pub ssh_host: Option<String>,
    /// SSH port [default: 22].
    #[arg(long)]
    pub ssh_port: Option<u16>,
    /// SSH user [default: root].
    #[arg(long)]
    pub ssh_user: Option<String>,
    /// SSH private key [default: ~/.ssh/id_ed25519_proxmox, as `bootstrap --new-ssh-key`]. Enables SSH.
    #[arg(long, value_name = "PATH")]
    pub ssh_key_path: Option<PathBuf>,
    /// How SSH reaches other nodes: auto, direct, hop or disabled.
    #[arg(long)]
    pub ssh_strategy: Option<String>,
    /// Do not contact Proxmox (no probe, no discovery).
    #[arg(long)]
    pub skip_connectivity: bool,
    /// Clients to configure, comma-separated: claude-code, vscode, cursor, codex, claude-desktop
    /// [default: claude-code,vscode].
    #[arg(long, value_name = "LIST")]
    pub clients: Option<String>,
    /// Access tier written to the client entries: read-only, read-execute or full [default: read-only].
    #[arg(long)]
    pub access_tier: Option<String>,
    /// Module mode written to the client entries: core or advanced.
    #[arg(long)]
    pub module_mode: Option<String>,
    /// Print the client configuration blocks and write nothing.
    #[arg(long)]
    pub print_config: bool,
    /// Instance name (free text is sanitised, e.g. "Lab Cluster" → lab-cluster).
    #[arg(long)]
    pub name: Option<String>,
    /// Where to write: project (this folder) or user (your home folder) [default: project].
    #[arg(long)]
    pub scope: Option<String>,
}

/// Settings that apply to both modes, validated before anything else happens.
pub(crate) struct Common {
    pub tier: Tier,
    pub tier_given: bool,
    pub module: Option<Module>,
    pub clients: Vec<ClientId>,
    pub scope: Scope,
    pub paths: Paths,
}

fn config_err(msg: impl Into<String>) -> CliError {
    CliError::Config(msg.into())
}

fn common(args: &SetupArgs) -> Result<Common, CliError> {
    let tier = match &args.access_tier {
        Some(t) => Some(Tier::parse(t).ok_or_else(|| {
            config_err(format!(
                "--access-tier `{t}` is not a tier; valid tiers: read-only, read-execute, full"
            ))
        })?),
        None => None,
    };
    let module = match &args.module_mode {
        Some(m) => Some(Module::parse(m).ok_or_else(|| {
            config_err(format!(
                "--module-mode `{m}` is not a mode; valid modes: core, advanced"
            ))
        })?),
        None => None,
    };
    let clients = match &args.clients {
        Some(raw) => clients::parse_clients(raw).map_err(config_err)?,
        None => DEFAULT_CLIENTS.to_vec(),
    };
    let scope = parse_scope(args.scope.as_deref())?;
    let paths = Paths::from_env(&ProcessEnv).map_err(|e| CliError::Runtime(e.to_string()))?;
    Ok(Common {
        tier: tier.unwrap_or(Tier::ReadOnly),
        tier_given: tier.is_some(),
        module,
        clients,
        scope,
        paths,
    })
}

/// The client entry that launches this binary for the instance file at `config_path`.
pub fn server_entry(config_path: &Path, tier: Tier, module: Option<Module>) -> ServerEntry {
    let mut env = BTreeMap::new();
    env.insert(
        CONFIG_ENV_VAR.to_owned(),
        config_path.to_string_lossy().into_owned(),
    );
    env.insert("PVE_ACCESS_TIER".to_owned(), tier.as_str().to_owned());
    if let Some(m) = module {
        env.insert("PVE_MODULE_MODE".to_owned(), m.as_str().to_owned());
    }
    ServerEntry {
        command: clients::launcher_command(),
        args: vec!["run".to_owned()],
        env,
    }
}

/// Runs `setup`.
pub async fn run(args: SetupArgs) -> Result<(), CliError> {
    check_name(args.name.as_deref())?;
    let c = common(&args)?;
    if args.print_config {
        return print_config(&args, &c);
    }
    if args.token_secret.is_some() {
        eprintln!(
            "warning: --token-secret puts the secret in your shell history and the process list; \
             prefer --token-secret-file PATH or --token-secret-stdin"
        );
    }
    if let Some(file) = &args.token_secret_file {
        warn_if_committable(file);
    }
    let scripted = args.proxmox_host.is_some()
        || args.proxmox_user.is_some()
        || args.token_name.is_some()
        || args.token_secret.is_some()
        || args.token_secret_file.is_some()
        || args.token_secret_stdin;
    let (answers, tier, tier_chosen) = if scripted {
        (scripted_answers(&args, &c)?, c.tier, c.tier_given)
    } else {
        match wizard::run(&args, &c).await? {
            Some(done) => done,
            None => return Err(CliError::Runtime("setup aborted: no API token yet".into())),
        }
    };
    apply::finish(&args, &c, answers, tier, tier_chosen).await
}

/// `--name` must already be an instance name: a name setup would have to change (`Bad Name`
/// → `bad-name`) is refused with the rule and the name that would work, before anything runs.
fn check_name(raw: Option<&str>) -> Result<(), CliError> {
    let Some(raw) = raw else {
        return Ok(());
    };
    let suggested = instances::sanitize_name(raw);
    if suggested == raw && instances::validate_name(raw).is_ok() {
        return Ok(());
    }
    Err(config_err(format!(
        "--name {raw:?} is not an instance name: it names a file and an MCP server entry, so it \
         must be lower-case letters, digits, `.`, `_` or `-`, starting with a letter or digit \
         ({}); use `--name {suggested}`",
        instances::NAME_PATTERN
    )))
}

/// Warns when the token secret's file would show up in `git status`: setup has stored the
/// secret in the git-ignored instance file, so the copy is only a risk.
fn warn_if_committable(file: &Path) {
    if file == Path::new("-") {
        return;
    }
    if let Some(found) = super::files::unignored_in_git_work_tree(file) {
        let how = if found.confirmed {
            "is not git-ignored"
        } else {
            "may not be git-ignored (git could not tell)"
        };
        eprintln!(
            "warning: the token secret file {} lies inside the git work tree {} and {how}: \
             `git status` shows it ready to commit. Delete it once setup has stored the secret \
             (or add it to .gitignore); next time prefer --token-secret-stdin",
            file.display(),
            found.work_tree.display()
        );
    }
}

/// What the user told us, in instance-file keys.
pub(crate) struct Answers {
    /// Connection keys (`proxmoxHost` … TLS keys).
    pub core: Map<String, Value>,
    /// What to do with the SSH keys.
    pub ssh: SshChoice,
}

fn scripted_answers(args: &SetupArgs, c: &Common) -> Result<Answers, CliError> {
    let mut missing = Vec::new();
    if args.proxmox_host.is_none() {
        missing.push("--proxmox-host");
    }
    if args.proxmox_user.is_none() {
        missing.push("--proxmox-user");
    }
    if args.token_name.is_none() {
        missing.push("--token-name");
    }
    let secret_sources = usize::from(args.token_secret.is_some())
        + usize::from(args.token_secret_file.is_some())
        + usize::from(args.token_secret_stdin);
    if secret_sources == 0 {
        missing.push("--token-secret-file, --token-secret-stdin or --token-secret");
    }
    if !missing.is_empty() {
        return Err(config_err(format!(
            "scripted setup needs all connection flags; missing: {}",
            missing.join(", ")
        )));
    }
    if secret_sources > 1 {
        return Err(config_err(
            "give the token secret one way only (--token-secret-file, --token-secret-stdin or --token-secret)",
        ));
    }
    for (flag, what, value) in [
        ("--proxmox-user", "user", &args.proxmox_user),
        ("--proxmox-realm", "realm", &args.proxmox_realm),
        ("--token-name", "token name", &args.token_name),
    ] {
        if let Some(v) = value {
            check_api_id(what, v).map_err(|e| config_err(format!("{flag}: {e}")))?;
        }
    }
    let secret = read_secret(args)?;
    let core = core_keys(
        args.proxmox_host.as_deref().unwrap_or_default(),
        args.proxmox_port,
        args.proxmox_user.as_deref().unwrap_or_default(),
        args.proxmox_realm.as_deref(),
        args.token_name.as_deref().unwrap_or_default(),
        &secret,
        tls_choice(args)?,
    );
    Ok(Answers {
        core,
        ssh: ssh_choice(args, &c.paths)?,
    })
}

/// Checks one part of the token id `user@realm!name` before anything is written: Proxmox
/// cannot accept blanks, `@`, `!` or `=` inside a part, and a pasted full id gets a hint.
pub(crate) fn check_api_id(what: &str, value: &str) -> Result<(), String> {
    let v = value.trim();
    let bad = v
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '!' | '='));
    let Some(c) = bad else {
        return Ok(());
    };
    let hint = match (what, c) {
        ("token name", '!' | '@') => "; give only the part after `!` (for mcp@pve!nandi: nandi)",
        ("user", '@' | '!') => {
            "; give the user without realm and the realm on its own (for mcp@pve: user mcp, realm pve)"
        }
        _ => "",
    };
    Err(format!("the {what} {v:?} cannot contain {c:?}{hint}"))
}

fn read_secret(args: &SetupArgs) -> Result<String, CliError> {
    if let Some(s) = &args.token_secret {
        return Ok(s.trim().to_owned());
    }
    let from_stdin =
        args.token_secret_stdin || args.token_secret_file.as_deref() == Some(Path::new("-"));
    let text = if from_stdin {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| CliError::Runtime(format!("cannot read the secret from stdin: {e}")))?;
        line
    } else {
        let path = args.token_secret_file.clone().unwrap_or_default();
        let mut text = String::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(8192).read_to_string(&mut text))
            .map_err(|e| config_err(format!("cannot read {}: {e}", path.display())))?;
        text
    };
    let secret = text.lines().next().unwrap_or_default().trim().to_owned();
    if secret.is_empty() {
        return Err(config_err("the token secret is empty"));
    }
    Ok(secret)
}

/// TLS choice in instance-file keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TlsChoice {
    Verify,
    Insecure,
    Fingerprint(String),
    CaFile(PathBuf),
}

fn tls_choice(args: &SetupArgs) -> Result<TlsChoice, CliError> {
    let given = usize::from(args.allow_insecure_tls)
        + usize::from(args.tls_fingerprint.is_some())
        + usize::from(args.tls_ca_file.is_some());
    if given > 1 {
        return Err(config_err(
            "choose one of --allow-insecure-tls, --tls-fingerprint and --tls-ca-file",
        ));
    }
    Ok(if args.allow_insecure_tls {
        TlsChoice::Insecure
    } else if let Some(fp) = &args.tls_fingerprint {
        TlsChoice::Fingerprint(pve::normalize_fingerprint(fp).map_err(config_err)?)
    } else if let Some(ca) = &args.tls_ca_file {
        TlsChoice::CaFile(std::path::absolute(ca).unwrap_or_else(|_| ca.clone()))
    } else {
        TlsChoice::Verify
    })
}

pub(crate) fn core_keys(
    host: &str,
    port: Option<u16>,
    user: &str,
    realm: Option<&str>,
    token_name: &str,
    secret: &str,
    tls: TlsChoice,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("proxmoxHost".into(), json!(host.trim()));
    m.insert("proxmoxPort".into(), json!(port.unwrap_or(8006)));
    m.insert("proxmoxUser".into(), json!(user.trim()));
    m.insert("proxmoxRealm".into(), json!(realm.unwrap_or("pve").trim()));
    m.insert("tokenName".into(), json!(token_name.trim()));
    m.insert("tokenSecret".into(), json!(secret));
    m.insert("allowInsecureTls".into(), json!(tls == TlsChoice::Insecure));
    match tls {
        TlsChoice::Fingerprint(fp) => {
            m.insert("tlsFingerprint".into(), json!(fp));
        }
        TlsChoice::CaFile(p) => {
            m.insert("tlsCaFile".into(), json!(p.to_string_lossy()));
        }
        TlsChoice::Verify | TlsChoice::Insecure => {}
    }
    m
}

fn default_key_path(paths: &Paths) -> PathBuf {
    paths
        .home
        .as_ref()
        .map(|h| h.join(DEFAULT_SSH_KEY))
        .unwrap_or_else(|| PathBuf::from("~").join(DEFAULT_SSH_KEY))
}

fn ssh_choice(args: &SetupArgs, paths: &Paths) -> Result<SshChoice, CliError> {
    let strategy = args.ssh_strategy.as_deref().map(str::trim);
    if strategy.is_some_and(|s| s.eq_ignore_ascii_case("disabled")) {
        return Ok(SshChoice::Disabled);
    }
    if let Some(s) = strategy
        && crate::config::SshStrategy::parse(s).is_none()
    {
        return Err(config_err(format!(
            "--ssh-strategy `{s}` is not a strategy; valid: auto, direct, hop, disabled"
        )));
    }
    let any = args.ssh_host.is_some()
        || args.ssh_key_path.is_some()
        || args.ssh_port.is_some()
        || args.ssh_user.is_some()
        || strategy.is_some();
    if !any {
        return Ok(SshChoice::Keep);
    }
    let mut m = Map::new();
    let host = args
        .ssh_host
        .clone()
        .or_else(|| args.proxmox_host.clone())
        .unwrap_or_default();
    m.insert("sshHost".into(), json!(host.trim()));
    m.insert("sshPort".into(), json!(args.ssh_port.unwrap_or(22)));
    m.insert(
        "sshUser".into(),
        json!(args.ssh_user.as_deref().unwrap_or("root").trim()),
    );
    let key = match &args.ssh_key_path {
        Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
        None => default_key_path(paths),
    };
    m.insert("sshKeyPath".into(), json!(key.to_string_lossy()));
    m.insert(
        "sshStrategy".into(),
        json!(strategy.unwrap_or("auto").to_ascii_lowercase()),
    );
    Ok(SshChoice::Enabled(m))
}

fn print_config(args: &SetupArgs, c: &Common) -> Result<(), CliError> {
    let name = instances::sanitize_name(args.name.as_deref().unwrap_or(DEFAULT_INSTANCE_NAME));
    let path = instances::instance_path(&c.paths, c.scope, &name)
        .map_err(|e| config_err(e.to_string()))?;
    let entry = server_entry(&path, c.tier, c.module);
    let shown: Vec<ClientId> = match &args.clients {
        Some(_) => c.clients.clone(),
        None => ClientId::ALL.to_vec(),
    };
    println!(
        "# Nothing was written. Instance file this entry expects: {}",
        path.display()
    );
    for client in shown {
        let file = client
            .config_path(&c.paths, c.scope)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| e);
        println!("\n# {} -> {file}", client.label());
        print!("{}", clients::render_snippet(client, &name, &entry));
    }
    println!("\n# Any other MCP client (stdio):");
    println!("command: {}", entry.command);
    println!("args: {}", entry.args.join(" "));
    for (k, v) in &entry.env {
        println!("{k}={v}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_api_id;

    #[test]
    fn token_id_parts_are_checked_with_a_hint_for_a_pasted_full_id() {
        assert!(check_api_id("token name", "nandi").is_ok());
        assert!(check_api_id("user", "svc_mcp").is_ok());
        let full = check_api_id("token name", "mcp@pve!nandi").unwrap_err();
        assert!(full.contains("part after `!`"), "{full}");
        assert!(!full.contains("token token"), "{full}");
        let blank = check_api_id("token name", "my token").unwrap_err();
        assert_eq!(blank, "the token name \"my token\" cannot contain ' '");
        assert!(
            check_api_id("user", "mcp@pve")
                .unwrap_err()
                .contains("realm pve")
        );
    }
}
