//! Unit tests of the "before" readers: every shape of update against answers of every shape.

use super::*;
use serde_json::json;

fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect()
}

#[test]
fn config_changes_skip_unchanged_keys_and_unset_deletions() {
    let current = json!({"cores": 2, "memory": "4096", "tags": "web", "digest": "abc"});
    let diff = config_diff(
        &params(&[
            ("cores", "4"),
            ("memory", "4096"),
            ("delete", "tags,onboot"),
            ("digest", "abc"),
        ]),
        current.as_object(),
        true,
    );
    assert_eq!(
        diff.changes,
        vec![
            Change {
                key: "cores".into(),
                old: Before::Value("2".into()),
                new: Some("4".into())
            },
            Change {
                key: "tags".into(),
                old: Before::Value("web".into()),
                new: None
            },
        ]
    );
    assert_eq!(
        diff.unchanged,
        vec!["memory".to_owned(), "onboot".to_owned()]
    );
}

#[test]
fn a_failed_read_is_not_shown_as_unset() {
    let diff = config_diff(&params(&[("cores", "4"), ("cipassword", "x")]), None, true);
    assert!(diff.changes.iter().all(|c| c.old == Before::NotRead));
    assert_eq!(diff.changes[1].new.as_deref(), Some(REDACTED));
}

#[test]
fn resize_reads_the_disk_size_from_the_config() {
    let config = json!({"scsi0": "local-lvm:vm-101-disk-0,iothread=1,size=32G"});
    let diff = resize_diff(
        &params(&[("disk", "scsi0"), ("size", "+10G")]),
        config.as_object(),
    );
    assert_eq!(diff.changes[0].old, Before::Value("32G".into()));
    assert_eq!(diff.changes[0].new.as_deref(), Some("42G (grown by 10G)"));
    let same = resize_diff(
        &params(&[("disk", "scsi0"), ("size", "32G")]),
        config.as_object(),
    );
    assert!(same.changes.is_empty());
    let missing = resize_diff(
        &params(&[("disk", "scsi9"), ("size", "8G")]),
        config.as_object(),
    );
    assert_eq!(missing.changes[0].old, Before::Unset);
}

#[test]
fn pool_members_are_found_in_the_list() {
    let answer = json!([{"poolid": "emu-pool", "comment": "c", "members": [
        {"type": "qemu", "vmid": 101}, {"type": "storage", "storage": "local"}]}]);
    let pool = pool_entry(&answer, "emu-pool");
    let diff = pool_diff(
        &params(&[("poolid", "emu-pool"), ("vms", "101,201"), ("comment", "c")]),
        pool,
    );
    assert_eq!(
        diff.changes,
        vec![Change {
            key: "vms".into(),
            old: Before::Value("101".into()),
            new: Some("101,201".into())
        }]
    );
    assert_eq!(diff.unchanged, vec!["comment".to_owned()]);
    let removal = pool_diff(&params(&[("storage", "local"), ("delete", "1")]), pool);
    assert_eq!(removal.changes[0].old, Before::Value("local".into()));
    assert_eq!(removal.changes[0].new, None);
}

#[test]
fn acl_entries_are_found_in_the_list() {
    let rows = json!([{"path": "/vms", "type": "user", "ugid": "alice@pve", "roleid": "PVEVMUser", "propagate": 1}]);
    let rows = rows.as_array().map(Vec::as_slice);
    let grant = acl_diff(
        &params(&[
            ("path", "/vms/"),
            ("roles", "PVEVMUser,PVEAdmin"),
            ("users", "alice@pve"),
        ]),
        rows,
    );
    assert_eq!(
        grant.unchanged,
        vec!["PVEVMUser for user alice@pve on /vms".to_owned()]
    );
    assert_eq!(grant.changes.len(), 1);
    assert_eq!(grant.changes[0].old, Before::Value("not granted".into()));
    let unread = acl_diff(
        &params(&[("path", "/"), ("roles", "PVEAdmin"), ("groups", "ops")]),
        None,
    );
    assert_eq!(unread.changes[0].old, Before::NotRead);
}

#[test]
fn text_keeps_strings_and_prints_the_rest_as_json() {
    assert_eq!(text(&json!("a b")), "a b");
    assert_eq!(text(&json!(4)), "4");
    assert_eq!(text(&json!(true)), "true");
    assert_eq!(text(&json!(null)), "null");
}

#[test]
fn secret_keys_are_masked_before_and_after() {
    let current = json!({"cipassword": "old-secret", "cores": 2});
    let set = config_diff(
        &params(&[("cipassword", "new-secret"), ("cores", "4")]),
        current.as_object(),
        true,
    );
    assert_eq!(
        set.changes,
        vec![
            Change {
                key: "cipassword".into(),
                old: Before::Value(REDACTED.into()),
                new: Some(REDACTED.into()),
            },
            Change {
                key: "cores".into(),
                old: Before::Value("2".into()),
                new: Some("4".into()),
            },
        ]
    );
    let deleted = config_diff(
        &params(&[("delete", "cipassword")]),
        current.as_object(),
        true,
    );
    assert_eq!(deleted.changes[0].old, Before::Value(REDACTED.into()));
    assert_eq!(deleted.changes[0].new, None);
}

