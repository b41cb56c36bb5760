//! The app: the state of an interactive session and how keys, the live
//! session's updates and background work change it. No terminal here: the
//! event loop ([`crate::event_loop`]) feeds it, and tests feed it directly
//! and draw it on ratatui's `TestBackend`.
//!
//! Invariants:
//! - Every handler marks the app dirty when the screen may change; the loop
//!   draws only dirty frames. [`App::next_wake`] is `None` unless something
//!   moves with time alone (a spinner, a countdown, the quit hint), so an
//!   idle app is never woken.
//! - A session is created on the first prompt (titled by it), not at start:
//!   opening and closing the TUI stores nothing.
//! - The live session is the only way to the agent: prompts go in with
//!   [`LiveSession::submit`] (queued behind a busy run, seed 001), answers
//!   with [`LiveSession::answer_permission`], Esc with
//!   [`LiveSession::abort`]. Replacing it bumps [`App::epoch`], and the loop
//!   then reads the new one's updates from its start.
//! - A prompt is shown in the transcript when its run starts (before that
//!   it is listed as queued), so the transcript's order is the runs' order.
//! - Time is read from tokio's clock ([`tokio::time::Instant`]), never
//!   `std::time::Instant`: the answer guard, the quit window and the
//!   spinners then follow a test's paused clock (`tokio::time::pause`,
//!   `advance`) instead of the wall clock.

mod commands;
mod custom;
mod effort;
mod images;
mod inline;
mod keys;
mod model;
mod output;
mod picker;
mod updates;

pub mod backend;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use gyre_core::{LiveSession, Reader};
use gyre_protocol::{Event, Message};
use gyre_tools::Workspace;
use ratatui::Frame;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub use backend::{
    AgentChoice, AgentInfo, Backend, BackendError, BackendResult, CustomCommandInfo,
    ExpandedCommand, Opened, SessionInfo,
};
pub use commands::{COMMANDS, CommandSpec};
pub use picker::RewindPicker;

use crate::input::complete::Completion;
use crate::input::editor::Editor;
use crate::input::history::History;
use crate::palette::Palette;
use crate::shell::{ShellDone, ShellJob};
use crate::transcript::{NoticeKind, Transcript};
use crate::view::{self, Overlay, PermissionDialog, Screen, ScrollState, SessionPicker};

/// How long after a first Ctrl-C a second one quits.
pub const QUIT_WINDOW: Duration = Duration::from_secs(1);
/// How often the screen is redrawn while something animates (a spinner
/// frame).
pub const ANIMATION_TICK: Duration = Duration::from_millis(80);
/// How long quitting waits for a running run to record its end.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);
/// Messages of background work waiting for the loop.
const BACKGROUND_QUEUE: usize = 256;
/// How long a permission dialog ignores answers after it appears, so keys
/// typed for the editor do not answer it by chance.
pub const ANSWER_GUARD: Duration = Duration::from_millis(300);
/// Rows a mouse wheel step scrolls.
const WHEEL_ROWS: isize = 3;

/// What background work reports to the app.
#[derive(Debug)]
pub enum Background {
    /// The workspace's paths for `@` completion.
    Paths(Arc<Vec<String>>),
    /// No MCP server of the workspace is starting any more.
    McpSettled,
    /// Output of the running `!command`.
    ShellOutput {
        call_id: String,
        chunk: String,
    },
    ShellDone(ShellDone),
}

/// What a submitted run is, to show it when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RunKind {
    Prompt(String),
    Compact,
}

/// A box over the screen that takes the keys.
#[derive(Debug)]
enum Modal {
    Help,
    Sessions(SessionPicker),
    Rewind(RewindPicker),
    /// Ctrl-O: a tool call's full output.
    Output(crate::view::OutputView),
}

/// What the app was started with.
#[derive(Debug, Default)]
pub struct AppOptions {
    pub palette: Palette,
    /// The agent, model and mode of the first prompts.
    pub choice: AgentChoice,
    /// A stored session to go on with (`--resume`, `--continue`).
    pub opened: Option<Opened>,
    /// The screen is inline: finished cells go to the terminal's
    /// scrollback ([`App::take_history`]) and only the rest is drawn.
    pub inline: bool,
}

