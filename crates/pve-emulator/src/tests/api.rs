//! API behaviour: auth, envelope, 501, parameter checking, objects that do
//! not exist, seed contents and filters, and request recording.

use serde_json::json;

use super::{Harness, data, message};
use crate::EmulatorOptions;

#[tokio::test]
async fn token_auth_and_envelope() {
    let h = Harness::plain().await;
    assert_eq!(
        h.emu.token_header(),
        "PVEAPIToken=svc_mcp@pve!emu=emulator-secret-token"
    );
    assert!(h.emu.base_url().starts_with("http://127.0.0.1:"));
    assert_eq!(h.emu.host(), "127.0.0.1");
    assert!(h.emu.cert_fingerprint().is_none() && h.emu.cert_pem().is_none());

    let resp = h
        .get_with_auth("/version", Some(&h.emu.token_header()))
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/json;charset=UTF-8"
    );
    let body: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
    assert_eq!(body["data"]["version"], "9.1.2");
    assert_eq!(body["data"]["release"], "9.1");
    assert!(body["data"]["repoid"].is_string());

    for auth in [
        None,
        Some("PVEAPIToken=svc_mcp@pve!emu=wrong"),
        Some("PVEAPIToken=svc_mcp@pve!emu:emulator-secret-token"),
        Some("PVEAPIToken svc_mcp@pve!emu=emulator-secret-token"),
    ] {
        let resp = h.get_with_auth("/version", auth).await;
        assert_eq!(resp.status().as_u16(), 401, "{auth:?}");
        let reason = resp.extensions().get::<hyper::ext::ReasonPhrase>().cloned();
        assert_eq!(reason.unwrap().as_bytes(), b"authentication failure");
        let body: serde_json::Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body, serde_json::json!({"data": null}));
    }
    let recorded = h.emu.requests();
    assert_eq!(recorded.len(), 5);
    assert!(recorded[0].authorized);
    assert!(recorded[1..].iter().all(|r| !r.authorized));
}

#[tokio::test]
async fn unknown_routes_are_501_and_outside_api_is_404() {
    let h = Harness::plain().await;
    let (status, body) = h.get("/nodes/pve01/bogus").await;
    assert_eq!(status, 501);
    assert_eq!(
        message(&body),
        "Method 'GET /nodes/pve01/bogus' not implemented\n"
    );
    // A known path with the wrong method is just as unimplemented.
    let (status, body) = h.post("/version", &[]).await;
    assert_eq!(status, 501);
    assert_eq!(message(&body), "Method 'POST /version' not implemented\n");

    let resp = h
        .client
        .get(format!("{}/", h.emu.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(
        h.emu.requests().len(),
        2,
        "non-API requests are not recorded"
    );
}

#[tokio::test]
async fn undeclared_and_mistyped_parameters_are_refused() {
    let h = Harness::plain().await;
    let (status, body) = h.get_q("/nodes/pve01/qemu", &[("fulll", "1")]).await;
    assert_eq!(status, 400);
    assert_eq!(message(&body), "Parameter verification failed.\n");
    assert_eq!(
        body["errors"]["fulll"],
        "property is not defined in schema and the schema does not allow additional properties"
    );
    let (status, body) = h.get_q("/nodes/pve01/qemu", &[("full", "1")]).await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 2);

    let (status, body) = h
        .post("/nodes/pve01/qemu/101/status/stop", &[("timeout", "soon")])
        .await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["timeout"],
        "type check ('integer') failed - got 'soon'"
    );
    // A parameter of another operation is not accepted either.
    let (status, body) = h
        .post("/nodes/pve01/qemu/101/status/stop", &[("forceStop", "1")])
        .await;
    assert_eq!(status, 400);
    assert!(body["errors"]["forceStop"].is_string());

    let (status, body) = h.get_q("/cluster/resources", &[("type", "qemu")]).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["type"],
        "value 'qemu' does not have a value in the enumeration 'vm, storage, node, sdn'"
    );
    let (status, body) = h.get("/nodes/pve01/qemu/abc/status/current").await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["vmid"],
        "type check ('integer') failed - got 'abc'"
    );
    let (status, body) = h.get("/nodes/pve01/qemu/99/status/current").await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["vmid"],
        "value must have a minimum value of 100"
    );
    // Query parameters count for POST too (pveproxy merges them).
    let resp = h
        .client
        .post(format!(
            "{}?bogus=1",
            h.url("/nodes/pve01/qemu/101/status/reset")
        ))
        .header("Authorization", h.emu.token_header())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
}

