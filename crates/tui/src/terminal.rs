//! The terminal while the app owns it: raw mode, bracketed paste and
//! unambiguous keys (Shift+Enter) where the terminal offers them; the
//! screen, inline (the default) or alternate; and its restoration.
//!
//! Inline ([`ScreenMode::Inline`]): the app draws only its live part (the
//! cells still changing, the panels, the input, the status line) in a
//! region at the bottom of what the shell printed, and writes each
//! finished cell above it once, as ordinary output: the terminal scrolls
//! those lines into its own scrollback, so the conversation can be
//! scrolled, searched and selected with the terminal's tools and stays
//! after exit. The region is a ratatui `Viewport::Fixed` placed here: it
//! grows (scrolling the screen up with line feeds at the bottom row, the
//! way any program's output scrolls) and shrinks with what it shows.
//! Alternate ([`ScreenMode::Alternate`], `--alt-screen`): the app owns the
//! whole screen and its own scrolling, with mouse wheel reports.
//!
//! Invariants:
//! - The terminal is restored whatever way the app ends: normally (the
//!   guard's drop), on a panic (the hook restores it before the panic
//!   message is printed), and on SIGTERM/SIGHUP/SIGINT (the event loop
//!   ends, and the guard drops). Restoring twice is harmless.
//! - Nothing but frames reaches the screen: stderr is pointed at a file
//!   (the log) while the app runs, so a stray warning cannot tear a frame,
//!   and pointed back before the terminal is handed back.
//! - Inline, everything from the region's top row down is the app's; the
//!   rows above it are history and are never redrawn. History is written
//!   in order and once (the app hands each cell out once).
//! - Only button and wheel reports are asked of the mouse, and only in the
//!   alternate screen (no motion tracking), so moving the mouse wakes
//!   nothing; inline, the wheel and selection stay the terminal's.
//!
//! Trade-offs: frames are written to the tty from the runtime's thread; a
//! frame is a few kilobytes of changed cells (ratatui diffs them), which
//! the kernel buffers at once. Inline, writing history or resizing the
//! region redraws the region whole (a few hundred cells). Lines already in
//! the scrollback are not re-wrapped when the width changes (the
//! terminal's own reflow applies, if it has one).

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
use crossterm::style::Print;
use crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{Command, cursor, execute, queue};
use ratatui::backend::{Backend as _, CrosstermBackend};
use ratatui::buffer::Buffer;
use ratatui::layout::{Rect, Size};
use ratatui::text::Line;
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};

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
/// Whether the alternate screen was entered (leaving it when it was not
/// would move the cursor to a saved position).
static ALTERNATE: AtomicBool = AtomicBool::new(false);

/// Where the app draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScreenMode {
    /// Below the shell's output; finished cells go to the scrollback.
    #[default]
    Inline,
    /// The alternate screen, whole.
    Alternate,
}

/// What the terminal draws: the app, seen from here.
pub trait Surface {
    /// Lines that became final since the last call, at `width`, to write
    /// above the live region (inline only).
    fn take_history(&mut self, width: u16) -> Vec<Line<'static>>;
    /// Every line not yet written (the app ends).
    fn take_all_history(&mut self, width: u16) -> Vec<Line<'static>>;
    /// The last `rows` lines (or fewer) of what was written, laid out
    /// again at `width` (to fill the screen after a resize).
    fn history_tail(&self, width: u16, rows: u16) -> Vec<Line<'static>>;
    /// Rows the live region needs at `width`, at most `max`.
    fn live_height(&self, width: u16, max: u16) -> u16;
    /// Draws a frame into the region.
    fn draw(&mut self, frame: &mut Frame);
}

/// The app's terminal in one of its modes.
pub struct Tty {
    terminal: Term,
    mode: ScreenMode,
    /// Inline: the screen's size when last drawn.
    size: Size,
    /// Inline: the live region (its top row is where history goes next).
    area: Rect,
}

