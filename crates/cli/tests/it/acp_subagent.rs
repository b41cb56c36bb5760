//! `gyre acp` with a subagent: the child's tool calls show in the editor,
//! and its permission requests are asked there and answered.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    InitializeRequest, NewSessionRequest, PromptRequest, StopReason,
};
use gyre_mock::{Item, MockServer, Script, When};
use serde_json::{Value, json};

use crate::acp::{of_kind, with_editor};
use crate::common::*;

fn call_with_id(id: &str, name: &str, arguments: Value) -> Item {
    Item::ToolCall {
        id: Some(id.into()),
        name: name.into(),
        arguments,
        fragments: None,
    }
}

/// The parent hands a write to a `build` subagent, which needs approval.
fn script() -> Script {
    let child = |turn| When {
        turn: Some(turn),
        body_contains: Some("SUBTASK-MARKER".into()),
        ..When::default()
    };
    Script::new(vec![
        step(
            When {
                turn: Some(0),
                last_message_contains: Some("PARENT-PROMPT".into()),
                ..When::default()
            },
            vec![call_with_id(
                "toolu_task",
                "task",
                json!({"description": "write it", "prompt": "SUBTASK-MARKER write child.txt",
                       "agent": "build"}),
            )],
        ),
        step(
            When {
                turn: Some(1),
                last_message_contains: Some("task_id".into()),
                ..When::default()
            },
            vec![Item::Text("The child wrote it.".into())],
        ),
        step(
            child(0),
            vec![call_with_id(
                "toolu_child_write",
                "write",
                json!({"file_path": "child.txt", "content": "from the child\n"}),
            )],
        ),
        step(child(1), vec![Item::Text("CHILD-REPORT: written".into())]),
    ])
}

#[tokio::test]
async fn a_subagents_calls_and_permission_requests_reach_the_editor() {
    let server = MockServer::start(script()).await.unwrap();
    let env = Env::new();
    with_editor(&env, &server, async |cx, mut seen| {
        cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await
            .unwrap();
        let session = cx
            .send_request(NewSessionRequest::new(env.workspace.path()))
            .block_task()
            .await
            .unwrap()
            .session_id;
        let done = cx
            .send_request(PromptRequest::new(session, vec!["PARENT-PROMPT".into()]))
            .block_task()
            .await
            .unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        // Updates come before the response that ends the prompt.
        let updates = seen.drain();
        let ids: Vec<&Value> = of_kind(&updates, "tool_call")
            .iter()
            .map(|u| &u["toolCallId"])
            .collect();
        assert_eq!(ids, [&json!("toolu_task"), &json!("toolu_child_write")]);
        let child_done = of_kind(&updates, "tool_call_update")
            .into_iter()
            .find(|u| u["toolCallId"] == "toolu_child_write" && u["status"] == "completed")
            .unwrap_or_else(|| panic!("the child's write did not complete: {updates:#?}"));
        assert_eq!(child_done["content"][0]["type"], "diff");
        // The child's own text is the task's result, not the answer.
        let said: String = of_kind(&updates, "agent_message_chunk")
            .iter()
            .map(|u| u["content"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(said, "The child wrote it.");
        let asked = seen.permissions.lock().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!(
            asked[0].tool_call.tool_call_id.0.as_ref(),
            "toolu_child_write"
        );
        assert_eq!(
            std::fs::read_to_string(env.path("child.txt")).unwrap(),
            "from the child\n"
        );
    })
    .await;
}
