//! What Enter does with the editor's text: a prompt for the model, a
//! `/command` for the app, or a `!command` for the shell; and the slash
//! commands themselves.
//!
//! Invariants:
//! - A command never panics on its input and never leaves the app
//!   half-switched: an agent, model or mode that cannot be built leaves the
//!   previous one in place and says why; an unknown command is a notice.
//! - Switching agent, model or mode applies to the runs that start after
//!   it (the running one keeps its agent); queued prompts get the new one.

use std::sync::Arc;

use gyre_core::{Abort, Agent, ManualCompaction, PermissionMode, RunRequest};
use gyre_protocol::Event;

use super::{App, Backend, Background, Modal, RewindPicker, RunKind, SessionInfo};
use crate::input::complete::CommandName;
use crate::render::text::format_tokens;
use crate::transcript::{NoticeKind, Transcript};
use crate::view::{HelpEntry, SessionEntry, SessionPicker};

/// One slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    /// How it is typed, for help.
    pub usage: &'static str,
    pub description: &'static str,
}

const fn command(
    name: &'static str,
    usage: &'static str,
    description: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        usage,
        description,
    }
}

/// The slash commands, in the order help and completion list them.
pub const COMMANDS: [CommandSpec; 14] = [
    command("help", "/help", "keys and commands"),
    command(
        "model",
        "/model [NAME]",
        "show or switch the model of the next prompts",
    ),
    command(
        "agents",
        "/agents [NAME]",
        "list the agents, or switch to NAME",
    ),
    command(
        "compact",
        "/compact [FOCUS]",
        "summarise older turns to free context",
    ),
    command("clear", "/clear", "start a new session"),
    command(
        "resume",
        "/resume",
        "open a stored session of this directory",
    ),
    command(
        "rewind",
        "/rewind",
        "go back to before a prompt: files and conversation",
    ),
    command(
        "sessions",
        "/sessions",
        "list the sessions of this directory",
    ),
    command("todos", "/todos", "show or hide the todo panel (Ctrl-T)"),
    command("cost", "/cost", "tokens and cost of this session"),
    command(
        "permissions",
        "/permissions [MODE]",
        "show the rules, or switch mode",
    ),
    command("mcp", "/mcp", "the MCP servers of this workspace"),
    command(
        "effort",
        "/effort [LEVEL]",
        "show or set the reasoning effort",
    ),
    command("quit", "/quit", "leave gyre (also Ctrl-C twice, Ctrl-D)"),
];

/// The keys, as help lists them (help must fit 80×24 unwrapped).
const KEYS: [(&str, &str); 8] = [
    ("Enter", "send (queued while a run is busy)"),
    (
        "Alt+Enter · Ctrl-J",
        "new line (Shift+Enter where the terminal tells it)",
    ),
    (
        "Esc",
        "interrupt the turn · close a popup · stop a !command",
    ),
    (
        "Ctrl-C · Ctrl-D",
        "clear the input, twice: quit · quit when empty",
    ),
    ("Up · Down", "earlier prompts"),
    ("PgUp · PgDn · wheel", "scroll the conversation"),
    ("Ctrl-T · Ctrl-R", "todo panel · expand reasoning"),
    (
        "@path · !command",
        "mention a file · run a command here (Tab completes)",
    ),
];

pub(super) fn help_entries() -> Vec<HelpEntry<'static>> {
    KEYS.iter()
        .map(|(keys, description)| HelpEntry { keys, description })
        .chain(COMMANDS.iter().map(|c| HelpEntry {
            keys: c.usage,
            description: c.description,
        }))
        .collect()
}

pub(super) fn command_names() -> Vec<CommandName<'static>> {
    COMMANDS
        .iter()
        .map(|c| CommandName {
            name: c.name,
            description: c.description,
        })
        .collect()
}

impl<B: Backend> App<B> {
    /// Enter: sends the editor's text where it goes.
    pub(super) async fn submit(&mut self) {
        let text = self.editor.text().trim().to_string();
        if text.is_empty() {
            return;
        }
        self.editor.clear();
        self.completion = None;
        self.dismissed = None;
        self.history.push(&text);
        self.follow();
        if let Some(line) = text.strip_prefix('/') {
            self.command(line).await;
        } else if let Some(command) = text.strip_prefix('!') {
            self.shell_command(command.trim());
        } else {
            self.send_prompt(text).await;
        }
    }

