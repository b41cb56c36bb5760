//! Bounded tool output: keep the head and the tail, say what was cut.
//!
//! Invariants:
//! - A result never exceeds its byte limit by more than the marker line.
//! - Cuts fall on line boundaries when a line boundary is near, and always on
//!   `char` boundaries.
//! - A cut output holds exactly one marker line,
//!   `[... N lines (M bytes) omitted ...]`, or, where the whole output may
//!   have been saved, `[... N lines (M bytes) cut; full output in PATH ...]`
//!   ([`cut_marker`]).
//!
//! The head and the tail are kept because both matter: a command's first lines
//! say what it did, its last lines say how it ended (errors, summaries).

/// Default byte limit of what a tool returns to the model.
pub const DEFAULT_MAX_BYTES: usize = 30_000;
/// Default line limit of what a tool returns to the model.
pub const DEFAULT_MAX_LINES: usize = 2_000;

/// Size limits for one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_bytes: usize,
    pub max_lines: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: DEFAULT_MAX_BYTES,
            max_lines: DEFAULT_MAX_LINES,
        }
    }
}

/// The marker put in place of what was cut.
pub fn omission_marker(lines: usize, bytes: usize) -> String {
    format!("[... {lines} lines ({bytes} bytes) omitted ...]")
}

/// The marker of a cut whose whole output went somewhere: `whereabouts` is
/// appended after `cut`, e.g. `; full output in /tmp/x.log` (or empty).
pub fn cut_marker(lines: usize, bytes: usize, whereabouts: &str) -> String {
    format!("[... {lines} lines ({bytes} bytes) cut{whereabouts} ...]")
}

/// `None` when `text` fits in `head_bytes + tail_bytes`; otherwise at most
/// `head_bytes` of its beginning and `tail_bytes` of its end, on line
/// boundaries where one is near, around the marker `marker(lines, bytes)`
/// makes of what was cut.
pub fn cut_middle(
    text: &str,
    head_bytes: usize,
    tail_bytes: usize,
    marker: impl FnOnce(usize, usize) -> String,
) -> Option<String> {
    if text.len() <= head_bytes.saturating_add(tail_bytes) {
        return None;
    }
    let head_end = head_cut(text, head_bytes, usize::MAX);
    let tail_start = tail_cut(text, tail_bytes, usize::MAX).max(head_end);
    let omitted = &text[head_end..tail_start];
    Some(assemble(
        &text[..head_end],
        &text[tail_start..],
        &marker(count_lines(omitted), omitted.len()),
    ))
}

/// `text` unchanged when within `limits`; otherwise its head and tail around
/// an omission marker.
pub fn truncate_middle(text: &str, limits: Limits) -> String {
    let line_count = text.lines().count();
    if text.len() <= limits.max_bytes && line_count <= limits.max_lines {
        return text.to_owned();
    }
    let head_end = head_cut(text, limits.max_bytes / 2, limits.max_lines / 2);
    let tail_start = tail_cut(text, limits.max_bytes / 2, limits.max_lines / 2).max(head_end);
    let omitted = &text[head_end..tail_start];
    assemble(
        &text[..head_end],
        &text[tail_start..],
        &omission_marker(count_lines(omitted), omitted.len()),
    )
}

/// Cuts `line` to at most `max_chars` characters, saying how many were cut.
pub fn truncate_line(line: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(line),
        Some((cut, _)) => {
            let rest = line[cut..].chars().count();
            std::borrow::Cow::Owned(format!("{}... [{rest} more characters]", &line[..cut]))
        }
    }
}

/// The end of the head: at most `max_bytes` bytes and `max_lines` lines,
/// backed up to the last line end when there is one.
fn head_cut(text: &str, max_bytes: usize, max_lines: usize) -> usize {
    if max_lines == 0 {
        return 0;
    }
    let mut end = text.floor_char_boundary(max_bytes.min(text.len()));
    if let Some((i, _)) = text.match_indices('\n').nth(max_lines - 1) {
        end = end.min(i + 1);
    }
    if end < text.len()
        && !text[..end].ends_with('\n')
        && let Some(i) = text[..end].rfind('\n')
    {
        end = i + 1;
    }
    end
}

