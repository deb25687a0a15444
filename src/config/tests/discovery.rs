//! Precedence between explicit and discovered configuration, and the trust rule for discovered
//! files: a hostile `.nandi-proxmox-mcp/` folder in the working directory must not take over.

use std::os::unix::fs::PermissionsExt;

use super::*;

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A project-scope instance file with the permissions `setup` gives it (0600 in a 0700 folder).
fn private_project(dirs: &Dirs, file: &str, body: &str) -> PathBuf {
    let path = dirs.project(file, body);
    chmod(&path, 0o600);
    chmod(path.parent().unwrap(), 0o700);
    path
}

#[test]
fn a_complete_environment_beats_a_discovered_project_file() {
    let dirs = Dirs::new();
    let hostile = with(
        rest_only("attacker.example"),
        json!({"sshKeyPath": "~/.ssh/id_ed25519", "sshHost": "attacker.example"}),
    );
    private_project(&dirs, "x.json", &hostile);
    let config = load(&env(&full_env()), &dirs.paths()).unwrap();
    assert_eq!(config.source, ConfigSource::Env);
    assert_eq!(config.proxmox.unwrap().host, "pve.lan");
    assert!(config.ssh.is_none(), "the file's SSH settings are not used");
}

#[test]
fn a_complete_environment_also_beats_broken_or_ambiguous_discovery() {
    let dirs = Dirs::new();
    dirs.project("one.json", "{ not json");
    dirs.project("two.json", &rest_only("b.lan").to_string());
    let config = load(&env(&full_env()), &dirs.paths()).unwrap();
    assert_eq!(config.source, ConfigSource::Env);
}

#[test]
fn the_named_file_beats_a_complete_environment() {
    let dirs = Dirs::new();
    fs::write(
        dirs.cwd.path().join("pick.json"),
        rest_only("pick.lan").to_string(),
    )
    .unwrap();
    let mut vars = full_env();
    vars.push((CONFIG_ENV_VAR, "pick.json"));
    let config = load(&env(&vars), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "pick.lan");
    assert!(matches!(
        config.source,
        ConfigSource::File {
            origin: FileOrigin::Selected,
            ..
        }
    ));
}

#[test]
fn a_discovered_file_is_labelled_as_discovered() {
    let dirs = Dirs::new();
    private_project(&dirs, "lab.json", &rest_only("a.lan").to_string());
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert!(
        config.source.to_string().contains("discovered"),
        "{}",
        config.source
    );
}

#[test]
fn a_group_or_world_writable_discovered_file_is_refused() {
    for (file_mode, dir_mode, needle) in [
        (
            0o664,
            0o700,
            "the file is writable by other users (mode 664)",
        ),
        (
            0o602,
            0o700,
            "the file is writable by other users (mode 602)",
        ),
        (
            0o600,
            0o775,
            "its folder is writable by other users (mode 775)",
        ),
    ] {
        let dirs = Dirs::new();
        let path = dirs.project("x.json", &rest_only("attacker.example").to_string());
        chmod(&path, file_mode);
        chmod(path.parent().unwrap(), dir_mode);
        let err = load(&env(&[]), &dirs.paths()).unwrap_err();
        assert!(matches!(err, ConfigError::UntrustedFile { .. }), "{err}");
        let msg = err.to_string();
        for part in [needle, "x.json", "NANDI_PROXMOX_CONFIG", "chmod go-w"] {
            assert!(msg.contains(part), "{part:?} missing in {msg}");
        }
        // Naming the same file explicitly is the user's decision and works.
        let vars = [(CONFIG_ENV_VAR, path.to_str().unwrap())];
        assert!(load(&env(&vars), &dirs.paths()).is_ok());
    }
}

#[test]
fn a_foreign_owned_discovered_file_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: changing a file's owner needs root");
        return;
    }
    let dirs = Dirs::new();
    let path = private_project(&dirs, "x.json", &rest_only("attacker.example").to_string());
    std::os::unix::fs::chown(&path, Some(4242), Some(4242)).unwrap();
    let err = load(&env(&[]), &dirs.paths()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("owned by uid 4242"), "{msg}");
}

#[test]
fn a_discovered_file_without_its_own_key_never_gets_one() {
    let dirs = Dirs::new();
    let ssh_dir = dirs.home.path().join(".ssh");
    fs::create_dir_all(&ssh_dir).unwrap();
    fs::write(ssh_dir.join("id_ed25519"), "not a real key").unwrap();
    let body = with(
        rest_only("lab.lan"),
        json!({"sshHost": "lab.lan", "sshUser": "root"}),
    );
    private_project(&dirs, "lab.json", &body);
    // An incomplete environment that names a key must not lend it to the file.
    let vars = [
        ("PROXMOX_SSH_KEY_PATH", "~/.ssh/id_ed25519"),
        ("PROXMOX_HOST", "other.lan"),
    ];
    let config = load(&env(&vars), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "lab.lan");
    assert!(config.ssh.is_none(), "{:?}", config.ssh);
}
