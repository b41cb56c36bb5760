//! The few colours and styles the UI uses, in one place.
//!
//! With [`ColorMode::Plain`] (the app passes it when `NO_COLOR` is set) no
//! foreground or background colour is used: only modifiers (bold, dim,
//! italic, reversed), so the screen still shows structure.

use ratatui::style::{Color, Modifier, Style};

/// Whether styles may use colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ColorMode {
    #[default]
    Color,
    /// No colours, modifiers only (`NO_COLOR`).
    Plain,
}

/// The styles of every element of the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Palette {
    pub mode: ColorMode,
}

impl Palette {
    pub fn new(mode: ColorMode) -> Self {
        Self { mode }
    }

    fn fg(self, color: Color) -> Style {
        match self.mode {
            ColorMode::Color => Style::new().fg(color),
            ColorMode::Plain => Style::new(),
        }
    }

    /// Whether syntax highlighting colours may be used.
    pub fn colors(self) -> bool {
        self.mode == ColorMode::Color
    }

    pub fn text(self) -> Style {
        Style::new()
    }
    pub fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
    pub fn accent(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn user_prompt(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    pub fn user_text(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub fn heading(self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }
    pub fn inline_code(self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn code_block(self) -> Style {
        Style::new()
    }
    pub fn link(self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::UNDERLINED)
    }
    pub fn quote(self) -> Style {
        self.fg(Color::Gray).add_modifier(Modifier::ITALIC)
    }
    pub fn reasoning(self) -> Style {
        Style::new().add_modifier(Modifier::DIM | Modifier::ITALIC)
    }
    pub fn tool_name(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    pub fn running(self) -> Style {
        self.fg(Color::Cyan)
    }
    pub fn success(self) -> Style {
        self.fg(Color::Green)
    }
    pub fn failure(self) -> Style {
        self.fg(Color::Red)
    }
    pub fn warning(self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn diff_added(self) -> Style {
        self.fg(Color::Green)
    }
    pub fn diff_removed(self) -> Style {
        self.fg(Color::Red)
    }
    pub fn diff_hunk(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::DIM)
    }
    pub fn border(self) -> Style {
        self.fg(Color::DarkGray)
    }
    pub fn selected(self) -> Style {
        match self.mode {
            ColorMode::Color => Style::new()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            ColorMode::Plain => Style::new().add_modifier(Modifier::REVERSED),
        }
    }
    pub fn status_bar(self) -> Style {
        match self.mode {
            ColorMode::Color => Style::new().fg(Color::White).bg(Color::DarkGray),
            ColorMode::Plain => Style::new().add_modifier(Modifier::REVERSED),
        }
    }
}