#[tokio::test]
async fn missing_objects_fail_like_proxmox() {
    let h = Harness::plain().await;
    let (status, body) = h.get("/nodes/nope/status").await;
    assert_eq!(status, 500);
    assert!(message(&body).starts_with("hostname lookup 'nope' failed"));

    let (status, body) = h.get("/nodes/pve01/qemu/555/status/current").await;
    assert_eq!(status, 500);
    assert_eq!(
        message(&body),
        "Configuration file 'nodes/pve01/qemu-server/555.conf' does not exist\n"
    );
    // 102 exists, but on pve03.
    let (status, body) = h.get("/nodes/pve01/qemu/102/config").await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("nodes/pve01/qemu-server/102.conf"));
    // 201 is a container, not a VM.
    let (status, _) = h.get("/nodes/pve01/qemu/201/config").await;
    assert_eq!(status, 500);
    let (status, body) = h.get("/nodes/pve01/lxc/202/status/current").await;
    assert_eq!(status, 500);
    assert_eq!(
        message(&body),
        "Configuration file 'nodes/pve01/lxc/202.conf' does not exist\n"
    );
}

#[tokio::test]
async fn nodes_guests_and_configs() {
    let h = Harness::plain().await;
    let (status, body) = h.get("/nodes").await;
    let nodes = data(status, &body).as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["id"], "node/pve01");
    assert_eq!(nodes[0]["status"], "online");
    assert_eq!(nodes[0]["level"], "");
    assert!(nodes[0]["ssl_fingerprint"].as_str().unwrap().contains(':'));

    let (status, body) = h.get("/nodes/pve02/status").await;
    let st = data(status, &body);
    assert_eq!(st["loadavg"].as_array().unwrap().len(), 3);
    assert!(st["loadavg"][0].is_string());
    assert!(
        st["pveversion"]
            .as_str()
            .unwrap()
            .starts_with("pve-manager/9.1.2/")
    );
    assert!(st["memory"]["total"].as_u64().unwrap() > 0);
    assert!(st["cpuinfo"]["cpus"].is_u64());

    let (status, body) = h.get("/nodes/pve01/qemu").await;
    let vms = data(status, &body).as_array().unwrap();
    let web = vms.iter().find(|v| v["vmid"] == 101).unwrap();
    assert_eq!(web["name"], "vm-web");
    assert_eq!(web["status"], "running");
    assert!(web.get("template").is_none());
    let tmpl = vms.iter().find(|v| v["vmid"] == 9000).unwrap();
    assert_eq!(tmpl["template"], 1);

    let (status, body) = h.get("/nodes/pve02/lxc").await;
    let cts = data(status, &body).as_array().unwrap();
    assert_eq!(cts.len(), 1);
    assert_eq!(cts[0]["vmid"], 202);
    assert_eq!(cts[0]["type"], "lxc");

    let (status, body) = h.get("/nodes/pve01/qemu/101/status/current").await;
    let cur = data(status, &body);
    assert_eq!(cur["qmpstatus"], "running");
    assert_eq!(cur["ha"], json!({"managed": 0}));

    let (status, body) = h
        .get_q("/nodes/pve01/qemu/101/config", &[("current", "1")])
        .await;
    let cfg = data(status, &body);
    assert!(
        cfg["net0"]
            .as_str()
            .unwrap()
            .starts_with("virtio=BC:24:11:")
    );
    assert_eq!(cfg["digest"].as_str().unwrap().len(), 40);
    let (status, body) = h.get("/nodes/pve01/lxc/201/config").await;
    let cfg = data(status, &body);
    assert_eq!(cfg["hostname"], "ct-docker");
    assert_eq!(cfg["unprivileged"], 1);
}

