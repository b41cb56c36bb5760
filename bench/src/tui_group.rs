//! The `tui` group: the `gyre` terminal UI as a person runs it, in a
//! detached tmux session (100×30) against the mock server (its own process,
//! never measured).
//!
//! Rows:
//! - start to the first frame, in an empty directory;
//! - idle: CPU (user+sys, from `/proc/PID/stat`) and wake-ups (context
//!   switches of its threads) over 10 s, after a second to settle;
//! - a 250-turn session driven through the UI (one prompt; each turn a
//!   `read` call and its result, 502 messages in all): its wall time, the
//!   CPU it took, and the RSS (`VmRSS`) after it;
//! - that session opened again (`--resume ID`): time to the first frame
//!   showing its history, and the RSS then (median of 3).
//!
//! The time to draw one frame of a 1,000-message transcript is the
//! `tui_frame` group's (in-process, gyre-tui's view).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::args::Options;
use crate::groups::{outcome, progress, summary};
use crate::mock::MockServer;
use crate::report::{Report, Row, Unit, Value};
use crate::scenarios::RunDirs;
use crate::scripts;
use crate::tmux::{TuiSession, sample};

const SIZE: (u16, u16) = (100, 30);
const IDLE: Duration = Duration::from_secs(10);
const SETTLE: Duration = Duration::from_secs(1);
const TURNS: u32 = 250;
const RESUMES: usize = 3;
/// What the status line says when nothing runs.
const READY: &str = "● ready";

