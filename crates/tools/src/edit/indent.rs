//! Indentation: measuring it, detecting a file's style, and shifting a
//! model's `new_string` to the file's indentation when its `old_string`
//! matched only with the indentation ignored.
//!
//! Widths are counted in columns; a tab advances to the next multiple of the
//! file's indent unit. A shift is the file's width minus the model's width
//! for the same line. The shift applied to `new_string` is, in order of
//! preference: one shift for every line; one for the first line and one for
//! the rest (the model copied the first line without its indentation); or,
//! when `new_string` has as many lines as `old_string`, each line's own
//! shift. Anything else is refused rather than guessed.

/// How a file indents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IndentStyle {
    pub tabs: bool,
    /// Columns per indentation level (and per tab when measuring).
    pub unit: usize,
}

impl Default for IndentStyle {
    fn default() -> Self {
        IndentStyle {
            tabs: false,
            unit: 4,
        }
    }
}

/// The leading spaces and tabs of `line`.
pub(crate) fn leading(line: &str) -> &str {
    let rest = line.trim_start_matches([' ', '\t']);
    &line[..line.len() - rest.len()]
}

/// The width of `indent` in columns.
pub(crate) fn width(indent: &str, unit: usize) -> usize {
    indent.chars().fold(0, |col, c| match c {
        '\t' => (col / unit + 1) * unit,
        _ => col + 1,
    })
}

/// `columns` of indentation written in `style`.
pub(crate) fn render(columns: usize, style: IndentStyle) -> String {
    if style.tabs {
        let mut out = "\t".repeat(columns / style.unit);
        out.push_str(&" ".repeat(columns % style.unit));
        out
    } else {
        " ".repeat(columns)
    }
}

/// The indentation style of a file, from its lines: tabs when more lines
/// start with a tab than with a space; the unit is the commonest step between
/// successive indented lines (2 to 8 columns, 4 when unclear).
pub(crate) fn detect<'a>(lines: impl IntoIterator<Item = &'a str>) -> IndentStyle {
    let (mut tab_lines, mut space_lines) = (0usize, 0usize);
    let mut steps = [0usize; 9];
    let mut previous = 0usize;
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let indent = leading(line);
        match indent.chars().next() {
            Some('\t') => tab_lines += 1,
            Some(_) => space_lines += 1,
            None => {}
        }
        let w = width(indent, 4);
        if !indent.contains('\t') && w > previous && w - previous <= 8 {
            steps[w - previous] += 1;
        }
        previous = w;
    }
    let tabs = tab_lines > space_lines;
    let unit = if tabs {
        4
    } else {
        (2..=8)
            .max_by_key(|&n| (steps[n], n == 4))
            .filter(|&n| steps[n] > 0)
            .unwrap_or(4)
    };
    IndentStyle { tabs, unit }
}

/// `old` and the file's lines matched pairwise but shift by different
/// amounts, in a way `new` cannot follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InconsistentShift;

/// `new` re-indented so that the lines of `old` would have lined up with
/// `file` (matched line for line, ignoring indentation). Blank lines come out
/// empty.
pub(crate) fn reindent(
    file: &[&str],
    old: &[String],
    new: &[String],
    style: IndentStyle,
) -> Result<Vec<String>, InconsistentShift> {
    let shifts = shifts_of(file, old, style);
    if shifts.iter().all(Option::is_none) {
        return Ok(new.to_vec());
    }
    if let Some(per_line) = uniform(&shifts, new) {
        return Ok(apply(new, &per_line, style));
    }
    // The model indented by another unit than the file (two spaces where
    // the file has a tab): counted in levels, the shift may be one.
    if let Some(unit) = model_unit(old, new).filter(|&unit| unit != style.unit)
        && let (Some(old), Some(new)) = (
            rescale(old, unit, style.unit),
            rescale(new, unit, style.unit),
        )
        && let Some(per_line) = uniform(&shifts_of(file, &old, style), &new)
    {
        return Ok(apply(&new, &per_line, style));
    }
    if new.len() == old.len() && shifts.iter().any(Option::is_some) {
        return Ok(apply(new, &fill_blanks(&shifts), style));
    }
    Err(InconsistentShift)
}

/// The shift of each non-blank line of `old`.
fn shifts_of(file: &[&str], old: &[String], style: IndentStyle) -> Vec<Option<isize>> {
    file.iter()
        .zip(old)
        .map(|(f, o)| {
            (!o.trim().is_empty()).then(|| {
                to_isize(width(leading(f), style.unit)) - to_isize(width(leading(o), style.unit))
            })
        })
        .collect()
}

/// One shift for every line of `new`, or one for its first non-blank line
/// and one for the rest (the model copied the first line without its
/// indentation); `None` when the shifts say neither.
fn uniform(shifts: &[Option<isize>], new: &[String]) -> Option<Vec<isize>> {
    let known: Vec<isize> = shifts.iter().flatten().copied().collect();
    let Some((&first, rest)) = known.split_first() else {
        return Some(vec![0; new.len()]);
    };
    if known.iter().all(|&s| s == first) {
        return Some(vec![first; new.len()]);
    }
    if rest.iter().all(|&s| s == rest[0]) {
        let lead = new.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
        return Some(
            (0..new.len())
                .map(|i| if i <= lead { first } else { rest[0] })
                .collect(),
        );
    }
    None
}