#[tokio::test]
async fn cluster_views_and_filters() {
    let h = Harness::plain().await;
    let (status, body) = h.get("/cluster/status").await;
    let rows = data(status, &body).as_array().unwrap();
    assert_eq!(rows[0]["type"], "cluster");
    assert_eq!(rows[0]["name"], "emu-cluster");
    assert_eq!(rows[0]["quorate"], 1);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[2]["ip"], "127.0.0.2");
    assert_eq!(rows[1]["local"], 1);

    let (status, body) = h.get_q("/cluster/resources", &[("type", "vm")]).await;
    let vms = data(status, &body).as_array().unwrap();
    assert_eq!(vms.len(), 6);
    assert!(
        vms.iter()
            .all(|r| r["type"] == "qemu" || r["type"] == "lxc")
    );
    assert!(vms.iter().any(|r| r["id"] == "lxc/201"));
    let (status, body) = h.get_q("/cluster/resources", &[("type", "storage")]).await;
    let st = data(status, &body).as_array().unwrap();
    assert!(st.iter().any(|r| r["id"] == "storage/pve01/local"));
    assert!(st.iter().all(|r| r["type"] == "storage"));
    let (status, body) = h.get("/cluster/resources").await;
    let all = data(status, &body).as_array().unwrap();
    assert!(all.iter().any(|r| r["type"] == "node") && all.iter().any(|r| r["type"] == "qemu"));

    let (status, body) = h.get("/cluster/nextid").await;
    assert_eq!(data(status, &body), &json!("100"));
    let (status, body) = h.get_q("/cluster/nextid", &[("vmid", "101")]).await;
    assert_eq!(status, 400);
    assert_eq!(body["errors"]["vmid"], "VM 101 already exists");
    let (status, body) = h.get_q("/cluster/nextid", &[("vmid", "150")]).await;
    assert_eq!(data(status, &body), &json!("150"));

    let (status, body) = h.get_q("/storage", &[("type", "lvmthin")]).await;
    let defs = data(status, &body).as_array().unwrap();
    assert_eq!(defs.len(), 1);
    assert_eq!(defs[0]["storage"], "local-lvm");
    let (status, body) = h.get_q("/nodes/pve01/storage", &[("content", "iso")]).await;
    let node_st = data(status, &body).as_array().unwrap();
    assert_eq!(node_st.len(), 1);
    assert_eq!(node_st[0]["active"], 1);

    let (status, body) = h.get_q("/nodes/pve01/network", &[("type", "bridge")]).await;
    let nets = data(status, &body).as_array().unwrap();
    assert_eq!(nets.len(), 1);
    assert_eq!(nets[0]["iface"], "vmbr0");
    let (status, body) = h.get_q("/nodes/pve01/network", &[("type", "bond")]).await;
    let bonds = data(status, &body).as_array().unwrap();
    assert_eq!(bonds.len(), 1);
    assert_eq!(bonds[0]["iface"], "bond0");

    let (status, body) = h.get("/pools").await;
    assert_eq!(data(status, &body)[0]["poolid"], "emu-pool");
    let (status, body) = h.get("/cluster/backup").await;
    assert_eq!(data(status, &body)[0]["id"], "backup-emu-1");
}

#[tokio::test]
async fn standalone_has_one_node() {
    let h = Harness::start(EmulatorOptions {
        tls: false,
        cluster: false,
        ..EmulatorOptions::default()
    })
    .await;
    let (status, body) = h.get("/cluster/status").await;
    let rows = data(status, &body).as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["type"], "node");
    let (status, _) = h.get("/nodes/pve02/lxc").await;
    assert_eq!(status, 500);
    let (status, body) = h.get_q("/cluster/resources", &[("type", "vm")]).await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn requests_are_recorded_decoded() {
    let h = Harness::plain().await;
    let (status, _) = h.get_q("/cluster/resources", &[("type", "vm")]).await;
    assert_eq!(status, 200);
    let (status, _) = h
        .post(
            "/nodes/pve01/lxc/201/status/shutdown",
            &[("timeout", "30"), ("forceStop", "1")],
        )
        .await;
    assert_eq!(status, 200);
    let resp = h
        .client
        .get(format!(
            "{}/api2/json/nodes/pve%30%31/status",
            h.emu.base_url()
        ))
        .header("Authorization", h.emu.token_header())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);

    let recorded = h.emu.requests();
    assert_eq!(recorded.len(), 3);
    assert_eq!(recorded[0].method, "GET");
    assert_eq!(recorded[0].path, "/cluster/resources");
    assert_eq!(
        recorded[0].query,
        vec![("type".to_string(), "vm".to_string())]
    );
    assert_eq!(recorded[1].method, "POST");
    assert!(recorded[1].query.is_empty());
    assert_eq!(
        recorded[1].form,
        vec![
            ("timeout".to_string(), "30".to_string()),
            ("forceStop".to_string(), "1".to_string())
        ]
    );
    assert_eq!(recorded[2].path, "/nodes/pve01/status");
    h.emu.clear_requests();
    assert!(h.emu.requests().is_empty());
}

#[tokio::test]
async fn shutdown_closes_the_port() {
    let h = Harness::plain().await;
    let url = h.url("/version");
    let Harness { emu, client } = h;
    emu.shutdown().await;
    assert!(client.get(url).send().await.is_err());
}

#[tokio::test]
async fn dropping_the_emulator_stops_it() {
    let h = Harness::plain().await;
    let port = h.emu.port();
    drop(h);
    // The accept loop notices the shutdown on its next poll; give it a
    // moment, then the port must refuse connections.
    let mut refused = false;
    for _ in 0..50 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(refused, "port {port} still accepts connections after drop");
}

/// The request log is bounded: a demo serving for days keeps flat memory.
#[tokio::test]
async fn the_request_log_keeps_only_the_newest_requests() {
    let h = Harness::start(EmulatorOptions {
        tls: false,
        ..EmulatorOptions::default()
    })
    .await;
    let total = crate::MAX_RECORDED_REQUESTS + 10;
    for _ in 0..total {
        let (status, _) = h.get("/version").await;
        assert_eq!(status, 200);
    }
    let recorded = h.emu.requests();
    assert!(recorded.len() <= crate::MAX_RECORDED_REQUESTS);
    assert!(recorded.len() > crate::MAX_RECORDED_REQUESTS / 2);
}
