//! Subagents through the `task` tool: foreground and background runs,
//! notifications, the concurrency and nesting bounds, cancellation and
//! resuming by id, against the scripted model over real HTTP.

use gyre_core::SubagentLimits;
use gyre_core::agents::{AgentCatalog, AgentProfile, ToolSelection};
use gyre_mock::{Item, Reply, Script, Step, StreamReply, When};
use gyre_protocol::{Event, FinishReason};
use gyre_store::SessionStore;
use serde_json::json;

use crate::harness::*;

/// The prompt layer of the test's subagents: only their requests hold it.
pub const KID: &str = "KID-AGENT-PROMPT";

pub fn kid(name: &str, marker: &str, tools: ToolSelection) -> AgentProfile {
    let mut profile = AgentCatalog::default()
        .get("build")
        .expect("the built-in build agent")
        .clone();
    profile.name = name.into();
    profile.description = format!("the {name} test agent");
    profile.prompt = marker.into();
    if tools == ToolSelection::ReadOnly {
        // What makes an agent read-only (and its `task` calls concurrent).
        profile.narrowing.mode = Some(gyre_core::PermissionMode::Plan);
    }
    profile.tools = tools;
    profile
}

/// A reply to requests whose body holds `marker`, at `turn` of their own
/// history.
pub fn on(marker: &str, turn: u32, items: Vec<Item>) -> Step {
    Step {
        when: When {
            body_contains: Some(marker.into()),
            turn: Some(turn),
            ..When::default()
        },
        times: None,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

/// The same, with the response headers held back for `ms`.
pub fn slow(mut step: Step, ms: u64) -> Step {
    if let Reply::Stream(stream) = &mut step.reply {
        stream.stall_before_headers_ms = ms;
    }
    step
}

pub fn task(args: serde_json::Value) -> Item {
    call("task", args)
}

/// The events of the subagent started by the call `call_id`, in order.
pub fn nested<'a>(events: &'a [Event], call_id: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Subagent {
                call_id: id, inner, ..
            } if id == call_id => Some(inner.as_ref()),
            _ => None,
        })
        .collect()
}

pub fn task_call_ids(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallReady { call } if call.name == "task" => Some(call.id.clone()),
            _ => None,
        })
        .collect()
}

/// A harness whose main agent is `build`, with `kids` beside the built-in
/// agents and the default subagent bounds (Anthropic wire).
pub async fn with_kids(script: Script, kids: Vec<AgentProfile>) -> Harness {
    Harness::with_agents(
        Wire::Anthropic,
        script,
        "build",
        kids,
        SubagentLimits::default(),
        |_| {},
    )
    .await
}

