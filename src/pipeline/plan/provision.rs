//! The built-in plan `pve_provision_qemu_guest`: a template becomes a reachable guest — clone,
//! grow the disk, set CPU, memory, cloud-init and tags, start — then the guest agent is waited
//! for and its addresses are reported.
//!
//! Invariant: the steps carry only what the caller gave (and the VMID Proxmox proposes when
//! none was given); every value is validated again by the step's own row before anything is
//! sent, so this file decides the order of the steps, never what a step may do.

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::run::{Done, answer_of, call_step};
use super::{AsStep, PLAN_APPROVAL, Step};
use crate::approval::Approver;
use crate::clusters::Clusters;
use crate::effects::EffectSet;
use crate::envelope::{ToolFailure, not_configured};
use crate::pve::{self, ApiRequest};
use crate::schema::{ArgValue, ValidArgs};

/// Config keys the configuration step sets when given.
const CONFIG_KEYS: &[&str] = &["cores", "memory", "ciuser", "sshkeys", "ipconfig0", "tags"];
/// The disk `grow` grows (the first SCSI disk, as cloud-init templates have it).
const GROWN_DISK: &str = "scsi0";
/// How long the guest agent is waited for after the start.
const AGENT_WAIT: Duration = Duration::from_secs(120);
/// How often the guest agent is asked while it does not answer yet.
const AGENT_POLL: Duration = Duration::from_secs(2);
/// What Proxmox answers for an agent call to a guest whose config does not enable the agent.
const NO_AGENT: &str = "No QEMU guest agent configured";

/// The new guest's VMID: the caller's `newid`, else Proxmox's next free one (a read).
pub(super) async fn new_id(
    client: Option<&pve::Client>,
    args: &ValidArgs,
    cancel: &CancellationToken,
) -> Result<Value, ToolFailure> {
    match value(args, "newid") {
        Some(id) => Ok(id),
        None => next_free_id(client, cancel).await,
    }
}

/// A VMID to check the steps' arguments with before the real one is known (no request is
/// made for arguments that are refused anyway).
pub(super) fn provisional_id(args: &ValidArgs) -> Value {
    value(args, "newid").unwrap_or_else(|| Value::from(100))
}

/// The steps for these arguments and the new guest's VMID, in order.
pub(super) fn steps(args: &ValidArgs, newid: Value) -> Vec<Step> {
    let node = args.str("node").unwrap_or_default().to_owned();
    let template = value(args, "vmid").unwrap_or(Value::Null);
    let target = |extra: &[(&str, Value)]| {
        let mut map = Map::new();
        map.insert("node".into(), node.clone().into());
        map.insert("vmid".into(), newid.clone());
        for (k, v) in extra {
            map.insert((*k).into(), v.clone());
        }
        map
    };
    let mut clone = Map::new();
    clone.insert("node".into(), node.clone().into());
    clone.insert("vmid".into(), template);
    clone.insert("newid".into(), newid.clone());
    for key in ["name", "full"] {
        if let Some(v) = value(args, key) {
            clone.insert(key.into(), v);
        }
    }
    let mut steps = vec![Step {
        tool: "pve_qemu_clone",
        arguments: clone,
    }];
    if let Some(grow) = value(args, "grow") {
        let disk = Value::from(GROWN_DISK);
        steps.push(Step {
            tool: "pve_qemu_resize_disk",
            arguments: target(&[("disk", disk), ("size", grow)]),
        });
    }
    let config: Vec<(&str, Value)> = CONFIG_KEYS
        .iter()
        .filter_map(|k| value(args, k).map(|v| (*k, v)))
        .collect();
    if !config.is_empty() {
        steps.push(Step {
            tool: "pve_qemu_update_config",
            arguments: target(&config),
        });
    }
    if starts() {
        steps.push(Step {
            tool: "pve_start_qemu_vm",
            arguments: target(&[]),
        });
    }
    steps
}

/// Whether the guest is started (and its agent waited for): always, for now — a provision
/// ends in a reachable guest or a rollback.
const fn starts() -> bool {
    true
}

