//! `[redact] patterns`: secrets never reach the store or the stream.

use gyre_mock::{Item, MockServer, Script};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn configured_patterns_are_redacted_from_outputs() {
    let script = Script::linear(vec![
        // The secret is made by the command, not written in it.
        vec![call(
            "bash",
            json!({"command": "echo deploy-token=tok_$(printf A1B2C3D4E5)"}),
        )],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    env.write_user_config(&format!(
        "{FAST_RETRIES}[redact]\npatterns = [\"tok_[A-Z0-9]{{10}}\"]\n"
    ));
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "deploy",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("tok_A1B2C3D4E5"), "{text}");
    assert!(text.contains("deploy-token=[REDACTED]"), "{text}");
    let seen = server.requests().last().unwrap().body.to_string();
    assert!(!seen.contains("tok_A1B2C3D4E5") && seen.contains("[REDACTED]"));
    let db = std::fs::read(env.database()).unwrap();
    let wal = std::fs::read(env.home.path().join("sessions.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(!String::from_utf8_lossy(&bytes).contains("tok_A1B2C3D4E5"));
    }
}

#[tokio::test]
async fn a_bad_pattern_is_a_usage_error() {
    let env = Env::new();
    env.write_user_config("[redact]\npatterns = [\"tok_[\"]\n");
    let out = output(env.gyre(&["run", "x", "--provider", "ollama", "--model", "m"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("tok_["), "{}", stderr(&out));
}
