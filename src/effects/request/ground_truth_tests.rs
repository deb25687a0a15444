//! The classifier's ground truth on concrete requests (issue 36): the monitor by its command,
//! parameters no schema declares, the operations of a newer PVE, the cluster's own schema, and
//! the reasons a person's question used to miss.

use super::*;
use crate::effects::EffectSet;

fn p(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The QEMU monitor: the command decides (the schema's check takes `Sys.Audit`).
#[test]
fn the_monitor_is_decided_by_its_command() {
    let monitor = "/nodes/pve01/qemu/101/monitor";
    for command in [
        "quit",
        "system_reset",
        "migrate \"exec:id\"",
        "",
        "  stop  ",
    ] {
        let got = classify_rest("POST", monitor, &p(&[("command", command)]));
        for effect in [Effect::Change, Effect::Exec, Effect::Destroy] {
            assert!(got.effects.contains(effect), "{command:?}: {got:?}");
        }
        assert!(!got.effects.contains(Effect::SensitiveRead), "{command:?}");
    }
    let bare = classify_rest("POST", monitor, &[]);
    assert!(bare.effects.contains(Effect::Exec), "{bare:?}");
    for command in ["info status", "info", "help", "?", " info registers"] {
        let got = classify_rest("POST", monitor, &p(&[("command", command)]));
        assert_eq!(
            got.effects,
            EffectSet::of(Effect::SensitiveRead),
            "{command:?}: {got:?}"
        );
    }
    // Only the first word counts: `information` is not `info`.
    let got = classify_rest("POST", monitor, &p(&[("command", "information")]));
    assert!(got.effects.contains(Effect::Destroy), "{got:?}");
}

/// A parameter the endpoint does not declare cannot be placed; a declared one can.
#[test]
fn undeclared_parameters_are_unplaced() {
    let got = classify_rest(
        "GET",
        "/version",
        &p(&[("check-url", "https://x.example/")]),
    );
    assert!(got.effects.contains(Effect::Unplaced), "{got:?}");
    assert!(got.reasons[0].because.contains("check-url"), "{got:?}");
    let indexed = classify_rest(
        "PUT",
        "/nodes/pve01/qemu/101/config",
        &p(&[("net3", "virtio,bridge=vmbr0"), ("cores", "2")]),
    );
    assert!(!indexed.effects.contains(Effect::Unplaced), "{indexed:?}");
    let family = classify_rest("PUT", "/nodes/pve01/qemu/101/config", &p(&[("net", "x")]));
    assert!(family.effects.contains(Effect::Unplaced), "{family:?}");
}

/// PVE 9.2 operations the embedded schema lacks: judged by hand, a GET never a read.
#[test]
fn newer_operations_are_placed_by_their_rows() {
    let restart = classify_rest("POST", "/cluster/ceph/restart-bulk", &[]);
    assert!(restart.effects.contains(Effect::Destroy), "{restart:?}");
    assert!(!restart.effects.contains(Effect::Unplaced), "{restart:?}");
    let list = classify_rest("GET", "/cluster/sdn/prefix-lists", &[]);
    assert_eq!(list.effects, EffectSet::of(Effect::Unplaced), "{list:?}");
    let with_param = classify_rest("POST", "/cluster/qemu/custom-cpu-models", &p(&[("x", "1")]));
    assert!(
        with_param.effects.contains(Effect::Unplaced),
        "{with_param:?}"
    );
}

/// The cluster's own schema adds what it knows and never takes anything away.
#[test]
fn the_clusters_schema_adds_and_never_removes() {
    let entry = serde_json::json!({"permissions": {"check": ["perm", "/", ["Sys.Audit"]]},
        "parameters": {"properties": {"node": {"type": "string"}, "vmid": {"type": "integer"},
            "remote-url": {"type": "string", "pattern": "https?://.*"}}}});
    let cluster = Endpoint::from_schema("GET", "/nodes/{node}/qemu/{vmid}/config", &entry);
    let params = p(&[("remote-url", "https://x.example/")]);
    let got = classify_rest_with(
        "GET",
        "/nodes/pve01/qemu/101/config",
        &params,
        Some(&cluster),
    );
    assert!(got.effects.contains(Effect::Egress), "{got:?}");
    assert!(got.effects.contains(Effect::Unplaced), "{got:?}");
    // A cluster that calls a sensitive read a read does not make it one.
    let open = serde_json::json!({"permissions": {"user": "all"}, "parameters": {"properties": {
        "file": {"type": "string"}, "node": {"type": "string"}, "vmid": {"type": "integer"}}}});
    let lax = Endpoint::from_schema("GET", "/nodes/{node}/qemu/{vmid}/agent/file-read", &open);
    let shadow = classify_rest_with(
        "GET",
        "/nodes/pve01/qemu/101/agent/file-read",
        &p(&[("file", "/etc/shadow")]),
        Some(&lax),
    );
    assert!(shadow.effects.contains(Effect::SensitiveRead), "{shadow:?}");
}

/// The reasons the question used to miss, each by value.
#[test]
fn the_questions_missing_reasons_are_named() {
    let config = "/nodes/pve01/qemu/101/config";
    /// Method, path, parameters, the effect, words its reason must hold.
    type Case = (
        &'static str,
        &'static str,
        Vec<(String, String)>,
        Effect,
        &'static str,
    );
    let cases: [Case; 9] = [
        (
            "POST",
            config,
            p(&[("scsi1", "/dev/sdb")]),
            Effect::Access,
            "host block device",
        ),
        (
            "POST",
            config,
            p(&[("efidisk0", "local-lvm:vm-102-disk-0")]),
            Effect::CrossGuest,
            "guest 102",
        ),
        (
            "PUT",
            "/nodes/pve01/lxc/200/config",
            p(&[("mp0", "mp=/mnt,volume=/etc")]),
            Effect::Access,
            "host path",
        ),
        (
            "POST",
            "/nodes/pve01/qemu/101/agent/set-user-password",
            p(&[("username", "root"), ("password", "x")]),
            Effect::Access,
            "password of a user",
        ),
        (
            "POST",
            "/nodes/pve01/qemu/101/firewall/rules",
            p(&[
                ("type", "in"),
                ("action", "ACCEPT"),
                ("source", "0.0.0.0/0"),
            ]),
            Effect::Access,
            "every address",
        ),
        (
            "POST",
            "/storage",
            p(&[
                ("storage", "s"),
                ("type", "dir"),
                ("path", "/srv"),
                ("content", "iso,snippets"),
            ]),
            Effect::Exec,
            "snippets",
        ),
        (
            "POST",
            "/nodes/pve01/vzdump",
            p(&[
                ("vmid", "101"),
                ("script", "/root/hook.sh"),
                ("remove", "0"),
            ]),
            Effect::Exec,
            "hook script",
        ),
        (
            "PUT",
            "/pools/web",
            p(&[("vms", "101")]),
            Effect::Access,
            "pool's permissions",
        ),
        (
            "POST",
            "/nodes/pve01/qemu/101/move_disk",
            p(&[("disk", "scsi0"), ("target-vmid", "102")]),
            Effect::CrossGuest,
            "guest 102",
        ),
    ];
    for (method, path, params, effect, words) in cases {
        let got = classify_rest(method, path, &params);
        assert!(
            got.effects.contains(effect),
            "{method} {path} {params:?}: {got:?}"
        );
        assert!(
            got.reasons
                .iter()
                .any(|r| r.effect == effect && r.because.contains(words)),
            "{method} {path}: {:?}",
            got.reason_lines()
        );
    }
    // The same keys without the risky value add nothing of the kind.
    let own = classify_rest(
        "POST",
        config,
        &p(&[
            ("efidisk0", "local-lvm:vm-101-disk-0"),
            ("scsi1", "local-lvm:vm-101-disk-1"),
        ]),
    );
    assert!(
        !own.effects.contains(Effect::CrossGuest) && !own.effects.contains(Effect::Access),
        "{own:?}"
    );
    let narrow = classify_rest(
        "POST",
        "/nodes/pve01/qemu/101/firewall/rules",
        &p(&[
            ("type", "in"),
            ("action", "ACCEPT"),
            ("source", "192.0.2.0/24"),
        ]),
    );
    assert!(!narrow.effects.contains(Effect::Access), "{narrow:?}");
    let same = classify_rest(
        "POST",
        "/nodes/pve01/qemu/101/move_disk",
        &p(&[("disk", "scsi0"), ("target-vmid", "101")]),
    );
    assert!(!same.effects.contains(Effect::CrossGuest), "{same:?}");
}

/// Bulk actions: without `vms` they act on every guest, with it on several.
#[test]
fn bulk_actions_cross_guests() {
    for (path, destroys) in [
        ("/cluster/bulk-action/guest/start", false),
        ("/cluster/bulk-action/guest/shutdown", true),
        ("/nodes/pve01/stopall", true),
        ("/nodes/pve01/startall", false),
        ("/nodes/pve01/suspendall", true),
    ] {
        let got = classify_rest("POST", path, &[]);
        assert!(got.effects.contains(Effect::CrossGuest), "{path}: {got:?}");
        assert_eq!(
            got.effects.contains(Effect::Destroy),
            destroys,
            "{path}: {got:?}"
        );
    }
}

/// The migration tunnel's websocket is not a read.
#[test]
fn the_migration_tunnel_is_not_a_read() {
    for guest in ["qemu", "lxc"] {
        let got = classify_rest(
            "GET",
            &format!("/nodes/pve01/{guest}/101/mtunnelwebsocket"),
            &[],
        );
        assert!(got.effects.contains(Effect::Exec), "{got:?}");
        assert!(got.effects.contains(Effect::SensitiveRead), "{got:?}");
    }
}
