//! One cell as rows of a given width.
//!
//! Finished cells are laid out once per width (the cell caches its rows);
//! live cells (a running tool, a streaming message) are laid out each frame
//! and are small: a tool's tail is bounded, a message's committed blocks are
//! wrapped once per width, only its tail is parsed again.

use std::sync::Arc;
use std::time::Duration;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use tokio::time::Instant;

use super::diff::DiffKind;
use super::text::{first_line, fit_width};
use super::wrap::{Logical, styled, wrap, wrap_all};
use crate::palette::Palette;
use crate::transcript::{
    Cell, CellKind, LayoutKey, NoticeKind, ReasoningView, SubagentActivity, ToolCell, ToolState,
};

/// Diff lines a tool cell shows (the preview may hold more).
const DIFF_SHOWN: usize = 24;
/// Indent of everything under a cell's first row.
const INDENT: &str = "  ";
/// Spinner frames and how long each shows.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const SPINNER_FRAME: Duration = Duration::from_millis(80);

/// What laying out a cell depends on besides the cell.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CellCtx {
    pub(crate) width: u16,
    pub(crate) palette: Palette,
    pub(crate) reasoning: ReasoningView,
    pub(crate) now: Instant,
}

/// The spinner frame at `now` for something that started at `since`.
pub(crate) fn spinner(since: Instant, now: Instant) -> &'static str {
    let frames = now.saturating_duration_since(since).as_millis() / SPINNER_FRAME.as_millis();
    SPINNER[(frames % SPINNER.len() as u128) as usize]
}

/// `1.2s`, `340ms`, `2m05s`.
pub(crate) fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// The rows of `cell` at `ctx.width`.
pub(crate) fn cell_lines(cell: &Cell, ctx: &CellCtx) -> Arc<[Line<'static>]> {
    if cell.is_live() {
        return layout(cell, ctx).into();
    }
    let key = LayoutKey {
        width: ctx.width,
        reasoning_expanded: ctx.reasoning == ReasoningView::Expanded,
    };
    cell.cached_lines(key, || layout(cell, ctx))
}

fn layout(cell: &Cell, ctx: &CellCtx) -> Vec<Line<'static>> {
    let p = ctx.palette;
    let mut out = Vec::new();
    match &cell.kind {
        CellKind::User(text) => {
            for (i, line) in text.lines().enumerate() {
                let prefix = if i == 0 { "› " } else { "  " };
                let logical = Logical::text(line, p.user_text())
                    .prefixed(vec![Span::styled(prefix, p.user_prompt())], indent());
                wrap(&logical, ctx.width, &mut out);
            }
        }
        CellKind::Assistant(md) => {
            let inner = ctx.width.saturating_sub(2).max(1);
            for line in md.lines(inner, p) {
                let mut spans = vec![Span::raw(INDENT)];
                spans.extend(line.spans);
                out.push(Line::from(spans));
            }
        }
        CellKind::Reasoning(r) => reasoning(&r.text, r.streaming, ctx, &mut out),
        CellKind::Tool(tool) => tool_cell(tool, ctx, &mut out),
        CellKind::Notice { kind, text } => notice(*kind, text, ctx, &mut out),
    }
    out
}

fn indent() -> Vec<Span<'static>> {
    vec![Span::raw(INDENT)]
}

fn reasoning(text: &str, streaming: bool, ctx: &CellCtx, out: &mut Vec<Line<'static>>) {
    let p = ctx.palette;
    let label = if streaming { "Thinking…" } else { "Thought" };
    match ctx.reasoning {
        ReasoningView::Collapsed => {
            let gist = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let head = format!("{INDENT}∴ {label}  ");
            let room = usize::from(ctx.width).saturating_sub(super::text::str_width(&head));
            out.push(Line::from(vec![
                Span::styled(head, p.reasoning()),
                styled(fit_width(gist.trim(), room), p.reasoning()),
            ]));
        }
        ReasoningView::Expanded => {
            out.push(Line::from(Span::styled(
                format!("{INDENT}∴ {label}"),
                p.reasoning(),
            )));
            let bar = || vec![Span::styled(format!("{INDENT}│ "), p.reasoning())];
            for line in text.lines() {
                wrap(
                    &Logical::text(line, p.reasoning()).prefixed(bar(), bar()),
                    ctx.width,
                    out,
                );
            }
        }
    }
}

fn notice(kind: NoticeKind, text: &str, ctx: &CellCtx, out: &mut Vec<Line<'static>>) {
    let p = ctx.palette;
    let (mark, style) = match kind {
        NoticeKind::Info => ("· ", p.dim()),
        NoticeKind::Command => ("", p.text()),
        NoticeKind::Warning => ("! ", p.warning()),
        NoticeKind::Error => ("✗ ", p.failure()),
    };
    for (i, line) in text.lines().enumerate() {
        let first = if i == 0 && !mark.is_empty() {
            vec![Span::styled(mark, style)]
        } else {
            indent()
        };
        let logical = Logical::text(line, style).prefixed(first, indent());
        wrap(&logical, ctx.width, out);
    }
}

/// The mark and style of a tool state.
fn state_mark(tool: &ToolCell, ctx: &CellCtx) -> (&'static str, Style) {
    let p = ctx.palette;
    match tool.state {
        ToolState::Pending => ("○", p.dim()),
        ToolState::AwaitingPermission => ("?", p.warning()),
        ToolState::Running => (spinner(tool.started, ctx.now), p.running()),
        ToolState::Done => ("✓", p.success()),
        ToolState::Failed => ("✗", p.failure()),
        ToolState::Denied => ("⊘", p.warning()),
        ToolState::Interrupted => ("■", p.warning()),
    }
}

