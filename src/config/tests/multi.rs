//! Several clusters: a folder, a list, `NANDI_PROXMOX_CLUSTERS=all`, names, defaults and the
//! policy keys of an instance file.

use super::*;
use crate::config::clusters::{ClusterSet, load_clusters};

fn names(set: &ClusterSet) -> Vec<&str> {
    set.clusters.iter().map(|c| c.name.as_str()).collect()
}

fn folder_with(files: &[(&str, String)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        fs::write(dir.path().join(name), body).unwrap();
    }
    dir
}

#[test]
fn a_folder_names_every_instance_file_in_it() {
    let dirs = Dirs::new();
    let folder = folder_with(&[
        ("prod.json", rest_only("prod.lan").to_string()),
        ("lab.json", rest_only("lab.lan").to_string()),
        ("notes.txt", "x".into()),
    ]);
    let vars = [("NANDI_PROXMOX_CONFIG", folder.path().to_str().unwrap())];
    let set = load_clusters(&env(&vars), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["lab", "prod"]);
    assert_eq!(set.default, None);
    let host = |i: usize| set.clusters[i].config.proxmox.clone().unwrap().host;
    assert_eq!((host(0), host(1)), ("lab.lan".into(), "prod.lan".into()));
}

#[test]
fn a_list_names_files_in_its_order_and_each_must_load() {
    let dirs = Dirs::new();
    let folder = folder_with(&[
        ("b.json", rest_only("b.lan").to_string()),
        ("a.json", rest_only("a.lan").to_string()),
    ]);
    let list = format!(
        "{}, {}",
        folder.path().join("b.json").display(),
        folder.path().join("a.json").display()
    );
    let set = load_clusters(&env(&[("NANDI_PROXMOX_CONFIG", &list)]), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["b", "a"]);
    let broken = format!("{list},{}", folder.path().join("missing.json").display());
    let err = load_clusters(&env(&[("NANDI_PROXMOX_CONFIG", &broken)]), &dirs.paths());
    assert!(
        matches!(err, Err(ConfigError::FileNotFound { .. })),
        "{err:?}"
    );
}

#[test]
fn clusters_all_loads_every_home_instance_and_the_error_without_it_names_it() {
    let dirs = Dirs::new();
    dirs.user("lab.json", &rest_only("lab.lan").to_string());
    dirs.user("prod.json", &rest_only("prod.lan").to_string());
    let err = load_clusters(&env(&[]), &dirs.paths())
        .unwrap_err()
        .to_string();
    assert!(err.contains("NANDI_PROXMOX_CLUSTERS=all"), "{err}");
    let set = load_clusters(&env(&[("NANDI_PROXMOX_CLUSTERS", "all")]), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["lab", "prod"]);
    // An untrusted project file is not served; a trusted one is.
    let proj = dirs.project("site.json", &rest_only("site.lan").to_string());
    let set = load_clusters(&env(&[("NANDI_PROXMOX_CLUSTERS", "ALL")]), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["lab", "prod"]);
    dirs.trust(&proj);
    let set = load_clusters(&env(&[("NANDI_PROXMOX_CLUSTERS", "all")]), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["lab", "prod", "site"]);
    let bad = load_clusters(&env(&[("NANDI_PROXMOX_CLUSTERS", "some")]), &dirs.paths());
    assert!(matches!(bad, Err(ConfigError::InvalidClustersValue { .. })));
}

#[test]
fn without_a_multi_cluster_setting_the_plain_case_is_unchanged() {
    let dirs = Dirs::new();
    dirs.user("home.json", &rest_only("user.lan").to_string());
    let set = load_clusters(&env(&[]), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["home"]);
    assert_eq!(
        set.clusters[0].config,
        load(&env(&[]), &dirs.paths()).unwrap()
    );
    let set = load_clusters(&env(&full_env()), &dirs.paths()).unwrap();
    assert_eq!(names(&set), ["default"]);
    assert_eq!(set.clusters[0].config.source, ConfigSource::Env);
}

