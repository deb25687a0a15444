//! The compact surface (`PVE_TOOL_SURFACE=compact`) end to end: rmcp's client side drives
//! the built binary over stdio against the emulator, using only the three meta-tools —
//! clone template 9000 and start the copy, a gated stop approved by a person (elicitation
//! and the stateless MRTR round trip, whose approval is bound to the inner tool and
//! arguments), dry-run, and tools the policy hides staying unreachable.

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, args, changes, connect_stateless, connect_stdio, envelope};
use common::{emulator, env_for, with_policy};
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    ProtocolVersion,
};
use rmcp::service::RunningService;
use serde_json::{Value, json};

const COMPACT_FULL: &[(&str, &str)] =
    &[("PVE_TOOL_SURFACE", "compact"), ("PVE_ACCESS_TIER", "full")];

fn meta_call(tool: &str, arguments: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("pve_call_tool")
        .with_arguments(args(json!({"name": tool, "arguments": arguments})))
}

async fn run(
    client: &RunningService<RoleClient, Person>,
    name: &'static str,
    arguments: Value,
) -> Value {
    let result = client
        .call_tool(CallToolRequestParams::new(name).with_arguments(args(arguments)))
        .await
        .expect("answered");
    envelope(&result)
}

async fn call(client: &RunningService<RoleClient, Person>, tool: &str, arguments: Value) -> Value {
    let result = client
        .call_tool(meta_call(tool, arguments))
        .await
        .expect("answered");
    envelope(&result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_clone_and_start_through_the_meta_tools_only() {
    let emu = emulator().await;
    let person = Person::new(Answer::Accept);
    let env = with_policy(env_for(&emu), COMPACT_FULL);
    let (client, _home) = connect_stdio(person.clone(), &env).await;

    let listed: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert_eq!(
        listed,
        ["pve_find_tools", "pve_describe_tool", "pve_call_tool"]
    );
    let info = client.peer_info().expect("initialize answer");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("pve_call_tool"), "{instructions}");

    let found = run(&client, "pve_find_tools", json!({"query": "clone vm"})).await;
    assert_eq!(
        found["data"]["tools"][0]["name"], "pve_qemu_clone",
        "{found}"
    );
    let described = run(
        &client,
        "pve_describe_tool",
        json!({"name": "pve_qemu_clone"}),
    )
    .await;
    let schema = &described["data"]["inputSchema"];
    assert!(schema["properties"]["newid"].is_object(), "{described}");
    // A clone is a change that asks unless it is a linked clone of a template (routine).
    assert_eq!(described["data"]["approval"], "routine");

    let cloned = call(
        &client,
        "pve_qemu_clone",
        json!({"node": "pve01", "vmid": 9000, "newid": 150, "name": "web1"}),
    )
    .await;
    assert_eq!(cloned["ok"], true, "{cloned}");
    assert_eq!(cloned["meta"]["tool"], "pve_qemu_clone");
    // A linked clone of template 9000 is routine through the meta-tool as on a direct call.
    assert_eq!(cloned["meta"]["approval"], "routine");
    assert_eq!(person.questions().len(), 0);
    let upid = cloned["data"].as_str().expect("a task UPID").to_owned();
    // Follow the task through the same meta-tool until it stops.
    for _ in 0..50 {
        let status = call(
            &client,
            "pve_get_task_status",
            json!({"node": "pve01", "upid": upid}),
        )
        .await;
        if status["data"]["status"] == "stopped" {
            assert_eq!(status["data"]["exitstatus"], "OK", "{status}");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let started = call(
        &client,
        "pve_start_qemu_vm",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(started["ok"], true, "{started}");
    assert_eq!(started["meta"]["approval"], "routine");
    assert_eq!(person.questions().len(), 0);
    let sent: Vec<(String, String)> = changes(&emu)
        .into_iter()
        .map(|r| (r.method, r.path))
        .collect();
    assert_eq!(
        sent,
        [
            ("POST".to_owned(), "/nodes/pve01/qemu/9000/clone".to_owned()),
            (
                "POST".to_owned(),
                "/nodes/pve01/qemu/150/status/start".to_owned()
            ),
        ]
    );
    let clone_form = &changes(&emu)[0].form;
    assert!(
        clone_form.contains(&("newid".to_owned(), "150".to_owned())),
        "{clone_form:?}"
    );

    // A gated row is put to the person exactly as on a direct call.
    let stopped = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 150}),
    )
    .await;
    assert_eq!(stopped["ok"], true, "{stopped}");
    assert_eq!(stopped["meta"]["approval"], "person");
    assert_eq!(person.questions().len(), 1);
    assert!(
        person.questions()[0].contains("150"),
        "{:?}",
        person.questions()
    );

    // dry_run previews through the meta-tool and sends nothing.
    let before = changes(&emu).len();
    let preview = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "dry_run": true}),
    )
    .await;
    assert_eq!(preview["ok"], true, "{preview}");
    assert_eq!(changes(&emu).len(), before);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_declined_approval_sends_nothing() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), COMPACT_FULL);
    let (client, _home) = connect_stdio(Person::new(Answer::Decline), &env).await;
    let refused = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(
        refused["error"]["code"], "CONFIRMATION_DECLINED",
        "{refused}"
    );
    assert!(changes(&emu).is_empty());
    client.cancel().await.ok();
}

fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_mrtr_approval_is_bound_to_the_inner_tool_and_arguments() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), COMPACT_FULL);
    let person = Person {
        version: ProtocolVersion::V_2026_07_28,
        ..Person::new(Answer::Accept)
    };
    let (client, _home) = connect_stateless(person.clone(), &env).await;

    let stop = |vmid: u64| meta_call("pve_stop_qemu_vm", json!({"node": "pve01", "vmid": vmid}));
    let CallToolResponse::InputRequired(asked) =
        client.call_tool_once(stop(101)).await.expect("answered")
    else {
        panic!("a gated call asks first");
    };
    let state = asked.request_state.clone().expect("sealed state");
    assert!(changes(&emu).is_empty());
    let answer = || {
        [(
            "approval".to_owned(),
            json!({"action": "accept", "content": {"approve": true}}),
        )]
        .into_iter()
        .collect()
    };
    // The approval for VM 101 replayed with other inner arguments is refused.
    let swapped = complete(
        client
            .call_tool_once(
                stop(102)
                    .with_request_state(state.clone())
                    .with_input_responses(answer()),
            )
            .await
            .expect("answered"),
    );
    assert_eq!(
        envelope(&swapped)["error"]["code"],
        "APPROVAL_STATE_INVALID"
    );
    // The same approval for another inner tool is refused too.
    let other_tool = complete(
        client
            .call_tool_once(
                meta_call("pve_qemu_delete", json!({"node": "pve01", "vmid": 101}))
                    .with_request_state(state.clone())
                    .with_input_responses(answer()),
            )
            .await
            .expect("answered"),
    );
    assert_eq!(
        envelope(&other_tool)["error"]["code"],
        "APPROVAL_STATE_INVALID"
    );
    assert!(changes(&emu).is_empty());
    // rmcp's high-level call drives the rounds and the stop runs once approved.
    let result = client.call_tool(stop(101)).await.expect("answered");
    assert_eq!(
        envelope(&result)["meta"]["approval"],
        "person",
        "{result:?}"
    );
    let sent = changes(&emu);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].path, "/nodes/pve01/qemu/101/status/stop");
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_hides_what_the_policy_hides() {
    let emu = emulator().await;
    // Read-only tier: the stop tool is neither found, described nor callable.
    let env = with_policy(env_for(&emu), &[("PVE_TOOL_SURFACE", "compact")]);
    let (client, _home) = connect_stdio(Person::new(Answer::Accept), &env).await;
    let found = run(&client, "pve_find_tools", json!({"query": "stop vm"})).await;
    let names: Vec<&str> = found["data"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"pve_stop_qemu_vm"), "{names:?}");
    let described = run(
        &client,
        "pve_describe_tool",
        json!({"name": "pve_stop_qemu_vm"}),
    )
    .await;
    assert_eq!(described["error"]["code"], "TOOL_INPUT_REJECTED");
    let refused = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_eq!(refused["error"]["code"], "TOOL_INPUT_REJECTED", "{refused}");
    assert!(emu.requests().is_empty(), "nothing reached Proxmox");
    // A permitted read runs, including a hidden legacy alias.
    let status = call(
        &client,
        "getVMStatus",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(status["ok"], true, "{status}");
    assert_eq!(status["meta"]["aliasFor"], "pve_get_qemu_status");
    // Prompts explain the flow.
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("cluster-health"))
        .await
        .expect("prompt");
    let text = serde_json::to_string(&prompt).expect("json");
    assert!(text.contains("pve_call_tool"), "{text}");
    client.cancel().await.ok();
}