impl fmt::Debug for Tty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tty")
            .field("mode", &self.mode)
            .field("area", &self.area)
            .finish_non_exhaustive()
    }
}

impl Tty {
    pub fn mode(&self) -> ScreenMode {
        self.mode
    }

    /// Draws one frame between synchronized-output marks, so the terminal
    /// shows it whole (ratatui writes only the cells that changed); inline,
    /// first writes the history the app has and fits the region.
    pub fn draw(&mut self, app: &mut impl Surface) -> io::Result<()> {
        queue!(self.terminal.backend_mut(), BeginSynchronizedUpdate)?;
        if self.mode == ScreenMode::Inline {
            self.fit_inline(app)?;
        }
        self.terminal.draw(|frame| app.draw(frame))?;
        execute!(self.terminal.backend_mut(), EndSynchronizedUpdate)
    }

    /// Inline, the app ends: the rest of the conversation goes to the
    /// scrollback, the live region is cleared, and the cursor waits where
    /// it was (the shell's prompt comes next).
    pub fn finish(&mut self, app: &mut impl Surface) -> io::Result<()> {
        if self.mode != ScreenMode::Inline {
            return Ok(());
        }
        let size = self.terminal.size()?;
        self.resized(size, app)?;
        let history = app.take_all_history(size.width);
        self.write_history(&history)?;
        self.clear_rows(self.area.y)?;
        let out = self.terminal.backend_mut();
        queue!(out, cursor::MoveTo(0, self.area.y))?;
        Write::flush(out)
    }

    /// Writes the app's new history and places the region for this frame.
    fn fit_inline(&mut self, app: &mut impl Surface) -> io::Result<()> {
        let size = self.terminal.size()?;
        let mut moved = self.resized(size, app)?;
        let history = app.take_history(size.width);
        if !history.is_empty() {
            self.write_history(&history)?;
            moved = true;
        }
        let height = app
            .live_height(size.width, size.height)
            .clamp(1, size.height.max(1));
        let mut top = self.area.y;
        let overflow = (top + height).saturating_sub(size.height);
        if overflow > 0 {
            self.scroll_up(overflow)?;
            top -= overflow;
        }
        let area = Rect::new(0, top, size.width, height);
        if moved || area != self.area {
            self.clear_rows(top)?;
            self.place(area)?;
        }
        Ok(())
    }

    /// Notes a new screen size. Where the terminal moved (or re-wrapped)
    /// what was on screen is unknown, so the screen is cleared (the
    /// scrollback stays) and filled again: the end of the history at the
    /// new width above the region, which is drawn below it.
    fn resized(&mut self, size: Size, app: &impl Surface) -> io::Result<bool> {
        if size == self.size {
            return Ok(false);
        }
        self.size = size;
        self.clear_rows(0)?;
        let live = app.live_height(size.width, size.height);
        let tail = app.history_tail(size.width, size.height.saturating_sub(live));
        self.area = Rect::new(0, 0, size.width, 0);
        self.write_history(&tail)?;
        Ok(true)
    }

    /// Clears the rows from `top` to the bottom one by one: a terminal may
    /// move a screen cleared whole into its scrollback (tmux's
    /// `scroll-on-clear`), which would copy the live region there.
    fn clear_rows(&mut self, top: u16) -> io::Result<()> {
        let out = self.terminal.backend_mut();
        for row in top..self.size.height {
            queue!(out, cursor::MoveTo(0, row), Clear(ClearType::CurrentLine))?;
        }
        Ok(())
    }

    /// Draws the region in `area` from now on (cleared already). A new
    /// `Terminal` over the same stdout, since ratatui's `resize` of a fixed
    /// viewport clears it with a screen clear (see [`Tty::clear_rows`]).
    fn place(&mut self, area: Rect) -> io::Result<()> {
        Write::flush(self.terminal.backend_mut())?;
        let out = BufWriter::with_capacity(FRAME_BUFFER, io::stdout());
        let options = TerminalOptions {
            viewport: Viewport::Fixed(area),
        };
        self.terminal = Terminal::with_options(CrosstermBackend::new(out), options)?;
        self.area = area;
        Ok(())
    }

