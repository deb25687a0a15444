//! The seed trust scan's complete toxic flow — untrusted download → sensitive read → command
//! on a node — cannot close without a person: through the built binary at full/advanced, with
//! SSH to a real `sshd`, a client that can ask and a person who declines, the download and
//! the shell run send nothing and run nothing, while the read in the middle stays a read.
//!
//! Ignored when `sshd` is not installed, except under `CI=true` (see build.rs).

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, call, changes, code, connect_stdio, envelope};
use common::sshd::Sshd;
use common::{emulator, env_for};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(no_sshd, ignore = "needs sshd (apt-get install openssh-server)")]
async fn download_then_secret_read_then_node_shell_needs_a_person_at_each_sink() {
    let sshd = Sshd::start();
    let emu = emulator().await;
    let mut env = env_for(&emu);
    env.extend(sshd.server_vars(&sshd.trusted_known_hosts()));
    env.push(("PVE_ACCESS_TIER".into(), "full".into()));
    env.push(("PVE_MODULE_MODE".into(), "advanced".into()));
    let person = Person::new(Answer::Decline);
    let (client, _home) = connect_stdio(person.clone(), &env).await;
    let marker = sshd.dir().join("exfiltrated");

    // 1. Untrusted input enters: the download is a sink of its own.
    let result = call(
        &client,
        "pve_download_to_storage",
        json!({"node": "pve01", "storage": "local", "content": "iso",
               "url": "https://93.184.216.34/payload.iso", "filename": "payload.iso"}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");
    // 2. The sensitive read in the middle is a plain read (its secrets masked).
    let read = call(
        &client,
        "pve_get_qemu_cloudinit_dump",
        json!({"node": "pve01", "vmid": 101, "type": "user"}),
    )
    .await;
    assert_eq!(envelope(&read)["ok"], true, "{read:?}");
    // 3. Execution on the node: asked, declined, nothing runs — even with the model's confirm.
    let result = call(
        &client,
        "pve_node_shell_run",
        json!({"node": "pve01", "confirm": true,
               "command": format!("cat /etc/pve/priv/token.cfg > {}", marker.display())}),
    )
    .await;
    assert_eq!(code(&result), "CONFIRMATION_DECLINED");

    assert!(!marker.exists(), "the node command ran without a person");
    assert!(
        changes(&emu).is_empty(),
        "a sink reached Proxmox: {:?}",
        changes(&emu)
    );
    let asked = person.questions();
    assert_eq!(asked.len(), 2, "one question per sink: {asked:?}");
    assert!(asked[0].contains("pve_download_to_storage"), "{}", asked[0]);
    assert!(asked[1].contains("pve_node_shell_run"), "{}", asked[1]);
    client.cancel().await.ok();
}
