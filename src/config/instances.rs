//! Instance names, scopes and the listing of instance files under `.nandi-proxmox-mcp/`.
//!
//! Invariants: an instance name always matches [`NAME_PATTERN`] (so it is safe as a file name and
//! as an MCP server key); listing is deterministic (project scope first, then user scope, each
//! sorted by file name) and reports every file with its real scope and path — including a legacy
//! `config.json` found in the home folder (the reference mislabelled it, spec §16/32); the home
//! folder is always user scope, even when it is also the working directory; and resolving a name
//! prefers the user's own (home) file, so a working-directory file cannot shadow it.

use std::fs;
use std::path::{Path, PathBuf};

use super::{ConfigError, Paths};
// The names and types live below this file (`scope`), so `error` can name them too.
pub use super::scope::{
    CONFIG_DIR_NAME, DEFAULT_INSTANCE_NAME, Instance, LEGACY_FILE_NAME, LEGACY_INSTANCE_NAME,
    MAX_NAME_LEN, NAME_PATTERN, Scope,
};

/// Turns free text (a cluster name, `--name`) into a valid instance name: trim, lower-case,
/// each run of other characters → `-`, drop leading non-alphanumerics and trailing `-`/`.`,
/// cut to 64 characters; empty → `proxmox` (and the reserved `config` → `proxmox-config`).
pub fn sanitize_name(raw: &str) -> String {
    let lower = raw.trim().to_lowercase();
    let mut replaced = String::with_capacity(lower.len());
    let mut in_run = false;
    for c in lower.chars() {
        if is_name_char(c) {
            replaced.push(c);
            in_run = false;
        } else if !in_run {
            replaced.push('-');
            in_run = true;
        }
    }
    let trimmed = replaced
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .trim_end_matches(['-', '.']);
    // Only ASCII remains, so cutting by chars equals cutting by bytes; the reference cuts last.
    let cut: String = trimmed.chars().take(MAX_NAME_LEN).collect();
    match cut.as_str() {
        "" => DEFAULT_INSTANCE_NAME.to_owned(),
        // `config.json` is the legacy file; keep the result a valid, distinct instance name.
        "config" => "proxmox-config".to_owned(),
        _ => cut,
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
}

/// Checks a name against [`NAME_PATTERN`]. `config` is refused because `config.json` is the
/// legacy file and would be listed under another name.
pub fn validate_name(name: &str) -> Result<(), ConfigError> {
    let fail = |reason: &str| {
        Err(ConfigError::InvalidInstanceName {
            name: name.to_owned(),
            reason: reason.to_owned(),
        })
    };
    let Some(first) = name.chars().next() else {
        return fail("it is empty");
    };
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return fail("it must start with a lower-case letter or a digit");
    }
    if name.chars().count() > MAX_NAME_LEN {
        return fail("it is longer than 64 characters");
    }
    if !name.chars().all(is_name_char) {
        return fail(
            "only lower-case letters, digits, `.`, `_` and `-` are allowed \
             (`nandi-proxmox-mcp setup --name` sanitises free text for you)",
        );
    }
    if name == "config" {
        return fail("`config` is reserved for the legacy config.json file");
    }
    Ok(())
}

/// The `.nandi-proxmox-mcp` folder of a scope; `None` for the user scope without a home.
pub fn scope_dir(paths: &Paths, scope: Scope) -> Option<PathBuf> {
    match scope {
        Scope::Project => Some(paths.cwd.join(CONFIG_DIR_NAME)),
        Scope::User => paths.home.as_ref().map(|h| h.join(CONFIG_DIR_NAME)),
    }
}

/// Path of instance `name` in `scope`: `<root>/.nandi-proxmox-mcp/<name>.json`. The name is
/// validated so it cannot escape the folder; the user scope needs a known home directory.
pub fn instance_path(paths: &Paths, scope: Scope, name: &str) -> Result<PathBuf, ConfigError> {
    validate_name(name)?;
    let dir = scope_dir(paths, scope).ok_or(ConfigError::NoHomeDir)?;
    Ok(dir.join(format!("{name}.json")))
}

