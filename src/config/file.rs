//! Instance files on disk: discovery, project-file trust and bounded reading (validation lives in
//! `keys.rs`).
//!
//! Invariants: a file is parsed only if it is a regular file of at most [`MAX_FILE_BYTES`] bytes
//! of UTF-8; discovery never picks one of several candidates on its own, and a candidate that
//! exists but is broken is reported, never skipped; the user's home folder beats the working
//! directory; a home-folder file is used only when this user owns it and nobody else can write
//! it or its folder ([`check_trusted`]); a working-directory (project) file is used only when its
//! exact bytes, and those of the CA file it names, were trusted with `nandi-proxmox-mcp trust`,
//! and never supplies an SSH key or a known_hosts file ([`load_project`]).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::instances::{self, Instance, Scope};
use super::keys;
use super::trust::{self, TrustState, TrustStore};
use super::{Config, ConfigError, ConfigSource, FileOrigin, MAX_FILE_BYTES, Paths};

/// The only home-folder (user-scope) instance, `Ok(None)` when there is none; several are an
/// error (the user must name one), whatever the working directory holds.
pub(crate) fn discover_user(paths: &Paths) -> Result<Option<PathBuf>, ConfigError> {
    let mut user: Vec<Instance> = instances::list_instances(paths)
        .into_iter()
        .filter(|i| i.scope == Scope::User)
        .collect();
    match user.len() {
        0 => Ok(None),
        1 => Ok(user.pop().map(|i| i.path)),
        _ => Err(ConfigError::AmbiguousInstances { found: user }),
    }
}

/// Project-scope instance files (`<cwd>/.nandi-proxmox-mcp/*.json`).
pub(crate) fn project_instances(paths: &Paths) -> Vec<Instance> {
    instances::list_instances(paths)
        .into_iter()
        .filter(|i| i.scope == Scope::Project)
        .collect()
}

/// A project file read once: what trust and parsing both work on.
pub(crate) struct ProjectRead {
    /// The path as discovered (for messages).
    pub(crate) path: PathBuf,
    /// Canonical path (the trust store's key).
    pub(crate) canonical: PathBuf,
    /// The file's text, exactly the bytes that were hashed.
    text: String,
    /// What the trust store says about these bytes.
    pub(crate) state: TrustState,
}

impl ProjectRead {
    /// The file's text (exactly the hashed bytes).
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Why it may not be used, `None` when it is trusted: the error to return or warn with.
    pub(crate) fn untrusted(&self) -> Option<ConfigError> {
        match &self.state {
            TrustState::Trusted => None,
            TrustState::NamedFileChanged(change) => Some(ConfigError::TrustedNamedFileChanged {
                path: self.path.clone(),
                key: change.key.clone(),
                named: change.path.clone(),
                reason: change.reason.clone(),
            }),
            state => Some(ConfigError::UntrustedProjectFile {
                path: self.path.clone(),
                changed: *state == TrustState::Changed,
            }),
        }
    }
}

/// What `trust` records for a file read by [`read_project`], after checking that it is a valid
/// instance file (so trust is only given to something that loads): the SHA-256 of its bytes,
/// the canonical path and SHA-256 of every file it names that decides what is trusted (a named
/// file that cannot be read is refused), and the SSH credential-path keys it names (which
/// discovery will ignore).
pub(crate) fn validate_for_trust(
    read: &ProjectRead,
    home: Option<&Path>,
) -> Result<(String, Vec<trust::NamedFile>, Vec<&'static str>), ConfigError> {
    let map = parse_map(&read.path, &read.text)?;
    build(&read.path, &map, home, FileOrigin::Trusted)?;
    let named = named_now(&map, home)
        .iter()
        .map(trust::NamedNow::record)
        .collect::<Result<Vec<_>, String>>()
        .map_err(|reason| ConfigError::Invalid {
            location: format!("the instance file {}", read.path.display()),
            reason,
        })?;
    Ok((
        trust::sha256_hex(read.text.as_bytes()),
        named,
        keys::ssh_path_keys_set(&map),
    ))
}