/// The start of the tail: at most `max_bytes` bytes and `max_lines` lines,
/// moved forward to the next line start when there is one.
fn tail_cut(text: &str, max_bytes: usize, max_lines: usize) -> usize {
    if max_lines == 0 {
        return text.len();
    }
    let mut start = text.ceil_char_boundary(text.len().saturating_sub(max_bytes));
    // The tail's lines are the last `max_lines` line ends, a final one without
    // `\n` counting as a line.
    let body = text.strip_suffix('\n').unwrap_or(text);
    if let Some((i, _)) = body.rmatch_indices('\n').nth(max_lines - 1) {
        start = start.max(i + 1);
    }
    if start > 0
        && !text[..start].ends_with('\n')
        && let Some(i) = text[start..].find('\n')
        && start + i + 1 < text.len()
    {
        start += i + 1;
    }
    start
}

fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

fn assemble(head: &str, tail: &str, marker: &str) -> String {
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(marker);
    out.push('\n');
    out.push_str(tail);
    out
}

/// A byte sink that keeps the first and the last bytes of a stream of any
/// length in bounded memory, for a process's output.
#[derive(Debug)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total_bytes: usize,
    total_newlines: usize,
}

impl HeadTail {
    /// Keeps at most `max_bytes` in all: half for the head, half for the tail.
    pub fn new(max_bytes: usize) -> Self {
        Self::split(max_bytes / 2, max_bytes / 2)
    }

    /// Keeps at most `head_bytes` of the beginning and `tail_bytes` of the end.
    pub fn split(head_bytes: usize, tail_bytes: usize) -> Self {
        HeadTail {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            head_cap: head_bytes,
            tail_cap: tail_bytes,
            total_bytes: 0,
            total_newlines: 0,
        }
    }

    /// Whether pushing `more` bytes would drop some: the stream would no
    /// longer be kept whole.
    pub fn would_drop(&self, more: usize) -> bool {
        self.total_bytes.saturating_add(more) > self.head_cap + self.tail_cap
    }

    /// Everything pushed, when nothing was dropped yet.
    pub fn whole(&self) -> Option<Vec<u8>> {
        (self.head.len() + self.tail.len() == self.total_bytes).then(|| {
            let mut all = self.head.clone();
            all.extend(self.tail.iter());
            all
        })
    }

    /// How many bytes were pushed in all.
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total_bytes += bytes.len();
        self.total_newlines += bytes.iter().filter(|&&b| b == b'\n').count();
        let room = self.head_cap - self.head.len();
        let to_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..to_head]);
        bytes = &bytes[to_head..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.total_bytes == 0
    }

    /// The text kept (invalid UTF-8 replaced), with a marker where bytes were
    /// dropped.
    pub fn to_text(&self) -> String {
        self.to_text_with(omission_marker)
    }

    /// Like [`HeadTail::to_text`], with the marker `marker(lines, bytes)`.
    pub fn to_text_with(&self, marker: impl FnOnce(usize, usize) -> String) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let kept = self.head.len() + tail.len();
        if kept == self.total_bytes {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = String::from_utf8_lossy(without_partial_last_char(&self.head));
        let tail_text = String::from_utf8_lossy(without_partial_first_char(&tail));
        // Whole lines read better than fragments; move the cut to line ends
        // (the moved bytes join the omitted count).
        let head_end = match head.rfind('\n') {
            Some(i) => i + 1,
            None => head.len(),
        };
        let tail_start = match tail_text.find('\n') {
            Some(i) if i + 1 < tail_text.len() => i + 1,
            _ => 0,
        };
        let (head, tail_text) = (&head[..head_end], &tail_text[tail_start..]);
        let omitted_bytes = self
            .total_bytes
            .saturating_sub(head.len() + tail_text.len());
        let kept_newlines = head.matches('\n').count() + tail_text.matches('\n').count();
        let omitted_lines = self.total_newlines.saturating_sub(kept_newlines).max(1);
        assemble(head, tail_text, &marker(omitted_lines, omitted_bytes))
    }
}

