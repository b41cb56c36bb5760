//! Tools that join during a run (an MCP server's, once it is up): taken at
//! turn boundaries, appended after the built-in tools, told as events;
//! read-only ones run concurrently; agents offer those they select; the
//! servers' states are forwarded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use gyre_core::PermissionMode;
use gyre_core::agents::ToolSelection;
use gyre_mock::Script;
use gyre_protocol::{Event, FinishReason, McpServerState, McpServerStatus, ToolSpec};
use gyre_tools::{LateTools, Registry, Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use serde_json::{Value, json};

use crate::harness::*;

/// A late tool: sleeps `ms`, counting how many run at once.
struct Remote {
    spec: ToolSpec,
    kind: ToolKind,
    ms: u64,
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

fn remote(name: &str, kind: ToolKind) -> Arc<dyn Tool> {
    remote_with(name, kind, 0, "a remote test tool", &Default::default())
}

fn remote_with(
    name: &str,
    kind: ToolKind,
    ms: u64,
    description: &str,
    counters: &(Arc<AtomicUsize>, Arc<AtomicUsize>),
) -> Arc<dyn Tool> {
    Arc::new(Remote {
        spec: ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object"}),
        },
        kind,
        ms,
        running: counters.0.clone(),
        most: counters.1.clone(),
    })
}

impl Tool for Remote {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn kind(&self, _: &Value) -> ToolKind {
        self.kind
    }
    fn run<'a>(
        &'a self,
        _: Value,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(self.ms)).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::text(
                &self.spec.name,
                format!("{} ran", self.spec.name),
            ))
        }
        .boxed()
    }
}

/// A built-in test tool that changes the late tools, as a server would
/// while the run goes on: `{"join": SOURCE}` adds `mcp__SOURCE__two`,
/// `{"leave": SOURCE}` removes a source, `{"report": SOURCE}` reports it
/// ready.
struct Control {
    spec: ToolSpec,
    late: Arc<LateTools>,
    joining: Mutex<Vec<Arc<dyn Tool>>>,
}

impl Tool for Control {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn kind(&self, _: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }
    fn run<'a>(
        &'a self,
        args: Value,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            if let Some(source) = args["join"].as_str() {
                let tools = std::mem::take(&mut *self.joining.lock().unwrap());
                self.late.add(source, tools);
            }
            if let Some(source) = args["leave"].as_str() {
                self.late.remove(source);
            }
            if let Some(source) = args["report"].as_str() {
                self.late.report(status(source, McpServerState::Ready));
            }
            Ok(ToolOutput::text("control", "done"))
        }
        .boxed()
    }
}

fn status(server: &str, state: McpServerState) -> McpServerStatus {
    McpServerStatus {
        server: server.into(),
        status: state,
        message: format!("{server} is {state:?}"),
    }
}

/// Built-in `read` and `control` (which adds `joining` when asked).
fn registry(late: &Arc<LateTools>, joining: Vec<Arc<dyn Tool>>) -> Registry {
    let mut tools = Registry::new();
    tools.register(Arc::new(gyre_tools::Typed::new(gyre_tools::ReadTool)));
    tools.register(Arc::new(Control {
        spec: ToolSpec {
            name: "control".into(),
            description: "changes the late tools".into(),
            input_schema: json!({"type": "object"}),
        },
        late: late.clone(),
        joining: Mutex::new(joining),
    }));
    tools
}

/// The tool names an Anthropic request offered, in order.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn position(events: &[Event], matches: impl Fn(&Event) -> bool) -> usize {
    events
        .iter()
        .position(matches)
        .unwrap_or_else(|| panic!("no such event in {events:#?}"))
}

