//! Instance names and scopes: the vocabulary of instance files, below both the listing
//! (`instances`) and the configuration errors (`error`) that name them.
//!
//! Invariant: an instance name matches [`NAME_PATTERN`]; a scope is `project` or `user`.

use std::fmt;
use std::path::PathBuf;

/// Allowed instance names: lower-case letters, digits, `.`, `_`, `-`; starts alphanumeric; ≤ 64.
pub const NAME_PATTERN: &str = "^[a-z0-9][a-z0-9._-]{0,63}$";
/// Longest instance name.
pub const MAX_NAME_LEN: usize = 64;
/// Name used when none is given (or sanitising leaves nothing).
pub const DEFAULT_INSTANCE_NAME: &str = "proxmox";
/// Folder that holds instance files, in the project (cwd) and in the home directory.
pub const CONFIG_DIR_NAME: &str = ".nandi-proxmox-mcp";
/// File name of the legacy single-instance file.
pub const LEGACY_FILE_NAME: &str = "config.json";
/// Instance name (and server key) under which the legacy file is listed.
pub const LEGACY_INSTANCE_NAME: &str = "nandi-proxmox-mcp";

/// Where an instance file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// `<cwd>/.nandi-proxmox-mcp/`
    Project,
    /// `<home>/.nandi-proxmox-mcp/`
    User,
}

impl Scope {
    /// The name users write (`project`, `user`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
        }
    }

    /// Parses `project` / `user` (trimmed, case-insensitive).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "project" => Some(Self::Project),
            "user" => Some(Self::User),
            _ => None,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One configured instance file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// Instance name (file stem; `nandi-proxmox-mcp` for the legacy `config.json`).
    pub name: String,
    /// Scope the file was found in.
    pub scope: Scope,
    /// Real path of the file.
    pub path: PathBuf,
    /// Key in MCP client configs and Claude tool prefix (equal to the name).
    pub server_key: String,
}

impl Instance {
    /// Whether this is the legacy `config.json`.
    pub fn is_legacy(&self) -> bool {
        self.path.file_name().is_some_and(|f| f == LEGACY_FILE_NAME)
    }
}