    pub(super) async fn send_prompt(&mut self, text: String) {
        if !self.held.is_empty() {
            self.held.push(text);
            return;
        }
        let starting = self.backend.mcp_starting();
        if !starting.is_empty() {
            self.notice(
                NoticeKind::Info,
                format!(
                    "Waiting for the MCP servers {} to start, so that their tools are offered; Esc sends the prompt now.",
                    starting.join(", ")
                ),
            );
            self.held.push(text);
            let started = self.backend.mcp_started();
            let tx = self.bg_tx.clone();
            tokio::spawn(async move {
                started.await;
                let _ = tx.send(Background::McpSettled).await;
            });
            return;
        }
        self.send_now(text).await;
    }

    /// Sends the prompts held for the MCP servers, in order.
    pub(super) async fn release_held(&mut self) {
        for text in std::mem::take(&mut self.held) {
            self.send_now(text).await;
        }
    }

    async fn send_now(&mut self, text: String) {
        let live = match &self.live {
            Some(live) => live.clone(),
            None => match self.backend.new_session(&text, &self.choice).await {
                Ok(live) => {
                    self.set_live(Some(live.clone()));
                    self.transcript.status_mut().session_id = Some(live.id().to_string());
                    live
                }
                Err(e) => {
                    self.notice(NoticeKind::Error, e.to_string());
                    self.editor.set_text(&text);
                    return;
                }
            },
        };
        let images = self.prompt_images(&text);
        let submitted = live.submit(RunRequest {
            images,
            ..RunRequest::prompt(text.clone())
        });
        self.runs.insert(submitted.run(), RunKind::Prompt(text));
        self.refresh_queue();
    }

    async fn command(&mut self, line: &str) {
        let (name, arg) = match line.split_once(char::is_whitespace) {
            Some((name, arg)) => (name, arg.trim()),
            None => (line, ""),
        };
        let arg = (!arg.is_empty()).then_some(arg);
        match name {
            "help" | "?" => self.modal = Some(Modal::Help),
            "model" => self.switch_model(arg),
            "agents" | "agent" => self.switch_agent(arg),
            "compact" => self.compact(arg),
            "clear" | "new" => self.clear(),
            "resume" => self.pick_session().await,
            "rewind" => self.pick_rewind().await,
            "sessions" => self.list_sessions().await,
            "todos" => self.show_todos = !self.show_todos,
            "cost" => self.cost(),
            "permissions" => self.permissions_command(arg),
            "mcp" => self.mcp(),
            "effort" => self.effort_command(arg),
            "quit" | "exit" => self.quit = true,
            other => self.custom_command(other, line).await,
        }
    }

    /// The agent the next prompt runs.
    pub(super) fn current_agent(&self) -> Option<Arc<Agent>> {
        match &self.live {
            Some(live) => Some(live.agent()),
            None => self.backend.agent(&self.choice).ok(),
        }
    }

    /// Builds the agent of `choice`; on success it runs the next prompts.
    pub(super) fn apply_choice(&mut self, choice: super::AgentChoice) -> bool {
        match self.backend.agent(&choice) {
            Ok(agent) => {
                self.choice = choice;
                if let Some(live) = &self.live {
                    live.set_agent(agent);
                }
                self.refresh_agent_status();
                true
            }
            Err(e) => {
                self.notice(NoticeKind::Error, e.to_string());
                false
            }
        }
    }

    fn switch_agent(&mut self, name: Option<&str>) {
        let Some(name) = name else {
            let current = self.transcript.status().agent.clone();
            let mut text = String::from("Agents (/agents NAME switches):");
            for agent in self.backend.agents() {
                let mark = if agent.name == current { "›" } else { " " };
                text.push_str(&format!("\n{mark} {}  {}", agent.name, agent.description));
            }
            self.notice(NoticeKind::Command, text);
            return;
        };
        let mut choice = self.choice.clone();
        choice.agent = Some(name.to_string());
        if self.apply_choice(choice) {
            self.notice(
                NoticeKind::Info,
                format!("Agent {name} for the next prompts."),
            );
        }
    }