/// The files `map` names whose content decides what is trusted, read and hashed now.
fn named_now(map: &serde_json::Map<String, Value>, home: Option<&Path>) -> Vec<trust::NamedNow> {
    keys::trust_hashed_paths(map, home)
        .into_iter()
        .map(|(key, written)| trust::NamedNow::read(key, written))
        .collect()
}

/// Reads a project file once, by its canonical path, and looks its hash up in `store`; when
/// its bytes are the trusted ones, the files it names (`~` expanded with `home`) are hashed
/// and checked against the record too.
pub(crate) fn read_project(
    path: &Path,
    store: &TrustStore,
    home: Option<&Path>,
) -> Result<ProjectRead, ConfigError> {
    let canonical = fs::canonicalize(path).map_err(|e| io_error(path, e))?;
    let (text, _) = read_bounded(&canonical)?;
    let mut state = store.state(&canonical, &trust::sha256_hex(text.as_bytes()));
    if state == TrustState::Trusted {
        let map = parse_map(path, &text)?;
        state = store.named_state(&canonical, &named_now(&map, home));
    }
    Ok(ProjectRead {
        path: path.to_path_buf(),
        canonical,
        text,
        state,
    })
}

/// The project file discovery may use: among the project files whose exact content is trusted,
/// the legacy `config.json` first, else the only one; several trusted ones are an error. Every
/// untrusted (or changed, or unreadable) file is ignored with a warning naming the command that
/// trusts it — a cloned repository's files are never used and cannot make startup fail.
pub(crate) fn discover_project(
    paths: &Paths,
    store: &TrustStore,
) -> Result<Option<ProjectRead>, ConfigError> {
    let mut trusted: Vec<(Instance, ProjectRead)> = Vec::new();
    for inst in project_instances(paths) {
        match read_project(&inst.path, store, paths.home.as_deref()) {
            Ok(read) if read.state == TrustState::Trusted => trusted.push((inst, read)),
            Ok(read) => warn_untrusted(&read),
            Err(e) => tracing::warn!(
                "ignoring the project-directory instance file {}: {e}",
                inst.path.display()
            ),
        }
    }
    if let Some(pos) = trusted.iter().position(|(i, _)| i.is_legacy()) {
        return Ok(Some(trusted.swap_remove(pos).1));
    }
    match trusted.len() {
        0 => Ok(None),
        1 => Ok(trusted.pop().map(|(_, r)| r)),
        _ => Err(ConfigError::AmbiguousInstances {
            found: trusted.into_iter().map(|(i, _)| i).collect(),
        }),
    }
}

/// The warning for a project file that is not used because it is not (or no longer) trusted.
pub(crate) fn warn_untrusted(read: &ProjectRead) {
    if let Some(err) = read.untrusted() {
        tracing::warn!("ignoring it: {err}");
    }
}

/// Loads a project file whose content was read by [`read_project`]: refused unless it and the
/// files it names are trusted;
/// an SSH key or known_hosts path it names is dropped (SSH stays off) with a warning.
pub(crate) fn load_project(read: ProjectRead, home: Option<&Path>) -> Result<Config, ConfigError> {
    if let Some(err) = read.untrusted() {
        return Err(err);
    }
    let map = parse_map(&read.path, &read.text)?;
    let mut config = build(&read.path, &map, home, FileOrigin::Trusted)?;
    let named = keys::ssh_path_keys_set(&map);
    if !named.is_empty() {
        config.ssh = None;
        tracing::warn!(
            file = %read.path.display(),
            "the project-directory instance file {} names {} — ignored, and SSH tools are off \
             for it: a file in the working directory never chooses an SSH key or known_hosts \
             file. Put the instance in ~/.nandi-proxmox-mcp/, or name it with \
             NANDI_PROXMOX_CONFIG, to use SSH",
            read.path.display(),
            named.join(" and ")
        );
    }
    Ok(config)
}

