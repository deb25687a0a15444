//! Previews built by the library against the emulator over loopback HTTP, one per shape of
//! call: a container (its `hostname`), a guest living on another node than the request names
//! (read from the real node), a guest addressed as the wrong kind or not listed at all, a pool
//! update, a guest config deletion, a call that is no update, an update whose path answers a
//! list, a read the call is not cleared for, SSH and composite calls (their arguments masked)
//! and no connection at all — each checked in the preview itself, in the question and in the
//! `dry_run` answer; and, in the preview and the question, a guest named by its own config
//! when the cluster list is refused and a snapshot asked about as something new.

use crate::common;
use crate::harness;

use harness::pve_client;
use nandi_proxmox_mcp::catalog::{self, ToolSpec};
use nandi_proxmox_mcp::preview::{self, Before, Change, Preview, Target};
use nandi_proxmox_mcp::{pve, schema};
use pve_emulator::{Fault, FaultKind};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The preview of `tool` with `args`, read through `client` when there is one.
async fn preview_of(
    client: Option<&pve::Client>,
    tool: &str,
    args: Value,
) -> (Preview, &'static ToolSpec) {
    let spec = catalog::find(tool).expect(tool);
    let valid = schema::validate(spec, args.as_object()).expect("valid arguments");
    let built = preview::build(client, spec, &valid, &CancellationToken::new()).await;
    (built, spec)
}

