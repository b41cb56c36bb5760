//! The interactive UI end to end: the real `gyre` in a detached tmux
//! session (a real terminal of fixed size) against the scripted mock, keys
//! typed with `send-keys`, the screen read with `capture-pane`, the store
//! checked afterwards.
//!
//! tmux must be installed (`.ci/run` installs it); without it the test fails
//! and says so. Every wait is bounded (10 s per step, polled every 50 ms)
//! and the tmux server is killed when the test ends, however it ends.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gyre_mock::{MockServer, Reply, Script, Step, StreamReply, When};
use gyre_tui::app::ANSWER_GUARD;
use serde_json::json;
use tokio::process::Command;

use crate::common::*;

const TMUX: &str = "tmux";
const STEP: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);

/// A tmux server of the test's own (its socket in a temp dir), killed on drop.
struct Tmux {
    socket: PathBuf,
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new(TMUX)
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

impl Tmux {
    fn command(&self) -> Command {
        let mut cmd = Command::new(TMUX);
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = self.command().args(args).output().await.unwrap_or_else(|e| {
            panic!("tmux could not be run ({e}); install it (apt-get install tmux): the TUI test needs it")
        });
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    async fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "gyre"]).await
    }

    /// The pane's scrollback and screen.
    async fn history(&self) -> String {
        self.run(&["capture-pane", "-p", "-S", "-", "-t", "gyre"])
            .await
    }

    /// Types `text` literally.
    async fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "gyre", "-l", text]).await;
    }

    async fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "gyre", key]).await;
    }

    /// Waits until the screen shows `needle`; the screen.
    async fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |screen| screen.contains(needle))
            .await
    }

    /// Waits until the screen or the scrollback shows `needle` (inline,
    /// finished cells scroll away as the conversation goes on); both.
    async fn wait_for_text(&self, needle: &str) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let text = self.history().await;
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "waited {STEP:?} for {needle:?}; the pane:\n{text}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    async fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let screen = self.screen().await;
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited {STEP:?} for {what:?}; the screen:\n{screen}"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

fn step(when: When, times: Option<u32>, items: Vec<gyre_mock::Item>) -> Step {
    Step {
        when,
        times,
        reply: Reply::Stream(StreamReply {
            items,
            ..StreamReply::default()
        }),
    }
}

fn script() -> Script {
    let last = |needle: &str| When {
        last_message_contains: Some(needle.into()),
        ..When::default()
    };
    Script::new(vec![
        step(
            last("create the file"),
            Some(1),
            vec![
                gyre_mock::Item::Text("Creating it.".into()),
                call(
                    "write",
                    json!({"file_path": "notes.txt", "content": "from the tui\n"}),
                ),
            ],
        ),
        step(
            last("sleep"),
            Some(1),
            vec![call("bash", json!({"command": "sleep 30"}))],
        ),
        step(
            When {
                tool_results: Some(1),
                ..When::default()
            },
            Some(1),
            vec![gyre_mock::Item::Text("File written.".into())],
        ),
        step(
            When::default(),
            None,
            vec![gyre_mock::Item::Text("Answered the queued prompt.".into())],
        ),
    ])
}

/// Starts `gyre ARGS` in a WIDTH×HEIGHT tmux window in the workspace; its
/// exit status goes to `status`, and the terminal's settings after it to
/// `status` + `.stty` (the pane then stays open for a look).
async fn start(
    env: &Env,
    server: &MockServer,
    args: &str,
    size: (u16, u16),
    status: &Path,
) -> Tmux {
    let tmux = Tmux {
        socket: env.home.path().join("tmux.sock"),
    };
    let command = format!(
        "env -i PATH=\"$PATH\" HOME=\"$HOME\" TERM=tmux-256color NO_COLOR=1 \
         GYRE_HOME='{home}' XDG_CONFIG_HOME='{config}' ANTHROPIC_API_KEY=test-key \
         ANTHROPIC_BASE_URL='{url}' '{gyre}' {args}; code=$?; stty -a > '{status}.stty'; \
         echo $code > '{status}'; sleep 60",
        home = env.home.path().display(),
        config = env.config.path().display(),
        url = server.anthropic_base_url(),
        gyre = GYRE,
        status = status.display(),
    );
    let (width, height) = (size.0.to_string(), size.1.to_string());
    let workspace = env.workspace.path().display().to_string();
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "gyre",
        "-x",
        &width,
        "-y",
        &height,
        "-c",
        &workspace,
        &command,
    ])
    .await;
    tmux
}

async fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + STEP;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} was not written",
            path.display()
        );
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn inline_a_session_in_the_terminal_prompt_approve_interrupt_queue_quit() {
    a_session_in_the_terminal(false).await;
}

