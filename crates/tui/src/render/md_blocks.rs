//! One complete piece of Markdown → logical lines (pulldown-cmark events
//! walked with a stack of containers).
//!
//! Shown: headings (styled, without `#`), emphasis, strong, strikethrough,
//! inline code, lists (bullets, numbers, task boxes), block quotes (a bar),
//! links as their text, rules, code blocks (highlighted when asked and the
//! language is known), tables as padded rows. HTML is shown as its text.
//! Blocks are separated by one blank line; items of a tight list are not.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use super::highlight::highlight;
use super::markdown::Highlight;
use super::text::str_width;
use super::wrap::{Logical, WrapMode, styled};
use crate::palette::Palette;

/// Width of a rule (cut to the screen's width).
const RULE_WIDTH: usize = 200;

enum Container {
    Quote,
    /// A list item: its marker until its first row is out, then spaces.
    Item {
        marker: String,
        used: bool,
    },
}

struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
}

struct Renderer {
    palette: Palette,
    highlight: Highlight,
    out: Vec<Logical>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Next number of each open list (`None`: bullets).
    lists: Vec<Option<u64>>,
    code: Option<(String, String)>,
    table: Option<Table>,
    blank_pending: bool,
}

/// Renders a complete piece of Markdown into logical lines.
pub(crate) fn render(source: &str, palette: Palette, highlight: Highlight) -> Vec<Logical> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer {
        palette,
        highlight,
        out: Vec::new(),
        inline: Vec::new(),
        styles: Vec::new(),
        containers: Vec::new(),
        lists: Vec::new(),
        code: None,
        table: None,
        blank_pending: false,
    };
    for event in Parser::new_ext(source, options) {
        r.event(event);
    }
    r.flush();
    if let Some((lang, code)) = r.code.take() {
        r.code_block(&lang, &code);
    }
    r.out
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, add: Style) {
        self.styles.push(self.style().patch(add));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        let style = self.style();
        self.inline.push(styled(text, style));
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                let style = self.style().patch(self.palette.inline_code());
                self.inline.push(styled(code.to_string(), style));
            }
            Event::InlineMath(text) | Event::DisplayMath(text) => {
                let style = self.style().patch(self.palette.inline_code());
                self.inline.push(styled(text.to_string(), style));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for (i, line) in html.lines().enumerate() {
                    if i > 0 {
                        self.flush();
                    }
                    self.inline.push(styled(line, self.palette.dim()));
                }
            }
            Event::FootnoteReference(name) => self
                .inline
                .push(styled(format!("[^{name}]"), self.palette.dim())),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.begin_block();
                let rule = "─".repeat(RULE_WIDTH);
                let mut line = Logical::text(rule, self.palette.border());
                line.mode = WrapMode::Clip;
                self.emit(line);
                self.blank_pending = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "☑ " } else { "☐ " };
                self.inline.push(Span::styled(mark, self.palette.accent()));
            }
        }
    }

    fn start(&mut self, tag: Tag) {
        match tag {
            Tag::Paragraph => self.begin_block(),
            Tag::Heading { level, .. } => {
                self.begin_block();
                let mut style = self.palette.heading();
                if level == HeadingLevel::H1 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                self.push_style(style);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.begin_block();
                self.containers.push(Container::Quote);
                self.push_style(self.palette.quote());
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.begin_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.begin_block();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "• ".to_string(),
                };
                self.containers.push(Container::Item {
                    marker,
                    used: false,
                });
            }
            Tag::Table(_) => {
                self.flush();
                self.begin_block();
                self.table = Some(Table {
                    rows: Vec::new(),
                    header_rows: 0,
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => self.push_style(self.palette.link()),
            Tag::Image { dest_url, .. } => {
                self.inline
                    .push(styled(format!("[image {dest_url}] "), self.palette.dim()));
                self.push_style(self.palette.dim());
            }
            Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.flush();
                self.begin_block();
            }
            Tag::Superscript | Tag::Subscript => self.push_style(Style::new()),
            Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::MetadataBlock(_) => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::DefinitionListTitle | TagEnd::DefinitionListDefinition => {
                self.flush();
                self.blank_pending = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.blank_pending = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.styles.pop();
                self.blank_pending = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
                self.blank_pending = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank_pending = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(table);
                }
                self.blank_pending = true;
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::TableRow
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::MetadataBlock(_) => {}
        }
    }

    /// A blank row before a block that follows another (quote bars kept).
    fn begin_block(&mut self) {
        if std::mem::take(&mut self.blank_pending) && !self.out.is_empty() {
            let (prefix, _) = self.prefixes(Marker::Peek);
            self.out
                .push(Logical::blank().prefixed(prefix.clone(), prefix));
        }
    }

    /// The prefixes of the next row and of its continuation rows.
    fn prefixes(&mut self, marker: Marker) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        let quote = self.palette.quote();
        let bullet = self.palette.accent();
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    first.push(Span::styled("│ ", quote));
                    rest.push(Span::styled("│ ", quote));
                }
                Container::Item { marker: m, used } => {
                    let pad = " ".repeat(str_width(m));
                    if *used || marker == Marker::Peek {
                        first.push(Span::raw(pad.clone()));
                    } else {
                        first.push(Span::styled(m.clone(), bullet));
                        if marker == Marker::Take {
                            *used = true;
                        }
                    }
                    rest.push(Span::raw(pad));
                }
            }
        }
        (first, rest)
    }

    fn emit(&mut self, line: Logical) {
        let (first, rest) = self.prefixes(Marker::Take);
        self.out.push(line.prefixed(first, rest));
    }

    /// Ends the current run of inline text as one logical line.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        self.emit(Logical::words(spans));
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let code = code.strip_suffix('\n').unwrap_or(code);
        let highlighted = match self.highlight {
            Highlight::Yes if self.palette.colors() => highlight(code, lang),
            _ => None,
        };
        let indent = || vec![Span::raw("  ")];
        match highlighted {
            Some(lines) => {
                for spans in lines {
                    let spans = spans
                        .into_iter()
                        .map(|s| styled(s.content.into_owned(), s.style))
                        .collect();
                    self.emit(Logical::chars(spans).prefixed(indent(), indent()));
                }
            }
            None => {
                for line in code.split('\n') {
                    let span = styled(line, self.palette.code_block());
                    self.emit(Logical::chars(vec![span]).prefixed(indent(), indent()));
                }
            }
        }
    }

    fn table_lines(&mut self, table: Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                let w: usize = cell.iter().map(|s| str_width(&s.content)).sum();
                widths[i] = widths[i].max(w);
            }
        }
        let border = self.palette.border();
        for (r, row) in table.rows.into_iter().enumerate() {
            let mut spans = Vec::new();
            for (i, cell) in row.into_iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" │ ", border));
                }
                let w: usize = cell.iter().map(|s| str_width(&s.content)).sum();
                let header = r < table.header_rows;
                for span in cell {
                    let style = if header {
                        span.style.add_modifier(Modifier::BOLD)
                    } else {
                        span.style
                    };
                    spans.push(Span::styled(span.content, style));
                }
                spans.push(Span::raw(" ".repeat(widths[i].saturating_sub(w))));
            }
            self.emit(Logical::chars(spans));
            if r + 1 == table.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let mut line = Logical::text(rule.join("─┼─"), border);
                line.mode = WrapMode::Clip;
                self.emit(line);
            }
        }
    }
}

/// Whether computing prefixes uses up list markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// For a real row: the marker shows, then spaces on later rows.
    Take,
    /// For a blank separator row: no marker, none used.
    Peek,
}
