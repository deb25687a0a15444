//! MCP client configuration files: where each supported client keeps its server list, how our
//! entry looks there, and merging it in without disturbing anything else.
//!
//! Invariants: only our entry (under the instance's server key) is added or updated — every other
//! server and key, and in TOML and VS Code's JSONC every comment, stays as it was (a change that
//! would drop a comment writes nothing and says so); fields a person added to our entry
//! by hand survive a re-run; a file that cannot be parsed is refused untouched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::files::{self, FileError};
use super::jsonc;
use crate::config::{Paths, Scope};

/// The clients `setup` can configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClientId {
    /// Claude Code: `.mcp.json` (project) or `~/.claude.json` (user), root key `mcpServers`.
    ClaudeCode,
    /// VS Code: `.vscode/mcp.json` (project) or the user profile's `mcp.json`, root key `servers`.
    Vscode,
    /// Cursor: `.cursor/mcp.json` (project) or `~/.cursor/mcp.json` (user), root `mcpServers`.
    Cursor,
    /// OpenAI Codex CLI: `~/.codex/config.toml`, table `[mcp_servers.<name>]` (user only).
    Codex,
    /// Claude Desktop: its per-OS `claude_desktop_config.json`, root `mcpServers` (user only).
    ClaudeDesktop,
}

/// Clients written when `--clients` is not given (the reference's default pair).
pub const DEFAULT_CLIENTS: [ClientId; 2] = [ClientId::ClaudeCode, ClientId::Vscode];

impl ClientId {
    /// Every client, in the order they are documented.
    pub const ALL: [ClientId; 5] = [
        ClientId::ClaudeCode,
        ClientId::Vscode,
        ClientId::Cursor,
        ClientId::Codex,
        ClientId::ClaudeDesktop,
    ];

    /// The id users write in `--clients`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientId::ClaudeCode => "claude-code",
            ClientId::Vscode => "vscode",
            ClientId::Cursor => "cursor",
            ClientId::Codex => "codex",
            ClientId::ClaudeDesktop => "claude-desktop",
        }
    }

    /// Human name.
    pub fn label(self) -> &'static str {
        match self {
            ClientId::ClaudeCode => "Claude Code",
            ClientId::Vscode => "VS Code",
            ClientId::Cursor => "Cursor",
            ClientId::Codex => "Codex",
            ClientId::ClaudeDesktop => "Claude Desktop",
        }
    }

    /// Root key of the server map (JSON clients) or table (Codex).
    pub fn root_key(self) -> &'static str {
        match self {
            ClientId::Vscode => "servers",
            ClientId::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// Whether the client reads its file as JSON with comments (JSONC): VS Code does, so
    /// comments and trailing commas there are read and kept; the others want plain JSON.
    pub fn reads_comments(self) -> bool {
        matches!(self, ClientId::Vscode)
    }

    /// Whether this client only has a user-level file.
    pub fn user_only(self) -> bool {
        matches!(self, ClientId::Codex | ClientId::ClaudeDesktop)
    }

    /// The configuration file for `scope` (user-only clients ignore the scope).
    pub fn config_path(self, paths: &Paths, scope: Scope) -> Result<PathBuf, String> {
        let home = || {
            paths.home.clone().ok_or_else(|| {
                format!(
                    "{} keeps its configuration in your home folder, but HOME is not set",
                    self.label()
                )
            })
        };
        let cwd = &paths.cwd;
        Ok(match (self, scope) {
            (ClientId::ClaudeCode, Scope::Project) => cwd.join(".mcp.json"),
            (ClientId::ClaudeCode, Scope::User) => home()?.join(".claude.json"),
            (ClientId::Vscode, Scope::Project) => cwd.join(".vscode").join("mcp.json"),
            (ClientId::Vscode, Scope::User) => app_config_dir(&home()?).join("Code/User/mcp.json"),
            (ClientId::Cursor, Scope::Project) => cwd.join(".cursor").join("mcp.json"),
            (ClientId::Cursor, Scope::User) => home()?.join(".cursor").join("mcp.json"),
            (ClientId::Codex, _) => codex_home(&home()?).join("config.toml"),
            (ClientId::ClaudeDesktop, _) => {
                app_config_dir(&home()?).join("Claude/claude_desktop_config.json")
            }
        })
    }
}

