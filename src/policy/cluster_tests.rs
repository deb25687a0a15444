//! A cluster's instance-file policy keys beat the process's variables, key by key.

use super::*;
use crate::config::PolicyKeys;

#[test]
fn file_keys_beat_the_variables_and_unset_keys_keep_them() {
    let process = Settings {
        tier: Tier::ReadExecute,
        module: Module::Advanced,
        blacklist: ["pve_get_version".to_owned()].into(),
        ..Settings::default()
    };
    let keys = PolicyKeys {
        access_tier: Some("full".into()),
        categories: Some("qemu,lxc".into()),
        ..PolicyKeys::default()
    };
    let lab = process.for_cluster(&keys, "lab").unwrap();
    assert_eq!(lab.tier, Tier::Full);
    assert_eq!(
        lab.module,
        Module::Advanced,
        "not in the file: the variable"
    );
    assert_eq!(lab.categories.len(), 2);
    assert!(lab.blacklist.contains("pve_get_version"));
    let plain = process.for_cluster(&PolicyKeys::default(), "prod").unwrap();
    assert_eq!(plain, process);
}

#[test]
fn a_bad_file_key_names_the_cluster() {
    let keys = PolicyKeys {
        tool_whitelist: Some("pve_nope".into()),
        ..PolicyKeys::default()
    };
    let err = Settings::default()
        .for_cluster(&keys, "prod")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cluster `prod`") && err.contains("pve_nope"),
        "{err}"
    );
    let keys = PolicyKeys {
        access_tier: Some("root".into()),
        ..PolicyKeys::default()
    };
    assert!(Settings::default().for_cluster(&keys, "lab").is_err());
}
