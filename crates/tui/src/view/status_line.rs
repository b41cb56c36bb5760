//! The status line: run state (or the retry countdown), model, agent,
//! reasoning effort, agent, context used, tokens, cost, permission mode,
//! queued prompts.
//!
//! When the line is too narrow, segments are left out by priority (the
//! run state, the countdown and the permission mode last), keeping their
//! order on the line; a `…` stands where segments were left out.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::Screen;
use crate::render::cell::spinner;
use crate::render::text::{fit_width, format_tokens, str_width};

const SEPARATOR: &str = " · ";

pub(super) fn draw(frame: &mut Frame, area: Rect, screen: &Screen) {
    if area.is_empty() {
        return;
    }
    let line = status_line(screen, usize::from(area.width));
    let palette = screen.transcript.palette();
    let buf = frame.buffer_mut();
    buf.set_style(area, palette.status_bar());
    buf.set_line(area.x, area.y, &line, area.width);
}

fn status_line(screen: &Screen, width: usize) -> Line<'static> {
    let status = screen.status;
    let p = screen.transcript.palette();
    let now = screen.now;
    // (priority: lower stays longer, text, style), in display order.
    let mut segments: Vec<(u8, String, Style)> = Vec::new();
    if let Some(left) = status.retry_seconds_left(now) {
        let attempt = status.retry.as_ref().map_or(0, |r| r.attempt);
        let text = if left == 0 {
            format!("⟳ Retrying now (attempt {attempt})")
        } else {
            format!("⟳ Retrying in {left} s (attempt {attempt})")
        };
        segments.push((0, text, p.warning()));
    } else if let Some(busy) = status.busy_for(now) {
        let since = now - busy;
        segments.push((
            0,
            format!("{} working {}s", spinner(since, now), busy.as_secs()),
            p.running(),
        ));
    } else {
        segments.push((0, "● ready".into(), p.success()));
    }
    if !status.model.is_empty() {
        segments.push((2, status.model.clone(), p.accent()));
    }
    if !status.effort.is_empty() {
        segments.push((6, format!("effort {}", status.effort), p.text()));
    }
    if !status.agent.is_empty() {
        segments.push((6, status.agent.clone(), p.text()));
    }
    if let Some(context) = status.context {
        let percent = context.percent();
        let style = if percent >= 80 { p.warning() } else { p.text() };
        segments.push((3, format!("ctx {percent}%"), style));
    }
    if status.usage != Default::default() {
        segments.push((
            4,
            format!(
                "↑{} ↓{}",
                format_tokens(status.usage.prompt_tokens()),
                format_tokens(status.usage.output_tokens)
            ),
            p.text(),
        ));
    }
    if status.cost_usd > 0.0 {
        segments.push((5, format!("${:.3}", status.cost_usd), p.text()));
    }
    if !status.permission_mode.is_empty() {
        segments.push((1, status.permission_mode.clone(), p.text()));
    }
    if status.queued > 0 {
        segments.push((3, format!("{} queued", status.queued), p.warning()));
    }
    // Leave out the lowest-priority segments until the rest fits; one `…`
    // stands where the first were left out.
    let mut shown: Vec<Option<(u8, String, Style)>> = segments.into_iter().map(Some).collect();
    let fits = |shown: &[Option<(u8, String, Style)>]| {
        let mut total = 1;
        let mut parts = 0usize;
        let mut cut = false;
        for segment in shown {
            match segment {
                Some((_, text, _)) => total += str_width(text),
                None if cut => continue,
                None => {
                    cut = true;
                    total += 1;
                }
            }
            parts += 1;
        }
        total + str_width(SEPARATOR) * parts.saturating_sub(1) <= width
    };
    while shown.iter().flatten().count() > 1 && !fits(&shown) {
        let worst = shown
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|(priority, _, _)| (i, *priority)))
            .max_by_key(|(_, priority)| *priority)
            .map_or(0, |(i, _)| i);
        shown[worst] = None;
    }
    let mut spans = vec![Span::raw(" ")];
    let mut cut = false;
    for segment in shown {
        if segment.is_none() && std::mem::replace(&mut cut, true) {
            continue;
        }
        if spans.len() > 1 {
            spans.push(Span::styled(SEPARATOR, p.dim()));
        }
        match segment {
            Some((_, text, style)) => {
                let text = fit_width(&text, width.saturating_sub(1));
                spans.push(Span::styled(text, style));
            }
            None => spans.push(Span::styled("…", p.dim())),
        }
    }
    Line::from(spans)
}
