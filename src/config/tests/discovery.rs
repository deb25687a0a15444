//! Precedence between explicit and discovered configuration, and the trust rules for discovered
//! files: a hostile `.nandi-proxmox-mcp/` folder in the working directory must not take over,
//! and a home-folder file others could write is refused.

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
    dirs.user("lab.json", &rest_only("a.lan").to_string());
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert!(
        config.source.to_string().contains("discovered"),
        "{}",
        config.source
    );
    let dirs = Dirs::new();
    let path = private_project(&dirs, "lab.json", &rest_only("a.lan").to_string());
    dirs.trust(&path);
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert!(
        config.source.to_string().contains("trusted project file"),
        "{}",
        config.source
    );
}

/// A home-folder instance file with the given modes for the file and its folder.
fn user_file(dirs: &Dirs, file_mode: u32, dir_mode: u32) -> PathBuf {
    let path = dirs.user("x.json", &rest_only("attacker.example").to_string());
    chmod(&path, file_mode);
    chmod(path.parent().unwrap(), dir_mode);
    path
}

#[test]
fn a_group_or_world_writable_home_file_is_refused() {
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
        let path = user_file(&dirs, file_mode, dir_mode);
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
#[ignore = "needs root to give a file to another user: run `cargo test --lib config -- --ignored` as root"]
fn a_foreign_owned_home_file_is_refused() {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        uid, 0,
        "this check needs root (chown); it cannot pass without it"
    );
    let dirs = Dirs::new();
    let path = user_file(&dirs, 0o600, 0o700);
    std::os::unix::fs::chown(&path, Some(4242), Some(4242)).unwrap();
    let err = load(&env(&[]), &dirs.paths()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("owned by uid 4242"), "{msg}");
}

#[test]
fn a_trusted_project_file_never_names_the_ssh_key() {
    let dirs = Dirs::new();
    let body = with(
        rest_only("lab.lan"),
        json!({
            "sshHost": "attacker.example",
            "sshKeyPath": "~/.ssh/id_ed25519",
            "sshKnownHostsPath": "./known_hosts",
        }),
    );
    let path = private_project(&dirs, "lab.json", &body);
    dirs.trust(&path);
    let config = load(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "lab.lan");
    assert!(config.ssh.is_none(), "{:?}", config.ssh);
    // Named explicitly, the same file is the user's own choice, key included.
    let vars = [(CONFIG_ENV_VAR, path.to_str().unwrap())];
    let config = load(&env(&vars), &dirs.paths()).unwrap();
    assert!(config.ssh.is_some());
}

#[test]
fn a_project_file_without_its_own_key_never_gets_one() {
    let dirs = Dirs::new();
    let ssh_dir = dirs.home.path().join(".ssh");
    fs::create_dir_all(&ssh_dir).unwrap();
    fs::write(ssh_dir.join("id_ed25519"), "not a real key").unwrap();
    let body = with(
        rest_only("lab.lan"),
        json!({"sshHost": "lab.lan", "sshUser": "root"}),
    );
    let path = private_project(&dirs, "lab.json", &body);
    dirs.trust(&path);
    // An SSH-only environment (no core variable) must not lend its key to the file.
    let vars = [("PROXMOX_SSH_KEY_PATH", "~/.ssh/id_ed25519")];
    let config = load(&env(&vars), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "lab.lan");
    assert!(config.ssh.is_none(), "{:?}", config.ssh);
}

#[test]
fn doctor_name_resolution_prefers_home_and_checks_project_trust() {
    let dirs = Dirs::new();
    let proj = private_project(&dirs, "lab.json", &rest_only("proj.lan").to_string());
    let inst = instances::resolve_instance(&dirs.paths(), "lab").unwrap();
    let err = load_instance(&inst, &env(&[]), &dirs.paths()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("is not trusted") && msg.contains("nandi-proxmox-mcp trust"),
        "{msg}"
    );
    dirs.trust(&proj);
    let config = load_instance(&inst, &env(&[]), &dirs.paths()).unwrap();
    assert_eq!(config.proxmox.unwrap().host, "proj.lan");
    dirs.user("lab.json", &rest_only("home.lan").to_string());
    let inst = instances::resolve_instance(&dirs.paths(), "lab").unwrap();
    assert_eq!(inst.scope, Scope::User);
}
