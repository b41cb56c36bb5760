//! `--effort` (config `effort`, an agent file's `effort`) and Claude Code's
//! `--max-thinking-tokens`, as the model's request carries them (the
//! per-API mapping is pinned in gyre-llm's own tests).

use gyre_mock::MockServer;
use serde_json::{Value, json};

use crate::common::*;

async fn first_request(env: &Env, extra: &[&str]) -> Value {
    let server = MockServer::start(always("ok")).await.unwrap();
    let mut args = vec!["run", "think", "--output-format", "json"];
    args.extend_from_slice(extra);
    let out = output(env.gyre_on(&server, &args)).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    server.requests()[0].body.clone()
}

#[tokio::test]
async fn the_flag_the_config_and_an_agent_file_set_the_thinking_budget() {
    let env = Env::new();
    let plain = first_request(&env, &[]).await;
    assert!(plain.get("thinking").is_none(), "{plain}");

    let high = first_request(&env, &["--effort", "high"]).await;
    assert_eq!(
        high["thinking"],
        json!({"type": "enabled", "budget_tokens": 20000})
    );

    // Claude Code's budget flag reads as the nearest effort.
    let budget = first_request(&env, &["--max-thinking-tokens", "3000"]).await;
    assert_eq!(budget["thinking"]["budget_tokens"], json!(4000));

    env.write_user_config("effort = \"medium\"\n");
    let configured = first_request(&env, &[]).await;
    assert_eq!(configured["thinking"]["budget_tokens"], json!(10000));

    write(
        &env.path(".gyre/agents/deep.md"),
        "---\nname: deep\ndescription: thinks hard\neffort: max\ntemperature: 0.3\n---\nThink.\n",
    );
    let agent = first_request(&env, &["--agent", "deep"]).await;
    // max (31 999) under the catalogue's output limit of 32 000, less the
    // answer's room.
    assert_eq!(agent["thinking"]["budget_tokens"], json!(27904));
    // Thinking refuses a temperature: the agent's is not sent with it.
    assert!(agent.get("temperature").is_none(), "{agent}");
}

#[tokio::test]
async fn an_unknown_effort_is_a_usage_error() {
    let server = MockServer::start(always("ok")).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(&server, &["run", "x", "--effort", "extreme"])).await;
    assert_usage_error(&out, "--effort: unknown effort `extreme`");
}