fn change(key: &str, old: Before, new: Option<&str>) -> Change {
    Change {
        key: key.into(),
        old,
        new: new.map(str::to_owned),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_is_named_by_its_hostname() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, spec) = preview_of(
        Some(&client),
        "pve_lxc_update_config",
        json!({"node": "pve01", "vmid": 201, "cores": 4}),
    )
    .await;
    assert_eq!(
        p.target,
        Some(Target {
            node: "pve01".into(),
            kind: "lxc".into(),
            vmid: "201".into(),
            name: Some("ct-docker".into()),
            requested_node: None,
        })
    );
    assert!(p.update);
    assert_eq!(
        p.changes,
        vec![change("cores", Before::Value("2".into()), Some("4"))]
    );
    assert!(p.notes.is_empty(), "{:?}", p.notes);
    let q = p.question(spec, &[]);
    assert!(
        q.contains("Target: container 201 \"ct-docker\" on node pve01"),
        "{q}"
    );
    assert!(q.contains("  - cores: 2 → 4"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_on_another_node_is_read_where_it_lives() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, spec) = preview_of(
        Some(&client),
        "pve_lxc_update_config",
        json!({"node": "pve01", "vmid": 202, "memory": 2048}),
    )
    .await;
    let target = p.target.clone().expect("target");
    assert_eq!(
        (target.node.as_str(), target.requested_node.as_deref()),
        ("pve02", Some("pve01"))
    );
    assert_eq!(target.name.as_deref(), Some("ct-remote"));
    assert_eq!(
        p.changes,
        vec![change("memory", Before::Value("1024".into()), Some("2048"))]
    );
    assert!(p.digest.is_some());
    let answer = p.dry_run(spec, Some(&["r".to_owned()]), "elicitation");
    assert_eq!(answer["target"]["requestedNode"], "pve01");
    assert_eq!(answer["target"]["node"], "pve02");
    assert_eq!(answer["current"], json!({"memory": "1024"}));
    assert_eq!(answer["digest"], json!(p.digest));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_of_another_kind_or_not_listed_leaves_a_note() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, _) = preview_of(
        Some(&client),
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 201, "cores": 4}),
    )
    .await;
    assert!(
        p.notes
            .iter()
            .any(|n| n
                == "/cluster/resources lists guest 201 as lxc, the request addresses it as qemu"),
        "{:?}",
        p.notes
    );
    let (p, spec) = preview_of(
        Some(&client),
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 999, "cores": 4}),
    )
    .await;
    assert!(
        p.notes
            .iter()
            .any(|n| n == "guest 999 is not listed in /cluster/resources"),
        "{:?}",
        p.notes
    );
    let target = p.target.clone().expect("target from the path");
    assert_eq!((target.node.as_str(), target.name), ("pve01", None));
    let answer = p.dry_run(spec, None, "elicitation");
    assert_eq!(answer["notes"], json!(p.notes));
    assert_eq!(answer["decision"]["needsApproval"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_update_shows_its_members_before_and_after() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, spec) = preview_of(
        Some(&client),
        "pve_update_pool",
        json!({"poolid": "emu-pool", "vms": "102", "comment": "Emulator test pool"}),
    )
    .await;
    assert_eq!(
        p.changes,
        vec![change(
            "vms",
            Before::Value("101,201".into()),
            Some("101,102,201")
        )]
    );
    assert_eq!(p.unchanged, vec!["comment".to_owned()]);
    let removed = preview_of(
        Some(&client),
        "pve_update_pool",
        json!({"poolid": "emu-pool", "vms": "101", "delete": true}),
    )
    .await
    .0;
    assert_eq!(
        removed.changes,
        vec![change("vms", Before::Value("101,201".into()), Some("201"))]
    );
    let q = p.question(spec, &[]);
    assert!(q.contains("  - vms: 101,201 → 101,102,201"), "{q}");
    assert!(q.contains("Unchanged (already so): comment"), "{q}");
    assert!(q.contains("Also sent:\n  - poolid=emu-pool"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_config_deletion_lists_each_key() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, spec) = preview_of(
        Some(&client),
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "delete": "agent,balloon"}),
    )
    .await;
    assert_eq!(
        p.changes,
        vec![change("agent", Before::Value("1".into()), None)]
    );
    assert_eq!(p.unchanged, vec!["balloon".to_owned()]);
    let q = p.question(spec, &[]);
    assert!(q.contains("  - agent: 1 → (removed)"), "{q}");
    assert!(!q.contains("Also sent:"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_is_no_update_still_names_its_guest() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, spec) = preview_of(
        Some(&client),
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert!(!p.update);
    assert!(p.changes.is_empty() && p.unchanged.is_empty() && p.digest.is_none());
    assert_eq!(
        p.target.as_ref().and_then(|t| t.name.as_deref()),
        Some("vm-web")
    );
    let q = p.question(spec, &[]);
    assert!(q.contains("Target: VM 101 \"vm-web\" on node pve01"), "{q}");
    assert!(
        q.contains("Request: POST /nodes/pve01/qemu/101/status/stop"),
        "{q}"
    );
    assert!(!q.contains("Changes:"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_and_composite_calls_show_their_arguments_masked() {
    let (p, spec) = preview_of(
        None,
        "pve_node_shell_run",
        json!({"node": "pve01", "command": "uptime"}),
    )
    .await;
    assert_eq!(p.request["arguments"]["command"], "uptime");
    assert!(p.request["ssh"].is_string());
    let q = p.question(spec, &[]);
    assert!(q.contains("Runs over SSH: "), "{q}");
    assert!(q.contains("  - command=uptime"), "{q}");
    let (p, spec) = preview_of(
        None,
        "pve_api_write",
        json!({"method": "PUT", "path": "/access/password",
               "params": ["userid=mcp@pve", "password=hunter2-secret"]}),
    )
    .await;
    assert_eq!(
        p.request["arguments"]["params"],
        json!(["userid=mcp@pve", "password=[redacted]"])
    );
    let q = p.question(spec, &[]);
    assert!(q.contains("Runs: "), "{q}");
    assert!(!q.contains("hunter2-secret"), "{q}");
    assert!(q.contains("  - params[1]=password=[redacted]"), "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_connection_an_update_shows_what_it_would_set() {
    let (p, spec) = preview_of(
        None,
        "pve_qemu_update_config",
        json!({"node": "pve01", "vmid": 101, "cores": 4, "cipassword": "hunter2-secret"}),
    )
    .await;
    assert_eq!(
        p.notes,
        vec!["no Proxmox connection: current values not read".to_owned()]
    );
    assert_eq!(
        p.changes,
        vec![
            change("cores", Before::NotRead, Some("4")),
            change("cipassword", Before::NotRead, Some("[redacted]")),
        ]
    );
    assert_eq!(p.target, None);
    assert_eq!(
        p.request["params"],
        json!([["cores", "4"], ["cipassword", "[redacted]"]])
    );
    let q = p.question(spec, &[]);
    assert!(q.contains("  - cores: (current value not read) → 4"), "{q}");
    let answer = p.dry_run(spec, Some(&[]), "url");
    assert_eq!(answer["current"], json!({}));
    assert_eq!(answer["decision"]["approval"], "url");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_whose_path_answers_a_list_is_not_matched_to_keys() {
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, _) = preview_of(
        Some(&client),
        "pve_apply_network_changes",
        json!({"node": "pve01", "regenerate-frr": true}),
    )
    .await;
    assert!(p.update);
    assert_eq!(
        p.notes,
        vec!["/nodes/pve01/network answers a list; current values not matched to keys".to_owned()]
    );
    assert_eq!(
        p.changes,
        vec![change("regenerate-frr", Before::NotRead, Some("1"))]
    );
    assert_eq!((p.target, p.digest), (None, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_never_reads_what_the_call_is_not_cleared_to_read() {
    // A storage's config is a sensitive read: outside an approved call the preview's own GET is
    // refused before it is sent, and the question says the values were not read.
    let emu = common::emulator().await;
    let client = pve_client(&emu);
    let (p, spec) = preview_of(
        Some(&client),
        "pve_update_storage",
        json!({"storage": "local", "content": "iso,backup"}),
    )
    .await;
    assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
    assert!(
        p.notes[0].starts_with(
            "current values of /storage/local not read: refused before sending: GET \
             /storage/local reads data Proxmox guards beyond an auditor's view (sensitive-read)"
        ),
        "{:?}",
        p.notes
    );
    assert_eq!(
        p.changes,
        vec![change("content", Before::NotRead, Some("iso,backup"))]
    );
    let q = p.question(spec, &[]);
    assert!(
        q.contains("  - content: (current value not read) → iso,backup"),
        "{q}"
    );
    let sent = emu.requests();
    assert!(sent.iter().all(|r| r.method == "GET"));
    assert!(sent.iter().all(|r| r.path != "/storage/local"), "{sent:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_cluster_list_a_guest_is_named_by_its_own_config() {
    let emu = common::emulator().await;
    // `/cluster/resources` refused: the name can only come from the guest's config.
    emu.arm_fault(Fault::new(FaultKind::Status(403), 100).on_prefix("/cluster/resources"));
    let client = pve_client(&emu);
    let calls = [
        // A config update reads the config it changes: a VM's `name` ...
        (
            "pve_qemu_update_config",
            json!({"node": "pve01", "vmid": 101, "cores": 4}),
            "vm-web",
        ),
        // ... a container's `hostname` ...
        (
            "pve_lxc_update_config",
            json!({"node": "pve01", "vmid": 201, "cores": 4}),
            "ct-docker",
        ),
        // ... and a call that is no update reads it for the name alone.
        (
            "pve_stop_qemu_vm",
            json!({"node": "pve01", "vmid": 101}),
            "vm-web",
        ),
        (
            "pve_stop_lxc_container",
            json!({"node": "pve01", "vmid": 201}),
            "ct-docker",
        ),
    ];
    for (tool, args, expected) in calls {
        let (p, spec) = preview_of(Some(&client), tool, args).await;
        let name = p.target.as_ref().and_then(|t| t.name.as_deref());
        assert_eq!(name, Some(expected), "{tool}: {p:?}");
        assert!(
            p.notes.iter().any(|n| n.contains("/cluster/resources")),
            "{tool}: {:?}",
            p.notes
        );
        let q = p.question(spec, &[]);
        assert!(
            q.contains(&format!("\"{expected}\" on node pve01")),
            "{tool}: {q}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_is_asked_about_as_something_new() {
    // Named `_create` though its title says "Snapshot VM": still something new, named by id.
    let (p, spec) = preview_of(
        None,
        "pve_qemu_create_snapshot",
        json!({"node": "pve01", "vmid": 101, "snapname": "before-upgrade"}),
    )
    .await;
    let q = p.question(spec, &[]);
    assert!(
        q.contains("  - this call creates something new (\"Snapshot VM\"): "),
        "{q}"
    );
    assert!(q.contains("snapname=before-upgrade"), "{q}");
    assert!(!q.contains("may remove or interrupt"), "{q}");
}