/// The interactive session's state.
pub struct App<B: Backend> {
    backend: B,
    palette: Palette,
    live: Option<Arc<LiveSession>>,
    epoch: u64,
    choice: AgentChoice,
    transcript: Transcript,
    editor: Editor,
    history: History,
    completion: Option<Completion>,
    /// Where the word begins whose completion the user closed with Esc
    /// (row, column): it stays closed while the cursor is in that word.
    dismissed: Option<(usize, usize)>,
    paths: Option<Arc<Vec<String>>>,
    listing_paths: bool,
    modal: Option<Modal>,
    permissions: VecDeque<PermissionDialog>,
    /// When the front permission dialog appeared.
    permission_since: Instant,
    show_todos: bool,
    runs: HashMap<u64, RunKind>,
    queued: Vec<String>,
    /// Prompts held until the workspace's MCP servers have started (so
    /// that their tools are offered from the first request); Esc sends
    /// them at once.
    held: Vec<String>,
    scroll: ScrollState,
    page_rows: u16,
    quit_armed: Option<Instant>,
    shell: Option<ShellJob>,
    shell_count: u64,
    workspace: Option<Arc<Workspace>>,
    bg_tx: mpsc::Sender<Background>,
    bg_rx: Option<mpsc::Receiver<Background>>,
    dirty: bool,
    quit: bool,
    /// The session closed at shutdown, when it holds messages (for the
    /// exit line).
    closed_session: Option<String>,
    inline: bool,
}

