//! The Markdown report: a header (date, gyre version, machine, run counts),
//! one table row per measured quantity, notes, and any failures.
//!
//! A target is judged on the median, never on the best run.

use std::fmt::Write;

use crate::stats::Summary;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Milliseconds,
    Mebibytes,
    MebibytesPerSecond,
    Nanoseconds,
    /// A dimensionless ratio, e.g. gyre's time over rg's.
    Ratio,
    /// How many of something (requests, compactions).
    Count,
    /// Tokens, by the mock server's count.
    Tokens,
    /// MiB of one thing per MiB of another (RSS per MiB of history).
    MebibytesPerMebibyte,
    /// Things per second (appends, turns).
    PerSecond,
    /// KiB (bytes on disk).
    Kibibytes,
    /// Seconds (a build), shown as minutes and seconds from a minute up.
    Seconds,
    /// A share, 0–1, shown as a percentage.
    Percent,
    /// US dollars.
    Dollars,
}

impl Unit {
    fn format(self, value: f64) -> String {
        match self {
            Unit::Milliseconds if value < 10.0 => format!("{value:.2} ms"),
            Unit::Milliseconds => format!("{value:.1} ms"),
            Unit::Mebibytes => format!("{value:.1} MB"),
            Unit::MebibytesPerSecond if value < 100.0 => format!("{value:.1} MiB/s"),
            Unit::MebibytesPerSecond => format!("{value:.0} MiB/s"),
            Unit::Nanoseconds => format!("{value:.0} ns"),
            Unit::Ratio => format!("{value:.2}×"),
            Unit::Count => format!("{value:.0}"),
            Unit::Tokens => format!("{value:.0} tokens"),
            Unit::Percent => format!("{:.1} %", value * 100.0),
            Unit::Dollars => format!("${value:.3}"),
            Unit::MebibytesPerMebibyte => format!("{value:.2} MB/MB"),
            Unit::PerSecond => format!("{value:.0}/s"),
            Unit::Kibibytes => format!("{value:.0} KB"),
            Unit::Seconds if value < 60.0 => format!("{value:.1} s"),
            Unit::Seconds => {
                let whole = value.round() as u64;
                format!("{} min {} s", whole / 60, whole % 60)
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    None,
    AtMost(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Summary(Summary),
    /// A derived figure with no spread of its own.
    MedianOnly(f64),
    /// The scenario failed; its error is listed under the table.
    Failed,
    /// Not measured, and why (shown in the median column).
    Skipped(&'static str),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub what: String,
    pub value: Value,
    pub unit: Unit,
    pub target: Target,
}

impl Row {
    pub fn new(what: impl Into<String>, value: Value, unit: Unit) -> Row {
        Row {
            what: what.into(),
            value,
            unit,
            target: Target::None,
        }
    }

    pub fn target(mut self, at_most: f64) -> Row {
        self.target = Target::AtMost(at_most);
        self
    }

    fn median(&self) -> Option<f64> {
        match &self.value {
            Value::Summary(s) => Some(s.median),
            Value::MedianOnly(m) => Some(*m),
            Value::Failed | Value::Skipped(_) => None,
        }
    }

    /// Whether the median meets the target: `None` when there is no target
    /// or the row was skipped.
    pub fn meets_target(&self) -> Option<bool> {
        if let Value::Skipped(_) = self.value {
            return None;
        }
        match self.target {
            Target::None => None,
            Target::AtMost(max) => Some(self.median().is_some_and(|m| m <= max)),
        }
    }

    fn cells(&self) -> [String; 6] {
        let dash = || "—".to_owned();
        let (median, min, p90) = match &self.value {
            Value::Summary(s) => (
                self.unit.format(s.median),
                self.unit.format(s.min),
                self.unit.format(s.p90),
            ),
            Value::MedianOnly(m) => (self.unit.format(*m), dash(), dash()),
            Value::Failed => ("FAILED".to_owned(), dash(), dash()),
            Value::Skipped(why) => (format!("skipped: {why}"), dash(), dash()),
        };
        let target = match self.target {
            Target::None => dash(),
            Target::AtMost(max) => format!("< {}", self.unit.format(max)),
        };
        let ok = match self.meets_target() {
            None => dash(),
            Some(true) => "yes".to_owned(),
            Some(false) => "**NO**".to_owned(),
        };
        [self.what.clone(), median, min, p90, target, ok]
    }
}

/// Everything printed.
#[derive(Debug, Default)]
pub struct Report {
    pub date: String,
    pub gyre_version: String,
    pub machine: String,
    /// How the in-process rows were built, when there are any.
    pub build: Option<String>,
    pub runs: String,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    pub failures: Vec<String>,
}

impl Report {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## gyre benchmark\n");
        let _ = writeln!(out, "- date: {}", self.date);
        let _ = writeln!(out, "- gyre: {}", self.gyre_version);
        let _ = writeln!(out, "- machine: {}", self.machine);
        if let Some(build) = &self.build {
            let _ = writeln!(out, "- in-process rows: {build}");
        }
        let _ = writeln!(out, "- runs: {}\n", self.runs);
        let _ = writeln!(out, "| what | median | min | p90 | target | ok? |");
        let _ = writeln!(out, "|---|---:|---:|---:|---:|:---:|");
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.cells().join(" | "));
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        if !self.failures.is_empty() {
            let _ = writeln!(out, "\n### Failures\n");
            for failure in &self.failures {
                let _ = writeln!(out, "```\n{}\n```", failure.trim());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(median: f64) -> Value {
        Value::Summary(Summary {
            median,
            min: median - 1.0,
            p90: median + 1.0,
        })
    }

    #[test]
    fn targets_are_judged_on_the_median() {
        let row = Row::new("wall", summary(40.0), Unit::Milliseconds).target(50.0);
        assert_eq!(row.meets_target(), Some(true));
        let row = Row::new("wall", summary(60.0), Unit::Milliseconds).target(50.0);
        assert_eq!(row.meets_target(), Some(false));
        let row = Row::new("wall", Value::Failed, Unit::Milliseconds).target(50.0);
        assert_eq!(row.meets_target(), Some(false));
        let row = Row::new("cpu", summary(60.0), Unit::Milliseconds);
        assert_eq!(row.meets_target(), None);
    }

    #[test]
    fn renders_a_markdown_table() {
        let report = Report {
            rows: vec![
                Row::new("rss", summary(12.0), Unit::Mebibytes).target(15.0),
                Row::new("per turn", Value::MedianOnly(0.5), Unit::Milliseconds),
                Row::new(
                    "decode",
                    Value::MedianOnly(412.34),
                    Unit::MebibytesPerSecond,
                ),
                Row::new("ratio", Value::MedianOnly(1.234), Unit::Ratio),
                Row::new("event", summary(95.2), Unit::Nanoseconds),
                Row::new("requests", Value::MedianOnly(104.0), Unit::Count),
                Row::new("largest", Value::MedianOnly(31_000.0), Unit::Tokens).target(32_000.0),
                Row::new(
                    "growth",
                    Value::MedianOnly(3.456),
                    Unit::MebibytesPerMebibyte,
                ),
                Row::new("appends", Value::MedianOnly(1234.4), Unit::PerSecond),
                Row::new("disk", Value::MedianOnly(2048.4), Unit::Kibibytes),
                Row::new("build", Value::MedianOnly(802.4), Unit::Seconds).target(360.0),
                Row::new("pg", Value::Skipped("set X"), Unit::PerSecond).target(1.0),
            ],
            failures: vec!["boom".into()],
            ..Report::default()
        };
        let md = report.to_markdown();
        assert!(
            md.contains("| what | median | min | p90 | target | ok? |"),
            "{md}"
        );
        assert!(
            md.contains("| rss | 12.0 MB | 11.0 MB | 13.0 MB | < 15.0 MB | yes |"),
            "{md}"
        );
        assert!(
            md.contains("| per turn | 0.50 ms | — | — | — | — |"),
            "{md}"
        );
        assert!(md.contains("| decode | 412 MiB/s | — |"), "{md}");
        assert!(md.contains("| ratio | 1.23× | — |"), "{md}");
        assert!(md.contains("| event | 95 ns | 94 ns | 96 ns |"), "{md}");
        assert!(md.contains("| requests | 104 | — |"), "{md}");
        assert!(
            md.contains("| largest | 31000 tokens | — | — | < 32000 tokens | yes |"),
            "{md}"
        );
        assert!(md.contains("| growth | 3.46 MB/MB | — |"), "{md}");
        assert!(
            md.contains("| build | 13 min 22 s | — | — | < 6 min 0 s | **NO** |"),
            "{md}"
        );
        assert!(md.contains("| appends | 1234/s | — |"), "{md}");
        assert!(md.contains("| disk | 2048 KB | — |"), "{md}");
        assert!(
            md.contains("| pg | skipped: set X | — | — | < 1/s | — |"),
            "{md}"
        );
        assert!(md.contains("```\nboom\n```"), "{md}");
    }
}