/// Every instance file: project folder first, then user folder; `*.json` only, names that break
/// the pattern skipped, unreadable folders skipped. When cwd is the home directory the folder is
/// listed once, as user scope (it is the user's own folder, not a project's).
pub fn list_instances(paths: &Paths) -> Vec<Instance> {
    let project = scope_dir(paths, Scope::Project);
    let user = scope_dir(paths, Scope::User);
    let same_dir = match (&project, &user) {
        (Some(p), Some(u)) => same_path(p, u),
        _ => false,
    };
    let mut found = Vec::new();
    if let Some(dir) = project.filter(|_| !same_dir) {
        found.extend(scan(&dir, Scope::Project));
    }
    if let Some(dir) = user {
        found.extend(scan(&dir, Scope::User));
    }
    found
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn scan(dir: &Path, scope: Scope) -> Vec<Instance> {
    let Ok(entries) = fs::read_dir(dir) else {
        // Missing or unreadable folder: nothing configured there.
        return Vec::new();
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .filter(|(name, path)| name.ends_with(".json") && path.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|(file_name, path)| {
            let name = name_for_file(&file_name)?;
            Some(Instance {
                server_key: name.clone(),
                name,
                scope,
                path,
            })
        })
        .collect()
}

/// Instance name for a file name in an instance folder, if it is one.
fn name_for_file(file_name: &str) -> Option<String> {
    if file_name == LEGACY_FILE_NAME {
        return Some(LEGACY_INSTANCE_NAME.to_owned());
    }
    let stem = file_name.strip_suffix(".json")?;
    match validate_name(stem) {
        Ok(()) => Some(stem.to_owned()),
        Err(_) => {
            tracing::debug!(
                file = file_name,
                "skipping file whose name is not a valid instance name"
            );
            None
        }
    }
}

/// Instance name of a loaded file, when it sits in a `.nandi-proxmox-mcp` folder.
pub(crate) fn instance_name_for(path: &Path) -> Option<String> {
    let parent = path.parent()?.file_name()?;
    if parent != CONFIG_DIR_NAME {
        return None;
    }
    name_for_file(path.file_name()?.to_str()?)
}

/// Finds an instance by name. The user scope wins over the project scope: a working-directory
/// file (a cloned repository may carry one) must not shadow the user's own instance.
pub fn resolve_instance(paths: &Paths, name: &str) -> Result<Instance, ConfigError> {
    let all = list_instances(paths);
    let wanted = name.trim();
    let named = |scope: Scope| all.iter().find(|i| i.name == wanted && i.scope == scope);
    if let Some(found) = named(Scope::User).or_else(|| named(Scope::Project)) {
        return Ok(found.clone());
    }
    let mut known: Vec<String> = all.into_iter().map(|i| i.name).collect();
    known.dedup();
    Err(ConfigError::UnknownInstance {
        name: wanted.to_owned(),
        known,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(cwd: &Path, home: &Path) -> Paths {
        Paths {
            cwd: cwd.to_path_buf(),
            home: Some(home.to_path_buf()),
        }
    }

    fn write(dir: &Path, file: &str) -> PathBuf {
        let d = dir.join(CONFIG_DIR_NAME);
        fs::create_dir_all(&d).unwrap();
        let p = d.join(file);
        fs::write(&p, "{}").unwrap();
        p
    }

    #[test]
    fn sanitize_examples() {
        assert_eq!(
            sanitize_name("Datacenter Cluster 01"),
            "datacenter-cluster-01"
        );
        assert_eq!(sanitize_name("  --Foo__Bar.."), "foo__bar");
        assert_eq!(sanitize_name(""), "proxmox");
        assert_eq!(sanitize_name("  ¡¿ !! "), "proxmox");
        assert_eq!(sanitize_name("Ünïcode Name"), "n-code-name");
        let long = "a".repeat(100);
        assert_eq!(sanitize_name(&long), "a".repeat(64));
        assert_eq!(sanitize_name("Config"), "proxmox-config");
        for raw in [
            "Datacenter Cluster 01",
            "x/../../etc",
            &long,
            "",
            "-.-",
            "CONFIG",
        ] {
            let s = sanitize_name(raw);
            assert!(validate_name(&s).is_ok(), "{raw:?} -> {s:?}");
        }
    }

    #[test]
    fn validate_examples() {
        assert!(validate_name("proxmox").is_ok());
        assert!(validate_name("lab-01.home_x").is_ok());
        assert!(validate_name(&"a".repeat(64)).is_ok());
        for bad in [
            "",
            "a/b",
            "Upper",
            "-x",
            ".x",
            "a b",
            "config",
            &"a".repeat(65),
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?} accepted");
        }
        let msg = validate_name("a/b").unwrap_err().to_string();
        assert!(msg.contains(NAME_PATTERN), "{msg}");
    }

    #[test]
    fn manual_check_agrees_with_pattern() {
        let re = regex::Regex::new(NAME_PATTERN).unwrap();
        for s in [
            "a",
            "a-",
            "0.x",
            "_a",
            "A",
            "aé",
            "a b",
            &"b".repeat(64),
            &"b".repeat(65),
        ] {
            assert_eq!(re.is_match(s), validate_name(s).is_ok(), "{s:?}");
        }
    }

    #[test]
    fn listing_order_scopes_and_legacy() {
        let cwd = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let p = paths(cwd.path(), home.path());
        write(cwd.path(), "zeta.json");
        write(cwd.path(), "alpha.json");
        write(cwd.path(), "Bad Name.json");
        write(cwd.path(), "notes.txt");
        let user_legacy = write(home.path(), "config.json");
        write(home.path(), "alpha.json");
        let list = list_instances(&p);
        let names: Vec<_> = list.iter().map(|i| (i.name.as_str(), i.scope)).collect();
        assert_eq!(
            names,
            [
                ("alpha", Scope::Project),
                ("zeta", Scope::Project),
                ("alpha", Scope::User),
                ("nandi-proxmox-mcp", Scope::User),
            ]
        );
        let legacy = &list[3];
        assert_eq!(legacy.path, user_legacy);
        assert_eq!(legacy.server_key, LEGACY_INSTANCE_NAME);
        assert!(legacy.is_legacy());
        assert_eq!(resolve_instance(&p, "alpha").unwrap().scope, Scope::User);
        assert_eq!(resolve_instance(&p, "zeta").unwrap().scope, Scope::Project);
    }

    #[test]
    fn same_folder_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "one.json");
        let list = list_instances(&paths(dir.path(), dir.path()));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].scope, Scope::User);
    }

    #[test]
    fn resolve_unknown() {
        let cwd = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let p = paths(cwd.path(), home.path());
        let msg = resolve_instance(&p, "x").unwrap_err().to_string();
        assert!(msg.contains("nandi-proxmox-mcp setup"), "{msg}");
        write(home.path(), "lab.json");
        let msg = resolve_instance(&p, "x").unwrap_err().to_string();
        assert!(msg.contains("lab") && msg.contains("`x`"), "{msg}");
    }

    #[test]
    fn paths_per_scope() {
        let p = Paths {
            cwd: PathBuf::from("/w"),
            home: None,
        };
        assert_eq!(
            instance_path(&p, Scope::Project, "lab").unwrap(),
            PathBuf::from("/w/.nandi-proxmox-mcp/lab.json")
        );
        assert!(matches!(
            instance_path(&p, Scope::User, "lab"),
            Err(ConfigError::NoHomeDir)
        ));
        assert!(instance_path(&p, Scope::Project, "../x").is_err());
        assert_eq!(Scope::parse(" User "), Some(Scope::User));
        assert_eq!(Scope::parse("global"), None);
    }
}
