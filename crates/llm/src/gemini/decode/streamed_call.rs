//! One Gemini function call whose arguments stream in pieces
//! (`streamFunctionCallArguments`): a `functionCall` with the name and
//! `willContinue: true`, then `functionCall`s without a name whose
//! `partialArgs` each set one value at a JSON path (`$.a.b[0]`), string values
//! growing by concatenation while the same path `willContinue`s, and the end:
//! a `functionCall` without `willContinue` (often empty), or the
//! `finishReason`.
//!
//! The arguments are built as a JSON value and reported once, whole; a path
//! that cannot be followed (a string where an object was, an index past the
//! end by more than one) drops that piece rather than guess, and the call is
//! still reported with what did arrive.

use serde::Deserialize;
use serde_json::{Map, Value};

/// The most pieces one call may receive.
const MAX_PIECES: usize = 1 << 16;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartialArg {
    #[serde(default)]
    json_path: String,
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    number_value: Option<f64>,
    #[serde(default)]
    bool_value: Option<bool>,
    #[serde(default)]
    null_value: Option<Value>,
}

/// A call being assembled.
#[derive(Debug)]
pub(super) struct StreamedCall {
    pub name: String,
    pub signature: Option<String>,
    args: Value,
    pieces: usize,
}

impl StreamedCall {
    pub(super) fn new(name: String, args: Option<Value>, signature: Option<String>) -> Self {
        let args = match args {
            Some(Value::Object(map)) => Value::Object(map),
            _ => Value::Object(Map::new()),
        };
        Self {
            name,
            signature,
            args,
            pieces: 0,
        }
    }

    /// Applies one piece. A string continues the string already at its path
    /// (the previous piece of that path said it would continue).
    pub(super) fn apply(&mut self, piece: PartialArg) {
        if self.pieces >= MAX_PIECES {
            return;
        }
        self.pieces += 1;
        let Some(path) = parse_path(&piece.json_path) else {
            return;
        };
        let Some(slot) = slot(&mut self.args, &path) else {
            return;
        };
        if let Some(text) = piece.string_value {
            match slot {
                Value::String(existing) => existing.push_str(&text),
                other => *other = Value::String(text),
            }
        } else if let Some(number) = piece.number_value {
            *slot = number_value(number);
        } else if let Some(flag) = piece.bool_value {
            *slot = Value::Bool(flag);
        } else if piece.null_value.is_some() {
            *slot = Value::Null;
        }
    }

    /// Adds a whole `args` object that came on a later piece.
    pub(super) fn merge(&mut self, args: Value) {
        if let (Value::Object(into), Value::Object(from)) = (&mut self.args, args) {
            into.extend(from);
        }
    }

    pub(super) fn arguments(&self) -> String {
        self.args.to_string()
    }
}

/// A whole number as an integer (`3`, not `3.0`), else the double.
fn number_value(number: f64) -> Value {
    if number.fract() == 0.0 && number.abs() < 9.0e15 {
        Value::from(number as i64)
    } else {
        serde_json::Number::from_f64(number).map_or(Value::Null, Value::Number)
    }
}

#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// `$.a.b[0]['c d']` as steps; `None` for what is not such a path.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut rest = path.trim().strip_prefix('$')?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inside = after[..close].trim();
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            match quoted {
                Some(key) => steps.push(Step::Key(key.to_owned())),
                None => steps.push(Step::Index(inside.parse().ok()?)),
            }
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// The value at `path` inside `root`, made (as `null`) when missing, with
/// the objects and arrays on the way.
fn slot<'a>(root: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut here = root;
    for step in path {
        here = match step {
            Step::Key(key) => {
                if here.is_null() {
                    *here = Value::Object(Map::new());
                }
                here.as_object_mut()?
                    .entry(key.clone())
                    .or_insert(Value::Null)
            }
            Step::Index(index) => {
                if here.is_null() {
                    *here = Value::Array(Vec::new());
                }
                let items = here.as_array_mut()?;
                if *index == items.len() {
                    items.push(Value::Null);
                }
                items.get_mut(*index)?
            }
        };
    }
    Some(here)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn piece(value: Value) -> PartialArg {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn paths_parse() {
        assert_eq!(
            parse_path("$.a.b[1]['c d']"),
            Some(vec![
                Step::Key("a".into()),
                Step::Key("b".into()),
                Step::Index(1),
                Step::Key("c d".into()),
            ])
        );
        assert_eq!(parse_path("$"), Some(vec![]));
        assert_eq!(parse_path("a.b"), None);
        assert_eq!(parse_path("$..a"), None);
        assert_eq!(parse_path("$[x]"), None);
    }

    #[test]
    fn pieces_build_the_arguments() {
        let mut call = StreamedCall::new("edit".into(), None, None);
        call.apply(piece(
            json!({"jsonPath": "$.path", "stringValue": "src/", "willContinue": true}),
        ));
        call.apply(piece(
            json!({"jsonPath": "$.path", "stringValue": "main.rs"}),
        ));
        call.apply(piece(json!({"jsonPath": "$.lines[0]", "numberValue": 3})));
        call.apply(piece(json!({"jsonPath": "$.lines[1]", "numberValue": 4.5})));
        call.apply(piece(json!({"jsonPath": "$.opts.all", "boolValue": true})));
        call.apply(piece(
            json!({"jsonPath": "$.opts.x", "nullValue": "NULL_VALUE"}),
        ));
        // A path that cannot be followed is dropped, not guessed.
        call.apply(piece(
            json!({"jsonPath": "$.path.inner", "stringValue": "no"}),
        ));
        call.apply(piece(json!({"jsonPath": "$.lines[5]", "numberValue": 1})));
        let args: Value = serde_json::from_str(&call.arguments()).unwrap();
        assert_eq!(
            args,
            json!({"path": "src/main.rs", "lines": [3, 4.5], "opts": {"all": true, "x": null}})
        );
    }
}
