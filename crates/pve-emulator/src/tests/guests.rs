//! Guest lifecycle routes over HTTP: the refusals Proxmox gives (running guests,
//! templates, stale digests, unknown keys, disabled agent), snapshot trees, the
//! asynchronous config POST and storage content filters.

use reqwest::Method;

use super::{Harness, data, message};

/// method, path, parameters, expected status, text the message contains.
type Case = (
    Method,
    &'static str,
    &'static [(&'static str, &'static str)],
    u16,
    &'static str,
);

#[tokio::test]
async fn guest_refusals_are_proxmoxs() {
    let h = Harness::plain().await;
    let cases: &[Case] = &[
        (
            Method::POST,
            "/nodes/pve01/qemu",
            &[("vmid", "101")],
            500,
            "already exists on node 'pve01'",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu",
            &[("vmid", "150"), ("net32", "virtio")],
            400,
            "Parameter verification failed",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu",
            &[("vmid", "150"), ("scsi0", "nosuch:8")],
            500,
            "storage 'nosuch' does not exist",
        ),
        (
            Method::DELETE,
            "/nodes/pve01/qemu/101",
            &[],
            500,
            "VM 101 is running - destroy failed",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/101/migrate",
            &[("target", "pve02")],
            500,
            "without --online",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/101/migrate",
            &[("target", "pve01"), ("online", "1")],
            500,
            "target is local node",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/101/migrate",
            &[("target", "nope"), ("online", "1")],
            400,
            "Parameter verification failed",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/101/template",
            &[],
            500,
            "if VM is running",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/9000/template",
            &[],
            500,
            "template to a template",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/9000/snapshot",
            &[("snapname", "s1")],
            500,
            "if it's a template",
        ),
        (
            Method::POST,
            "/nodes/pve01/qemu/9000/clone",
            &[("newid", "300"), ("target", "pve02")],
            500,
            "linked clone",
        ),
        (
            Method::PUT,
            "/nodes/pve01/qemu/101/config",
            &[("cores", "2"), ("digest", "0000")],
            500,
            "detected modified configuration - file changed by other user? Try again.",
        ),
        (
            Method::PUT,
            "/nodes/pve01/qemu/101/config",
            &[("sshkeys", "ssh-ed25519 AAAA")],
            400,
            "Parameter verification failed",
        ),
        (
            Method::PUT,
            "/nodes/pve01/qemu/101/config",
            &[("cores", "2"), ("delete", "cores")],
            400,
            "Parameter verification failed",
        ),
        (
            Method::PUT,
            "/nodes/pve01/qemu/101/resize",
            &[("disk", "scsi0"), ("size", "16G")],
            500,
            "shrinking disks is not supported",
        ),
        (
            Method::PUT,
            "/nodes/pve01/qemu/101/resize",
            &[("disk", "scsi5"), ("size", "+1G")],
            500,
            "disk 'scsi5' does not exist",
        ),
        (
            Method::DELETE,
            "/nodes/pve01/qemu/101/snapshot/none",
            &[],
            500,
            "snapshot 'none' does not exist",
        ),
        (
            Method::GET,
            "/nodes/pve03/qemu/102/agent/info",
            &[],
            500,
            "VM 102 is not running",
        ),
        (
            Method::POST,
            "/nodes/pve01/lxc/201/migrate",
            &[("target", "pve02")],
            500,
            "without --online or --restart",
        ),
        (
            Method::POST,
            "/nodes/pve01/lxc/201/migrate",
            &[("target", "pve02"), ("online", "1")],
            500,
            "not implemented",
        ),
        (
            Method::POST,
            "/nodes/pve01/lxc",
            &[("vmid", "300"), ("ostemplate", "local:vztmpl/none.tar.zst")],
            500,
            "does not exist",
        ),
        (
            Method::POST,
            "/nodes/pve01/lxc",
            &[
                ("vmid", "300"),
                (
                    "ostemplate",
                    "local:backup/vzdump-qemu-101-2025_11_23-01_00_03.vma.zst",
                ),
                ("restore", "1"),
            ],
            500,
            "is not a lxc backup",
        ),
        (
            Method::GET,
            "/nodes/pve01/storage/nosuch/content",
            &[],
            500,
            "storage 'nosuch' does not exist",
        ),
        (
            Method::GET,
            "/nodes/pve01/storage/local/content",
            &[("content", "isos")],
            400,
            "Parameter verification failed",
        ),
        (
            Method::GET,
            "/nodes/pve01/qemu/101/cloudinit/dump",
            &[],
            400,
            "Parameter verification failed",
        ),
    ];
    for (method, path, params, status, needle) in cases {
        let (got, body) = h.call(method.clone(), path, params).await;
        assert_eq!(got, *status, "{method} {path} {params:?}: {body}");
        assert!(message(&body).contains(needle), "{method} {path}: {body}");
    }
    // None of the refusals changed anything.
    let (_, body) = h.get("/nodes/pve01/qemu/101/config").await;
    assert_eq!(data(200, &body)["cores"], 2);
    assert!(data(200, &body).get("sshkeys").is_none());
}

#[tokio::test]
async fn snapshot_tree_and_async_config() {
    let h = Harness::plain().await;
    for name in ["a", "b"] {
        let (status, body) = h
            .post("/nodes/pve01/lxc/201/snapshot", &[("snapname", name)])
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let (_, body) = h.get("/nodes/pve01/lxc/201/snapshot").await;
    let list = data(200, &body).as_array().unwrap().clone();
    assert_eq!(list[1]["parent"], "a");
    assert_eq!(list[2]["name"], "current");
    assert_eq!(list[2]["parent"], "b");
    // Deleting the middle snapshot re-links its child.
    let (status, _) = h
        .call(Method::DELETE, "/nodes/pve01/lxc/201/snapshot/a", &[])
        .await;
    assert_eq!(status, 200);
    let (_, body) = h.get("/nodes/pve01/lxc/201/snapshot").await;
    let list = data(200, &body).as_array().unwrap().clone();
    assert_eq!(list.len(), 2);
    assert!(list[0].get("parent").is_none());
    let (_, body) = h
        .get_q("/nodes/pve01/lxc/201/config", &[("snapshot", "b")])
        .await;
    assert_eq!(data(200, &body)["hostname"], "ct-docker");

    let (status, body) = h
        .post("/nodes/pve01/qemu/101/config", &[("cores", "6")])
        .await;
    assert_eq!(status, 200);
    assert!(
        data(200, &body)
            .as_str()
            .unwrap()
            .starts_with("UPID:pve01:")
    );
    let (_, body) = h.get("/nodes/pve01/qemu/101/config").await;
    assert_eq!(data(200, &body)["cores"], 6);

    let (_, body) = h
        .get_q("/nodes/pve01/storage/local-lvm/content", &[("vmid", "101")])
        .await;
    let volumes = data(200, &body).as_array().unwrap().clone();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0]["volid"], "local-lvm:vm-101-disk-0");
    let (_, body) = h
        .get_q(
            "/nodes/pve01/storage/local/content",
            &[("content", "backup")],
        )
        .await;
    assert_eq!(data(200, &body).as_array().unwrap().len(), 2);
}
