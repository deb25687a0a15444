//! Access control and firewall over the wire: effective permissions, refused changes
//! that leave the state untouched, object errors in Proxmox's words, and guest rulesets
//! reachable only through the guest's own kind.

use reqwest::Method;
use serde_json::{Value, json};

use super::{Harness, data, enc, message};

async fn acl_rows(h: &Harness) -> Value {
    let (status, body) = h.get("/access/acl").await;
    data(status, &body).clone()
}

#[tokio::test]
async fn permissions_map_paths_to_privileges() {
    let h = Harness::plain().await;
    // Default: the emulator's own token (privsep 0, so its user's ACLs apply).
    let (status, body) = h.get("/access/permissions").await;
    let perms = data(status, &body);
    assert_eq!(perms["/"]["Sys.Audit"], 1, "{perms}");
    assert!(perms["/"].get("VM.PowerMgmt").is_none());
    assert_eq!(perms["/vms"]["VM.PowerMgmt"], 1);
    // One path: what propagates from its parents.
    let (status, body) = h
        .get_q("/access/permissions", &[("path", "/vms/101")])
        .await;
    let perms = data(status, &body);
    assert_eq!(perms["/vms/101"]["VM.PowerMgmt"], 1);
    assert_eq!(perms["/vms/101"]["VM.Audit"], 1);
    assert!(perms["/vms/101"].get("Sys.Modify").is_none());
    // Group membership counts; root has everything.
    let (status, body) = h
        .get_q(
            "/access/permissions",
            &[("userid", "alice@pve"), ("path", "/")],
        )
        .await;
    assert_eq!(data(status, &body)["/"]["VM.Allocate"], 1);
    let (status, body) = h
        .get_q(
            "/access/permissions",
            &[("userid", "root@pam"), ("path", "/")],
        )
        .await;
    assert_eq!(data(status, &body)["/"]["Permissions.Modify"], 1);
    let (status, body) = h
        .get_q("/access/permissions", &[("userid", "nobody@pve")])
        .await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("no such user"));
    let (status, _) = h.get_q("/access/permissions", &[("node", "x")]).await;
    assert_eq!(status, 400);

    // A privilege-separated token has only what is granted to it, within its user's rights.
    let (status, body) = h
        .post(
            &format!("/access/users/{}/token/sep", enc("alice@pve")),
            &[],
        )
        .await;
    data(status, &body);
    let token_at_root = [("userid", "alice@pve!sep"), ("path", "/")];
    let (status, body) = h.get_q("/access/permissions", &token_at_root).await;
    assert_eq!(data(status, &body)["/"], json!({}));
    let (status, body) = h
        .call(
            Method::PUT,
            "/access/acl",
            &[
                ("path", "/"),
                ("roles", "Administrator"),
                ("tokens", "alice@pve!sep"),
            ],
        )
        .await;
    data(status, &body);
    let (status, body) = h.get_q("/access/permissions", &token_at_root).await;
    let perms = data(status, &body);
    assert_eq!(perms["/"]["VM.Allocate"], 1, "{perms}");
    assert!(perms["/"].get("Permissions.Modify").is_none(), "{perms}");
}