fn registry_with(vars: &[(&str, &str)]) -> nandi_proxmox_mcp::registry::Registry {
    let settings = nandi_proxmox_mcp::policy::Settings::from_lookup(|key| {
        vars.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
    })
    .expect("valid settings");
    nandi_proxmox_mcp::registry::Registry::build(&settings)
}

#[test]
fn compact_alias_modes_list_hide_or_refuse_the_old_names() {
    let full = ("PVE_ACCESS_TIER", "full");
    let listed_names = |vars: &[(&str, &str)]| -> (bool, bool) {
        let registry = registry_with(vars);
        let listed = registry.tools().iter().any(|t| t.name == "stopVM");
        (listed, registry.get("stopVM").is_some())
    };
    assert_eq!(listed_names(&[full]), (false, true), "default: hidden");
    assert_eq!(
        listed_names(&[full, ("PVE_ALIASES", "hidden")]),
        (false, true)
    );
    assert_eq!(
        listed_names(&[full, ("PVE_ALIASES", "listed")]),
        (true, true)
    );
    assert_eq!(
        listed_names(&[full, ("PVE_ALIASES", "off")]),
        (false, false)
    );
    // The compact listing is the meta-tools only, whatever the alias mode.
    let registry = registry_with(&[full, ("PVE_ALIASES", "listed")]);
    assert_eq!(nandi_proxmox_mcp::compact::tools(&registry).len(), 3);
    assert!(registry.get("stopVM").is_some());
}

#[test]
fn compact_bad_surface_and_alias_values_are_startup_errors() {
    use nandi_proxmox_mcp::policy::Settings;
    for (key, value) in [
        ("PVE_TOOL_SURFACE", "tiny"),
        ("PVE_ALIASES", "yes"),
        ("PVE_OUTPUT_CAP_BYTES", "1e6"),
    ] {
        let err =
            Settings::from_lookup(|k| (k == key).then(|| value.to_owned())).expect_err("refused");
        let message = err.to_string();
        assert!(
            message.contains(key) && message.contains(value),
            "{message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_confirm_mode_needs_the_flag_inside_the_inner_arguments() {
    let emu = emulator().await;
    let vars = [
        COMPACT_FULL[0],
        COMPACT_FULL[1],
        ("PVE_HUMAN_APPROVAL", "confirm"),
    ];
    let env = with_policy(env_for(&emu), &vars);
    let (client, _home) = connect_stdio(Person::new(Answer::Accept), &env).await;
    let refused = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101}),
    )
    .await;
    assert_eq!(
        refused["error"]["code"], "CONFIRMATION_REQUIRED",
        "{refused}"
    );
    assert!(changes(&emu).is_empty());
    let confirmed = call(
        &client,
        "pve_stop_qemu_vm",
        json!({"node": "pve01", "vmid": 101, "confirm": true}),
    )
    .await;
    assert_eq!(confirmed["ok"], true, "{confirmed}");
    assert_eq!(confirmed["meta"]["approval"], "confirm-flag");
    assert_eq!(changes(&emu).len(), 1);
    client.cancel().await.ok();
}
