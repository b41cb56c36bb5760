//! A workspace, a store, a mock model and an agent wired together.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gyre_core::checkpoint::Checkpointer;
use gyre_core::prompt::PromptTemplate;
use gyre_core::{
    Agent, AgentCatalog, AgentConfig, AgentProfile, PermissionMode, RetryPolicy, RunRequest,
    Session, SubagentLimits, SubagentSetup,
};
use gyre_llm::{
    AnthropicClient, ClientConfig, GeminiClient, ModelClient, OpenAiChatClient,
    OpenAiResponsesClient,
};
use gyre_mock::{Item, MockServer, Script};
use gyre_protocol::{Event, Message, RunSummary};
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use gyre_tools::{Registry, Workspace};
use serde_json::Value;
use tempfile::TempDir;

/// Retries as the default policy makes them, in milliseconds instead of
/// seconds, so that fault tests stay fast.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        budget: Duration::from_secs(5),
    }
}

/// The wire APIs the loop is tested over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
    OpenAiResponses,
    Gemini,
}

pub const WIRES: [Wire; 4] = [
    Wire::Anthropic,
    Wire::OpenAi,
    Wire::OpenAiResponses,
    Wire::Gemini,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checkpoints {
    On,
    Off,
}

pub struct Harness {
    pub workspace: TempDir,
    pub _home: TempDir,
    pub store: Arc<SqliteStore>,
    pub server: MockServer,
    pub agent: Arc<Agent>,
    pub client: Arc<dyn ModelClient>,
}

pub struct Finished {
    pub events: Vec<Event>,
    pub summary: RunSummary,
    pub session: Session,
}

impl Harness {
    pub async fn new(wire: Wire, script: Script) -> Harness {
        Self::with(wire, script, Registry::builtin(), |_| {}).await
    }

    pub async fn with(
        wire: Wire,
        script: Script,
        tools: Registry,
        configure: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        Self::build(wire, script, tools, Checkpoints::Off, configure).await
    }

    /// A harness whose mutating calls are checkpointed (shadow git under the
    /// harness's home).
    pub async fn with_checkpoints(wire: Wire, script: Script) -> Harness {
        Self::build(wire, script, Registry::builtin(), Checkpoints::On, |_| {}).await
    }

    /// A harness whose agent is `profile` of a catalog of the built-ins and
    /// `extra`, with subagents bounded by `limits` (the prompt template has
    /// no rules and no git status, so snapshots are stable).
    pub async fn with_agents(
        wire: Wire,
        script: Script,
        profile: &str,
        extra: Vec<AgentProfile>,
        limits: SubagentLimits,
        configure: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        let mut h = Self::build(wire, script, Registry::new(), Checkpoints::Off, configure).await;
        let catalog = Arc::new(AgentCatalog::new(extra));
        let template = PromptTemplate {
            api: h.client.api().to_string(),
            cwd: h.workspace.path().to_path_buf(),
            rules_budget: gyre_core::prompt::DEFAULT_RULES_BUDGET,
            ..PromptTemplate::default()
        };
        let setup = SubagentSetup::new(catalog.clone(), template, Registry::builtin(), limits);
        let profile = catalog.get(profile).expect("a known agent").clone();
        let (agent, _) = Agent::from_profile(
            h.client.clone(),
            h.store.clone(),
            Arc::new(Workspace::new(h.workspace.path()).unwrap()),
            h.agent.config(),
            &setup,
            &profile,
        );
        h.agent = agent;
        h
    }

    async fn build(
        wire: Wire,
        script: Script,
        tools: Registry,
        checkpoints: Checkpoints,
        configure: impl FnOnce(&mut AgentConfig),
    ) -> Harness {
        let workspace = TempDir::new().unwrap();
        let home = TempDir::new().unwrap();
        let store = Arc::new(
            SqliteStore::open(&home.path().join("sessions.db"))
                .await
                .unwrap(),
        );
        let server = MockServer::start(script).await.unwrap();
        let client: Arc<dyn ModelClient> = match wire {
            Wire::Anthropic => {
                let config =
                    ClientConfig::new(server.anthropic_base_url(), Some("test-key".into()));
                Arc::new(AnthropicClient::new(config))
            }
            Wire::OpenAi => {
                let config = ClientConfig::new(server.openai_base_url(), Some("test-key".into()));
                Arc::new(OpenAiChatClient::new(config))
            }
            Wire::OpenAiResponses => {
                let config = ClientConfig::new(server.openai_base_url(), Some("test-key".into()));
                Arc::new(OpenAiResponsesClient::new(config))
            }
            Wire::Gemini => {
                let config = ClientConfig::new(server.gemini_base_url(), Some("test-key".into()));
                Arc::new(GeminiClient::new(config))
            }
        };
        let mut config = AgentConfig::new("mock-model", "You are a test agent.");
        config.permissions.mode = PermissionMode::BypassPermissions;
        config.retry = fast_retries();
        if checkpoints == Checkpoints::On {
            let dir = Checkpointer::dir_for(&home.path().join("checkpoints"), workspace.path());
            config.checkpoints = Some(Arc::new(Checkpointer::new(dir, workspace.path())));
        }
        configure(&mut config);
        let agent = Agent::new(
            client.clone(),
            store.clone(),
            tools,
            Arc::new(Workspace::new(workspace.path()).unwrap()),
            config,
        );
        Harness {
            workspace,
            _home: home,
            store,
            server,
            agent,
            client,
        }
    }

    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        self.workspace.path().join(rel)
    }

    pub async fn session(&self, prompt: &str) -> Session {
        let cwd = self.workspace.path().display().to_string();
        Session::create(self.store.as_ref(), &cwd, "mock", "mock-model", prompt)
            .await
            .unwrap()
    }

    /// Runs `prompt` to its end (bounded in time) and collects every event.
    pub async fn run(&self, prompt: &str) -> Finished {
        let session = self.session(prompt).await;
        self.continue_with(session, RunRequest::prompt(prompt))
            .await
    }

    /// Runs `request` in an existing session to its end (bounded in time).
    pub async fn continue_with(&self, session: Session, request: RunRequest) -> Finished {
        let mut run = self.agent.start(session, request);
        let mut events = Vec::new();
        let collect = async {
            while let Some(event) = run.events.next().await {
                events.push(event);
            }
        };
        tokio::time::timeout(Duration::from_secs(120), collect)
            .await
            .expect("the run did not finish within 120 s");
        let session = run.finish().await.unwrap();
        let summary = match events.last() {
            Some(Event::RunFinished(summary)) => summary.clone(),
            other => panic!("the last event is not RunFinished: {other:?}"),
        };
        Finished {
            events,
            summary,
            session,
        }
    }

    pub async fn stored(&self, session: &Session) -> Vec<Message> {
        self.store.load_messages(session.id()).await.unwrap()
    }

    /// The recorded request bodies, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.server.requests().into_iter().map(|r| r.body).collect()
    }
}