    /// Scrolls the whole screen up by `rows` (the top rows go to the
    /// scrollback): line feeds on the bottom row, as any output does.
    fn scroll_up(&mut self, rows: u16) -> io::Result<()> {
        let bottom = self.size.height.saturating_sub(1);
        let out = self.terminal.backend_mut();
        queue!(out, cursor::MoveTo(0, bottom))?;
        for _ in 0..rows {
            queue!(out, Print("\n"))?;
        }
        Ok(())
    }

    /// Writes `lines` from the region's top row down, scrolling the screen
    /// when the bottom is reached; the region then begins below them.
    fn write_history(&mut self, lines: &[Line<'static>]) -> io::Result<()> {
        if lines.is_empty() || self.size.height == 0 || self.size.width == 0 {
            return Ok(());
        }
        let width = self.size.width;
        let rows = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        let mut buffer = Buffer::empty(Rect::new(0, 0, width, rows));
        for (y, line) in (0..rows).zip(lines) {
            buffer.set_line(0, y, line, width);
        }
        let blank = Buffer::empty(buffer.area);
        let changed = blank.diff(&buffer);
        let mut changed = changed.into_iter().peekable();
        let mut row = self.area.y;
        for y in 0..rows {
            if row >= self.size.height {
                self.scroll_up(1)?;
                row = self.size.height - 1;
            }
            let out = self.terminal.backend_mut();
            queue!(out, cursor::MoveTo(0, row), Clear(ClearType::CurrentLine))?;
            let mut cells = Vec::new();
            while let Some((x, _, cell)) = changed.next_if(|(_, cy, _)| *cy == y) {
                cells.push((x, row, cell));
            }
            out.draw(cells.into_iter())?;
            row += 1;
        }
        self.area.y = row.min(self.size.height);
        Ok(())
    }
}

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

/// Takes the terminal in `mode`: the returned guard gives it back.
/// `stderr_to`: the file stderr goes to meanwhile (`None`: stderr stays).
pub fn enter(stderr_to: Option<&Path>, mode: ScreenMode) -> io::Result<(Tty, TerminalGuard)> {
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
        EnableBracketedPaste,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES),
        cursor::Hide,
    )?;
    let (terminal, size, area) = match mode {
        ScreenMode::Alternate => {
            ALTERNATE.store(true, Ordering::SeqCst);
            execute!(out, EnterAlternateScreen, EnableWheel)?;
            let terminal = Terminal::new(CrosstermBackend::new(out))?;
            (terminal, Size::default(), Rect::default())
        }
        ScreenMode::Inline => {
            let (width, height) = crossterm::terminal::size()?;
            // The region begins on the cursor's row (below the shell's
            // output); if the terminal does not say where that is, at the
            // bottom.
            let row = cursor::position().map_or(height.saturating_sub(1), |(_, row)| row);
            let size = Size::new(width, height);
            let area = Rect::new(0, row.min(height.saturating_sub(1)), width, 0);
            let options = TerminalOptions {
                viewport: Viewport::Fixed(area),
            };
            let terminal = Terminal::with_options(CrosstermBackend::new(out), options)?;
            (terminal, size, area)
        }
    };
    let tty = Tty {
        terminal,
        mode,
        size,
        area,
    };
    Ok((tty, guard))
}

/// Gives the terminal back as it was (best effort, idempotent).
pub fn restore() {
    if !TAKEN.swap(false, Ordering::SeqCst) {
        restore_stderr();
        return;
    }
    let mut out = io::stdout();
    if ALTERNATE.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, DisableWheel, LeaveAlternateScreen);
    }
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
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
