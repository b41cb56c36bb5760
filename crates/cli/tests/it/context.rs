//! The context flags and `[context]` config, through the real binary:
//! compaction visible in stream-json, `--resume` with `--compact-first`,
//! compaction off, and the run budgets.

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use serde_json::{Value, json};

use crate::common::*;

fn answer(when: When, times: Option<u32>, items: Vec<Item>) -> Step {
    Step {
        when,
        times,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// Text every summarising request carries, in the cached form (the
/// conversation, then the instruction) and in the transcript form.
const SUMMARY_MARK: &str = "so that the work can continue without it";

fn summaries() -> Step {
    answer(
        When {
            body_contains: Some(SUMMARY_MARK.into()),
            ..When::default()
        },
        None,
        vec![Item::Text("Summary: big.txt was printed.".into())],
    )
}

/// Prints a 20 KB file `turns` times, then finishes.
fn printing_script(turns: u32, window: Option<u64>) -> Script {
    let mut steps = vec![summaries()];
    steps.push(answer(
        When::default(),
        Some(turns),
        vec![
            Item::Text("Once more.".into()),
            call("bash", json!({"command": "cat big.txt"})),
        ],
    ));
    steps.push(answer(
        When::default(),
        None,
        vec![Item::Text("done".into())],
    ));
    let script = Script::new(steps);
    match window {
        Some(tokens) => script.with_context_window(tokens),
        None => script,
    }
}

/// The loop guard is off: these scripts print the same file again and
/// again on purpose, to fill the context.
fn env_with_big_file(config: &str) -> Env {
    let env = Env::new();
    env.write_user_config(&format!(
        "{FAST_RETRIES}{config}\n[loop_guard]\nrepeat = 0\n"
    ));
    write(&env.path("big.txt"), &"0123456789 abcdefghij\n".repeat(900));
    env
}

fn subtypes(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l["type"] == "system")
        .filter_map(|l| l["subtype"].as_str())
        .collect()
}

const SMALL_WINDOW: &str =
    "[models.claude-sonnet-4-5]\ncontext_window = 24000\nmax_output_tokens = 2048\n";

#[tokio::test]
async fn compaction_shows_in_stream_json_and_the_run_succeeds() {
    let server = MockServer::start(printing_script(8, Some(24_000)))
        .await
        .unwrap();
    let env = env_with_big_file(SMALL_WINDOW);
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "print big.txt",
            "--model",
            "claude-sonnet-4-5",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let kinds = subtypes(&lines);
    assert!(kinds.contains(&"context_warning"), "{kinds:?}");
    assert!(
        kinds.contains(&"context_pruned") || kinds.contains(&"compact_boundary"),
        "{kinds:?}"
    );
    for line in lines.iter().filter(|l| l["subtype"] == "compact_boundary") {
        let meta = &line["compact_metadata"];
        assert_eq!(meta["trigger"], "auto");
        assert!(meta["pre_tokens"].as_u64().unwrap() > meta["post_tokens"].as_u64().unwrap());
    }
    assert!(server.requests().iter().all(|r| r.input_tokens <= 24_000));
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["num_turns"], 9);
}

#[tokio::test]
async fn compaction_off_ends_an_overflow_with_a_clear_message() {
    let server = MockServer::start(printing_script(8, Some(12_000)))
        .await
        .unwrap();
    let env = env_with_big_file(&format!(
        "{SMALL_WINDOW}[context]\ncompaction = \"off\"\npruning = \"off\"\n"
    ));
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "print big.txt",
            "--model",
            "claude-sonnet-4-5",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no longer fits the model's context window"),
        "{err}"
    );
    assert!(err.contains("compaction is off"), "{err}");
    assert!(
        err.contains("prompt is too long"),
        "the provider's words: {err}"
    );
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.body.to_string().contains(SUMMARY_MARK)),
        "no summary was asked for"
    );
}

