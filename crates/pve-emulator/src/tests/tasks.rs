//! Power operations and the tasks they create.

use std::time::Duration;

use reqwest::Method;

use super::{Harness, data, enc, message};
use crate::task::Upid;

#[tokio::test]
async fn power_ops_change_status_and_return_upids() {
    let h = Harness::plain().await;
    let (status, body) = h.post("/nodes/pve03/qemu/102/status/start", &[]).await;
    let upid = data(status, &body).as_str().unwrap().to_string();
    let parsed = Upid::parse(&upid).expect("UPID format");
    assert_eq!(parsed.node, "pve03");
    assert_eq!(parsed.kind, "qmstart");
    assert_eq!(parsed.id, "102");
    assert_eq!(parsed.user, "svc_mcp@pve!emu");
    assert!(upid.starts_with("UPID:pve03:") && upid.ends_with(":svc_mcp@pve!emu:"));

    let (status, body) = h.get("/nodes/pve03/qemu/102/status/current").await;
    assert_eq!(data(status, &body)["status"], "running");
    let (status, body) = h.post("/nodes/pve03/qemu/102/status/start", &[]).await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "VM 102 already running\n");

    let (status, body) = h
        .post("/nodes/pve03/qemu/102/status/suspend", &[("todisk", "0")])
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h.get("/nodes/pve03/qemu/102/status/current").await;
    let cur = data(status, &body);
    assert_eq!(cur["status"], "running");
    assert_eq!(cur["qmpstatus"], "paused");
    let (status, _) = h.post("/nodes/pve03/qemu/102/status/resume", &[]).await;
    assert_eq!(status, 200);

    let (status, body) = h
        .post(
            "/nodes/pve03/qemu/102/status/shutdown",
            &[("forceStop", "1"), ("timeout", "60")],
        )
        .await;
    assert!(
        data(status, &body)
            .as_str()
            .unwrap()
            .contains(":qmshutdown:102:")
    );
    let (status, body) = h.get("/nodes/pve03/qemu/102/status/current").await;
    assert_eq!(data(status, &body)["status"], "stopped");
    let (status, body) = h.post("/nodes/pve03/qemu/102/status/reboot", &[]).await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "VM 102 not running\n");

    let (status, body) = h.post("/nodes/pve01/qemu/9000/status/start", &[]).await;
    assert_eq!(status, 500);
    assert!(message(&body).contains("template"));

    let (status, body) = h.post("/nodes/pve01/lxc/201/status/stop", &[]).await;
    assert!(
        data(status, &body)
            .as_str()
            .unwrap()
            .contains(":vzstop:201:")
    );
    let (status, body) = h.post("/nodes/pve01/lxc/201/status/stop", &[]).await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "CT 201 not running\n");
    let (status, body) = h
        .post("/nodes/pve01/lxc/201/status/start", &[("debug", "1")])
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = h.post("/nodes/pve01/lxc/201/status/start", &[]).await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "CT 201 already running\n");
}

#[tokio::test]
async fn task_runs_then_stops_with_ok() {
    let h = Harness::plain().await;
    let (status, body) = h.post("/nodes/pve01/qemu/101/status/reboot", &[]).await;
    let upid = data(status, &body).as_str().unwrap().to_string();
    let status_path = format!("/nodes/pve01/tasks/{}/status", enc(&upid));
    assert!(status_path.contains("UPID%3Apve01%3A"));

    let (status, body) = h.get(&status_path).await;
    let st = data(status, &body);
    assert_eq!(st["status"], "running");
    assert!(st.get("exitstatus").is_none());
    assert_eq!(st["upid"], upid.as_str());
    assert_eq!(st["type"], "qmreboot");
    assert_eq!(st["user"], "svc_mcp@pve");
    assert_eq!(st["tokenid"], "emu");

    let (status, body) = h
        .get(&format!("/nodes/pve01/tasks/{}/log", enc(&upid)))
        .await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 3);

    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, body) = h.get(&status_path).await;
    let st = data(status, &body);
    assert_eq!(st["status"], "stopped");
    assert_eq!(st["exitstatus"], "OK");

    let log_path = format!("/nodes/pve01/tasks/{}/log", enc(&upid));
    let (status, body) = h.get(&log_path).await;
    let lines = data(status, &body).as_array().unwrap();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["n"], 1);
    assert_eq!(lines[3]["t"], "TASK OK");
    assert_eq!(body["total"], 4);
    let (status, body) = h.get_q(&log_path, &[("start", "1"), ("limit", "2")]).await;
    let lines = data(status, &body).as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["n"], 2);
    let resp = h
        .client
        .get(format!("{}?download=1", h.url(&log_path)))
        .header("Authorization", h.emu.token_header())
        .send()
        .await
        .unwrap();
    assert!(resp.text().await.unwrap().ends_with("TASK OK\n"));
}

#[tokio::test]
async fn task_list_stop_and_lookup_errors() {
    let h = Harness::plain().await;
    let (_, body) = h.post("/nodes/pve01/qemu/101/status/reset", &[]).await;
    let first = body["data"].as_str().unwrap().to_string();
    let (_, body) = h.post("/nodes/pve01/lxc/201/status/suspend", &[]).await;
    let second = body["data"].as_str().unwrap().to_string();

    let (status, body) = h.get("/nodes/pve01/tasks").await;
    let list = data(status, &body).as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["upid"], second.as_str(), "newest first");
    assert!(
        list[0].get("status").is_none(),
        "running task has no status"
    );
    let (status, body) = h.get_q("/nodes/pve01/tasks", &[("vmid", "101")]).await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 1);
    let (status, body) = h
        .get_q("/nodes/pve01/tasks", &[("typefilter", "vzsuspend")])
        .await;
    assert_eq!(data(status, &body)[0]["upid"], second.as_str());
    let (status, body) = h.get("/nodes/pve02/tasks").await;
    assert!(data(status, &body).as_array().unwrap().is_empty());

    let (status, body) = h
        .call(
            Method::DELETE,
            &format!("/nodes/pve01/tasks/{}", enc(&first)),
            &[],
        )
        .await;
    assert!(data(status, &body).is_null());
    let (status, body) = h
        .get(&format!("/nodes/pve01/tasks/{}/status", enc(&first)))
        .await;
    let st = data(status, &body);
    assert_eq!(st["status"], "stopped");
    assert_eq!(st["exitstatus"], "interrupted by signal");
    let (status, body) = h.get_q("/nodes/pve01/tasks", &[("errors", "1")]).await;
    assert_eq!(data(status, &body).as_array().unwrap().len(), 1);

    // The task ran on pve01; asking pve02 about it finds nothing.
    let (status, body) = h
        .get(&format!("/nodes/pve02/tasks/{}/status", enc(&first)))
        .await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "no such task\n");
    let (status, body) = h.get("/nodes/pve01/tasks/not-a-upid/status").await;
    assert_eq!(status, 400);
    assert_eq!(
        body["errors"]["upid"],
        "unable to parse worker upid 'not-a-upid'"
    );
    let unknown = "UPID:pve01:0000ABCD:0001E240:674F1C2A:qmstart:101:svc_mcp@pve!emu:";
    let (status, body) = h
        .get(&format!("/nodes/pve01/tasks/{}/status", enc(unknown)))
        .await;
    assert_eq!(status, 500);
    assert_eq!(message(&body), "no such task\n");
}