/// Parses `--clients` (comma-separated ids); unknown ids are an error naming the valid ones.
pub fn parse_clients(raw: &str) -> Result<Vec<ClientId>, String> {
    let mut out = Vec::new();
    for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let lower = part.to_ascii_lowercase();
        let Some(id) = ClientId::ALL.into_iter().find(|c| c.as_str() == lower) else {
            return Err(format!(
                "unknown client `{part}`; valid clients: {}",
                valid_clients()
            ));
        };
        if !out.contains(&id) {
            out.push(id);
        }
    }
    if out.is_empty() {
        return Err(format!(
            "--clients is empty; valid clients: {}",
            valid_clients()
        ));
    }
    Ok(out)
}

fn valid_clients() -> String {
    ClientId::ALL.map(ClientId::as_str).join(", ")
}

/// The per-user application-config folder: `~/.config` (Linux, or `$XDG_CONFIG_HOME`),
/// `~/Library/Application Support` (macOS), `%APPDATA%` (Windows).
fn app_config_dir(home: &Path) -> PathBuf {
    if cfg!(target_os = "macos") {
        home.join("Library/Application Support")
    } else if cfg!(windows) {
        std::env::var_os("APPDATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("AppData/Roaming"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"))
    }
}

/// Codex keeps its files in `$CODEX_HOME`, default `~/.codex`.
fn codex_home(home: &Path) -> PathBuf {
    std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".codex"))
}

/// How a client launches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// Program to start.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it.
    pub env: BTreeMap<String, String>,
}

impl ServerEntry {
    /// The JSON form used by the JSON clients.
    pub fn to_json(&self) -> Value {
        json!({"command": self.command, "args": self.args, "env": self.env})
    }

    /// Reads an entry back from a JSON client file's object (`None` when the shape is wrong).
    pub fn from_json(value: &Value) -> Option<ServerEntry> {
        let command = value.get("command")?.as_str()?.to_owned();
        let args = match value.get("args") {
            None => Vec::new(),
            Some(a) => a
                .as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()?,
        };
        let env = match value.get("env") {
            None => BTreeMap::new(),
            Some(e) => e
                .as_object()?
                .iter()
                .map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect::<Option<BTreeMap<_, _>>>()?,
        };
        Some(ServerEntry { command, args, env })
    }
}

/// What the launcher command should be: the bare program name when the running executable is
/// the one `PATH` finds (so an upgrade in place keeps working), else its absolute path.
pub fn launcher_command() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return env!("CARGO_PKG_NAME").to_owned();
    };
    let exe = exe.canonicalize().unwrap_or(exe);
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(found) = find_on_path(&name)
        && found.canonicalize().ok().as_ref() == Some(&exe)
    {
        return name;
    }
    exe.to_string_lossy().into_owned()
}

/// The first `PATH` entry holding an executable file `name`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is an executable regular file.
pub fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Merges `entry` under `key` in `client`'s file at `path` and writes it. Fields of an existing
/// entry that we do not set (e.g. a hand-added `type` or `disabled`) are kept; `env` is merged
/// key by key. A file that cannot be parsed is refused untouched.
pub fn write_entry(
    client: ClientId,
    path: &Path,
    key: &str,
    entry: &ServerEntry,
) -> Result<(), FileError> {
    let text = match client {
        ClientId::Codex => merge_toml(path, key, entry)?,
        _ => merge_json(client, path, key, entry)?,
    };
    // ~/.claude.json may hold OAuth state; the others hold no secret but the token's file path.
    let private = matches!(client, ClientId::ClaudeCode) && path.ends_with(".claude.json");
    files::write_atomic(path, &text, private)
}

fn merge_json(
    client: ClientId,
    path: &Path,
    key: &str,
    entry: &ServerEntry,
) -> Result<String, FileError> {
    let root_key = client.root_key();
    let mut doc = None;
    let mut root = if client.reads_comments() {
        let parsed =
            jsonc::parse(&read_text(path)?).map_err(|e| files::malformed(path, &e.to_string()))?;
        let root = parsed.root.clone();
        doc = Some(parsed).filter(|d| d.has_comments);
        root
    } else {
        files::read_json_object(path)?
    };
    let legacy = client == ClientId::Vscode && !root.contains_key(root_key);
    if let Some(doc) = doc.as_mut() {
        // Comments (or trailing commas): edit the text in place so every one of them stays.
        let kept = |reason: &str| FileError::CommentsWouldBeLost {
            path: path.to_path_buf(),
            reason: reason.to_owned(),
        };
        if legacy && root.get("mcp").is_some_and(|m| m.get("servers").is_some()) {
            return Err(kept("its servers are in the legacy `mcp.servers` layout"));
        }
        let merged = merged_entry(client, path, &mut root, key, entry)?;
        let edit = if doc.root.contains_key(root_key) {
            doc.set(&[root_key], key, &merged)
        } else {
            doc.set(&[], root_key, &json!({ key: merged }))
        };
        edit.map_err(|e| kept(&e.to_string()))?;
        return Ok(doc.text().to_owned());
    }
    if legacy {
        // Legacy VS Code layout {"mcp": {"servers": {...}}}: move the servers to the root.
        if let Some(Value::Object(mcp)) = root.get_mut("mcp")
            && let Some(servers) = mcp.remove("servers")
        {
            if mcp.is_empty() {
                root.remove("mcp");
            }
            root.insert(root_key.to_owned(), servers);
        }
    }
    let merged = merged_entry(client, path, &mut root, key, entry)?;
    if let Some(Value::Object(servers)) = root.get_mut(root_key) {
        servers.insert(key.to_owned(), merged);
    }
    Ok(files::pretty(&Value::Object(root)))
}