#[tokio::test]
async fn resume_with_compact_first_summarises_then_runs_the_prompt() {
    let server = MockServer::start(printing_script(2, None)).await.unwrap();
    let env = env_with_big_file("");
    let first = output(env.gyre_on(
        &server,
        &[
            "run",
            "print big.txt",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let id = json_lines(&first)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let second = output(env.gyre_on(
        &server,
        &[
            "run",
            "and now?",
            "--resume",
            &id,
            "--compact-first",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    let lines = json_lines(&second);
    assert_eq!(
        lines[0]["session_id"],
        id.as_str(),
        "the same session goes on"
    );
    let boundary = lines
        .iter()
        .find(|l| l["subtype"] == "compact_boundary")
        .unwrap();
    assert_eq!(boundary["compact_metadata"]["trigger"], "manual");
    assert_eq!(lines.last().unwrap()["result"], "done");

    // The summary request carried the first run; the next request starts
    // with the summary and ends with the new prompt.
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let summary_at = bodies
        .iter()
        .position(|b| b.to_string().contains(SUMMARY_MARK))
        .unwrap();
    assert!(bodies[summary_at].to_string().contains("print big.txt"));
    let next = &bodies[summary_at + 1]["messages"];
    assert!(
        next[0]
            .to_string()
            .contains("Summary: big.txt was printed."),
        "{next}"
    );
    assert!(
        next.as_array()
            .unwrap()
            .last()
            .unwrap()
            .to_string()
            .contains("and now?")
    );
}

#[tokio::test]
async fn a_token_budget_stops_the_run_after_the_current_turn() {
    let server = MockServer::start(printing_script(5, None)).await.unwrap();
    let env = env_with_big_file("");
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "print big.txt",
            "--max-tokens",
            "12000",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "error_max_budget_usd");
    assert!(
        result["error"].as_str().unwrap().contains("--max-tokens"),
        "{result}"
    );
    // Each turn finished: every call has its result, and no request was
    // started past the budget.
    let calls = lines.iter().filter(|l| l["type"] == "assistant").count();
    let results = lines.iter().filter(|l| l["type"] == "user").count();
    assert_eq!(calls, results);
    assert_eq!(
        server.requests().len() as u64,
        result["num_turns"].as_u64().unwrap()
    );
    assert!(result["num_turns"].as_u64().unwrap() < 6);
}

#[tokio::test]
async fn a_cost_budget_needs_prices_and_stops_the_run() {
    let server = MockServer::start(printing_script(5, None)).await.unwrap();
    let env = env_with_big_file("");
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "x",
            "--model",
            "local-thing",
            "--max-budget-usd",
            "0.01",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("input_price"), "{}", stderr(&out));

    // Priced at $1 per million tokens in and out: each turn costs ~$0.006.
    let env = env_with_big_file("[models.local-thing]\ninput_price = 1.0\noutput_price = 1.0\n");
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "print big.txt",
            "--model",
            "local-thing",
            "--max-budget-usd",
            "0.01",
            "--output-format",
            "json",
            "--permission-mode",
            "bypassPermissions",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    let result = &json_lines(&out)[0];
    assert_eq!(result["subtype"], "error_max_budget_usd");
    assert!(result["total_cost_usd"].as_f64().unwrap() >= 0.01);
}

#[tokio::test]
async fn context_settings_are_checked() {
    let env = Env::new();
    env.write_user_config("[context]\nprune_at = 70\n");
    let out = output(env.gyre(&["run", "x", "--provider", "ollama", "--model", "m"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("prune_at = 70"), "{}", stderr(&out));
    let out = output(env.gyre(&["run", "x", "--max-budget-usd", "-1"])).await;
    assert_eq!(out.status.code(), Some(2));
    let env = Env::new();
    let out = output(env.gyre(&[
        "run",
        "x",
        "--resume",
        "nope",
        "--provider",
        "ollama",
        "--model",
        "m",
    ]))
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("there is no session nope"),
        "{}",
        stderr(&out)
    );
}