fn tool_cell(tool: &ToolCell, ctx: &CellCtx, out: &mut Vec<Line<'static>>) {
    let p = ctx.palette;
    let (mark, mark_style) = state_mark(tool, ctx);
    let timing = match (tool.state, tool.ended) {
        (ToolState::Pending | ToolState::Denied, _) => String::new(),
        (_, Some(ended)) => format_duration(ended.saturating_duration_since(tool.started)),
        (state, None) if !state.is_finished() => {
            format_duration(ctx.now.saturating_duration_since(tool.started))
        }
        _ => String::new(),
    };
    let name = format!("{mark} {} ", tool.name);
    let timing = if timing.is_empty() {
        timing
    } else {
        format!("  {timing}")
    };
    let used = super::text::str_width(&name) + super::text::str_width(&timing);
    let room = usize::from(ctx.width).saturating_sub(used);
    out.push(Line::from(vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(format!("{} ", tool.name), p.tool_name()),
        styled(fit_width(&tool.summary, room), p.text()),
        Span::styled(timing, p.dim()),
    ]));
    let elbow = || vec![Span::styled(format!("{INDENT}⎿ "), p.dim())];
    let body_indent = || vec![Span::raw(format!("{INDENT}  "))];
    let row_room = usize::from(ctx.width).saturating_sub(4);
    match tool.state {
        ToolState::Pending => {}
        ToolState::AwaitingPermission => out.push(Line::from(
            [
                elbow(),
                vec![Span::styled("waiting for permission", p.warning())],
            ]
            .concat(),
        )),
        ToolState::Running => {
            for (i, line) in tool.tail.visible().enumerate() {
                let lead = if i == 0 { elbow() } else { body_indent() };
                let text = styled(line, p.dim());
                out.push(Line::from(
                    [
                        lead,
                        vec![Span::styled(fit_width(&text.content, row_room), p.dim())],
                    ]
                    .concat(),
                ));
            }
        }
        state => {
            let style = match state {
                ToolState::Done => p.dim(),
                ToolState::Failed => p.failure(),
                _ => p.warning(),
            };
            let line = first_line(&tool.outcome);
            // An edit's language-server count (`· 2 errors`) stands out.
            let outcome = match crate::transcript::tool::diagnostics_count(line) {
                Some((head, count)) if state == ToolState::Done => {
                    vec![styled(head, style), styled(count, p.failure())]
                }
                _ => vec![styled(line, style)],
            };
            wrap(
                &Logical::words(outcome).prefixed(elbow(), body_indent()),
                ctx.width,
                out,
            );
            if state != ToolState::Done {
                for line in tool.tail.visible() {
                    let text = styled(line, p.dim());
                    out.push(Line::from(
                        [
                            body_indent(),
                            vec![Span::styled(fit_width(&text.content, row_room), p.dim())],
                        ]
                        .concat(),
                    ));
                }
            }
            if state == ToolState::Done
                && let Some(diff) = &tool.diff
            {
                diff_lines(diff, DIFF_SHOWN, ctx, out);
            }
        }
    }
    if let Some(activity) = &tool.subagent {
        subagent_lines(activity, ctx, out);
    }
}

/// A diff's rows: `+`/`-` lines coloured, bounded, "… N more lines".
pub(crate) fn diff_lines(
    diff: &super::diff::DiffPreview,
    shown: usize,
    ctx: &CellCtx,
    out: &mut Vec<Line<'static>>,
) {
    let p = ctx.palette;
    let mut logical = Vec::new();
    for line in diff.lines.iter().take(shown) {
        let (mark, style) = match line.kind {
            DiffKind::Added => ("+ ", p.diff_added()),
            DiffKind::Removed => ("- ", p.diff_removed()),
            DiffKind::Context => ("  ", p.dim()),
            DiffKind::Separator => ("⋯", p.diff_hunk()),
        };
        let lead = vec![Span::raw(format!("{INDENT}  ")), Span::styled(mark, style)];
        let cont = vec![Span::raw(format!("{INDENT}    "))];
        logical.push(Logical::chars(vec![styled(line.text.clone(), style)]).prefixed(lead, cont));
    }
    wrap_all(&logical, ctx.width, out);
    let more = diff.lines.len().saturating_sub(shown) + diff.more;
    if more > 0 {
        out.push(Line::from(Span::styled(
            format!("{INDENT}  … {more} more lines"),
            p.dim(),
        )));
    }
}

fn subagent_lines(activity: &SubagentActivity, ctx: &CellCtx, out: &mut Vec<Line<'static>>) {
    let p = ctx.palette;
    let room = usize::from(ctx.width).saturating_sub(8);
    let earlier = (activity.calls as usize).saturating_sub(activity.recent.len());
    if earlier > 0 {
        out.push(Line::from(Span::styled(
            format!("{INDENT}  ↳ … {earlier} earlier calls"),
            p.dim(),
        )));
    }
    for call in &activity.recent {
        let (mark, style) = match call.state {
            ToolState::Done => ("✓", p.success()),
            ToolState::Failed => ("✗", p.failure()),
            ToolState::Denied | ToolState::Interrupted => ("■", p.warning()),
            _ => ("·", p.running()),
        };
        let text = format!("{} {}", call.name, call.summary);
        out.push(Line::from(vec![
            Span::styled(format!("{INDENT}  ↳ "), p.dim()),
            Span::styled(format!("{mark} "), style),
            styled(fit_width(&text, room), p.dim()),
        ]));
    }
}