    fn permissions_command(&mut self, mode: Option<&str>) {
        if let Some(mode) = mode {
            let mode: PermissionMode = match mode.parse() {
                Ok(mode) => mode,
                Err(e) => return self.notice(NoticeKind::Warning, e),
            };
            let mut choice = self.choice.clone();
            choice.mode = Some(mode);
            if self.apply_choice(choice) {
                self.notice(
                    NoticeKind::Info,
                    format!("Permission mode {} for the next prompts.", mode.as_str()),
                );
            }
            return;
        }
        let Some(agent) = self.current_agent() else {
            return;
        };
        let permissions = &agent.config().permissions;
        let mut text = format!("Permission mode: {}", permissions.mode.as_str());
        let lists = [
            ("allow", &permissions.allow),
            ("ask", &permissions.ask),
            ("deny", &permissions.deny),
        ];
        for (kind, rules) in lists {
            for rule in rules.iter() {
                text.push_str(&format!("\n  {kind:<5} {rule}"));
            }
        }
        let always = self
            .live
            .as_ref()
            .and_then(|live| live.with_session(|s| s.always_rules()))
            .unwrap_or_default();
        for rule in always {
            text.push_str(&format!("\n  allow {rule}  (always, this session)"));
        }
        text.push_str(&format!(
            "\nModes: {}; /permissions MODE switches.",
            PermissionMode::NAMES.join(", ")
        ));
        self.notice(NoticeKind::Command, text);
    }

    fn compact(&mut self, focus: Option<&str>) {
        let Some(live) = self.live.clone() else {
            return self.notice(NoticeKind::Info, "Nothing to compact yet.");
        };
        if live.with_session(|s| s.history.is_empty()) == Some(true) {
            return self.notice(NoticeKind::Info, "Nothing to compact yet.");
        }
        let submitted = live.submit(RunRequest {
            prompt: None,
            images: Vec::new(),
            compact: Some(ManualCompaction {
                instructions: focus.map(str::to_string),
            }),
        });
        self.runs.insert(submitted.run(), RunKind::Compact);
        self.refresh_queue();
    }

    /// A new session: the old one's run and queue stop, in the background.
    fn clear(&mut self) {
        if let Some(old) = self.live.take() {
            old.abort(Abort::Everything);
            tokio::spawn(async move { old.close().await });
        }
        self.set_live(None);
        self.transcript = Transcript::with_palette(self.palette);
        self.refresh_agent_status();
        self.follow();
    }

    async fn sessions(&mut self) -> Option<Vec<SessionInfo>> {
        match self.backend.list_sessions().await {
            Ok(sessions) => Some(sessions),
            Err(e) => {
                self.notice(NoticeKind::Error, e.to_string());
                None
            }
        }
    }

    async fn pick_session(&mut self) {
        let Some(sessions) = self.sessions().await else {
            return;
        };
        let current = self.live.as_ref().map(|l| l.id().to_string());
        let now = gyre_core::now_ms();
        let entries: Vec<SessionEntry> = sessions
            .into_iter()
            .filter(|s| Some(&s.id) != current.as_ref())
            .map(|s| SessionEntry {
                updated: ago(s.updated_at_ms, now),
                title: s.title,
                id: s.id,
            })
            .collect();
        if entries.is_empty() {
            return self.notice(
                NoticeKind::Info,
                "No other session has run in this directory yet.",
            );
        }
        self.modal = Some(Modal::Sessions(SessionPicker::new(entries)));
    }

    /// Opens stored session `id` in place of the current one.
    pub(super) async fn resume(&mut self, id: &str) {
        match self.backend.open_session(id, &self.choice).await {
            Ok(opened) => {
                if let Some(old) = self.live.take() {
                    old.abort(Abort::Everything);
                    tokio::spawn(async move { old.close().await });
                }
                let short = gyre_core::short_id(id).to_string();
                self.show_opened(opened).await;
                self.notice(NoticeKind::Info, format!("Resumed session {short}."));
            }
            Err(e) => self.notice(NoticeKind::Error, e.to_string()),
        }
    }

    async fn list_sessions(&mut self) {
        let Some(sessions) = self.sessions().await else {
            return;
        };
        if sessions.is_empty() {
            return self.notice(
                NoticeKind::Info,
                "No session has run in this directory yet.",
            );
        }
        let current = self.live.as_ref().map(|l| l.id().to_string());
        let now = gyre_core::now_ms();
        let mut text = String::from("Sessions of this directory (/resume opens one):");
        for s in sessions.iter().take(50) {
            let mark = if Some(&s.id) == current.as_ref() {
                "›"
            } else {
                " "
            };
            text.push_str(&format!(
                "\n{mark} {}  {:<12}  {}",
                gyre_core::short_id(&s.id),
                ago(s.updated_at_ms, now),
                s.title
            ));
        }
        if sessions.len() > 50 {
            text.push_str(&format!("\n  … and {} more", sessions.len() - 50));
        }
        self.notice(NoticeKind::Command, text);
    }

