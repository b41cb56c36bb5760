//! The loop guard (seed 001's doom-loop check): notices a model that keeps
//! making the same calls, without misfiring on one that works through many
//! similar ones.
//!
//! Two patterns, over the run's tool calls in the order the model made them
//! (each call reduced to a fingerprint of its tool and its arguments as
//! parsed JSON, so whitespace and key order do not matter):
//! - **Repeat**: the same call `repeat` times in a row (default 3). That
//!   call is not run as it is: an interactive run asks the user, a headless
//!   one refuses it with a note to the model. If the model keeps at it
//!   until twice the threshold, the run stops.
//! - **Cycle**: the last calls are a sequence of 2 to `max_cycle` distinct
//!   calls repeated `cycle_repeats` times (default 3, so `a b a b a b`).
//!   The first time, the model is nudged (a `<system-reminder>` after the
//!   results) and the guard forgets the calls so far; if a cycle is seen
//!   again, the run stops (`error_during_execution`, exit 3).
//!
//! Calls that poll for progress (`bash_output`, `task_output`) are exempt
//! from the repeat rule: waiting on a job is not a loop. Reading files in
//! turn never trips it: different arguments are different calls.
//!
//! The guard is pure: it decides, the loop acts. Its state is part of the
//! session's serialised `QueryState`, bounded to the calls a cycle needs.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Tools whose identical calls in a row are normal: they poll.
const POLLING_TOOLS: [&str; 2] = ["bash_output", "task_output"];

/// The thresholds (configurable: `[loop_guard]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoopGuardConfig {
    /// Identical calls in a row that trip the repeat rule; 0 turns the
    /// guard off.
    pub repeat: u32,
    /// Repetitions of a sequence that make a cycle.
    pub cycle_repeats: u32,
    /// The longest sequence looked for (at least 2).
    pub max_cycle: u32,
}

impl Default for LoopGuardConfig {
    fn default() -> Self {
        Self {
            repeat: 3,
            cycle_repeats: 3,
            max_cycle: 5,
        }
    }
}

/// What the guard says of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// The same call `count` times in a row (this one included).
    Repeat {
        count: u32,
    },
    /// The model keeps repeating the call past the point of asking.
    RepeatStop {
        count: u32,
    },
    /// The last calls repeat a sequence of `len` calls; the first time.
    Cycle {
        len: usize,
    },
    /// A cycle again, after the nudge.
    CycleStop {
        len: usize,
    },
}

/// The guard's state, kept in the session's `QueryState`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopGuardState {
    /// Fingerprints of the latest calls, oldest first (bounded).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    recent: VecDeque<u64>,
    /// Whether the model was nudged about a cycle in this run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    nudged: bool,
}

impl LoopGuardState {
    /// Forgets everything (a new run starts).
    pub fn reset(&mut self) {
        self.recent.clear();
        self.nudged = false;
    }

    /// Records the call and judges it.
    pub fn observe(&mut self, config: &LoopGuardConfig, tool: &str, arguments: &Value) -> Verdict {
        if config.repeat == 0 {
            return Verdict::Fine;
        }
        let print = fingerprint(tool, arguments);
        let max_cycle = config.max_cycle.max(2) as usize;
        let keep =
            (max_cycle * config.cycle_repeats.max(2) as usize).max(config.repeat as usize * 2);
        self.recent.push_back(print);
        while self.recent.len() > keep {
            self.recent.pop_front();
        }
        if !POLLING_TOOLS.contains(&tool) {
            let count = self
                .recent
                .iter()
                .rev()
                .take_while(|p| **p == print)
                .count() as u32;
            if count >= config.repeat * 2 {
                return Verdict::RepeatStop { count };
            }
            if count >= config.repeat {
                return Verdict::Repeat { count };
            }
        }
        if let Some(len) = self.cycle(max_cycle, config.cycle_repeats.max(2) as usize) {
            if self.nudged {
                return Verdict::CycleStop { len };
            }
            return Verdict::Cycle { len };
        }
        Verdict::Fine
    }

    /// After a nudge: the calls so far are forgotten, so stopping takes a
    /// whole new cycle.
    pub fn nudged(&mut self) {
        self.nudged = true;
        self.recent.clear();
    }

    /// The length of a sequence of 2..=`max` calls, not all the same, that
    /// the latest calls repeat `repeats` times.
    fn cycle(&self, max: usize, repeats: usize) -> Option<usize> {
        let calls: Vec<u64> = self.recent.iter().copied().collect();
        (2..=max).find(|&len| {
            let span = len * repeats;
            if calls.len() < span {
                return false;
            }
            let tail = &calls[calls.len() - span..];
            let pattern = &tail[..len];
            pattern.iter().any(|p| *p != pattern[0])
                && tail.chunks(len).all(|chunk| chunk == pattern)
        })
    }
}