#[tokio::test]
async fn a_foreground_subagent_answers_through_its_call() {
    for wire in [Wire::Anthropic, Wire::OpenAi] {
        let script = Script::new(vec![
            on(KID, 0, vec![call("read", json!({"file_path": "a.txt"}))]),
            on(KID, 1, vec![text("the file says alpha")]),
            Step::on_turn(
                0,
                vec![task(
                    json!({"description": "read a", "prompt": "Read a.txt and report.", "agent": "kid"}),
                )],
            ),
            Step::on_turn(1, vec![text("Parent done.")]),
        ]);
        let kid = kid("kid", KID, ToolSelection::ReadOnly);
        let h = Harness::with_agents(
            wire,
            script,
            "build",
            vec![kid],
            SubagentLimits::default(),
            |_| {},
        )
        .await;
        std::fs::write(h.path("a.txt"), "alpha\n").unwrap();
        let run = h.run("delegate the reading").await;
        assert_eq!(
            run.summary.reason,
            FinishReason::Completed,
            "{wire:?}: {:?}",
            run.summary
        );
        assert_eq!(run.summary.final_text, "Parent done.");
        assert_eq!(run.summary.num_turns, 2, "the parent's own requests");

        let result = results(&run.events)
            .into_iter()
            .find(|r| r.name == "task")
            .expect("the task's result");
        assert!(!result.is_error, "{result:?}");
        let content = result.text_content();
        assert!(content.starts_with("the file says alpha"), "{content}");
        assert!(content.contains("task_id: "), "{content}");

        // The child's events arrive nested under the call, whole.
        let call_id = &task_call_ids(&run.events)[0];
        let inner = nested(&run.events, call_id);
        assert!(
            matches!(inner.first(), Some(Event::RunStarted { .. })),
            "{inner:?}"
        );
        assert!(
            matches!(inner.last(), Some(Event::RunFinished(s)) if s.reason == FinishReason::Completed)
        );
        assert!(inner.iter().any(
            |e| matches!(e, Event::ToolResult { result, .. } if result.name == "read" && result.text_content().contains("alpha"))
        ));

        // The run's totals include what the child spent.
        let own: u64 = run
            .events
            .iter()
            .filter_map(|e| match e {
                Event::TurnCompleted { usage, .. } => Some(usage.output_tokens),
                _ => None,
            })
            .sum();
        let child_summary = inner.iter().find_map(|e| match e {
            Event::RunFinished(s) => Some(s.clone()),
            _ => None,
        });
        let child_output = child_summary.unwrap().usage.output_tokens;
        assert!(child_output > 0);
        assert_eq!(run.summary.usage.output_tokens, own + child_output);

        // The child is a session of its own, linked to its parent.
        let children = h.store.list_children(run.session.id()).await.unwrap();
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].title, "read a");
        let child_messages = h.store.load_messages(&children[0].id).await.unwrap();
        assert_eq!(child_messages.len(), 4, "prompt, call, result, answer");
        assert_eq!(child_messages[0].text(), "Read a.txt and report.");

        // The child asked with its own prompt layer and its own tools.
        let bodies = h.bodies();
        assert_eq!(bodies.len(), 4);
        let child_body = bodies.iter().find(|b| b.to_string().contains(KID)).unwrap();
        let tools = child_body.to_string();
        assert!(
            tools.contains("\"read\"") && !tools.contains("\"edit\""),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn concurrent_subagents_respect_the_bound() {
    let calls: Vec<Item> = (0..4)
        .map(|i| task(json!({"description": format!("job {i}"), "prompt": format!("Job {i}."), "agent": "kid"})))
        .collect();
    let script = Script::new(vec![
        slow(on(KID, 0, vec![text("kid done")]), 150),
        Step::on_turn(0, calls),
        Step::on_turn(1, vec![text("all four done")]),
    ]);
    let kid = kid("kid", KID, ToolSelection::ReadOnly);
    let limits = SubagentLimits {
        max_depth: 1,
        max_concurrent: 2,
    };
    let h = Harness::with_agents(Wire::Anthropic, script, "build", vec![kid], limits, |_| {}).await;
    let run = h.run("four jobs").await;
    assert_eq!(run.summary.final_text, "all four done");
    let task_results: Vec<_> = results(&run.events)
        .into_iter()
        .filter(|r| r.name == "task")
        .collect();
    assert_eq!(task_results.len(), 4);
    assert!(
        task_results
            .iter()
            .all(|r| !r.is_error && r.text_content().starts_with("kid done"))
    );

    // A child's start is forwarded after it got its slot, its end before it
    // gave the slot back: the stream's order shows the bound.
    let (mut running, mut most) = (0, 0);
    for event in &run.events {
        if let Event::Subagent { inner, .. } = event {
            match inner.as_ref() {
                Event::RunStarted { .. } => running += 1,
                Event::RunFinished(_) => running -= 1,
                _ => {}
            }
            most = most.max(running);
        }
    }
    assert_eq!(
        most, 2,
        "at most two subagents at once, and two did run together"
    );
}

#[tokio::test]
async fn nesting_past_the_depth_limit_is_refused() {
    const DEEP: &str = "DEEP-AGENT-PROMPT";
    let script = Script::new(vec![
        on(
            DEEP,
            0,
            vec![task(
                json!({"description": "nest", "prompt": "Go deeper.", "agent": "deep"}),
            )],
        ),
        on(DEEP, 1, vec![text("could not nest")]),
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "outer", "prompt": "Try to nest.", "agent": "deep"}),
            )],
        ),
        Step::on_turn(1, vec![text("done")]),
    ]);
    let deep = kid("deep", DEEP, ToolSelection::All);
    let limits = SubagentLimits {
        max_depth: 1,
        max_concurrent: 2,
    };
    let h =
        Harness::with_agents(Wire::Anthropic, script, "build", vec![deep], limits, |_| {}).await;
    let run = h.run("nest twice").await;
    assert_eq!(run.summary.final_text, "done");
    let call_id = &task_call_ids(&run.events)[0];
    let refused = nested(&run.events, call_id)
        .into_iter()
        .find_map(|e| match e {
            Event::ToolResult { result, .. } if result.name == "task" => Some(result.clone()),
            _ => None,
        })
        .expect("the child's own task call has a result");
    assert!(refused.is_error);
    assert!(
        refused
            .text_content()
            .contains("nest at most 1 levels deep"),
        "{}",
        refused.text_content()
    );
    assert_eq!(
        h.store.list_children(run.session.id()).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_finished_subagent_is_resumed_by_id() {
    let script = Script::new(vec![
        on(KID, 0, vec![text("first answer")]),
        on(KID, 1, vec![text("second answer")]),
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "first", "prompt": "Start.", "agent": "kid"}),
            )],
        ),
        Step::on_turn(
            1,
            vec![task(
                json!({"description": "again", "prompt": "Continue.", "resume": "$after:task_id: "}),
            )],
        ),
        Step::on_turn(2, vec![text("both done")]),
    ]);
    let kid = kid("kid", KID, ToolSelection::ReadOnly);
    let h = with_kids(script, vec![kid]).await;
    let run = h.run("ask twice").await;
    assert_eq!(run.summary.final_text, "both done");
    let task_results: Vec<_> = results(&run.events)
        .into_iter()
        .filter(|r| r.name == "task")
        .collect();
    assert!(
        task_results[1].text_content().starts_with("second answer"),
        "{:?}",
        task_results[1]
    );

    // One child, whose history kept the first exchange.
    let children = h.store.list_children(run.session.id()).await.unwrap();
    assert_eq!(children.len(), 1);
    let texts: Vec<String> = h
        .store
        .load_messages(&children[0].id)
        .await
        .unwrap()
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(
        texts,
        ["Start.", "first answer", "Continue.", "second answer"]
    );

    // An id that is not this session's child is refused.
    let script = Script::new(vec![
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "x", "prompt": "y", "resume": "not-a-task"}),
            )],
        ),
        Step::on_turn(1, vec![text("ok")]),
    ]);
    h.server.set_script(script);
    let run = h.run("resume nothing").await;
    let refused = results(&run.events)[0].clone();
    assert!(refused.is_error);
    assert!(
        refused.text_content().contains("no task not-a-task"),
        "{}",
        refused.text_content()
    );
}