pub fn call(name: &str, arguments: Value) -> Item {
    Item::ToolCall {
        id: None,
        name: name.into(),
        arguments,
        fragments: None,
    }
}

pub fn text(t: &str) -> Item {
    Item::Text(t.into())
}

/// The tool results a recorded request carries, as (call id, content, is_error),
/// whatever its wire format.
pub fn tool_results_in(body: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    // OpenAI Responses: `function_call_output` items.
    for item in body["input"].as_array().into_iter().flatten() {
        if item["type"] == "function_call_output" {
            // No error flag on this wire: the adapter says so in the text.
            let output = item["output"].as_str().unwrap_or("");
            let (text, is_error) = match output.strip_prefix("Error: ") {
                Some(rest) => (rest, true),
                None => (output, false),
            };
            out.push((
                item["call_id"].as_str().unwrap_or("").to_string(),
                text.to_string(),
                is_error,
            ));
        }
    }
    // Gemini: `functionResponse` parts (no ids on the wire: the name stands in).
    for content in body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            let response = &part["functionResponse"];
            if response.is_object() {
                let (text, is_error) = match response["response"].get("error") {
                    Some(error) => (error.as_str().unwrap_or("").to_string(), true),
                    None => (
                        response["response"]["output"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                        false,
                    ),
                };
                out.push((
                    response["name"].as_str().unwrap_or("").to_string(),
                    text,
                    is_error,
                ));
            }
        }
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        if message["role"] == "tool" {
            out.push((
                message["tool_call_id"].as_str().unwrap_or("").to_string(),
                message["content"].as_str().unwrap_or("").to_string(),
                false,
            ));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let content = match &block["content"] {
                    Value::String(s) => s.clone(),
                    Value::Array(items) => items
                        .iter()
                        .filter_map(|i| i["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                out.push((
                    block["tool_use_id"].as_str().unwrap_or("").to_string(),
                    content,
                    block["is_error"].as_bool().unwrap_or(false),
                ));
            }
        }
    }
    out
}