#[tokio::test]
async fn refused_changes_leave_the_state_untouched() {
    let h = Harness::plain().await;
    let (_, before) = h.get("/cluster/firewall/rules").await;
    for form in [
        vec![("type", "in"), ("action", "ALLOW")],
        vec![("type", "in"), ("action", "ACCEPT"), ("dport", "22")],
        vec![("type", "group"), ("action", "nosuchgroup")],
        vec![("type", "in"), ("action", "ACCEPT"), ("digest", "00ff")],
    ] {
        let (status, body) = h.post("/cluster/firewall/rules", &form).await;
        assert!(status == 400 || status == 500, "{form:?}: {body}");
    }
    let (status, body) = h
        .call(
            Method::PUT,
            "/cluster/firewall/rules/7",
            &[("action", "DROP")],
        )
        .await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("no rule at position 7"));
    let (_, after) = h.get("/cluster/firewall/rules").await;
    assert_eq!(before, after);

    let acls = acl_rows(&h).await;
    for form in [
        vec![
            ("path", "/"),
            ("roles", "NoSuchRole"),
            ("users", "alice@pve"),
        ],
        vec![
            ("path", "/"),
            ("roles", "PVEAuditor"),
            ("users", "ghost@pve"),
        ],
        vec![
            ("path", "vms"),
            ("roles", "PVEAuditor"),
            ("users", "alice@pve"),
        ],
    ] {
        let (status, body) = h.call(Method::PUT, "/access/acl", &form).await;
        assert_eq!(status, 500, "{form:?}: {body}");
    }
    assert_eq!(acl_rows(&h).await, acls);

    let (status, body) = h
        .call(
            Method::PUT,
            "/cluster/firewall/options",
            &[("log_ratelimit", "rate=fast"), ("enable", "1")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = h.get("/cluster/firewall/options").await;
    assert_eq!(data(status, &body)["enable"], 0);
}

#[tokio::test]
async fn users_and_tokens_fail_like_proxmox() {
    let h = Harness::plain().await;
    let alice = enc("alice@pve");
    let (status, body) = h
        .post("/access/users", &[("userid", "x@nosuchrealm")])
        .await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("domain 'nosuchrealm' does not exist"));
    let (status, body) = h
        .post(
            "/access/users",
            &[("userid", "y@pve"), ("groups", "ghosts")],
        )
        .await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("no such group"));
    let (status, body) = h
        .post(&format!("/access/users/{}/token/t1", enc("ghost@pve")), &[])
        .await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("no such user"));

    let path = format!("/access/users/{alice}/token/deploy");
    let (status, body) = h.post(&path, &[("expire", "0")]).await;
    let created = data(status, &body);
    assert_eq!(created["full-tokenid"], "alice@pve!deploy");
    assert_eq!(created["info"]["privsep"], 1);
    let (status, body) = h.post(&path, &[]).await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "Token already exists.\n");
    // A token grant, then deleting the user removes its tokens and every ACL naming them.
    let (status, body) = h
        .call(
            Method::PUT,
            "/access/acl",
            &[
                ("path", "/vms/"),
                ("roles", "PVEAuditor"),
                ("tokens", "alice@pve!deploy"),
            ],
        )
        .await;
    data(status, &body);
    let acls = acl_rows(&h).await;
    assert!(
        acls.as_array()
            .unwrap()
            .contains(&json!({"path": "/vms", "type": "token",
            "ugid": "alice@pve!deploy", "roleid": "PVEAuditor", "propagate": 1})),
        "{acls}"
    );
    let (status, body) = h
        .call(Method::DELETE, &format!("/access/users/{alice}"), &[])
        .await;
    data(status, &body);
    let acls = acl_rows(&h).await;
    assert!(!acls.to_string().contains("alice@pve"), "{acls}");
    let (status, body) = h.call(Method::DELETE, &path, &[]).await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("no such user"));
}

#[tokio::test]
async fn guest_rulesets_belong_to_their_kind() {
    let h = Harness::plain().await;
    let rule = [("type", "in"), ("action", "ACCEPT"), ("macro", "Ping")];
    let (status, body) = h.post("/nodes/pve01/qemu/201/firewall/rules", &rule).await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("qemu-server/201.conf"), "{body}");
    let (status, body) = h.post("/nodes/pve01/lxc/201/firewall/rules", &rule).await;
    data(status, &body);
    let (status, body) = h.get("/nodes/pve01/lxc/201/firewall/rules").await;
    let rows = data(status, &body);
    assert_eq!(rows[0]["macro"], "Ping");
    assert_eq!(rows[0]["pos"], 0);
    // The VM's own seeded ruleset is separate.
    let (status, body) = h.get("/nodes/pve01/qemu/101/firewall/rules").await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 1);
    let (status, _) = h
        .call(Method::DELETE, "/nodes/pve01/lxc/201/firewall/rules/x", &[])
        .await;
    assert_eq!(status, 400);
}