/// A call's tool and arguments, reduced to a number (JSON objects compare
/// by content, not by key order or spacing).
fn fingerprint(tool: &str, arguments: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    tool.hash(&mut hasher);
    hash_value(arguments, &mut hasher);
    hasher.finish()
}

fn hash_value(value: &Value, hasher: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(b) => b.hash(hasher),
        Value::Number(n) => n.to_string().hash(hasher),
        Value::String(s) => s.hash(hasher),
        Value::Array(items) => {
            items.len().hash(hasher);
            items.iter().for_each(|v| hash_value(v, hasher));
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                key.hash(hasher);
                hash_value(&map[key], hasher);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(calls: &[(&str, Value)]) -> Vec<Verdict> {
        let config = LoopGuardConfig::default();
        let mut state = LoopGuardState::default();
        calls
            .iter()
            .map(|(tool, args)| state.observe(&config, tool, args))
            .collect()
    }

    #[test]
    fn the_third_identical_call_trips_it() {
        let read = ("read", json!({"file_path": "a.txt"}));
        let verdicts = run(&[read.clone(), read.clone(), read.clone()]);
        assert_eq!(verdicts[..2], [Verdict::Fine, Verdict::Fine]);
        assert_eq!(verdicts[2], Verdict::Repeat { count: 3 });
        // Key order and spacing do not make a call different.
        let verdicts = run(&[
            ("grep", json!({"pattern": "x", "path": "src"})),
            ("grep", json!({"path": "src", "pattern": "x"})),
            ("grep", json!({"path": "src", "pattern": "x"})),
        ]);
        assert_eq!(verdicts[2], Verdict::Repeat { count: 3 });
        let six = vec![read.clone(); 6];
        assert_eq!(run(&six)[5], Verdict::RepeatStop { count: 6 });
    }

    #[test]
    fn reading_many_files_never_trips_it() {
        let calls: Vec<(&str, Value)> = (0..40)
            .map(|i| ("read", json!({"file_path": format!("src/f{i}.rs")})))
            .collect();
        assert!(run(&calls).iter().all(|v| *v == Verdict::Fine));
        // Nor does reading a file, editing it, reading it again in turn
        // with different edits.
        let calls: Vec<(&str, Value)> = (0..6)
            .flat_map(|i| {
                [
                    ("read", json!({"file_path": "a.rs"})),
                    ("edit", json!({"file_path": "a.rs", "old_string": format!("v{i}"), "new_string": format!("v{}", i + 1)})),
                ]
            })
            .collect();
        assert!(
            run(&calls).iter().all(|v| *v == Verdict::Fine),
            "{:?}",
            run(&calls)
        );
    }

    #[test]
    fn polling_is_not_a_loop() {
        let poll = ("bash_output", json!({"shell_id": "shell_1"}));
        assert!(run(&vec![poll; 8]).iter().all(|v| *v == Verdict::Fine));
    }

    #[test]
    fn a_repeating_cycle_is_nudged_then_stopped() {
        let config = LoopGuardConfig::default();
        let mut state = LoopGuardState::default();
        let a = json!({"file_path": "a"});
        let b = json!({"pattern": "b"});
        let mut verdicts = Vec::new();
        for _ in 0..3 {
            verdicts.push(state.observe(&config, "read", &a));
            verdicts.push(state.observe(&config, "grep", &b));
        }
        assert_eq!(verdicts[5], Verdict::Cycle { len: 2 });
        assert!(verdicts[..5].iter().all(|v| *v == Verdict::Fine));
        state.nudged();
        let mut after = Vec::new();
        for _ in 0..3 {
            after.push(state.observe(&config, "read", &a));
            after.push(state.observe(&config, "grep", &b));
        }
        assert_eq!(after[5], Verdict::CycleStop { len: 2 });
        // A five-call cycle is seen too; a six-call one is not looked for.
        let calls: Vec<(&str, Value)> = (0..15)
            .map(|i| ("read", json!({"file_path": format!("f{}", i % 5)})))
            .collect();
        assert_eq!(run(&calls)[14], Verdict::Cycle { len: 5 });
        let calls: Vec<(&str, Value)> = (0..18)
            .map(|i| ("read", json!({"file_path": format!("f{}", i % 6)})))
            .collect();
        assert!(run(&calls).iter().all(|v| *v == Verdict::Fine));
    }

    #[test]
    fn thresholds_are_configurable_and_zero_is_off() {
        let mut state = LoopGuardState::default();
        let off = LoopGuardConfig {
            repeat: 0,
            ..LoopGuardConfig::default()
        };
        let call = json!({"file_path": "a"});
        for _ in 0..10 {
            assert_eq!(state.observe(&off, "read", &call), Verdict::Fine);
        }
        let two = LoopGuardConfig {
            repeat: 2,
            ..LoopGuardConfig::default()
        };
        let mut state = LoopGuardState::default();
        state.observe(&two, "read", &call);
        assert_eq!(
            state.observe(&two, "read", &call),
            Verdict::Repeat { count: 2 }
        );
    }
}
