//! A generated model answer for the SSE decode benchmark, independent of the
//! wire: text blocks of many small deltas, with tool calls between them whose
//! JSON arguments arrive in fragments. `sse_wire` encodes it per provider.
//!
//! Invariants: generation is deterministic (see `rng`); the answer always ends
//! with a text block, so every wire can end it the same way (Gemini has no
//! separate "finished" event: its last chunk carries the finish reason); every
//! call's fragments concatenate to its arguments, which are valid JSON. Text
//! deltas hold one to three tokens, including characters that JSON must
//! escape and non-ASCII text.

use serde_json::{Value, json};

use crate::rng::Rng;

#[derive(Debug, Clone)]
pub struct Answer {
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
pub enum Segment {
    /// A text block, as its deltas.
    Text(Vec<String>),
    Call(Call),
}

#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: &'static str,
    /// The whole argument JSON text.
    pub arguments: String,
    /// `arguments` cut into the pieces the stream carries.
    pub fragments: Vec<String>,
}

const WORDS: &[&str] = &[
    "the",
    " function",
    " returns",
    " a",
    " `Result`",
    " when",
    " the",
    " file",
    " is",
    " missing",
    ".",
    ",",
    " and",
    " because",
    " we",
    " should",
    " check",
    " it",
    "\n",
    "\n\n",
    "```rust\n",
    "```\n",
    "fn ",
    "main",
    "() {",
    "\n    let",
    " x",
    " =",
    " \"quoted\"",
    ";\n",
    "}",
    " café",
    " → ",
    " naïve",
    "\t",
    " path\\to",
    " 42",
    " 🙂",
    " über",
    " <T>",
    " &mut",
    " self",
    " ok",
    " test",
    "s",
    "ing",
    " error",
    " handling",
    " 100%",
    " {braces}",
];

const PATHS: &[&str] = &[
    "src/lib.rs",
    "src/main.rs",
    "crates/core/src/run.rs",
    "crates/tools/src/grep.rs",
    "tests/it/main.rs",
    "README.md",
];

impl Answer {
    /// About `text_deltas` text deltas in blocks of 200–800, each block
    /// followed by one or two tool calls, and a final text block.
    pub fn generate(text_deltas: usize, seed: u64) -> Answer {
        let mut rng = Rng::new(seed);
        let mut segments = Vec::new();
        let mut deltas = 0;
        let mut calls = 0;
        loop {
            let n = rng.range(200, 800);
            segments.push(Segment::Text(
                (0..n).map(|_| text_delta(&mut rng)).collect(),
            ));
            deltas += n;
            if deltas >= text_deltas {
                break;
            }
            for _ in 0..rng.range(1, 3) {
                segments.push(Segment::Call(call(&mut rng, calls)));
                calls += 1;
            }
        }
        Answer { segments }
    }

    /// All text, concatenated.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for segment in &self.segments {
            if let Segment::Text(deltas) = segment {
                deltas.iter().for_each(|d| text.push_str(d));
            }
        }
        text
    }

    /// Every call as (name, parsed arguments), in order.
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.segments
            .iter()
            .filter_map(|s| match s {
                Segment::Call(c) => Some((
                    c.name.to_owned(),
                    serde_json::from_str(&c.arguments).unwrap_or(Value::Null),
                )),
                Segment::Text(_) => None,
            })
            .collect()
    }
}

fn text_delta(rng: &mut Rng) -> String {
    (0..rng.range(1, 4)).map(|_| *rng.pick(WORDS)).collect()
}

fn code(rng: &mut Rng, lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "    let value_{i} = compute(\"{}\", {})?; // {}\n",
                rng.pick(PATHS),
                rng.range(0, 10_000),
                rng.pick(&["check", "naïve → fixed", "tab\there", "ok"])
            )
        })
        .collect()
}

fn call(rng: &mut Rng, n: usize) -> Call {
    let path = *rng.pick(PATHS);
    let (name, arguments) = match rng.range(0, 4) {
        0 => (
            "read",
            json!({"file_path": path, "offset": rng.range(1, 2000), "limit": 200}),
        ),
        1 => (
            "grep",
            json!({"pattern": "fn\\s+handle_[a-z]+\\(", "path": "src", "output_mode": "content", "context": 2}),
        ),
        2 => {
            let lines = rng.range(3, 20);
            (
                "edit",
                json!({"file_path": path, "old_string": code(rng, lines), "new_string": code(rng, lines)}),
            )
        }
        _ => (
            "bash",
            json!({"command": "cargo test -p gyre-core -- scheduler 2>&1 | tail -n 40"}),
        ),
    };
    let arguments = arguments.to_string();
    let fragments = fragments(rng, &arguments);
    Call {
        id: format!("toolu_bench_{n:05}"),
        name,
        arguments,
        fragments,
    }
}

/// Cuts `text` into pieces of 4–40 bytes, at char boundaries.
fn fragments(rng: &mut Rng, text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + rng.range(4, 41)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(text[start..end].to_owned());
        start = end;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_deterministic_and_end_with_text() {
        let a = Answer::generate(3000, 5);
        let b = Answer::generate(3000, 5);
        assert_eq!(a.text(), b.text());
        assert_eq!(a.calls(), b.calls());
        assert!(matches!(a.segments.last(), Some(Segment::Text(_))));
        assert!(!a.calls().is_empty());
        for segment in &a.segments {
            if let Segment::Call(c) = segment {
                assert_eq!(c.fragments.concat(), c.arguments);
                assert!(serde_json::from_str::<Value>(&c.arguments).is_ok());
            }
        }
    }
}