#[tokio::test]
async fn late_tools_join_at_the_next_turn_boundary_appended() {
    let late = LateTools::new();
    late.add("a", vec![remote("mcp__a__one", ToolKind::ReadOnly)]);
    let joining = vec![remote("mcp__b__two", ToolKind::ReadOnly)];
    let script = Script::linear(vec![
        vec![call("control", json!({"join": "b"}))],
        vec![call("mcp__b__two", json!({}))],
        vec![text("done")],
    ]);
    let late_for_config = late.clone();
    let h = Harness::with(Wire::Anthropic, script, registry(&late, joining), |c| {
        c.late_tools = Some(late_for_config)
    })
    .await;
    let run = h.run("go").await;
    assert_eq!(run.summary.reason, FinishReason::Completed);

    let Event::RunStarted { tools, .. } = &run.events[0] else {
        panic!("{:?}", run.events[0])
    };
    assert_eq!(tools, &["read", "control", "mcp__a__one"]);
    let bodies = h.bodies();
    assert_eq!(offered(&bodies[0]), ["read", "control", "mcp__a__one"]);
    // Appended: the earlier tools are sent exactly as before.
    assert_eq!(
        offered(&bodies[1]),
        ["read", "control", "mcp__a__one", "mcp__b__two"]
    );
    let tools = |body: &Value| body["tools"].as_array().unwrap().clone();
    let (before, after) = (tools(&bodies[0]), tools(&bodies[1]));
    // (The newest tool carries the cache breakpoint.)
    assert_eq!(before[..2], after[..2]);

    // Told once, between the turns, before the request that carries it.
    let changed = position(&run.events, |e| matches!(e, Event::ToolsChanged { .. }));
    assert_eq!(
        run.events[changed],
        Event::ToolsChanged {
            source: "b".into(),
            added: vec!["mcp__b__two".into()],
            removed: vec![],
        }
    );
    let turn2 = position(&run.events, |e| matches!(e, Event::TurnStarted { turn: 2 }));
    let done1 = position(&run.events, |e| {
        matches!(e, Event::TurnCompleted { turn: 1, .. })
    });
    assert!(done1 < changed && changed < turn2, "{:#?}", run.events);
    let changes = run
        .events
        .iter()
        .filter(|e| matches!(e, Event::ToolsChanged { .. }))
        .count();
    assert_eq!(changes, 1);

    // The joined tool ran, and its result reached the next request.
    let results = tool_results_in(&bodies[2]);
    assert!(
        results
            .iter()
            .any(|(_, text, err)| text == "mcp__b__two ran" && !err),
        "{results:?}"
    );
    // The stored run names the tools of its last turn.
    assert_eq!(
        run.session.state.runs.last().unwrap().tools,
        ["read", "control", "mcp__a__one", "mcp__b__two"]
    );
}

#[tokio::test]
async fn a_source_that_leaves_is_told_and_its_tools_are_unknown_after() {
    let late = LateTools::new();
    late.add("a", vec![remote("mcp__a__one", ToolKind::ReadOnly)]);
    let script = Script::linear(vec![
        vec![call("control", json!({"leave": "a"}))],
        vec![call("mcp__a__one", json!({}))],
        vec![text("done")],
    ]);
    let late_for_config = late.clone();
    let h = Harness::with(Wire::OpenAi, script, registry(&late, vec![]), |c| {
        c.late_tools = Some(late_for_config)
    })
    .await;
    let run = h.run("go").await;
    assert!(run.events.contains(&Event::ToolsChanged {
        source: "a".into(),
        added: vec![],
        removed: vec!["mcp__a__one".into()],
    }));
    let refused = results(&run.events)[1];
    assert!(refused.is_error);
    assert!(
        refused
            .text_content()
            .starts_with("unknown tool `mcp__a__one`; the available tools are: read, control"),
        "{}",
        refused.text_content()
    );
}

#[tokio::test]
async fn read_only_late_tools_run_concurrently_and_mutating_ones_ask() {
    let late = LateTools::new();
    let counters = (Arc::default(), Arc::default());
    late.add(
        "s",
        vec![
            remote_with("mcp__s__look", ToolKind::ReadOnly, 300, "looks", &counters),
            remote_with("mcp__s__poke", ToolKind::Mutating, 0, "pokes", &counters),
        ],
    );
    let script = Script::linear(vec![
        vec![
            call("mcp__s__look", json!({"n": 1})),
            call("mcp__s__look", json!({"n": 2})),
            call("mcp__s__look", json!({"n": 3})),
            call("mcp__s__poke", json!({})),
        ],
        vec![text("done")],
    ]);
    let late_for_config = late.clone();
    let h = Harness::with(Wire::Anthropic, script, Registry::new(), |c| {
        c.late_tools = Some(late_for_config);
        c.permissions.mode = PermissionMode::Default;
    })
    .await;
    let run = h.run("go").await;
    assert!(
        counters.1.load(Ordering::SeqCst) >= 2,
        "the read-only calls overlapped"
    );
    let results = results(&run.events);
    assert!(results[..3].iter().all(|r| !r.is_error), "{results:?}");
    assert!(results[3].is_error);
    assert!(
        results[3]
            .text_content()
            .contains("`mcp__s__poke` needs approval in the `default` permission mode"),
        "{}",
        results[3].text_content()
    );
}