    async fn pick_rewind(&mut self) {
        let Some(live) = self.live.clone() else {
            return self.notice(NoticeKind::Info, "No prompt to rewind to yet.");
        };
        if live.is_busy() {
            return self.notice(
                NoticeKind::Warning,
                "Rewind needs the session idle: wait for the run, or press Esc to stop it.",
            );
        }
        match self.backend.messages(live.id()).await {
            Ok(messages) => match RewindPicker::from_messages(&messages) {
                Some(picker) => self.modal = Some(Modal::Rewind(picker)),
                None => self.notice(NoticeKind::Info, "No prompt to rewind to yet."),
            },
            Err(e) => self.notice(NoticeKind::Error, e.to_string()),
        }
    }

    /// Rewinds to before `prompt`, opens the session again and puts the
    /// prompt back in the editor.
    pub(super) async fn rewind_to(&mut self, prompt: super::picker::Prompt) {
        let Some(live) = self.live.clone() else {
            return;
        };
        if live.is_busy() {
            return self.notice(NoticeKind::Warning, "A run started: rewind when it ends.");
        }
        let id = live.id().to_string();
        let said = match self.backend.rewind(&id, &prompt.message_id).await {
            Ok(said) => said,
            Err(e) => return self.notice(NoticeKind::Error, e.to_string()),
        };
        match self.backend.open_session(&id, &self.choice).await {
            Ok(opened) => {
                self.show_opened(opened).await;
                self.notice(NoticeKind::Info, said);
                self.editor.set_text(&prompt.text);
            }
            Err(e) => self.notice(NoticeKind::Error, e.to_string()),
        }
    }

    fn cost(&mut self) {
        let status = self.transcript.status();
        let usage = &status.usage;
        let pricing = self.current_pricing();
        let cost = super::model::cost_line(status.cost_usd, &status.model, pricing.as_ref());
        let saved = pricing.map_or(String::new(), |p| {
            format!("; the cache saved ${:.4}", p.cache_savings(usage))
        });
        let text = format!(
            "Tokens this session: {} in ({} read from cache, {} written to it, {} uncached), {} out\n\
             Cache: {:.1} % of the input served from it{saved}\nCost: {cost}",
            format_tokens(usage.prompt_tokens()),
            format_tokens(usage.cache_read_tokens),
            format_tokens(usage.cache_write_tokens),
            format_tokens(usage.input_tokens),
            format_tokens(usage.output_tokens),
            usage.cache_hit_ratio() * 100.0,
        );
        self.notice(NoticeKind::Command, text);
    }

    fn mcp(&mut self) {
        let servers = self.backend.mcp_servers();
        if servers.is_empty() {
            return self.notice(
                NoticeKind::Info,
                "No MCP servers: add them to .mcp.json (mcpServers) or to [mcp_servers] in the config.",
            );
        }
        let mut text = String::from("MCP servers:");
        for line in servers {
            text.push_str(&format!("\n  {line}"));
        }
        self.notice(NoticeKind::Command, text);
    }

    /// `!command`: runs it in the workspace and shows it as a `bash` cell.
    fn shell_command(&mut self, command: &str) {
        if command.is_empty() {
            return self.notice(NoticeKind::Info, "Type a command after ! to run it here.");
        }
        if self.shell.is_some() {
            return self.notice(
                NoticeKind::Warning,
                "A command is already running; Esc stops it.",
            );
        }
        let Some(workspace) = self.workspace.clone() else {
            return self.notice(NoticeKind::Error, "The workspace cannot be opened.");
        };
        self.shell_count += 1;
        let call_id = format!("user-shell-{}", self.shell_count);
        let now = tokio::time::Instant::now();
        let started = Event::ToolCallStarted {
            call_id: call_id.clone(),
            name: "bash".into(),
        };
        self.transcript.apply(&started, now);
        let ready = Event::ToolCallReady {
            call: crate::shell::call_of(&call_id, command),
        };
        self.transcript.apply(&ready, now);
        let job = crate::shell::start(workspace, call_id, command.to_string(), self.bg_tx.clone());
        self.shell = Some(job);
    }
}

/// `just now`, `5 min ago`, `3 h ago`, `2 days ago`.
pub(super) fn ago(then_ms: i64, now_ms: i64) -> String {
    let minutes = (now_ms - then_ms).max(0) / 60_000;
    match minutes {
        0 => "just now".into(),
        1..60 => format!("{minutes} min ago"),
        60..1440 => format!("{} h ago", minutes / 60),
        1440..2880 => "yesterday".into(),
        _ => format!("{} days ago", minutes / 1440),
    }
}