impl<B: Backend> std::fmt::Debug for App<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("live", &self.live)
            .field("transcript", &self.transcript)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> App<B> {
    /// The app over `backend`, ready for input.
    pub async fn new(backend: B, options: AppOptions) -> Self {
        let history = match backend.history_file() {
            Some(file) => History::load(file).await,
            None => History::in_memory(),
        };
        let workspace = Workspace::new(backend.workspace()).ok().map(Arc::new);
        let (bg_tx, bg_rx) = mpsc::channel(BACKGROUND_QUEUE);
        let mut app = Self {
            backend,
            palette: options.palette,
            live: None,
            epoch: 0,
            choice: options.choice,
            transcript: Transcript::with_palette(options.palette),
            editor: Editor::new(),
            history,
            completion: None,
            dismissed: None,
            paths: None,
            listing_paths: false,
            modal: None,
            permissions: VecDeque::new(),
            permission_since: Instant::now(),
            show_todos: true,
            runs: HashMap::new(),
            queued: Vec::new(),
            held: Vec::new(),
            scroll: ScrollState::BOTTOM,
            page_rows: 10,
            quit_armed: None,
            shell: None,
            shell_count: 0,
            workspace,
            bg_tx,
            bg_rx: Some(bg_rx),
            dirty: true,
            quit: false,
            closed_session: None,
            inline: options.inline,
        };
        app.refresh_agent_status();
        if let Some(opened) = options.opened {
            app.show_opened(opened).await;
        }
        app
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend back (the app's session is dropped, not closed).
    pub fn into_backend(self) -> B {
        self.backend
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn editor(&self) -> &Editor {
        &self.editor
    }

    /// The live session (`None` before the first prompt of a new session).
    pub fn live(&self) -> Option<&Arc<LiveSession>> {
        self.live.as_ref()
    }

    /// Changes whenever the live session is replaced.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A reader of the live session's updates from its first.
    pub fn reader(&self) -> Option<Reader> {
        self.live.as_ref().map(|live| live.read_after(0))
    }

    /// The receiver of background work's messages (the loop takes it once).
    pub fn take_background(&mut self) -> Option<mpsc::Receiver<Background>> {
        self.bg_rx.take()
    }

    /// Prompts waiting behind the running run.
    pub fn queued(&self) -> &[String] {
        &self.queued
    }

    /// The permission request shown (others wait behind it).
    pub fn permission(&self) -> Option<&PermissionDialog> {
        self.permissions.front()
    }

    pub fn completion(&self) -> Option<&Completion> {
        self.completion.as_ref()
    }

    pub fn is_picking_session(&self) -> bool {
        matches!(self.modal, Some(Modal::Sessions(_)))
    }

    pub fn is_picking_rewind(&self) -> bool {
        matches!(self.modal, Some(Modal::Rewind(_)))
    }

    /// Whether Ctrl-O's output view is open.
    pub fn output_view(&self) -> Option<&crate::view::OutputView> {
        match &self.modal {
            Some(Modal::Output(view)) => Some(view),
            _ => None,
        }
    }

    pub fn is_showing_help(&self) -> bool {
        matches!(self.modal, Some(Modal::Help))
    }

    pub fn shows_todos(&self) -> bool {
        self.show_todos
    }

    pub fn is_running_shell(&self) -> bool {
        self.shell.is_some()
    }

    pub fn choice(&self) -> &AgentChoice {
        &self.choice
    }

    pub fn scroll(&self) -> ScrollState {
        self.scroll
    }

    /// Whether the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// Whether the screen may have changed since the last draw.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// When the screen next changes by itself, given when the last frame
    /// was drawn (`None`: only on input).
    pub fn next_wake(&self, last_frame: Instant) -> Option<Instant> {
        let animating = self.transcript.is_animating() || self.shell.is_some();
        let tick = animating.then(|| last_frame + ANIMATION_TICK);
        let hint = self.quit_armed.map(|at| at + QUIT_WINDOW);
        match (tick, hint) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time passed: animations move, the quit hint may expire.
    pub fn tick(&mut self, now: Instant) {
        if self
            .quit_armed
            .is_some_and(|at| now.saturating_duration_since(at) >= QUIT_WINDOW)
        {
            self.quit_armed = None;
            self.editor.set_placeholder(None);
        }
        self.dirty = true;
    }

    /// A message of background work.
    pub async fn handle_background(&mut self, message: Background) {
        self.dirty = true;
        let now = Instant::now();
        match message {
            Background::McpSettled => self.release_held().await,
            Background::Paths(paths) => {
                self.paths = Some(paths);
                self.update_completion();
            }
            Background::ShellOutput { call_id, chunk } => {
                let event = Event::ToolProgress {
                    call_id,
                    output: chunk,
                };
                self.transcript.apply(&event, now);
            }
            Background::ShellDone(done) => {
                if self
                    .shell
                    .as_ref()
                    .is_some_and(|job| job.call_id == done.call_id)
                {
                    self.shell = None;
                }
                let output = done.result.text_content();
                let event = Event::ToolResult {
                    title: done.title,
                    result: done.result,
                };
                self.transcript.apply(&event, now);
                let output = output.trim_end();
                if !output.is_empty() {
                    self.transcript.push_notice(NoticeKind::Command, output);
                }
            }
        }
    }

    /// Draws the whole screen.
    pub fn draw(&mut self, frame: &mut Frame) {
        let now = Instant::now();
        let help = commands::help_entries();
        let screen = self.screen(&help, now);
        let drawn = view::draw(frame, &screen);
        if self.permissions.is_empty() {
            match &mut self.modal {
                Some(Modal::Rewind(picker)) => picker::draw(frame, picker, self.palette),
                Some(Modal::Output(view)) => view.draw(frame, frame.area(), self.palette),
                _ => {}
            }
        }
        self.scroll = drawn.scroll;
        self.page_rows = drawn.transcript_rows.max(1);
        self.dirty = false;
    }

    /// What a frame shows now.
    fn screen<'a>(&'a self, help: &'a [view::HelpEntry<'a>], now: Instant) -> Screen<'a> {
        let overlay = if let Some(dialog) = self.permissions.front() {
            Some(Overlay::Permission(dialog))
        } else {
            match &self.modal {
                Some(Modal::Help) => Some(Overlay::Help(help)),
                Some(Modal::Sessions(picker)) => Some(Overlay::SessionPicker(picker)),
                Some(Modal::Rewind(_) | Modal::Output(_)) => None,
                None => self
                    .completion
                    .as_ref()
                    .map(|c| Overlay::Completion(&c.popup)),
            }
        };
        let mut screen = Screen::new(&self.transcript, self.editor.textarea(), now);
        screen.scroll = self.scroll;
        screen.overlay = overlay;
        screen.todos = self.show_todos.then(|| self.transcript.todos());
        screen.queued = &self.queued;
        if self.inline {
            screen.first_cell = self.transcript.committed();
        }
        screen
    }

    /// Stops what runs (the run, the queue, a `!command`) and waits for the
    /// run to record its end and the prompt history to be written.
    pub async fn shutdown(&mut self) {
        if let Some(job) = self.shell.take() {
            job.kill();
        }
        if let Some(live) = self.live.take() {
            // Bounded: a run that does not stop must not keep the terminal.
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, live.close()).await;
            // A run still holding it has messages (its prompt at least).
            let has_messages = live.with_session(|s| !s.history.is_empty()).unwrap_or(true);
            self.closed_session = has_messages.then(|| live.id().to_string());
        }
        // The prompts typed last outlive the process.
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, self.history.close()).await;
    }

    /// The line printed once the terminal is restored: how to go on with
    /// the session [`App::shutdown`] closed, in the short form of its id
    /// (`None` for a session without messages, or none).
    pub fn exit_line(&self) -> Option<String> {
        let id = self.closed_session.as_deref()?;
        Some(format!(
            "To go on with this session: gyre --resume {}",
            gyre_core::short_id(id)
        ))
    }

    fn notice(&mut self, kind: NoticeKind, text: impl Into<String>) {
        self.transcript.push_notice(kind, text);
        self.scroll = ScrollState::BOTTOM;
        self.dirty = true;
    }

    /// Sets the status line's agent, model and mode from the agent the next
    /// prompt runs.
    fn refresh_agent_status(&mut self) {
        let agent = match &self.live {
            Some(live) => Ok(live.agent()),
            None => self.backend.agent(&self.choice),
        };
        let status = self.transcript.status_mut();
        match agent {
            Ok(agent) => {
                let config = agent.config();
                status.model = config.model.clone();
                status.agent = config.agent_name.clone();
                status.permission_mode = config.permissions.mode.as_str().to_string();
                status.effort = config
                    .sampling
                    .effort
                    .map_or_else(String::new, |e| e.as_str().to_string());
            }
            Err(e) => {
                let message = e.to_string();
                self.notice(NoticeKind::Error, message);
            }
        }
    }

    /// The queued prompts as the live session has them.
    fn refresh_queue(&mut self) {
        self.queued = match &self.live {
            Some(live) => live
                .queued()
                .into_iter()
                .map(|p| if p.is_empty() { "/compact".into() } else { p })
                .collect(),
            None => Vec::new(),
        };
        self.transcript.status_mut().queued = self.queued.len();
    }

    /// Switches to `live` (a new or opened session): the old one's reader
    /// stops, its requests and queue are forgotten.
    fn set_live(&mut self, live: Option<Arc<LiveSession>>) {
        self.live = live;
        self.epoch += 1;
        self.runs.clear();
        self.permissions.clear();
        self.refresh_queue();
    }

    /// Shows an opened stored session: its messages, its totals, todos and
    /// context gauge (as the loop would measure it before a request).
    async fn show_opened(&mut self, opened: Opened) {
        let Opened { live, messages } = opened;
        self.transcript = transcript_of(&messages, self.palette, &live);
        if let Some(usage) = gyre_core::context::usage_now(&live).await {
            self.transcript.status_mut().apply(&usage, Instant::now());
        }
        self.scroll = ScrollState::BOTTOM;
        self.set_live(Some(live));
        self.refresh_agent_status();
        self.dirty = true;
    }

    /// Starts listing the workspace's paths (once).
    fn list_paths(&mut self) {
        if self.listing_paths {
            return;
        }
        self.listing_paths = true;
        let root = self.backend.workspace().to_path_buf();
        let tx = self.bg_tx.clone();
        tokio::spawn(async move {
            let paths = tokio::task::spawn_blocking(move || crate::input::files::list(&root))
                .await
                .unwrap_or_default();
            let _ = tx.send(Background::Paths(Arc::new(paths))).await;
        });
    }

    /// Recomputes the completion for the word at the cursor.
    fn update_completion(&mut self) {
        let wanted = crate::input::complete::wanted(&self.editor);
        if wanted
            .as_ref()
            .is_some_and(|(kind, _)| *kind == crate::input::complete::CompletionKind::File)
        {
            self.list_paths();
        }
        if self.dismissed.is_some()
            && self.dismissed == wanted.map(|(_, token)| (token.row, token.start))
        {
            self.completion = None;
            return;
        }
        self.dismissed = None;
        if model::wants_completion(&self.editor) {
            let models = self.backend.models();
            let current = &self.transcript.status().model;
            self.completion = model::complete(&self.editor, &models, current);
            return;
        }
        let custom = self.backend.custom_commands();
        let names = custom::with_custom(commands::command_names(), &custom);
        let paths = self.paths.as_deref().map(Vec::as_slice);
        self.completion = crate::input::complete::complete(&self.editor, &names, paths);
    }
}

/// The transcript of a stored session, with its totals and todo list.
fn transcript_of(messages: &[Arc<Message>], palette: Palette, live: &LiveSession) -> Transcript {
    let mut transcript = Transcript::from_messages_with_palette(messages, palette);
    let stored = live.with_session(|session| {
        let (usage, cost) = session.state.run_totals();
        (usage, cost, session.state.todos.clone())
    });
    if let Some((usage, cost, todos)) = stored {
        transcript.apply(&Event::TodosUpdated { todos }, Instant::now());
        let status = transcript.status_mut();
        status.usage = usage;
        status.cost_usd = cost;
        status.session_id = Some(live.id().to_string());
    }
    transcript
}
