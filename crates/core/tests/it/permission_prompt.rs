//! A run whose asks go to a permission prompt (the cli's
//! `--permission-prompt-tool`): the prompt's allow runs the call, with the
//! input it returned; its deny refuses the call with its message.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_core::{Approvals, PermissionMode, PermissionPrompt, PromptDecision};
use gyre_mock::Script;
use gyre_protocol::{Event, FinishReason, ToolCall};
use serde_json::{Value, json};

use crate::harness::*;

/// Allows writes of `allowed.txt` (with other content) and denies the rest;
/// records what it was asked.
#[derive(Default)]
struct Recorder {
    asked: Mutex<Vec<(String, String, Value, String)>>,
}

impl PermissionPrompt for Recorder {
    fn decide<'a>(
        &'a self,
        call: &'a ToolCall,
        input: &'a Value,
        question: &'a str,
    ) -> BoxFuture<'a, PromptDecision> {
        async move {
            self.asked.lock().unwrap().push((
                call.id.clone(),
                call.name.clone(),
                input.clone(),
                question.to_string(),
            ));
            if input["file_path"] == "allowed.txt" {
                let mut updated = input.clone();
                updated["content"] = json!("changed by the prompt");
                PromptDecision::Allow {
                    updated_input: Some(updated),
                }
            } else {
                PromptDecision::Deny(format!("not {}", input["file_path"]))
            }
        }
        .boxed()
    }
}

#[tokio::test]
async fn the_prompt_decides_and_may_change_the_input() {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "allowed.txt", "content": "from the model"}),
        )],
        vec![call(
            "write",
            json!({"file_path": "denied.txt", "content": "no"}),
        )],
        vec![text("Finished.")],
    ]);
    let prompt = Arc::new(Recorder::default());
    let approvals = Approvals::Prompt(prompt.clone());
    let h = Harness::with(
        Wire::Anthropic,
        script,
        gyre_tools::Registry::builtin(),
        move |c| {
            c.permissions.mode = PermissionMode::Default;
            c.approvals = approvals;
        },
    )
    .await;
    let finished = h.run("write them").await;
    assert_eq!(finished.summary.reason, FinishReason::Completed);
    assert!(
        !finished
            .events
            .iter()
            .any(|e| matches!(e, Event::PermissionRequested { .. })),
        "a prompt is asked instead of a frontend"
    );
    assert_eq!(
        std::fs::read_to_string(h.path("allowed.txt")).unwrap(),
        "changed by the prompt"
    );
    assert!(!h.path("denied.txt").exists());
    let results = results(&finished.events);
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert!(results[1].is_error);
    assert_eq!(
        results[1].text_content(),
        "permission denied: not \"denied.txt\""
    );

    let asked = prompt.asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    let (id, name, input, question) = &asked[0];
    assert!(!id.is_empty());
    assert_eq!(name, "write");
    assert_eq!(
        input,
        &json!({"file_path": "allowed.txt", "content": "from the model"})
    );
    assert!(!question.is_empty());
}