struct Measured {
    first_frame_ms: f64,
    idle_cpu_ms: f64,
    idle_wakeups: f64,
    session_wall_ms: f64,
    session_cpu_ms: f64,
    session_rss_mib: f64,
    resume_frame_ms: Vec<f64>,
    resume_rss_mib: Vec<f64>,
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn measure(gyre: &Path) -> anyhow::Result<Measured> {
    let dirs = RunDirs::new()?;
    let workspace = dirs.workspace();
    std::fs::write(
        workspace.join(scripts::SMALL_FILE),
        scripts::SMALL_FILE_TEXT,
    )?;
    let script = dirs.home().join("script.json");
    std::fs::write(&script, scripts::read_loop(TURNS).to_string())?;
    let server = MockServer::start(gyre, &script)?;
    let env = [
        ("GYRE_HOME", dirs.home().display().to_string()),
        (
            "XDG_CONFIG_HOME",
            dirs.home().join("config").display().to_string(),
        ),
        ("ANTHROPIC_API_KEY", "bench-key".to_string()),
        ("ANTHROPIC_BASE_URL", server.anthropic_base_url()),
        ("NO_COLOR", "1".to_string()),
    ];
    let scratch = dirs.home();

    let tui = TuiSession::start(
        gyre,
        &["--permission-mode", "bypassPermissions"],
        &workspace,
        &env,
        SIZE,
        &scratch,
    )?;
    let shown = tui.wait_for(&[READY, "Type a prompt"], Duration::from_secs(10))?;
    let first_frame_ms = ms(shown - tui.started);

    std::thread::sleep(SETTLE);
    let before = sample(tui.pid)?;
    std::thread::sleep(IDLE);
    let after = sample(tui.pid)?;
    let idle_cpu_ms = ms(after.cpu.saturating_sub(before.cpu));
    let idle_wakeups = after.switches.saturating_sub(before.switches) as f64;

    let before = sample(tui.pid)?;
    tui.send("read the small file many times")?;
    let sent = Instant::now();
    let done = tui.wait_for(&[scripts::FINAL_ANSWER, READY], Duration::from_secs(300))?;
    let session_wall_ms = ms(done - sent);
    std::thread::sleep(Duration::from_millis(300));
    let after = sample(tui.pid)?;
    tui.send("/quit")?;
    let code = tui.wait_exit(Duration::from_secs(10))?;
    anyhow::ensure!(code == 0, "gyre exited {code} after /quit");
    drop(tui);

    let list = dirs
        .command(gyre)?
        .args(["sessions", "list"])
        .status()
        .context("gyre sessions list")?;
    let listed = std::fs::read_to_string(dirs.stdout()).unwrap_or_default();
    anyhow::ensure!(list.success(), "gyre sessions list failed");
    let id = listed
        .split_whitespace()
        .next()
        .context("the session was stored")?
        .to_string();

    let mut resume_frame_ms = Vec::new();
    let mut resume_rss_mib = Vec::new();
    for _ in 0..RESUMES {
        let tui = TuiSession::start(gyre, &["--resume", &id], &workspace, &env, SIZE, &scratch)?;
        let shown = tui.wait_for(&[scripts::FINAL_ANSWER, READY], Duration::from_secs(30))?;
        resume_frame_ms.push(ms(shown - tui.started));
        std::thread::sleep(Duration::from_millis(300));
        resume_rss_mib.push(mib(sample(tui.pid)?.rss_kib));
        tui.send("/quit")?;
        tui.wait_exit(Duration::from_secs(10))?;
    }
    Ok(Measured {
        first_frame_ms,
        idle_cpu_ms,
        idle_wakeups,
        session_wall_ms,
        session_cpu_ms: ms(after.cpu.saturating_sub(before.cpu)),
        session_rss_mib: mib(after.rss_kib),
        resume_frame_ms,
        resume_rss_mib,
    })
}

pub fn tui(report: &mut Report, gyre: &Path, _options: &Options) {
    progress(&format!(
        "the TUI in tmux: idle {}s, a {TURNS}-turn session, {RESUMES} resumes",
        IDLE.as_secs()
    ));
    let measured = outcome(report, measure(gyre));
    let one = |pick: fn(&Measured) -> f64| {
        measured
            .as_ref()
            .map_or(Value::Failed, |m| Value::MedianOnly(pick(m)))
    };
    let messages = 2 * TURNS + 2;
    let rows = [
        (
            "TUI start to first frame (empty directory)",
            one(|m| m.first_frame_ms),
            Unit::Milliseconds,
        ),
        (
            "TUI idle 10 s: CPU (user+sys)",
            one(|m| m.idle_cpu_ms),
            Unit::Milliseconds,
        ),
        (
            "TUI idle 10 s: wake-ups (context switches)",
            one(|m| m.idle_wakeups),
            Unit::Count,
        ),
        (
            &*format!("TUI {TURNS}-turn session ({messages} messages): wall"),
            one(|m| m.session_wall_ms),
            Unit::Milliseconds,
        ),
        (
            &*format!("TUI {TURNS}-turn session ({messages} messages): CPU (user+sys)"),
            one(|m| m.session_cpu_ms),
            Unit::Milliseconds,
        ),
        (
            &*format!("TUI after the {TURNS}-turn session: RSS"),
            one(|m| m.session_rss_mib),
            Unit::Mebibytes,
        ),
        (
            &*format!("TUI --resume of the {messages}-message session: start to first frame"),
            summary(measured.as_ref().map(|m| m.resume_frame_ms.as_slice())),
            Unit::Milliseconds,
        ),
        (
            &*format!("TUI --resume of the {messages}-message session: RSS"),
            summary(measured.as_ref().map(|m| m.resume_rss_mib.as_slice())),
            Unit::Mebibytes,
        ),
    ]
    .map(|(what, value, unit)| Row::new(what.to_string(), value, unit));
    // Idle means idle: no CPU to speak of, and (almost) no wake-ups.
    let [first, cpu, wakeups, rest @ ..] = rows;
    report.rows.push(first);
    report.rows.push(cpu.target(50.0));
    report.rows.push(wakeups.target(5.0));
    report.rows.extend(rest);
    report.notes.push(format!(
        "tui: the release `gyre` in a detached tmux session ({}×{}, TERM=tmux-256color, \
         NO_COLOR) against the mock (Anthropic wire, its own process), a fresh GYRE_HOME. \
         First frame: from asking tmux to start it to capture-pane showing the ready status \
         line (polled every 10 ms, so ±10 ms; includes tmux's and the shell's start). Idle: \
         after 1 s, /proc/PID/stat utime+stime (10 ms ticks) and the context switches of \
         its threads, over 10 s. Session: one prompt answered by {TURNS} turns that each \
         `read` a small file (bypassPermissions), then a text answer: wall from the Enter \
         to the final answer on screen, CPU and VmRSS of gyre after it. Resume: `gyre \
         --resume ID` of that session, from start to its last answer on screen, VmRSS then; \
         ×{RESUMES}. Targets: idle CPU ≤ 50 ms and ≤ 5 wake-ups in 10 s.",
        SIZE.0, SIZE.1
    ));
}
