//! The classifier's behaviour on concrete requests: what each route, argument value and
//! hand rule adds, and the words a person reads for it.

use super::*;
use crate::effects::EffectSet;

fn p(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn the_outside_gets_are_not_reads() {
    for (path, params) in [
        (
            "/cluster/acme/tos",
            p(&[("directory", "https://x.attacker.example/")]),
        ),
        (
            "/nodes/pve01/query-url-metadata",
            p(&[("url", "https://x.example/a.iso")]),
        ),
        ("/nodes/pve01/scan/nfs", p(&[("server", "10.9.9.9")])),
        ("/nodes/pve01/scan/cifs", p(&[("server", "10.9.9.9")])),
        (
            "/nodes/pve01/scan/pbs",
            p(&[("server", "10.9.9.9"), ("username", "a"), ("password", "b")]),
        ),
        ("/nodes/pve01/scan/iscsi", p(&[("portal", "10.9.9.9")])),
        (
            "/nodes/pve01/qemu/101/agent/file-read",
            p(&[("file", "/etc/shadow")]),
        ),
    ] {
        let got = classify_rest("GET", path, &params);
        assert!(!got.effects.is_read(), "{path}: {got:?}");
    }
    let shadow = classify_rest(
        "GET",
        "/nodes/pve01/qemu/101/agent/file-read",
        &p(&[("file", "/etc/shadow")]),
    );
    assert!(shadow.effects.contains(Effect::SensitiveRead));
    for path in [
        "/nodes/pve01/storage/pbs/file-restore/download",
        "/nodes/pve01/storage/pbs/file-restore/list",
        "/nodes/pve01/vzdump/extractconfig",
    ] {
        let got = classify_rest("GET", path, &p(&[("volume", "pbs:backup/vm/101/x")]));
        assert!(
            got.effects.contains(Effect::SensitiveRead),
            "{path}: {got:?}"
        );
    }
    assert!(
        classify_rest("GET", "/nodes/pve01/qemu/101/status/current", &[])
            .effects
            .is_read()
    );
    assert!(
        classify_rest("GET", "/cluster/resources", &p(&[("type", "vm")]))
            .effects
            .is_read()
    );
}

#[test]
fn unknown_requests_are_not_reads() {
    let got = classify_rest("GET", "/nodes/pve01/made-up", &[]);
    assert_eq!(got.effects, EffectSet::of(Effect::Unplaced), "{got:?}");
    // An unknown write is a change as well: the person is told it writes.
    let got = classify_rest("POST", "/nodes/pve01/made-up", &[]);
    assert!(
        got.effects.contains(Effect::Unplaced) && got.effects.contains(Effect::Change),
        "{got:?}"
    );
}

/// What a person reads: each effect of an endpoint with the route it comes from and,
/// where the schema's check demands one, the privilege.
#[test]
fn each_reason_names_the_route_and_the_privilege_it_demands() {
    let reasons = |method: &str, path: &str| -> Vec<(Effect, String)> {
        classify_rest(method, path, &[])
            .reasons
            .into_iter()
            .map(|r| (r.effect, r.because))
            .collect()
    };
    let file = "GET /nodes/{node}/qemu/{vmid}/agent/file-read";
    assert_eq!(
        reasons("GET", "/nodes/pve01/qemu/101/agent/file-read"),
        [(
            Effect::SensitiveRead,
            format!(
                "{file} needs VM.GuestAgent.FileRead or VM.GuestAgent.Unrestricted (more than an auditor's view)"
            )
        )]
    );
    let exec = "POST /nodes/{node}/qemu/{vmid}/agent/exec";
    assert_eq!(
        reasons("POST", "/nodes/pve01/qemu/101/agent/exec"),
        [
            (Effect::Change, exec.to_owned()),
            (
                Effect::Exec,
                format!("{exec} needs VM.GuestAgent.Unrestricted")
            ),
        ]
    );
    let metadata = "GET /nodes/{node}/query-url-metadata";
    assert!(
        reasons("GET", "/nodes/pve01/query-url-metadata").contains(&(
            Effect::Egress,
            format!("{metadata} needs Sys.AccessNetwork or Sys.Audit or Sys.Modify")
        ))
    );
    assert!(reasons("DELETE", "/access/groups/ops").contains(&(
        Effect::Access,
        "DELETE /access/groups/{groupid} needs Group.Allocate".to_owned()
    )));
    // Open to every user: the access change is named by its route alone.
    assert!(
        reasons("POST", "/access/ticket")
            .contains(&(Effect::Access, "POST /access/ticket".to_owned()))
    );
}

#[test]
fn equivalents_are_caught_by_value() {
    let other_disk = classify_rest(
        "POST",
        "/nodes/pve01/qemu",
        &p(&[("vmid", "150"), ("scsi0", "local-lvm:vm-100-disk-0")]),
    );
    assert!(
        other_disk.effects.contains(Effect::CrossGuest),
        "{other_disk:?}"
    );
    let own_disk = classify_rest(
        "PUT",
        "/nodes/pve01/qemu/150/config",
        &p(&[("scsi0", "local-lvm:vm-150-disk-0")]),
    );
    assert!(!own_disk.effects.contains(Effect::CrossGuest));
    let import = classify_rest(
        "POST",
        "/nodes/pve01/qemu",
        &p(&[
            ("vmid", "150"),
            ("scsi0", "local-lvm:0,import-from=local-lvm:vm-100-disk-0"),
        ]),
    );
    assert!(import.effects.contains(Effect::CrossGuest));
    let rootfs = classify_rest(
        "POST",
        "/nodes/pve01/lxc",
        &p(&[
            ("vmid", "250"),
            ("rootfs", "local-lvm:vm-200-disk-0"),
            ("unprivileged", "1"),
        ]),
    );
    assert!(rootfs.effects.contains(Effect::CrossGuest));
    let backup = classify_rest("POST", "/nodes/pve01/vzdump", &p(&[("vmid", "101")]));
    assert!(
        backup.effects.contains(Effect::Destroy),
        "prunes by default"
    );
    let kept = classify_rest(
        "POST",
        "/nodes/pve01/vzdump",
        &p(&[("vmid", "101"), ("remove", "0")]),
    );
    assert!(!kept.effects.contains(Effect::Destroy));
    let many = classify_rest(
        "POST",
        "/nodes/pve01/vzdump",
        &p(&[("vmid", "100,101,102"), ("remove", "0")]),
    );
    assert!(many.effects.contains(Effect::CrossGuest));
    let pool = classify_rest(
        "POST",
        "/nodes/pve01/vzdump",
        &p(&[("pool", "prod"), ("remove", "0")]),
    );
    assert!(pool.effects.contains(Effect::CrossGuest));
    let clone = classify_rest(
        "POST",
        "/nodes/pve01/qemu/100/clone",
        &p(&[("newid", "151")]),
    );
    assert!(clone.effects.contains(Effect::CrossGuest));
}

#[test]
fn host_devices_host_mounts_and_servers_are_named_by_value() {
    let has = |method: &str, path: &str, params: &[(&str, &str)], effect: Effect| {
        classify_rest(method, path, &p(params))
            .effects
            .contains(effect)
    };
    let vm = "/nodes/pve01/qemu/101/config";
    assert!(has(
        "PUT",
        vm,
        &[("hostpci0", "0000:01:00.0")],
        Effect::Access
    ));
    assert!(has("PUT", vm, &[("usb1", "host=1-1")], Effect::Access));
    assert!(!has(
        "PUT",
        vm,
        &[("net0", "virtio,bridge=vmbr0")],
        Effect::Access
    ));
    let ct = "/nodes/pve01/lxc/200/config";
    assert!(has(
        "PUT",
        ct,
        &[("mp0", "/srv/host,mp=/mnt/host")],
        Effect::Access
    ));
    assert!(!has(
        "PUT",
        ct,
        &[("mp0", "local-lvm:8,mp=/data")],
        Effect::Access
    ));
    assert!(!has(
        "PUT",
        ct,
        &[("description", "/srv/notes")],
        Effect::Access
    ));
    // A storage's server is where the node connects: data leaves the cluster there.
    let nfs = [
        ("storage", "nas"),
        ("type", "nfs"),
        ("server", "203.0.113.9"),
    ];
    assert!(has("POST", "/storage", &nfs, Effect::Egress));
    assert!(!has("POST", "/storage", &nfs[..2], Effect::Egress));
    // One guest is not several; importing any existing volume is a copy.
    let one = [("vmid", "101"), ("remove", "0")];
    assert!(!has(
        "POST",
        "/nodes/pve01/vzdump",
        &one,
        Effect::CrossGuest
    ));
    let import = [
        ("vmid", "150"),
        ("scsi0", "local-lvm:0,import-from=local:import/debian.qcow2"),
    ];
    assert!(has(
        "POST",
        "/nodes/pve01/qemu",
        &import,
        Effect::CrossGuest
    ));
}

/// The hand table's create rules: what Proxmox does with `unprivileged`, `force` and
/// `start`/`onboot`, read as Proxmox reads booleans (`1`/`true`, anything else is off).
#[test]
fn create_and_restore_rules_read_booleans_as_proxmox_does() {
    let classify = |path: &str, params: &[(&str, &str)]| classify_rest("POST", path, &p(params));
    let ct = "/nodes/pve01/lxc";
    let template = ("ostemplate", "local:vztmpl/debian-12.tar.zst");
    for off in ["0", "false"] {
        let got = classify(ct, &[("vmid", "250"), template, ("unprivileged", off)]);
        assert!(
            got.effects.contains(Effect::Access),
            "unprivileged={off}: {got:?}"
        );
    }
    for on in ["1", "true"] {
        let got = classify(ct, &[("vmid", "250"), template, ("unprivileged", on)]);
        assert!(
            !got.effects.contains(Effect::Access),
            "unprivileged={on}: {got:?}"
        );
    }
    // A restore over an existing guest destroys it; without `force` it cannot.
    let archive = ("archive", "pbs:backup/ct/250/2026-01-01T00:00:00Z");
    for path in [ct, "/nodes/pve01/qemu"] {
        let over = classify(path, &[("vmid", "250"), archive, ("force", "1")]);
        assert!(over.effects.contains(Effect::Destroy), "{path}: {over:?}");
        let fresh = classify(path, &[("vmid", "250"), archive, ("force", "0")]);
        assert!(
            !fresh.effects.contains(Effect::Destroy),
            "{path}: {fresh:?}"
        );
        let nothing = classify(path, &[("vmid", "250"), ("force", "1")]);
        assert!(
            !nothing.effects.contains(Effect::Destroy),
            "{path}: {nothing:?}"
        );
    }
    // The rule belongs to the create routes, not to any POST that carries the keys.
    let start = classify(
        "/nodes/pve01/lxc/250/status/start",
        &[archive, ("force", "1")],
    );
    assert!(!start.effects.contains(Effect::Destroy), "{start:?}");
    let runs = |params: &[(&str, &str)]| {
        classify(ct, params)
            .reasons
            .iter()
            .any(|r| r.because == "start/onboot: the new guest will run")
    };
    assert!(runs(&[("vmid", "250"), template, ("start", "1")]));
    assert!(runs(&[("vmid", "250"), template, ("onboot", "true")]));
    assert!(!runs(&[
        ("vmid", "250"),
        template,
        ("start", "0"),
        ("onboot", "0")
    ]));
    // An upload into `snippets` places what hook scripts and cloud-init run; listing
    // them, or uploading an ISO, runs nothing.
    let upload = "/nodes/pve01/storage/local/upload";
    let snippet = classify(upload, &[("content", "snippets"), ("filename", "hook.sh")]);
    assert!(snippet.effects.contains(Effect::Exec), "{snippet:?}");
    let iso = classify(upload, &[("content", "iso"), ("filename", "d.iso")]);
    assert!(!iso.effects.contains(Effect::Exec), "{iso:?}");
    let listing = classify_rest(
        "GET",
        "/nodes/pve01/storage/local/content",
        &p(&[("content", "snippets")]),
    );
    assert!(listing.effects.is_read(), "{listing:?}");
    // A batch of API commands runs whatever it lists: execution, whatever the list says.
    let batch = classify("/nodes/pve01/execute", &[("commands", "[]")]);
    assert!(batch.effects.contains(Effect::Exec), "{batch:?}");
    // Proxmox's lists take commas, semicolons or spaces: each spelling is several guests.
    for list in ["100,101", "100;101", "100 101"] {
        let many = classify("/nodes/pve01/vzdump", &[("vmid", list), ("remove", "0")]);
        assert!(
            many.effects.contains(Effect::CrossGuest),
            "{list}: {many:?}"
        );
    }
    // `all=0` backs up the named guest only.
    let one = classify(
        "/nodes/pve01/vzdump",
        &[("vmid", "101"), ("all", "0"), ("remove", "0")],
    );
    assert!(!one.effects.contains(Effect::CrossGuest), "{one:?}");
}

/// A guest's own volumes are not another guest's: the guest is the segment after `qemu` or
/// `lxc`, never another number in the path (a node may be named `7`).
#[test]
fn a_guest_config_naming_its_own_volumes_is_not_cross_guest() {
    for (path, key, volume) in [
        (
            "/nodes/pve01/lxc/200/config",
            "mp0",
            "local-lvm:vm-200-disk-1,mp=/data",
        ),
        (
            "/nodes/pve01/qemu/150/config",
            "scsi1",
            "local-lvm:vm-150-disk-1",
        ),
        (
            "/nodes/7/qemu/150/config",
            "scsi1",
            "local-lvm:vm-150-disk-1",
        ),
    ] {
        let got = classify_rest("PUT", path, &p(&[(key, volume)]));
        assert!(!got.effects.contains(Effect::CrossGuest), "{path}: {got:?}");
        let other = volume.replace("-200-", "-300-").replace("-150-", "-300-");
        let got = classify_rest("PUT", path, &p(&[(key, &other)]));
        assert!(got.effects.contains(Effect::CrossGuest), "{path}: {got:?}");
    }
}

#[test]
fn every_write_is_at_least_a_change() {
    let start = classify_rest("POST", "/nodes/pve01/qemu/101/status/start", &[]);
    assert!(start.effects.contains(Effect::Change));
    let stop = classify_rest("POST", "/nodes/pve01/qemu/101/status/stop", &[]);
    assert!(stop.effects.contains(Effect::Destroy));
    let ping = classify_rest("POST", "/nodes/pve01/qemu/101/agent/ping", &[]);
    assert!(ping.effects.is_read());
}
