//! Approval for stateless 2026-07-28 peers through multi round-trip requests, over the
//! built binary's stdio with rmcp's client side: the round trip, and tampered, replayed,
//! argument-swapped and foreign `requestState`s refused with nothing sent.

use crate::approval_common;
use crate::common;

use approval_common::{Answer, Person, args, changes, connect_stateless, envelope};
use common::{emulator, env_for, with_policy};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ProtocolVersion};
use rmcp::service::RunningService;
use serde_json::{Value, json};

fn stop(vmid: u64) -> CallToolRequestParams {
    CallToolRequestParams::new("pve_stop_qemu_vm")
        .with_arguments(args(json!({"node": "pve01", "vmid": vmid})))
}

async fn once(
    client: &RunningService<RoleClient, Person>,
    params: CallToolRequestParams,
) -> CallToolResponse {
    client.call_tool_once(params).await.expect("answered")
}

fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a complete result, got {other:?}"),
    }
}

fn error_code(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    envelope(result)["error"]["code"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn accepted() -> Value {
    json!({"action": "accept", "content": {"approve": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_peer_is_asked_through_input_required_and_runs_on_accept() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), &[("PVE_ACCESS_TIER", "full")]);
    let person = Person {
        version: ProtocolVersion::V_2026_07_28,
        ..Person::new(Answer::Accept)
    };
    let (client, _home) = connect_stateless(person.clone(), &env).await;
    // rmcp's high-level call drives the rounds through the handler.
    let result = client.call_tool(stop(101)).await.expect("answered");
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(envelope(&result)["meta"]["approval"], "person");
    assert_eq!(person.questions().len(), 1);
    assert!(person.questions()[0].contains("VM 101"));
    assert_eq!(changes(&emu).len(), 1);
    client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_replayed_and_swapped_states_are_refused() {
    let emu = emulator().await;
    let env = with_policy(env_for(&emu), &[("PVE_ACCESS_TIER", "full")]);
    let person = Person {
        version: ProtocolVersion::V_2026_07_28,
        ..Person::new(Answer::Accept)
    };
    let (client, _home) = connect_stateless(person, &env).await;

    let CallToolResponse::InputRequired(asked) = once(&client, stop(101)).await else {
        panic!("a gated call asks first");
    };
    let state = asked.request_state.clone().expect("sealed state");
    let requests = asked.input_requests.expect("input requests");
    assert!(requests.contains_key("approval"));
    assert!(changes(&emu).is_empty());
    let answer = || [("approval".to_owned(), accepted())].into_iter().collect();

    // Edited by one character.
    let mut bytes = state.clone().into_bytes();
    let mid = bytes.len() / 2;
    bytes[mid] = if bytes[mid] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).expect("ascii");
    let result = complete(
        once(
            &client,
            stop(101)
                .with_request_state(tampered)
                .with_input_responses(answer()),
        )
        .await,
    );
    assert_eq!(error_code(&result), "APPROVAL_STATE_INVALID");

    // Approved for VM 101, replayed against VM 102.
    let result = complete(
        once(
            &client,
            stop(102)
                .with_request_state(state.clone())
                .with_input_responses(answer()),
        )
        .await,
    );
    assert_eq!(error_code(&result), "APPROVAL_STATE_INVALID");
    // Approved for the stop, replayed against a delete of the same VM.
    let delete = CallToolRequestParams::new("pve_qemu_delete")
        .with_arguments(args(json!({"node": "pve01", "vmid": 101})));
    let result = complete(
        once(
            &client,
            delete
                .with_request_state(state.clone())
                .with_input_responses(answer()),
        )
        .await,
    );
    assert_eq!(error_code(&result), "APPROVAL_STATE_INVALID");
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));

    // The genuine retry runs once; the same state again is a replay.
    let result = complete(
        once(
            &client,
            stop(101)
                .with_request_state(state.clone())
                .with_input_responses(answer()),
        )
        .await,
    );
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(changes(&emu).len(), 1);
    let result = complete(
        once(
            &client,
            stop(101)
                .with_request_state(state)
                .with_input_responses(answer()),
        )
        .await,
    );
    assert_eq!(error_code(&result), "APPROVAL_STATE_INVALID");
    assert_eq!(changes(&emu).len(), 1);

    // A state made up by the client.
    let result = complete(
        once(
            &client,
            stop(101)
                .with_request_state("rs2.forged.state")
                .with_input_responses(answer()),
        )
        .await,
    );
    assert_eq!(error_code(&result), "APPROVAL_STATE_INVALID");

    // A decline through the round trip.
    let CallToolResponse::InputRequired(asked) = once(&client, stop(101)).await else {
        panic!("asks again");
    };
    let declined = [("approval".to_owned(), json!({"action": "decline"}))]
        .into_iter()
        .collect();
    let result = complete(
        once(
            &client,
            stop(101)
                .with_request_state(asked.request_state.expect("state"))
                .with_input_responses(declined),
        )
        .await,
    );
    assert_eq!(error_code(&result), "CONFIRMATION_DECLINED");
    assert_eq!(changes(&emu).len(), 1);
    client.cancel().await.ok();
}

/// Issue 23: an answer that arrives after the approval window is the same situation as a
/// person who did not answer in time on the elicitation path, and gets the same code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_the_window_is_a_timeout_and_sends_nothing() {
    let emu = emulator().await;
    let env = with_policy(
        env_for(&emu),
        &[
            ("PVE_ACCESS_TIER", "full"),
            ("PVE_APPROVAL_TIMEOUT_SECS", "1"),
        ],
    );
    let person = Person {
        version: ProtocolVersion::V_2026_07_28,
        ..Person::new(Answer::Accept)
    };
    let (client, _home) = connect_stateless(person, &env).await;
    let CallToolResponse::InputRequired(asked) = once(&client, stop(101)).await else {
        panic!("a gated call asks first");
    };
    let state = asked.request_state.clone().expect("sealed state");
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let answer = [("approval".to_owned(), accepted())].into_iter().collect();
    let result = complete(
        once(
            &client,
            stop(101)
                .with_request_state(state)
                .with_input_responses(answer),
        )
        .await,
    );
    assert_eq!(error_code(&result), "CONFIRMATION_TIMEOUT");
    assert!(changes(&emu).is_empty(), "{:?}", changes(&emu));
    client.cancel().await.ok();
}