/// Our entry merged over the existing one under `root[root_key][key]` (creating an empty
/// `root_key` object when absent): fields we do not set are kept, `env` merged key by key.
fn merged_entry(
    client: ClientId,
    path: &Path,
    root: &mut Map<String, Value>,
    key: &str,
    entry: &ServerEntry,
) -> Result<Value, FileError> {
    let root_key = client.root_key();
    let servers = root
        .entry(root_key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(files::malformed(
            path,
            &format!("`{root_key}` must be an object"),
        ));
    };
    let mut merged = match servers.get(key) {
        Some(Value::Object(existing)) => existing.clone(),
        Some(_) => {
            return Err(files::malformed(
                path,
                &format!("`{root_key}.{key}` must be an object"),
            ));
        }
        None => Map::new(),
    };
    if client == ClientId::Vscode {
        merged
            .entry("type".to_owned())
            .or_insert_with(|| json!("stdio"));
    }
    merged.insert("command".into(), json!(entry.command));
    merged.insert("args".into(), json!(entry.args));
    let mut env = match merged.remove("env") {
        Some(Value::Object(e)) => e,
        _ => Map::new(),
    };
    for (k, v) in &entry.env {
        env.insert(k.clone(), json!(v));
    }
    merged.insert("env".into(), Value::Object(env));
    Ok(Value::Object(merged))
}

fn read_text(path: &Path) -> Result<String, FileError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(FileError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn merge_toml(path: &Path, key: &str, entry: &ServerEntry) -> Result<String, FileError> {
    use toml_edit::{Array, DocumentMut, Item, Table, value};
    let text = read_text(path)?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| files::malformed(path, e.message()))?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| files::malformed(path, "`mcp_servers` must be a table"))?;
    let ours = servers
        .entry(key)
        .or_insert(Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| files::malformed(path, &format!("`mcp_servers.{key}` must be a table")))?;
    ours.insert("command", value(entry.command.as_str()));
    let mut args = Array::new();
    for a in &entry.args {
        args.push(a.as_str());
    }
    ours.insert("args", value(args));
    let env = ours
        .entry("env")
        .or_insert(Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| {
            files::malformed(path, &format!("`mcp_servers.{key}.env` must be a table"))
        })?;
    for (k, v) in &entry.env {
        env.insert(k, value(v.as_str()));
    }
    Ok(doc.to_string())
}