#[tokio::test]
async fn server_states_are_forwarded_from_the_start_and_as_they_come() {
    let late = LateTools::new();
    late.report(status("a", McpServerState::Starting));
    late.report(status("z", McpServerState::Failed));
    let script = Script::linear(vec![
        vec![call("control", json!({"report": "a"}))],
        vec![text("done")],
    ]);
    let late_for_config = late.clone();
    let h = Harness::with(Wire::Anthropic, script, registry(&late, vec![]), |c| {
        c.late_tools = Some(late_for_config)
    })
    .await;
    let run = h.run("go").await;
    assert!(matches!(run.events[0], Event::RunStarted { .. }));
    assert_eq!(
        run.events[1..3],
        [
            Event::McpServerStatus(status("a", McpServerState::Starting)),
            Event::McpServerStatus(status("z", McpServerState::Failed)),
        ]
    );
    let ready = position(&run.events, |e| {
        *e == Event::McpServerStatus(status("a", McpServerState::Ready))
    });
    assert!(ready > 3 && ready < run.events.len() - 1);
    // Reports after the run are not its events.
    late.report(status("a", McpServerState::Crashed));
    assert!(matches!(run.events.last(), Some(Event::RunFinished(_))));
}

#[tokio::test]
async fn the_estimate_follows_the_schemas_of_joining_tools() {
    let late = LateTools::new();
    let big = "x".repeat(40_000);
    let joining = vec![remote_with(
        "mcp__b__big",
        ToolKind::ReadOnly,
        0,
        &big,
        &Default::default(),
    )];
    let script = Script::linear(vec![
        vec![call("control", json!({"join": "b"}))],
        vec![text("done")],
    ]);
    let late_for_config = late.clone();
    let h = Harness::with(Wire::Anthropic, script, registry(&late, joining), |c| {
        c.late_tools = Some(late_for_config);
        c.context.window = Some(200_000);
    })
    .await;
    let run = h.run("go").await;
    let used: Vec<u64> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ContextUsage { used_tokens, .. } => Some(*used_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(used.len(), 2, "{used:?}");
    assert!(used[1] >= used[0] + 9_000, "{used:?}");
}

#[tokio::test]
async fn agents_offer_the_late_tools_their_profile_selects() {
    let late = LateTools::new();
    late.add(
        "a",
        vec![
            remote("mcp__a__look", ToolKind::ReadOnly),
            remote("mcp__a__poke", ToolKind::Mutating),
        ],
    );
    late.add("b", vec![remote("mcp__b__look", ToolKind::ReadOnly)]);
    let named = crate::subagents::kid(
        "named",
        "m",
        ToolSelection::Named(vec!["read".into(), "mcp__a__*".into()]),
    );
    let mut cases = vec![
        (
            "build",
            vec!["mcp__a__look", "mcp__a__poke", "mcp__b__look"],
        ),
        ("explore", vec!["mcp__a__look", "mcp__b__look"]),
        ("named", vec!["mcp__a__look", "mcp__a__poke"]),
    ];
    for (profile, expected) in cases.drain(..) {
        let late_for_config = late.clone();
        let h = Harness::with_agents(
            Wire::Anthropic,
            always_text("ok"),
            profile,
            vec![named.clone()],
            gyre_core::SubagentLimits::default(),
            |c| {
                c.late_tools = Some(late_for_config);
                // A deny rule of the whole tool hides it from every agent.
                c.permissions.deny = gyre_core::Rule::parse_list("mcp__b__look").unwrap();
            },
        )
        .await;
        let names = h.agent.tool_names();
        let late_names: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| n.starts_with("mcp__"))
            .collect();
        let expected: Vec<&str> = expected
            .into_iter()
            .filter(|n| *n != "mcp__b__look")
            .collect();
        assert_eq!(late_names, expected, "{profile}");
    }
}

fn always_text(answer: &str) -> Script {
    Script::linear(vec![vec![text(answer)]])
}