/// `bytes` without a UTF-8 sequence cut off at its end.
fn without_partial_last_char(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without the continuation bytes of a sequence cut off at its start.
fn without_partial_first_char(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0b1100_0000 == 0b1000_0000)
        .count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn short_text_is_untouched() {
        let text = numbered(10);
        assert_eq!(truncate_middle(&text, Limits::default()), text);
    }

    #[test]
    fn long_text_keeps_head_and_tail_on_line_boundaries() {
        let text = numbered(10_000);
        let out = truncate_middle(&text, Limits::default());
        assert!(out.len() <= DEFAULT_MAX_BYTES + 60, "{}", out.len());
        assert!(out.starts_with("line 1\nline 2\n"));
        assert!(out.ends_with("line 9999\nline 10000\n"));
        let marker = out.lines().find(|l| l.starts_with("[... ")).unwrap();
        let kept = out.lines().count() - 1;
        assert_eq!(marker, {
            let omitted_lines = 10_000 - kept;
            let omitted_bytes = text.len() - (out.len() - marker.len() - 1);
            omission_marker(omitted_lines, omitted_bytes)
        });
        assert!(out.lines().all(|l| l.starts_with("line ") || l == marker));
    }

    #[test]
    fn line_limit_applies_to_short_lines() {
        let text = numbered(100);
        let out = truncate_middle(
            &text,
            Limits {
                max_bytes: 100_000,
                max_lines: 10,
            },
        );
        assert_eq!(
            out,
            "line 1\nline 2\nline 3\nline 4\nline 5\n\
             [... 90 lines (716 bytes) omitted ...]\n\
             line 96\nline 97\nline 98\nline 99\nline 100\n"
        );
    }

    #[test]
    fn one_huge_line_is_cut_on_char_boundaries() {
        let text = "é".repeat(50_000);
        let out = truncate_middle(&text, Limits::default());
        assert!(out.len() < DEFAULT_MAX_BYTES + 60);
        assert!(out.contains("omitted ...]"));
    }

    #[test]
    fn truncate_line_counts_the_rest() {
        assert_eq!(truncate_line("abcdef", 10), "abcdef");
        assert_eq!(truncate_line("abcdef", 2), "ab... [4 more characters]");
    }

    #[test]
    fn head_tail_keeps_both_ends_of_a_stream() {
        let mut buf = HeadTail::new(100);
        for i in 0..1000 {
            buf.push(format!("row {i}\n").as_bytes());
        }
        let out = buf.to_text();
        assert!(out.starts_with("row 0\nrow 1\n"));
        assert!(out.ends_with("row 998\nrow 999\n"));
        assert!(out.contains("omitted ...]"));
        assert!(out.len() < 200);
    }

    #[test]
    fn head_tail_never_splits_a_character() {
        let mut buf = HeadTail::new(101);
        for _ in 0..1000 {
            buf.push("é".as_bytes());
        }
        let out = buf.to_text();
        assert!(!out.contains('\u{FFFD}'), "{out}");
        assert!(out.starts_with("éé") && out.ends_with("éé"));
        assert!(out.contains("omitted ...]"));
    }

    #[test]
    fn cut_middle_keeps_uneven_head_and_tail() {
        let text = numbered(1000);
        assert_eq!(
            cut_middle(&text, 20_000, 20_000, |_, _| unreachable!()),
            None
        );
        let out = cut_middle(&text, 40, 60, |lines, bytes| {
            cut_marker(lines, bytes, "; x")
        })
        .unwrap();
        let (head, rest) = out.split_once("[... ").unwrap();
        let (marker, tail) = rest.split_once('\n').unwrap();
        assert!(head.len() <= 40 && head.ends_with('\n'), "{head:?}");
        assert!(
            tail.len() <= 60 && tail.ends_with("line 1000\n"),
            "{tail:?}"
        );
        assert!(marker.ends_with(" bytes) cut; x ...]"), "{marker}");
        let omitted: usize = marker.split(' ').next().unwrap().parse().unwrap();
        assert_eq!(omitted + head.lines().count() + tail.lines().count(), 1000);
    }

    #[test]
    fn head_tail_split_reports_whole_until_it_drops() {
        let mut buf = HeadTail::split(4, 6);
        buf.push(b"0123456789");
        assert_eq!(buf.whole().unwrap(), b"0123456789");
        assert!(buf.would_drop(1));
        buf.push(b"ab");
        assert_eq!(buf.whole(), None);
        assert_eq!(buf.total_bytes(), 12);
        let out = buf.to_text_with(|lines, bytes| cut_marker(lines, bytes, ""));
        assert_eq!(out, "0123\n[... 1 lines (2 bytes) cut ...]\n6789ab");
    }

    #[test]
    fn head_tail_under_limit_is_verbatim() {
        let mut buf = HeadTail::new(100);
        buf.push(b"a\n");
        buf.push(b"b");
        assert_eq!(buf.to_text(), "a\nb");
    }
}