fn apply(new: &[String], per_line: &[isize], style: IndentStyle) -> Vec<String> {
    new.iter()
        .zip(per_line)
        .map(|(line, &shift)| shift_line(line, shift, style))
        .collect()
}

/// The unit the model indented `old` and `new` by: spaces only, the
/// commonest step between lines.
fn model_unit(old: &[String], new: &[String]) -> Option<usize> {
    let lines = old.iter().chain(new).map(String::as_str);
    if lines.clone().any(|l| leading(l).contains('\t')) {
        return None;
    }
    let style = detect(lines);
    Some(style.unit)
}

/// `lines` with each indentation of `from` columns per level written with
/// `to` columns per level; `None` when an indentation is not a whole number
/// of levels.
fn rescale(lines: &[String], from: usize, to: usize) -> Option<Vec<String>> {
    lines
        .iter()
        .map(|line| {
            let indent = leading(line);
            if line.trim().is_empty() {
                return Some(String::new());
            }
            if !indent.len().is_multiple_of(from) {
                return None;
            }
            Some(format!(
                "{}{}",
                " ".repeat(indent.len() / from * to),
                &line[indent.len()..]
            ))
        })
        .collect()
}

/// Each blank line takes the shift of the closest non-blank line before it
/// (or after it, at the start).
fn fill_blanks(shifts: &[Option<isize>]) -> Vec<isize> {
    let first_known = shifts.iter().flatten().next().copied().unwrap_or(0);
    let mut current = first_known;
    shifts
        .iter()
        .map(|s| {
            if let Some(s) = s {
                current = *s;
            }
            current
        })
        .collect()
}

fn shift_line(line: &str, shift: isize, style: IndentStyle) -> String {
    if line.trim().is_empty() {
        return String::new();
    }
    let indent = leading(line);
    let columns = (to_isize(width(indent, style.unit)) + shift).max(0);
    let mut out = render(usize::try_from(columns).unwrap_or(0), style);
    out.push_str(&line[indent.len()..]);
    out
}

fn to_isize(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| (*s).to_owned()).collect()
    }

    const SPACES: IndentStyle = IndentStyle {
        tabs: false,
        unit: 4,
    };
    const TABS: IndentStyle = IndentStyle {
        tabs: true,
        unit: 4,
    };

    #[test]
    fn widths_and_styles() {
        assert_eq!(width("\t  ", 4), 6);
        assert_eq!(width("  \t", 4), 4);
        assert_eq!(render(6, TABS), "\t  ");
        assert_eq!(render(6, SPACES), "      ");
        assert_eq!(detect(["a", "  b", "    c", "  d"]).unit, 2);
        assert_eq!(detect(["a", "\tb", "\t\tc"]), TABS);
        assert_eq!(detect(["a"]), SPACES);
    }

    #[test]
    fn a_uniform_shift_moves_every_line() {
        let out = reindent(
            &["        if x {", "            y();", "        }"],
            &strings(&["if x {", "    y();", "}"]),
            &strings(&["if x {", "    z();", "", "    w();", "}"]),
            SPACES,
        )
        .unwrap();
        assert_eq!(
            out,
            [
                "        if x {",
                "            z();",
                "",
                "            w();",
                "        }"
            ]
        );
    }

    #[test]
    fn tabs_and_spaces_are_converted_to_the_file_style() {
        let out = reindent(
            &["\tfn a() {", "\t\tb();"],
            &strings(&["    fn a() {", "        b();"]),
            &strings(&["    fn a() {", "        c();"]),
            TABS,
        )
        .unwrap();
        assert_eq!(out, ["\tfn a() {", "\t\tc();"]);
    }

    #[test]
    fn two_spaces_a_level_match_a_file_indented_with_tabs() {
        let out = reindent(
            &["\tif x {", "\t\ty()", "\t}"],
            &strings(&["  if x {", "    y()", "  }"]),
            &strings(&["  if x {", "    y()", "    z()", "  }", "  w()"]),
            TABS,
        )
        .unwrap();
        assert_eq!(out, ["\tif x {", "\t\ty()", "\t\tz()", "\t}", "\tw()"]);
    }

    #[test]
    fn a_first_line_without_its_indentation_is_shifted_alone() {
        let out = reindent(
            &["    def f():", "        return 1"],
            &strings(&["def f():", "        return 1"]),
            &strings(&["def f(x):", "        y = x", "        return y"]),
            SPACES,
        )
        .unwrap();
        assert_eq!(out, ["    def f(x):", "        y = x", "        return y"]);
    }

    #[test]
    fn disagreeing_shifts_go_line_by_line_or_are_refused() {
        let file = ["  a", "      b", "c"];
        let old = strings(&["a", "b", "  c"]);
        let out = reindent(&file, &old, &strings(&["A", "B", "  C"]), SPACES).unwrap();
        assert_eq!(out, ["  A", "      B", "C"]);
        let refused = reindent(&file, &old, &strings(&["A", "B"]), SPACES);
        assert_eq!(refused, Err(InconsistentShift));
    }
}