#[test]
fn bad_and_duplicate_names_are_refused() {
    let dirs = Dirs::new();
    for bad in [
        "Lab.json",
        "a.b.json",
        "x23456789012345678901234567890123.json",
    ] {
        let folder = folder_with(&[(bad, rest_only("a.lan").to_string())]);
        let vars = [("NANDI_PROXMOX_CONFIG", folder.path().to_str().unwrap())];
        let err = load_clusters(&env(&vars), &dirs.paths()).unwrap_err();
        assert!(
            matches!(err, ConfigError::InvalidClusterName { .. }),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("[a-z0-9_-]"), "{err}");
    }
    let one = folder_with(&[("lab.json", rest_only("a.lan").to_string())]);
    let two = folder_with(&[("lab.json", rest_only("b.lan").to_string())]);
    let list = format!(
        "{},{}",
        one.path().join("lab.json").display(),
        two.path().join("lab.json").display()
    );
    let err = load_clusters(&env(&[("NANDI_PROXMOX_CONFIG", &list)]), &dirs.paths());
    assert!(
        matches!(err, Err(ConfigError::DuplicateCluster { .. })),
        "{err:?}"
    );
}

#[test]
fn at_most_one_default() {
    let dirs = Dirs::new();
    let marked = with(rest_only("a.lan"), json!({"default": true}));
    let folder = folder_with(&[
        ("lab.json", marked.clone()),
        ("prod.json", rest_only("b.lan").to_string()),
    ]);
    let dir = folder.path().to_str().unwrap();
    let set = load_clusters(&env(&[("NANDI_PROXMOX_CONFIG", dir)]), &dirs.paths()).unwrap();
    assert_eq!(set.default.as_deref(), Some("lab"));
    // The variable agrees, or it is a second default.
    let vars = [
        ("NANDI_PROXMOX_CONFIG", dir),
        ("NANDI_PROXMOX_DEFAULT_CLUSTER", "lab"),
    ];
    assert!(load_clusters(&env(&vars), &dirs.paths()).is_ok());
    let vars = [
        ("NANDI_PROXMOX_CONFIG", dir),
        ("NANDI_PROXMOX_DEFAULT_CLUSTER", "prod"),
    ];
    let err = load_clusters(&env(&vars), &dirs.paths());
    assert!(
        matches!(err, Err(ConfigError::TwoDefaults { .. })),
        "{err:?}"
    );
    let vars = [
        ("NANDI_PROXMOX_CONFIG", dir),
        ("NANDI_PROXMOX_DEFAULT_CLUSTER", "x"),
    ];
    let err = load_clusters(&env(&vars), &dirs.paths())
        .unwrap_err()
        .to_string();
    assert!(err.contains("lab, prod"), "{err}");
    fs::write(folder.path().join("prod.json"), &marked).unwrap();
    let err = load_clusters(&env(&[("NANDI_PROXMOX_CONFIG", dir)]), &dirs.paths());
    assert!(
        matches!(err, Err(ConfigError::TwoDefaults { .. })),
        "{err:?}"
    );
}

#[test]
fn policy_keys_are_read_as_the_variables_would_hold_them() {
    let body = with(
        rest_only("a.lan"),
        json!({
            "accessTier": "full",
            "moduleMode": " advanced ",
            "categories": ["vm", "lxc"],
            "toolWhitelist": "pve_list_nodes, pve_get_version",
            "toolBlacklist": [],
        }),
    );
    let config = load_with_file(&body).unwrap();
    let keys = &config.policy;
    assert_eq!(keys.value_for("PVE_ACCESS_TIER"), Some("full"));
    assert_eq!(keys.value_for("PVE_MODULE_MODE"), Some("advanced"));
    assert_eq!(keys.value_for("PVE_CATEGORIES"), Some("vm,lxc"));
    assert_eq!(
        keys.value_for("PVE_TOOL_WHITELIST"),
        Some("pve_list_nodes, pve_get_version")
    );
    assert_eq!(keys.value_for("PVE_TOOL_BLACKLIST"), None);
    assert!(!keys.default);
    assert_eq!(keys.policy, None);
    // `policy` is kept as written, for `policy::PolicyRules::parse` (docs/POLICY.md).
    let rules = json!({"rules": [{"action": "deny", "tag": "prod"}]});
    let body = with(rest_only("a.lan"), json!({ "policy": rules }));
    let keys = load_with_file(&body).unwrap().policy;
    assert_eq!(keys.policy, Some(rules));
    assert!(keys.any_policy());
    for bad in [
        json!({"accessTier": 3}),
        json!({"categories": [1]}),
        json!({"default": "yes"}),
    ] {
        let err = load_with_file(&with(rest_only("a.lan"), bad.clone())).unwrap_err();
        assert!(matches!(err, ConfigError::Invalid { .. }), "{bad}: {err}");
    }
}