/// Reads our entry under `key` from `client`'s file: `Ok(None)` when the file or the entry is
/// missing, `Err` with a reason when the file or the entry is malformed.
pub fn read_entry(client: ClientId, path: &Path, key: &str) -> Result<Option<ServerEntry>, String> {
    if client == ClientId::Codex {
        let text = read_text(path).map_err(|e| e.to_string())?;
        let doc: toml_edit::DocumentMut = text
            .parse()
            .map_err(|e: toml_edit::TomlError| format!("invalid TOML: {}", e.message()))?;
        let Some(item) = doc.get("mcp_servers").and_then(|s| s.get(key)) else {
            return Ok(None);
        };
        // Convert through JSON so both formats share one entry reader.
        let json = toml_item_to_json(item).ok_or("the entry is not a table")?;
        return ServerEntry::from_json(&json)
            .map(Some)
            .ok_or_else(|| "the entry needs `command`, string `args` and string `env`".into());
    }
    let root = if client.reads_comments() {
        jsonc::parse(&read_text(path).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{} is not valid: {e}", path.display()))?
            .root
    } else {
        files::read_json_object(path).map_err(|e| e.to_string())?
    };
    let servers = root.get(client.root_key()).or_else(|| {
        (client == ClientId::Vscode)
            .then(|| root.get("mcp").and_then(|m| m.get("servers")))
            .flatten()
    });
    let Some(value) = servers.and_then(|s| s.get(key)) else {
        return Ok(None);
    };
    ServerEntry::from_json(value)
        .map(Some)
        .ok_or_else(|| "the entry needs a `command` string, string `args` and string `env`".into())
}

fn toml_item_to_json(item: &toml_edit::Item) -> Option<Value> {
    let table = item.as_table_like()?;
    let mut out = Map::new();
    for (k, v) in table.iter() {
        let converted = if let Some(s) = v.as_str() {
            json!(s)
        } else if let Some(arr) = v.as_array() {
            Value::Array(
                arr.iter()
                    .map(|x| x.as_str().map(|s| json!(s)).unwrap_or(Value::Null))
                    .collect(),
            )
        } else if v.is_table_like() {
            toml_item_to_json(v)?
        } else {
            continue;
        };
        out.insert(k.to_owned(), converted);
    }
    Some(Value::Object(out))
}

/// The paste block for `client` (used by `setup --print-config`).
pub fn render_snippet(client: ClientId, key: &str, entry: &ServerEntry) -> String {
    match client {
        ClientId::Codex => {
            let mut out = format!(
                "[mcp_servers.{key}]\ncommand = {}\nargs = [{}]\n\n[mcp_servers.{key}.env]\n",
                toml_string(&entry.command),
                entry
                    .args
                    .iter()
                    .map(|a| toml_string(a))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            for (k, v) in &entry.env {
                out.push_str(&format!("{k} = {}\n", toml_string(v)));
            }
            out
        }
        _ => {
            let mut inner = entry.to_json();
            if client == ClientId::Vscode
                && let Value::Object(m) = &mut inner
            {
                m.insert("type".into(), json!("stdio"));
            }
            files::pretty(&json!({ client.root_key(): { key: inner } }))
        }
    }
}

fn toml_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> ServerEntry {
        ServerEntry {
            command: "/usr/bin/nandi-proxmox-mcp".into(),
            args: vec!["run".into()],
            env: BTreeMap::from([("NANDI_PROXMOX_CONFIG".into(), "/p/x.json".into())]),
        }
    }

    #[test]
    fn toml_merge_keeps_comments_and_other_servers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(
            &p,
            "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\" # keep\n",
        )
        .unwrap();
        write_entry(ClientId::Codex, &p, "lab", &entry()).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.contains("# my settings") && text.contains("# keep"),
            "{text}"
        );
        assert_eq!(
            read_entry(ClientId::Codex, &p, "lab").unwrap(),
            Some(entry())
        );
        assert!(read_entry(ClientId::Codex, &p, "other").unwrap().is_some());
        std::fs::write(&p, "[[broken").unwrap();
        assert!(write_entry(ClientId::Codex, &p, "lab", &entry()).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "[[broken");
    }

    #[test]
    fn vscode_legacy_layout_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.json");
        std::fs::write(&p, r#"{"mcp":{"servers":{"a":{"command":"a"}}}}"#).unwrap();
        write_entry(ClientId::Vscode, &p, "lab", &entry()).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert!(v.get("mcp").is_none());
        assert_eq!(v["servers"]["a"]["command"], "a");
        assert_eq!(v["servers"]["lab"]["type"], "stdio");
    }

    #[test]
    fn vscode_jsonc_only_a_comment_gets_the_entry_and_invalid_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("mcp.json");
        std::fs::write(&p, "// servers go below\r\n").unwrap();
        write_entry(ClientId::Vscode, &p, "lab", &entry()).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with("// servers go below\r\n{\r\n"), "{text:?}");
        assert_eq!(
            read_entry(ClientId::Vscode, &p, "lab").unwrap(),
            Some(entry())
        );
        let broken = "{\n  // c\n  'servers': {}\n}\n";
        std::fs::write(&p, broken).unwrap();
        let err = write_entry(ClientId::Vscode, &p, "lab", &entry()).unwrap_err();
        assert!(err.to_string().contains("line 3 column 3"), "{err}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), broken);
    }

    #[test]
    fn parse_clients_rejects_unknown() {
        assert_eq!(
            parse_clients("cursor, codex,cursor").unwrap(),
            [ClientId::Cursor, ClientId::Codex]
        );
        assert!(
            parse_clients("emacs")
                .unwrap_err()
                .contains("claude-desktop")
        );
    }
}