#[tokio::test]
async fn alt_screen_a_session_in_the_terminal_prompt_approve_interrupt_queue_quit() {
    a_session_in_the_terminal(true).await;
}

/// The same session inline (the default) and in the alternate screen.
async fn a_session_in_the_terminal(alt_screen: bool) {
    let server = MockServer::start(script()).await.unwrap();
    let env = Env::new();
    let status = env.home.path().join("exit-status");
    let args = if alt_screen {
        "--alt-screen --allowed-tools 'bash(sleep:*)'"
    } else {
        "--allowed-tools 'bash(sleep:*)'"
    };
    let tmux = start(&env, &server, args, (100, 30), &status).await;

    // Ready for input at once, no dialog.
    let screen = tmux.wait_for("● ready").await;
    assert!(screen.contains("Type a prompt"), "{screen}");

    // A prompt whose answer writes a file: the dialog, then approval.
    tmux.type_text("please create the file").await;
    tmux.key("Enter").await;
    let screen = tmux.wait_for("Permission needed").await;
    assert!(screen.contains("write notes.txt"), "{screen}");
    assert!(screen.contains("1. Allow once"), "{screen}");
    assert!(screen.contains("2. Always allow"), "{screen}");
    assert!(screen.contains("3. Deny"), "{screen}");
    // The dialog ignores answers in its first moments, measured on the
    // process's own clock: only waiting that long gets past the guard.
    tokio::time::sleep(ANSWER_GUARD + Duration::from_millis(100)).await;
    tmux.key("Enter").await;
    let screen = tmux.wait_for_text("File written.").await;
    assert!(screen.contains("› please create the file"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.path("notes.txt")).unwrap(),
        "from the tui\n"
    );

    // A long command (allowed by the flag), a prompt queued behind it, Esc.
    tmux.type_text("now sleep please").await;
    tmux.key("Enter").await;
    tmux.wait_for("bash sleep 30").await;
    tmux.type_text("what is next").await;
    tmux.key("Enter").await;
    let screen = tmux.wait_for("queued: what is next").await;
    assert!(screen.contains("1 queued"), "{screen}");
    assert!(!screen.contains("› what is next"), "not run yet: {screen}");
    let pressed = Instant::now();
    tmux.key("Escape").await;
    tmux.wait_for("Answered the queued prompt.").await;
    let screen = tmux.wait_for_text("Answered the queued prompt.").await;
    assert!(
        pressed.elapsed() < Duration::from_secs(10),
        "the interruption took {:?}",
        pressed.elapsed()
    );
    assert!(
        screen.contains("cancelled"),
        "the interruption shows: {screen}"
    );
    assert!(screen.contains("› what is next"), "{screen}");
    assert!(!tmux.screen().await.contains("queued:"), "{screen}");

    // The window shrinks to 80×24: the screen is drawn again at that size
    // (inline, the live part need not be at the bottom).
    tmux.run(&["resize-window", "-t", "gyre", "-x", "80", "-y", "24"])
        .await;
    let screen = tmux
        .wait_until("a redraw at 80×24", |screen| {
            let lines: Vec<&str> = screen.lines().collect();
            let ready = lines.iter().position(|line| line.contains("● ready"));
            lines.len() == 24
                && ready.is_some_and(|at| {
                    (alt_screen && at == 23 || !alt_screen && at >= 3)
                        && lines[at - 3].starts_with('╭')
                        && lines[at - 3].chars().count() == 80
                })
        })
        .await;
    assert!(screen.contains("Answered the queued prompt."), "{screen}");

    // /quit exits 0 and gives the terminal back.
    tmux.type_text("/quit").await;
    tmux.key("Enter").await;
    assert_eq!(wait_for_file(&status).await.trim(), "0");
    assert_restored(&tmux, &status).await;

    // Inline, the conversation stays in the terminal, in order (after the
    // resize the screen was filled again from the transcript, so lines
    // the terminal had already moved to its scrollback may be there
    // twice); the alternate screen leaves nothing of it behind.
    let pane = tmux.history().await;
    let kept = [
        "› please create the file",
        "Creating it.",
        "File written.",
        "› now sleep please",
        "› what is next",
        "Answered the queued prompt.",
    ];
    if alt_screen {
        assert!(!pane.contains("File written."), "{pane}");
    } else {
        let mut from = 0;
        for needle in kept {
            let at = pane[from..]
                .find(needle)
                .unwrap_or_else(|| panic!("{needle:?} after byte {from} in:\n{pane}"));
            from += at + needle.len();
        }
        assert!(!pane.contains("● ready"), "the live part is gone: {pane}");
    }

    // The store holds both prompts, the tool results and the interruption.
    let out = output(env.gyre(&["sessions", "list"])).await;
    let listed = stdout(&out);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let id = listed.split_whitespace().next().unwrap();
    let out = output(env.gyre(&["sessions", "show", id])).await;
    let shown = stdout(&out);
    for needle in [
        "please create the file",
        "created notes.txt",
        "now sleep please",
        "← bash (error)",
        "cancelled",
        "what is next",
        "Answered the queued prompt.",
    ] {
        assert!(shown.contains(needle), "{needle:?} in:\n{shown}");
    }
    let queued = shown.find("what is next").unwrap();
    assert!(shown.find("now sleep please").unwrap() < queued, "in order");
}