/// An argument as JSON, as a step's call carries it.
fn value(args: &ValidArgs, name: &str) -> Option<Value> {
    Some(match args.values.get(name)? {
        ArgValue::Str(s) => Value::String(s.clone()),
        ArgValue::Int(i) => json!(i),
        ArgValue::Num(n) => json!(n),
        ArgValue::Bool(b) => Value::Bool(*b),
        ArgValue::List(items) => json!(items),
        ArgValue::Objects(items) => json!(items),
    })
}

/// Proxmox's next free VMID (`GET /cluster/nextid`, a read).
async fn next_free_id(
    client: Option<&pve::Client>,
    cancel: &CancellationToken,
) -> Result<Value, ToolFailure> {
    let client = client.ok_or_else(not_configured)?;
    let answer = client
        .call(ApiRequest::get("/cluster/nextid"), cancel)
        .await
        .result
        .map_err(crate::envelope::failure_from)?;
    let id = match &answer {
        Value::String(s) => s.parse::<i64>().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    };
    id.map(Value::from).ok_or_else(|| {
        ToolFailure::new(
            crate::envelope::codes::PLAN_FAILED,
            format!("Proxmox proposed no free VMID ({answer}); pass newid. Nothing was sent."),
        )
    })
}

/// The answer once every step ran: the new guest and, when it was started, the addresses its
/// agent reports. `Err` (why, in words) when the agent never answered: the guest is not
/// reachable, and the plan is rolled back.
pub(super) async fn report(
    clusters: &Clusters,
    approver: &Approver,
    context: &RequestContext<RoleServer>,
    cluster: Option<&'static str>,
    args: &ValidArgs,
    vmid: Option<Value>,
    done: &[Done],
) -> Result<Value, String> {
    let node = args.str("node").unwrap_or_default();
    let steps: Vec<Value> = done
        .iter()
        .enumerate()
        .map(|(i, d)| json!({"step": i + 1, "tool": d.tool, "change": d.undo}))
        .collect();
    let mut out = json!({
        "node": node,
        "vmid": vmid,
        "name": value(args, "name"),
        "steps": steps,
        "revert": super::run::revert_call(done),
    });
    if !starts() {
        return Ok(out);
    }
    let limit = AGENT_WAIT;
    let mut arguments = Map::new();
    arguments.insert("node".into(), node.into());
    arguments.insert("vmid".into(), vmid.clone().unwrap_or(Value::Null));
    let read = AsStep {
        approved_by: PLAN_APPROVAL,
        approved: Some(EffectSet::READ),
    };
    let deadline = Instant::now() + limit;
    loop {
        let tool = "pve_get_qemu_agent_network";
        let ran = call_step(clusters, approver, context, tool, &arguments, cluster, read).await;
        let last = match answer_of(&ran) {
            Ok(answer) => {
                out["addresses"] = Value::Array(addresses(&answer));
                return Ok(out);
            }
            Err(why) => why,
        };
        // Proxmox's words for a guest whose config has no agent: waiting cannot help.
        if last.contains(NO_AGENT) {
            return Err(format!(
                "the guest has no QEMU guest agent enabled (agent=1 in its config), so it cannot report an address ({last})"
            ));
        }
        if Instant::now() + AGENT_POLL > deadline {
            return Err(format!(
                "the guest agent did not answer within {} s (last: {last})",
                limit.as_secs()
            ));
        }
        tokio::select! {
            () = context.ct.cancelled() => return Err("the call was cancelled".to_owned()),
            () = tokio::time::sleep(AGENT_POLL) => {}
        }
    }
}

/// The guest's addresses from the agent's interfaces, loopback left out.
fn addresses(answer: &Value) -> Vec<Value> {
    let interfaces = answer
        .pointer("/data/result")
        .or_else(|| answer.get("result"))
        .and_then(Value::as_array);
    let mut out = Vec::new();
    for interface in interfaces.into_iter().flatten() {
        let name = interface["name"].as_str().unwrap_or("");
        if name == "lo" {
            continue;
        }
        for address in interface["ip-addresses"].as_array().into_iter().flatten() {
            let Some(ip) = address["ip-address"].as_str() else {
                continue;
            };
            if ip.starts_with("127.") || ip == "::1" || ip.starts_with("fe80:") {
                continue;
            }
            out.push(json!({"interface": name, "address": ip, "prefix": address["prefix"]}));
        }
    }
    out
}