/// Refuses a discovered file that someone other than this user could have written: owned by
/// another user (root excepted), or group/world-writable, or in such a folder. Discovery reads
/// the working directory, which may be a freshly cloned repository; such a file would choose the
/// Proxmox host, the token and the SSH key this server uses.
#[cfg(unix)]
pub(crate) fn check_trusted(path: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let untrusted = |reason: String| ConfigError::UntrustedFile {
        path: path.to_path_buf(),
        reason,
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    for (what, target) in [("the file", path), ("its folder", folder)] {
        let meta = fs::metadata(target).map_err(|e| io_error(target, e))?;
        let owner = meta.uid();
        if owner != me && owner != 0 {
            return Err(untrusted(format!(
                "{what} is owned by uid {owner}, not by you (uid {me})"
            )));
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o022 != 0 {
            return Err(untrusted(format!(
                "{what} is writable by other users (mode {mode:o})"
            )));
        }
    }
    Ok(())
}

/// Ownership and permission bits do not map onto Windows ACLs; nothing is checked there.
#[cfg(not(unix))]
pub(crate) fn check_trusted(_path: &Path) -> Result<(), ConfigError> {
    Ok(())
}

/// Reads, parses and validates one instance file. `home` expands `~` in configured paths.
pub(crate) fn load_path(
    path: &Path,
    home: Option<&Path>,
    origin: FileOrigin,
) -> Result<Config, ConfigError> {
    let (text, meta) = read_bounded(path)?;
    warn_if_shared(path, &meta);
    let map = parse_map(path, &text)?;
    build(path, &map, home, origin)
}

/// Parses the text of an instance file into its JSON object.
pub(super) fn parse_map(
    path: &Path,
    text: &str,
) -> Result<serde_json::Map<String, Value>, ConfigError> {
    // Windows editors like to prepend a byte-order mark; it is not part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::InvalidJson {
        path: path.to_path_buf(),
        // Syntax errors of an untyped parse name a position, never the file's content.
        detail: e.to_string(),
    })?;
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ConfigError::NotAnObject {
            path: path.to_path_buf(),
            found: keys::kind(&other),
        }),
    }
}

fn build(
    path: &Path,
    map: &serde_json::Map<String, Value>,
    home: Option<&Path>,
    origin: FileOrigin,
) -> Result<Config, ConfigError> {
    let (proxmox, ssh) = keys::parse_object(path, map, home)?;
    Ok(Config {
        proxmox: Some(proxmox),
        ssh,
        policy: super::policy_keys::parse(path, map)?,
        pbs: super::pbs::from_file(path, map, home, origin == FileOrigin::Trusted)?,
        source: ConfigSource::File {
            path: path.to_path_buf(),
            instance: instances::instance_name_for(path),
            origin,
        },
    })
}

fn io_error(path: &Path, source: std::io::Error) -> ConfigError {
    if source.kind() == std::io::ErrorKind::NotFound {
        ConfigError::FileNotFound {
            path: path.to_path_buf(),
        }
    } else {
        ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Reads at most `MAX_FILE_BYTES` (+1 to notice growth between the size check and the read).
fn read_bounded(path: &Path) -> Result<(String, fs::Metadata), ConfigError> {
    let meta = fs::metadata(path).map_err(|e| io_error(path, e))?;
    if !meta.is_file() {
        return Err(ConfigError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
        });
    }
    let file = fs::File::open(path).map_err(|e| io_error(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(path, e))?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > MAX_FILE_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| ConfigError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    Ok((text, meta))
}

/// The file holds a token secret; other local users should not be able to read it. Only a
/// warning: refusing would break existing installs written without 0600 by the reference.
#[cfg(unix)]
fn warn_if_shared(path: &Path, meta: &fs::Metadata) {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            mode = %format_args!("{mode:o}"),
            "config file holds an API token secret but other users can access it; run `chmod 600 {}`",
            path.display()
        );
    }
}

#[cfg(not(unix))]
fn warn_if_shared(_path: &Path, _meta: &fs::Metadata) {}