#[test]
fn a_delete_list_takes_any_separator_and_a_delete_flag_is_no_list() {
    let current = json!({"tags": "web", "onboot": 1, "cores": 2});
    let list = config_diff(
        &params(&[("delete", ",tags; onboot  ")]),
        current.as_object(),
        true,
    );
    let keys: Vec<&str> = list.changes.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["tags", "onboot"]);
    assert!(list.unchanged.is_empty(), "{:?}", list.unchanged);
    // Where `delete` is a flag (pools, ACLs), it is one more key, and nothing named `1` goes.
    let comment = json!({"comment": "x"});
    let flag = config_diff(
        &params(&[("delete", "1"), ("comment", "x")]),
        comment.as_object(),
        false,
    );
    assert_eq!(
        flag.changes,
        vec![Change {
            key: "delete".into(),
            old: Before::Unset,
            new: Some("1".into()),
        }]
    );
    assert_eq!(flag.unchanged, vec!["comment".to_owned()]);
}

/// The resize of `scsi0` from `current` by `size`: the change's before and after, and the
/// unchanged keys.
fn resize(current: &str, size: &str) -> (Option<(Before, String)>, Vec<String>) {
    let config = json!({"scsi0": format!("local:vm-1-disk-0,size={current}")});
    let diff = resize_diff(
        &params(&[("disk", "scsi0"), ("size", size)]),
        config.as_object(),
    );
    let change = diff
        .changes
        .first()
        .map(|c| (c.old.clone(), c.new.clone().unwrap_or_default()));
    (change, diff.unchanged)
}

#[test]
fn resize_adds_sizes_in_every_unit() {
    for (current, size, after) in [
        ("512", "+512", "1K (grown by 512)"),
        ("512B", "+512b", "1K (grown by 512b)"),
        ("1536K", "+512K", "2M (grown by 512K)"),
        ("512M", "+512M", "1G (grown by 512M)"),
        ("32g", "+1G", "33G (grown by 1G)"),
        ("1T", "+512G", "1.5T (grown by 512G)"),
        ("10G", "+100M", "10.1G (grown by 100M)"),
        ("100", "+20", "120 (grown by 20)"),
        // An unknown unit is not guessed at.
        ("32X", "+1G", "32X grown by 1G"),
    ] {
        let (change, unchanged) = resize(current, size);
        assert_eq!(
            change,
            Some((Before::Value(current.into()), after.into())),
            "{current} {size}"
        );
        assert!(unchanged.is_empty());
    }
    // The same size in another unit changes nothing; a new absolute size is shown as given.
    assert_eq!(
        resize("32G", "32768M"),
        (None, vec!["scsi0 size".to_owned()])
    );
    assert_eq!(
        resize("32G", "40G").0,
        Some((Before::Value("32G".into()), "40G".into()))
    );
}

#[test]
fn resize_without_a_readable_size_says_so() {
    let size = params(&[("disk", "scsi0"), ("size", "+10G")]);
    let unread = resize_diff(&size, None);
    assert_eq!(unread.changes[0].old, Before::NotRead);
    assert_eq!(unread.changes[0].new.as_deref(), Some("grown by 10G"));
    let no_size = json!({"scsi0": "local:vm-1-disk-0"});
    let diff = resize_diff(&size, no_size.as_object());
    assert_eq!(diff.changes[0].old, Before::NotRead);
    assert_eq!(diff.changes[0].key, "scsi0 size");
}

fn pool(members: Value) -> Value {
    json!({"poolid": "p", "comment": "old", "members": members})
}