#[tokio::test]
async fn shift_tab_cycles_the_mode_and_ctrl_o_shows_a_400_line_output_whole() {
    let script = Script::new(vec![
        step(
            When {
                last_message_contains: Some("print rows".into()),
                ..When::default()
            },
            Some(1),
            vec![call("bash", json!({"command": "seq -f 'row %03g' 1 400"}))],
        ),
        step(
            When::default(),
            None,
            vec![gyre_mock::Item::Text("Printed them.".into())],
        ),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let status = env.home.path().join("exit-status");
    let tmux = start(
        &env,
        &server,
        "--allowed-tools 'bash(seq:*)'",
        (100, 30),
        &status,
    )
    .await;
    let mode_shown = |mode: &'static str| {
        move |screen: &str| {
            screen
                .lines()
                .any(|line| line.contains("● ready") && line.trim_end().ends_with(mode))
        }
    };
    tmux.wait_until("default", mode_shown("default")).await;
    for mode in ["acceptEdits", "plan", "default"] {
        tmux.key("BTab").await;
        tmux.wait_until(mode, mode_shown(mode)).await;
    }

    tmux.type_text("print rows").await;
    tmux.key("Enter").await;
    let screen = tmux.wait_for("Printed them.").await;
    assert!(!screen.contains("row 001"), "collapsed: {screen}");
    tmux.key("C-o").await;
    let screen = tmux.wait_for("of 400").await;
    assert!(screen.contains("row 001"), "{screen}");
    tmux.key("End").await;
    let screen = tmux.wait_for("row 400").await;
    assert!(!screen.contains("row 001"), "{screen}");
    tmux.key("Home").await;
    tmux.wait_for("row 001").await;
    tmux.key("Escape").await;
    tmux.wait_until("the view closed", |screen| !screen.contains("of 400"))
        .await;

    tmux.type_text("/quit").await;
    tmux.key("Enter").await;
    assert_eq!(wait_for_file(&status).await.trim(), "0");
    assert_restored(&tmux, &status).await;
    let pane = tmux.history().await;
    assert!(pane.contains("Printed them."), "{pane}");
    assert!(!pane.contains("row 200"), "the view is not history: {pane}");
}

/// The context switches of `pid`'s live threads so far.
fn context_switches(pid: &str) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        total += status
            .lines()
            .filter_map(|line| {
                line.strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            })
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum::<u64>();
    }
    total
}

/// The terminal is as gyre found it: cooked mode, echo, main screen.
async fn assert_restored(tmux: &Tmux, status: &Path) {
    let stty = std::fs::read_to_string(status.with_extension("stty")).unwrap();
    assert!(stty.contains(" icanon") && stty.contains(" echo"), "{stty}");
    let alternate = tmux
        .run(&["display-message", "-p", "-t", "gyre", "#{alternate_on}"])
        .await;
    assert_eq!(alternate.trim(), "0", "the alternate screen was left");
}

#[tokio::test]
async fn idle_it_sleeps_and_sigterm_restores_the_terminal_and_exits_143() {
    let server = MockServer::start(script()).await.unwrap();
    let env = Env::new();
    let status = env.home.path().join("exit-status");
    let tmux = start(&env, &server, "", (80, 24), &status).await;
    tmux.wait_for("● ready").await;
    let shell = tmux
        .run(&["display-message", "-p", "-t", "gyre", "#{pane_pid}"])
        .await;
    let shell = shell.trim();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    let gyre = children
        .split_whitespace()
        .next()
        .expect("gyre runs under the pane's shell");

    // Idle means asleep: its threads are not woken while nothing happens.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = context_switches(gyre);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = context_switches(gyre);
    assert!(
        after <= before + 2,
        "woken {} times while idle",
        after - before
    );
    let killed = Command::new("kill")
        .args(["-TERM", gyre])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    assert_eq!(wait_for_file(&status).await.trim(), "143");
    assert_restored(&tmux, &status).await;
}

#[tokio::test]
async fn without_a_terminal_it_refuses_and_points_to_gyre_run() {
    let env = Env::new();
    let out = output(env.gyre(&[])).await;
    assert_usage_error(&out, "gyre run");
}
