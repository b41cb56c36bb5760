//! The terminal while the app owns it: raw mode, the alternate screen,
//! bracketed paste, mouse wheel reports and unambiguous keys (Shift+Enter)
//! where the terminal offers them; and its restoration.
//!
//! Invariants:
//! - The terminal is restored whatever way the app ends: normally (the
//!   guard's drop), on a panic (the hook restores it before the panic
//!   message is printed), and on SIGTERM/SIGHUP/SIGINT (the event loop
//!   ends, and the guard drops). Restoring twice is harmless.
//! - Nothing but frames reaches the screen: stderr is pointed at a file
//!   (the log) while the app runs, so a stray warning cannot tear a frame,
//!   and pointed back before the terminal is handed back.
//! - Only button and wheel reports are asked of the mouse (no motion
//!   tracking), so moving the mouse wakes nothing; a click-drag selection
//!   needs Shift in most terminals while the app runs.
//!
//! Trade-off: frames are written to the tty from the runtime's thread; a
//! frame is a few kilobytes of changed cells (ratatui diffs them), which
//! the kernel buffers at once.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Stdout, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{Command, cursor, execute, queue};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The app's terminal.
pub type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Bytes of a frame buffered before they are written.
const FRAME_BUFFER: usize = 64 * 1024;

/// The real stderr while it points at the log.
static SAVED_STDERR: Mutex<Option<OwnedFd>> = Mutex::new(None);
static PANIC_HOOK: Once = Once::new();
/// Whether the terminal is in the app's modes (so restoring happens once:
/// a second pop of the keyboard flags would pop the shell's).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Whether stdin and stdout are both terminals (the app needs both).
pub fn is_interactive() -> bool {
    io::stdin().is_terminal() && io::stdout().is_terminal()
}

/// Mouse button and wheel reports in SGR form (`?1000`, `?1006`): no motion.
struct EnableWheel;

impl Command for EnableWheel {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b[?1000h\x1b[?1006h")
    }
}

struct DisableWheel;

impl Command for DisableWheel {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b[?1006l\x1b[?1000l")
    }
}

/// Restores the terminal when dropped.
#[derive(Debug)]
pub struct TerminalGuard {
    _private: (),
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Takes the terminal: the returned guard gives it back. `stderr_to`: the
/// file stderr goes to meanwhile (`None`: stderr stays).
pub fn enter(stderr_to: Option<&Path>) -> io::Result<(Term, TerminalGuard)> {
    install_panic_hook();
    if let Some(path) = stderr_to {
        redirect_stderr(path);
    }
    let guard = TerminalGuard { _private: () };
    TAKEN.store(true, Ordering::SeqCst);
    enable_raw_mode()?;
    let mut out = BufWriter::with_capacity(FRAME_BUFFER, io::stdout());
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableWheel,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
        cursor::Hide,
    )?;
    let terminal = Terminal::new(CrosstermBackend::new(out))?;
    Ok((terminal, guard))
}

/// Draws one frame between synchronized-output marks, so the terminal shows
/// it whole (ratatui writes only the cells that changed).
pub fn draw_frame(terminal: &mut Term, draw: impl FnOnce(&mut ratatui::Frame)) -> io::Result<()> {
    queue!(terminal.backend_mut(), BeginSynchronizedUpdate)?;
    terminal.draw(draw)?;
    execute!(terminal.backend_mut(), EndSynchronizedUpdate)
}

/// Gives the terminal back as it was (best effort, idempotent).
pub fn restore() {
    if !TAKEN.swap(false, Ordering::SeqCst) {
        restore_stderr();
        return;
    }
    let mut out = io::stdout();
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableWheel,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show,
    );
    let _ = out.flush();
    let _ = disable_raw_mode();
    restore_stderr();
}

fn redirect_stderr(path: &Path) {
    let Ok(file) = File::options().create(true).append(true).open(path) else {
        return;
    };
    let mut saved = SAVED_STDERR.lock().unwrap_or_else(PoisonError::into_inner);
    if saved.is_some() {
        return;
    }
    let Ok(original) = rustix::io::dup(rustix::stdio::stderr()) else {
        return;
    };
    if rustix::stdio::dup2_stderr(&file).is_ok() {
        *saved = Some(original);
    }
}

fn restore_stderr() {
    let saved = SAVED_STDERR
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(original) = saved {
        let _ = rustix::stdio::dup2_stderr(&original);
    }
}

/// A panic restores the terminal first, so its message is readable.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
