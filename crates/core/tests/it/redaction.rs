//! No secrets at rest: what a tool prints is redacted before it is stored,
//! announced or sent to the model.

use std::sync::Arc;

use gyre_core::Redactor;
use gyre_mock::Script;
use gyre_protocol::FinishReason;
use serde_json::json;

use crate::harness::*;

/// The value of a provider key variable (as `Redactor::from_env` would read
/// it from the process environment).
const ENV_KEY: &str = "envsecret-ABCDEFGH12345";
/// Matches the configured pattern.
const CORP_TOKEN: &str = "corp-123456";
/// Matches the built-in Anthropic key shape.
const ANTHROPIC_SHAPED: &str = "sk-ant-000000000000000000000000000007";

#[tokio::test]
async fn tool_output_secrets_are_redacted_before_they_are_stored_or_sent() {
    // The command builds each secret at run time, so the call itself (which
    // the model wrote) holds none of them.
    let command = concat!(
        "export FAKE_KEY=envsecret-; FAKE_KEY=${FAKE_KEY}ABCDEFGH12345; ",
        "echo \"key: $FAKE_KEY\"; ",
        "echo token corp-$((123000+456)); ",
        "echo sk-ant-$(printf '%030d' 7); ",
        "echo harmless output"
    );
    let script = Script::linear(vec![
        vec![call("bash", json!({ "command": command }))],
        vec![text("done")],
    ]);
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let h = Harness::with(
            wire,
            script.clone(),
            gyre_tools::Registry::builtin(),
            |config| {
                let vars = [("OPENAI_API_KEY".to_string(), ENV_KEY.to_string())];
                let patterns = [r"corp-[0-9]{6}".to_string()];
                config.redactor = Arc::new(Redactor::from_vars(vars, &patterns).unwrap());
            },
        )
        .await;
        let done = h.run("print the secrets").await;
        assert_eq!(done.summary.reason, FinishReason::Completed, "{wire:?}");

        let secrets = [ENV_KEY, CORP_TOKEN, ANTHROPIC_SHAPED];
        let check = |what: &str, text: &str| {
            for secret in secrets {
                assert!(!text.contains(secret), "{what} holds {secret}: {text}");
            }
            assert_eq!(text.matches("[REDACTED]").count(), 3, "{what}: {text}");
            assert!(text.contains("harmless output"), "{what}: {text}");
        };

        // The event the frontends saw.
        let event = results(&done.events)[0].text_content();
        check("the ToolResult event", &event);
        assert!(event.contains("key: [REDACTED]"), "{event}");
        // The stored result.
        let stored = h.stored(&done.session).await;
        let result = stored
            .iter()
            .flat_map(|m| m.tool_results())
            .next()
            .unwrap()
            .text_content();
        check("the stored result", &result);
        // What the model saw.
        let body = h.bodies()[1].to_string();
        for secret in secrets {
            assert!(!body.contains(secret), "the request holds {secret}");
        }
        let sent = &tool_results_in(&h.bodies()[1])[0].1;
        check("the sent result", sent);
    }
}

#[tokio::test]
async fn the_default_redactor_knows_the_built_in_shapes() {
    let script = Script::linear(vec![
        vec![call(
            "bash",
            json!({ "command": "echo AKIA$(printf 'Z%.0s' $(seq 16))" }),
        )],
        vec![text("done")],
    ]);
    let h = Harness::new(Wire::Anthropic, script).await;
    let done = h.run("print").await;
    let result = results(&done.events)[0].text_content();
    assert!(result.contains("[REDACTED]"), "{result}");
    assert!(!result.contains("AKIAZZZZZZZZZZZZZZZZ"), "{result}");
}
