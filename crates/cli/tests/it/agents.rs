//! Agents and subagents from the outside: `--agent`, agent files, the
//! `task` tool's stream-json lines, completion mode and `[subagents]`.
//!
//! Parent and child share one mock server, so every step says whose
//! request it answers: the parent's by the last message (its prompt, then
//! the `task` result), the child's by a marker only its prompt carries.

use gyre_mock::{Item, MockServer, Script, When};
use serde_json::{Value, json};

use crate::common::*;

const REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code; never edits.\n\
                        tools: Read, Grep\n---\nREVIEWER-PROMPT: you review and never edit.\n";

/// A tool call with a fixed id (the mock's own ids repeat across the
/// parent's and the child's requests).
fn call_with_id(id: &str, name: &str, arguments: Value) -> Item {
    Item::ToolCall {
        id: Some(id.into()),
        name: name.into(),
        arguments,
        fragments: None,
    }
}

fn lines_where<'a>(lines: &'a [Value], kind: &str, subtype: Option<&str>) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == kind && subtype.is_none_or(|s| l["subtype"] == s))
        .collect()
}

#[tokio::test]
async fn an_agent_file_chooses_the_tools_and_adds_its_prompt() {
    let script = Script::linear(vec![
        vec![call(
            "edit",
            json!({"file_path": "a.txt", "old_string": "original", "new_string": "changed"}),
        )],
        vec![Item::Text("Reviewed: nothing to change.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path(".gyre/agents/reviewer.md"), REVIEWER);
    write(&env.path("a.txt"), "original\n");

    // bypassPermissions (run_on's mode) allows every call: only the agent's
    // tool selection keeps `edit` out.
    let out = output(env.run_on(&server, "review a.txt", &["--agent", "reviewer"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines[0]["subtype"], "init");
    assert_eq!(lines[0]["tools"], json!(["read", "grep"]));
    let results = lines_where(&lines, "user", None);
    assert_eq!(results.len(), 1, "{lines:?}");
    let result = &results[0]["message"]["content"][0];
    assert_eq!(result["is_error"], true);
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("unknown tool `edit`"), "{content}");
    assert!(content.contains("read, grep"), "{content}");
    assert_eq!(
        std::fs::read_to_string(env.path("a.txt")).unwrap(),
        "original\n"
    );

    let requests = server.requests();
    let system = requests[0].body["system"].to_string();
    assert!(system.contains("REVIEWER-PROMPT"), "{system}");
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["read", "grep"]);
}

#[tokio::test]
async fn an_unknown_agent_is_a_usage_error_naming_the_agents() {
    let server = MockServer::start(always("never asked")).await.unwrap();
    let env = Env::new();
    write(&env.path(".gyre/agents/reviewer.md"), REVIEWER);
    let out = output(env.run_on(&server, "hi", &["--agent", "nope"])).await;
    assert_usage_error(&out, "build, plan, explore, reviewer");
    assert!(stderr(&out).contains("`nope`"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(server.requests().is_empty());
    // Nothing was started, so nothing was stored.
    let listed = output(env.gyre(&["sessions", "list", "--all"])).await;
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    assert_eq!(stdout(&listed), "");
}

#[tokio::test]
async fn gyre_agents_lists_built_ins_then_files_without_a_key() {
    let env = Env::new();
    write(&env.path(".gyre/agents/reviewer.md"), REVIEWER);
    write(
        &env.path(".gyre/agents/broken.md"),
        "no front matter here\n",
    );
    let user_agent = env.config.path().join("gyre/agents/helper.md");
    write(&user_agent, "---\ndescription: Helps.\n---\nHelp.\n");

    // `gyre` removes every provider variable: no key is needed.
    let out = output(env.gyre(&["agents"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let reviewer = std::fs::canonicalize(env.path(".gyre/agents/reviewer.md")).unwrap();
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("build  built-in  "), "{text}");
    assert!(lines[1].starts_with("plan  built-in  "), "{text}");
    assert!(lines[2].starts_with("explore  built-in  "), "{text}");
    assert_eq!(
        lines[3],
        format!("helper  {}  Helps.", user_agent.display())
    );
    assert_eq!(
        lines[4],
        format!(
            "reviewer  {}  Reviews code; never edits.",
            reviewer.display()
        )
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("broken.md") && err.contains("left out"),
        "{err}"
    );
}

/// The parent calls `task` (id `toolu_task`) for an explore subagent, which
/// runs `ls` and reports; the parent then answers.
fn task_script() -> Script {
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
                json!({"description": "look around", "prompt": "SUBTASK-MARKER list files",
                       "agent": "explore"}),
            )],
        ),
        step(
            When {
                turn: Some(1),
                last_message_contains: Some("task_id".into()),
                ..When::default()
            },
            vec![Item::Text("The child found a.txt.".into())],
        ),
        step(
            When {
                turn: Some(0),
                body_contains: Some("SUBTASK-MARKER".into()),
                ..When::default()
            },
            vec![call_with_id("toolu_child_ls", "ls", json!({}))],
        ),
        step(
            When {
                turn: Some(1),
                body_contains: Some("SUBTASK-MARKER".into()),
                ..When::default()
            },
            vec![Item::Text("CHILD-REPORT: a.txt".into())],
        ),
    ])
}

#[tokio::test]
async fn a_foreground_task_streams_nested_under_its_call() {
    let server = MockServer::start(task_script()).await.unwrap();
    let env = Env::new();
    write(&env.path("a.txt"), "x\n");
    let out = output(env.run_on(&server, "PARENT-PROMPT explore", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let parent = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(lines.iter().all(|l| l["session_id"] == parent), "{lines:?}");
    // The child's own init and result lines are not printed.
    assert_eq!(lines_where(&lines, "system", Some("init")).len(), 1);
    assert_eq!(lines_where(&lines, "result", None).len(), 1);
    assert_eq!(lines.last().unwrap()["result"], "The child found a.txt.");

    let position = |pred: &dyn Fn(&Value) -> bool| {
        lines
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("no such line in {lines:?}"))
    };
    let started = position(&|l| l["subtype"] == "task_started");
    let finished = position(&|l| l["subtype"] == "task_finished");
    let child_call = position(&|l| {
        l["type"] == "assistant" && l["message"]["content"][0]["id"] == "toolu_child_ls"
    });
    let child_result = position(&|l| {
        l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "toolu_child_ls"
    });
    let task_result = position(&|l| {
        l["type"] == "user" && l["message"]["content"][0]["tool_use_id"] == "toolu_task"
    });
    assert!(started < child_call && child_call < child_result);
    assert!(
        child_result < finished && finished < task_result,
        "{lines:?}"
    );

    let task_id = lines[started]["task_id"].as_str().unwrap().to_owned();
    assert_ne!(task_id, parent);
    let mut started_line = lines[started].clone();
    assert!(started_line["uuid"].is_string());
    started_line.as_object_mut().unwrap().remove("uuid");
    assert_eq!(
        started_line,
        json!({"type": "system", "subtype": "task_started", "session_id": parent,
               "task_id": task_id, "agent": "explore", "parent_tool_use_id": "toolu_task",
               "description": "look around", "tool_use_id": "toolu_task",
               "task_type": "local_agent"})
    );
    let end = &lines[finished];
    assert_eq!(end["parent_tool_use_id"], "toolu_task");
    assert_eq!(end["task_id"], task_id.as_str());
    assert_eq!(end["status"], "success");
    assert_eq!(end["num_turns"], 2);
    assert_eq!(end["result"], "CHILD-REPORT: a.txt");
    for child_line in [child_call, child_result] {
        assert_eq!(lines[child_line]["parent_tool_use_id"], "toolu_task");
    }
    // The parent's own lines name no parent call (null, as Claude Code's).
    assert!(lines[task_result]["parent_tool_use_id"].is_null());
    let content = lines[task_result]["message"]["content"][0].clone();
    assert_eq!(content["is_error"], false);
    let text = content["content"].as_str().unwrap();
    assert!(text.contains("CHILD-REPORT: a.txt"), "{text}");
    assert!(text.contains(&format!("task_id: {task_id}")), "{text}");

    let listed = output(env.gyre(&["sessions", "list", "--all"])).await;
    let listing = stdout(&listed);
    let child_line = listing
        .lines()
        .find(|l| l.starts_with(&task_id))
        .unwrap_or_else(|| panic!("no {task_id} in {listing}"));
    assert!(
        child_line.ends_with(&format!("  (subagent of {})", &parent[..13])),
        "{child_line}"
    );
    let top_only = stdout(&output(env.gyre(&["sessions", "list"])).await);
    assert!(!top_only.contains(&task_id), "{top_only}");
    assert!(top_only.starts_with(&parent), "{top_only}");
}

/// On a base URL other than the vendor's (a local server, a proxy),
/// `explore` asks for the session's model, not the vendor's small one the
/// server would not have.
#[tokio::test]
async fn explore_on_a_custom_base_url_requests_the_sessions_model() {
    let server = MockServer::start(task_script()).await.unwrap();
    let env = Env::new();
    write(&env.path("a.txt"), "x\n");
    let base_url = server.openai_base_url();
    let mut cmd = env.gyre(&[
        "run",
        "PARENT-PROMPT explore",
        "--output-format",
        "stream-json",
        "--permission-mode",
        "bypassPermissions",
        "--provider",
        "openai",
        "--model",
        "my-local-model",
        "--base-url",
        &base_url,
    ]);
    cmd.env("OPENAI_API_KEY", "k");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(lines.last().unwrap()["result"], "The child found a.txt.");
    let requests = server.requests();
    let child = requests
        .iter()
        .filter(|r| r.body.to_string().contains("SUBTASK-MARKER"))
        .count();
    assert!(child >= 2, "the child asked the model {child} times");
    let models: Vec<&Value> = requests.iter().map(|r| &r.body["model"]).collect();
    assert!(models.iter().all(|m| *m == "my-local-model"), "{models:?}");
}

/// The reminder gyre sends after a text-only answer in completion mode.
const REMINDER: &str = "You answered without calling a tool";

#[tokio::test]
async fn completion_mode_reminds_three_times_then_ends() {
    let server = MockServer::start(always("Just text.")).await.unwrap();
    let env = Env::new();
    let out = output(env.run_on(&server, "do it", &["--require-completion"])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let tools = lines[0]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t == "attempt_completion"), "{tools:?}");
    // The reminders are hidden: no line shows them.
    assert!(!stdout(&out).contains(REMINDER));
    assert_eq!(lines.last().unwrap()["num_turns"], 4);

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for (i, request) in requests.iter().enumerate() {
        let body = request.body.to_string();
        assert_eq!(body.matches(REMINDER).count(), i, "request {}", i + 1);
        if i > 0 {
            assert!(body.contains("attempt_completion` with the result"));
        }
    }
}

#[tokio::test]
async fn attempt_completion_ends_the_run_with_its_result_as_the_text() {
    let script = Script::linear(vec![
        vec![
            Item::Text("Finishing.".into()),
            call("attempt_completion", json!({"result": "ALL DONE"})),
        ],
        vec![Item::Text("must not be asked".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(
        &server,
        &[
            "run",
            "do it",
            "--require-completion",
            "--output-format",
            "text",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "ALL DONE\n");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn max_depth_zero_refuses_the_task_tool() {
    let script = Script::linear(vec![
        vec![call_with_id(
            "toolu_task",
            "task",
            json!({"description": "look around", "prompt": "SUBTASK-MARKER", "agent": "explore"}),
        )],
        vec![Item::Text("I will do it myself.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    env.write_user_config(&format!("{FAST_RETRIES}[subagents]\nmax_depth = 0\n"));
    let out = output(env.run_on(&server, "explore", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    // With max_depth = 0 the tool is not offered; a call to it says why.
    let tools = lines[0]["tools"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t == "task"), "{tools:?}");
    assert!(lines_where(&lines, "system", Some("task_started")).is_empty());
    let result = &lines_where(&lines, "user", None)[0]["message"]["content"][0];
    assert_eq!(result["tool_use_id"], "toolu_task");
    assert_eq!(result["is_error"], true);
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("nest at most 0 levels"), "{content}");
    // Only the parent asked the model: no child ran.
    assert_eq!(server.requests().len(), 2);
    let all = stdout(&output(env.gyre(&["sessions", "list", "--all"])).await);
    assert_eq!(all.lines().count(), 1, "{all}");
}

#[tokio::test]
async fn a_background_tasks_end_is_a_task_notification_line() {
    let script = Script::new(vec![
        step(
            When {
                turn: Some(0),
                last_message_contains: Some("PARENT-PROMPT".into()),
                ..When::default()
            },
            vec![call_with_id(
                "toolu_task",
                "task",
                json!({"description": "look around", "prompt": "SUBTASK-MARKER list files",
                       "agent": "explore", "background": true}),
            )],
        ),
        // The end may be told with the call's result or after the parent's
        // next answer, depending on which finishes first; both lead here.
        step(
            When {
                last_message_contains: Some("<task-notification>".into()),
                ..When::default()
            },
            vec![Item::Text("PARENT-DONE".into())],
        ),
        step(
            When {
                turn: Some(1),
                last_message_contains: Some("in the background".into()),
                ..When::default()
            },
            vec![Item::Text("Waiting for it.".into())],
        ),
        step(
            When {
                turn: Some(0),
                body_contains: Some("SUBTASK-MARKER".into()),
                ..When::default()
            },
            vec![Item::Text("BG-REPORT".into())],
        ),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.run_on(&server, "PARENT-PROMPT explore", &[])).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let parent = lines[0]["session_id"].as_str().unwrap();
    let notifications = lines_where(&lines, "system", Some("task_notification"));
    assert_eq!(notifications.len(), 1, "{lines:?}");
    let task_id = notifications[0]["task_id"].as_str().unwrap();
    assert_ne!(task_id, parent);
    let mut notification = notifications[0].clone();
    assert!(notification["uuid"].is_string());
    notification.as_object_mut().unwrap().remove("uuid");
    assert_eq!(
        notification,
        json!({"type": "system", "subtype": "task_notification", "session_id": parent,
               "task_id": task_id, "agent": "explore", "description": "look around",
               "status": "success", "result": "BG-REPORT",
               "summary": "look around", "output_file": ""})
    );
    let call_result = lines_where(&lines, "user", None)[0]["message"]["content"][0].clone();
    assert_eq!(call_result["tool_use_id"], "toolu_task");
    assert!(
        call_result["content"].as_str().unwrap().contains(task_id),
        "{call_result}"
    );
    assert_eq!(lines.last().unwrap()["result"], "PARENT-DONE");
}