/// The tool call ids of a recorded request's assistant messages, in order.
pub fn tool_call_ids_in(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for item in body["input"].as_array().into_iter().flatten() {
        if item["type"] == "function_call" {
            out.push(item["call_id"].as_str().unwrap_or("").to_string());
        }
    }
    for content in body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(name) = part["functionCall"]["name"].as_str() {
                out.push(name.to_string());
            }
        }
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            out.push(call["id"].as_str().unwrap_or("").to_string());
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_use" {
                out.push(block["id"].as_str().unwrap_or("").to_string());
            }
        }
    }
    out
}

/// A short name for each event, for asserting on sequences.
pub fn kinds(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RunStarted { .. } => Some("run_started"),
            Event::TurnStarted { .. } => Some("turn_started"),
            Event::ToolCallReady { .. } => Some("tool_call_ready"),
            Event::ToolResult { .. } => Some("tool_result"),
            Event::TurnCompleted { .. } => Some("turn_completed"),
            Event::RunFinished(_) => Some("run_finished"),
            _ => None,
        })
        .collect()
}

/// The tool results among the events, in order.
pub fn results(events: &[Event]) -> Vec<&gyre_protocol::ToolResult> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolResult { result, .. } => Some(result),
            _ => None,
        })
        .collect()
}

/// Asserts that a recorded request pairs every tool call with exactly one
/// result, in the message right after it, and holds no other result (the
/// Anthropic and OpenAI Chat wires); returns the call ids in order.
pub fn assert_valid_pairing(wire: Wire, body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().expect("a messages array");
    let mut all_calls = Vec::new();
    let mut expected: Vec<String> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        let calls: Vec<String> = match wire {
            Wire::Anthropic => message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap().to_string())
                .collect(),
            Wire::OpenAi => message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect(),
            other => panic!("pairing is checked on Anthropic and OpenAI, not {other:?}"),
        };
        let results: Vec<String> = match wire {
            Wire::Anthropic if message["role"] == "user" => {
                let blocks = message["content"].as_array().cloned().unwrap_or_default();
                let first_other = blocks
                    .iter()
                    .position(|b| b["type"] != "tool_result")
                    .unwrap_or(blocks.len());
                assert!(
                    blocks[first_other..]
                        .iter()
                        .all(|b| b["type"] != "tool_result"),
                    "results come first in message {i}: {message}"
                );
                blocks[..first_other]
                    .iter()
                    .map(|b| b["tool_use_id"].as_str().unwrap().to_string())
                    .collect()
            }
            Wire::OpenAi => {
                // The `tool` messages that follow one another from here.
                let mut ids = Vec::new();
                while i < messages.len() && messages[i]["role"] == "tool" {
                    ids.push(messages[i]["tool_call_id"].as_str().unwrap().to_string());
                    i += 1;
                }
                if !ids.is_empty() {
                    i -= 1;
                }
                ids
            }
            _ => Vec::new(),
        };
        assert_eq!(
            results,
            std::mem::take(&mut expected),
            "message {i} must answer the calls before it, once each, in order: {body}"
        );
        all_calls.extend(calls.iter().cloned());
        expected = calls;
        i += 1;
    }
    assert!(
        expected.is_empty(),
        "calls at the end without results: {body}"
    );
    let mut unique = all_calls.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all_calls.len(), "call ids are unique: {body}");
    all_calls
}

/// Text every summarising request carries (cached and transcript forms).
pub const SUMMARY_MARK: &str = "so that the work can continue without it";

/// A scripted answer of `items`, `times` times (`None`: always).
pub fn step(when: gyre_mock::When, times: Option<u32>, items: Vec<Item>) -> gyre_mock::Step {
    gyre_mock::Step {
        when,
        times,
        reply: gyre_mock::Reply::Stream(gyre_mock::StreamReply {
            items,
            ..gyre_mock::StreamReply::default()
        }),
    }
}

/// A session under sustained context pressure: `turns` answers, each
/// printing `file` again with `bash`, in a `window`-token window; summary
/// requests get a short summary.
pub fn printing_script(file: &str, turns: usize, window: u64) -> Script {
    let summary = gyre_mock::When {
        body_contains: Some(SUMMARY_MARK.into()),
        ..gyre_mock::When::default()
    };
    let mut steps = vec![step(
        summary,
        None,
        vec![text(&format!(
            "Summary: the agent printed {file} turn after turn."
        ))],
    )];
    for turn in 0..turns - 1 {
        steps.push(step(
            gyre_mock::When::default(),
            Some(1),
            vec![
                text(&format!("turn {turn}: printing the file again.")),
                call(
                    "bash",
                    serde_json::json!({"command": format!("echo marker-{turn}; cat {file}")}),
                ),
            ],
        ));
    }
    steps.push(step(
        gyre_mock::When::default(),
        None,
        vec![text("all done")],
    ));
    Script::new(steps).with_context_window(window)
}