#[tokio::test]
async fn an_agent_without_a_tool_is_refused_it_clearly() {
    let script = Script::new(vec![
        Step::on_turn(
            0,
            vec![call(
                "edit",
                json!({"file_path": "a.txt", "old_string": "a", "new_string": "b"}),
            )],
        ),
        Step::on_turn(1, vec![text("I cannot edit.")]),
    ]);
    let reviewer = kid(
        "reviewer",
        "REVIEWER",
        ToolSelection::Named(vec!["read".into(), "grep".into()]),
    );
    let h = Harness::with_agents(
        Wire::Anthropic,
        script,
        "reviewer",
        vec![reviewer],
        SubagentLimits::default(),
        |_| {},
    )
    .await;
    std::fs::write(h.path("a.txt"), "a\n").unwrap();
    let run = h.run("edit it").await;
    assert_eq!(h.agent.tool_names(), ["read", "grep"]);
    let refused = results(&run.events)[0].clone();
    assert!(refused.is_error);
    let text = refused.text_content();
    assert!(
        text.contains("`edit`") && text.contains("`reviewer` agent") && text.contains("read, grep"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(h.path("a.txt")).unwrap(), "a\n");
}

#[tokio::test]
async fn a_headless_default_mode_run_may_start_a_subagent_whose_edits_are_refused() {
    const BUILDER: &str = "BUILDER-AGENT-PROMPT";
    let script = Script::new(vec![
        on(
            BUILDER,
            0,
            vec![call(
                "write",
                json!({"file_path": "new.txt", "content": "x"}),
            )],
        ),
        on(BUILDER, 1, vec![text("could not write")]),
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "write", "prompt": "Write new.txt.", "agent": "builder"}),
            )],
        ),
        Step::on_turn(1, vec![text("done")]),
    ]);
    let builder = kid("builder", BUILDER, ToolSelection::All);
    let h = Harness::with_agents(
        Wire::Anthropic,
        script,
        "build",
        vec![builder],
        SubagentLimits::default(),
        |config| {
            config.permissions.mode = gyre_core::PermissionMode::Default;
        },
    )
    .await;
    let run = h.run("delegate a write").await;
    let task_result = results(&run.events)[0].clone();
    assert!(!task_result.is_error, "{task_result:?}");
    assert!(task_result.text_content().starts_with("could not write"));
    let call_id = &task_call_ids(&run.events)[0];
    let denied = nested(&run.events, call_id).into_iter().any(|e| {
        matches!(e, Event::ToolResult { result, .. } if result.name == "write" && result.is_error && result.text_content().contains("permission denied"))
    });
    assert!(
        denied,
        "the child's write needs approval, and a headless run has none"
    );
    assert!(!h.path("new.txt").exists());
}

#[tokio::test]
async fn an_agents_turn_limit_wraps_its_subagent_up() {
    const SHORT: &str = "SHORT-AGENT-PROMPT";
    let script = Script::new(vec![
        on(SHORT, 0, vec![call("ls", json!({}))]),
        on(SHORT, 1, vec![text("out of turns: listed the files")]),
        Step::on_turn(
            0,
            vec![task(
                json!({"description": "list", "prompt": "List.", "agent": "short"}),
            )],
        ),
        Step::on_turn(1, vec![text("done")]),
    ]);
    let mut short = kid("short", SHORT, ToolSelection::ReadOnly);
    short.max_turns = Some(2);
    let h = with_kids(script, vec![short]).await;
    let run = h.run("list with a short agent").await;
    assert_eq!(run.summary.final_text, "done");
    let result = results(&run.events)
        .into_iter()
        .find(|r| r.name == "task")
        .unwrap()
        .clone();
    assert!(
        result.is_error,
        "a subagent stopped by its limit did not succeed"
    );
    let text = result.text_content();
    assert!(
        text.contains("stopped at its turn limit") && text.contains("out of turns"),
        "{text}"
    );
    // Its last request offered no tools and asked for a wrap-up.
    let child_last = h
        .bodies()
        .into_iter()
        .rfind(|b| b.to_string().contains(SHORT))
        .unwrap();
    assert!(
        child_last
            .to_string()
            .contains("This is the last turn allowed")
    );
}