#[test]
fn pool_members_are_added_removed_or_not_read() {
    let filled = pool(json!([
        {"type": "qemu", "vmid": 101}, {"type": "lxc", "vmid": 102},
        {"type": "storage", "storage": "local"}
    ]));
    let diff = |pairs: &[(&str, &str)], answer: Option<&Value>| {
        pool_diff(&params(pairs), answer.and_then(|a| pool_entry(a, "p")))
    };
    // Guests are qemu and lxc members; storage is its own set.
    let added = diff(&[("vms", "103"), ("storage", "local")], Some(&filled));
    assert_eq!(
        added.changes,
        vec![Change {
            key: "vms".into(),
            old: Before::Value("101,102".into()),
            new: Some("101,102,103".into()),
        }]
    );
    assert_eq!(added.unchanged, vec!["storage".to_owned()]);
    let emptied = diff(
        &[("vms", "101 102"), ("delete", "1")],
        Some(&pool(
            json!([{"type": "qemu", "vmid": 101}, {"type": "lxc", "vmid": 102}]),
        )),
    );
    assert_eq!(emptied.changes[0].old, Before::Value("101,102".into()));
    assert_eq!(emptied.changes[0].new, None);
    let into_empty = diff(&[("storage", "local")], Some(&pool(json!([]))));
    assert_eq!(into_empty.changes[0].old, Before::Unset);
    assert_eq!(into_empty.changes[0].new.as_deref(), Some("local"));
    // Not read: the request is shown as it is.
    let add = diff(&[("vms", "101,102")], None);
    assert_eq!(add.changes[0].old, Before::NotRead);
    assert_eq!(add.changes[0].new.as_deref(), Some("add 101,102"));
    let remove = diff(&[("storage", "local"), ("delete", "true")], None);
    assert_eq!(remove.changes[0].new.as_deref(), Some("remove local"));
    // A changed comment is a change like a config key.
    let comment = diff(&[("comment", "new")], Some(&filled));
    assert_eq!(
        comment.changes,
        vec![Change {
            key: "comment".into(),
            old: Before::Value("old".into()),
            new: Some("new".into()),
        }]
    );
    let flag_off = diff(&[("vms", "101"), ("delete", "0")], Some(&filled));
    assert_eq!(flag_off.unchanged, vec!["vms".to_owned()]);
}

#[test]
fn the_pool_entry_is_found_in_every_answer_shape() {
    let one = json!({"poolid": "a", "comment": "object"});
    assert_eq!(pool_entry(&one, "zzz"), one.as_object());
    let list = json!([{"poolid": "a", "comment": "first"}, {"poolid": "b", "comment": "second"}]);
    assert_eq!(pool_entry(&list, "b"), list[1].as_object());
    assert_eq!(pool_entry(&list, "a"), list[0].as_object());
    assert_eq!(pool_entry(&list, "c"), None);
    let unnamed = json!([{"comment": "only"}]);
    assert_eq!(pool_entry(&unnamed, "a"), unnamed[0].as_object());
    let other = json!([{"poolid": "x"}]);
    assert_eq!(pool_entry(&other, "a"), None);
    assert_eq!(pool_entry(&json!("text"), "a"), None);
}

#[test]
fn an_acl_entry_matches_only_on_path_kind_name_and_role_together() {
    let rows = json!([
        {"path": "/vms", "type": "user", "ugid": "alice@pve", "roleid": "PVEVMUser", "propagate": 0},
        // Each of these differs from the PVEAdmin grant asked for in one field only.
        {"path": "/vms", "type": "group", "ugid": "alice@pve", "roleid": "PVEAdmin"},
        {"path": "/storage", "type": "user", "ugid": "alice@pve", "roleid": "PVEAdmin"},
        {"path": "/vms", "type": "user", "ugid": "bob@pve", "roleid": "PVEAdmin"},
        {"path": "/vms", "type": "user", "ugid": "alice@pve", "roleid": "PVEAuditor"},
        {"path": "/", "type": "token", "ugid": "root@pam!ci", "roleid": "PVEAuditor"},
    ]);
    let rows = rows.as_array().map(Vec::as_slice);
    let grant = acl_diff(
        &params(&[
            ("path", "/vms"),
            ("roles", "PVEVMUser,PVEAdmin"),
            ("users", "alice@pve"),
        ]),
        rows,
    );
    assert_eq!(
        grant.changes,
        vec![
            Change {
                key: "PVEVMUser for user alice@pve on /vms".into(),
                old: Before::Value("granted, propagate=0".into()),
                new: Some("granted, propagate=1".into()),
            },
            Change {
                key: "PVEAdmin for user alice@pve on /vms".into(),
                old: Before::Value("not granted".into()),
                new: Some("granted, propagate=1".into()),
            },
        ]
    );
    assert!(grant.unchanged.is_empty());
    // The root path stays `/`; a token's grant found there and revoked is a change, a
    // group's grant that does not exist revoked is none.
    let revoke = acl_diff(
        &params(&[
            ("path", "/"),
            ("roles", "PVEAuditor"),
            ("tokens", "root@pam!ci"),
            ("groups", "ops"),
            ("delete", "1"),
        ]),
        rows,
    );
    assert_eq!(
        revoke.changes,
        vec![Change {
            key: "PVEAuditor for token root@pam!ci on /".into(),
            old: Before::Value("granted, propagate=1".into()),
            new: Some("not granted".into()),
        }]
    );
    assert_eq!(
        revoke.unchanged,
        vec!["PVEAuditor for group ops on /".to_owned()]
    );
    let same = acl_diff(
        &params(&[
            ("path", "/vms/"),
            ("roles", "PVEVMUser"),
            ("users", "alice@pve"),
            ("propagate", "0"),
        ]),
        rows,
    );
    assert_eq!(
        same.unchanged,
        vec!["PVEVMUser for user alice@pve on /vms".to_owned()]
    );
}
