//! The check itself: one pass over the stored form from where the last
//! check ended, building the repaired form of what it looks at.
//!
//! Invariants:
//! - The pass only reads the stored form; what it makes up is returned as
//!   writes, so nothing changes unless the caller stores them first.
//! - Messages that need no repair are shared (`Arc`), not copied.

use std::collections::HashSet;
use std::sync::Arc;

use gyre_protocol::{Message, Outcome, Part, Role, ToolCall, ToolResult};

use super::{Checked, MISSING_RESULT, Repair, Validated, Write};
use crate::id::new_id;

/// Checks `history` from where `validated` ends; says what to repair.
pub(crate) fn check(history: &[Arc<Message>], validated: &Validated) -> Checked {
    let none = HashSet::new();
    let (start, known, before) = if validated.holds_for(history) {
        (validated.upto, &validated.call_ids, validated.sent.last())
    } else {
        (0, &none, None)
    };
    let mut run = Check {
        known,
        new_call_ids: Vec::new(),
        new_set: HashSet::new(),
        tail: Vec::with_capacity(history.len() - start),
        writes: Vec::new(),
        repairs: Vec::new(),
    };
    // The calls waiting for the next message's results.
    let mut open: Option<(Arc<Message>, Vec<ToolCall>)> = before
        .filter(|m| m.role == Role::Assistant)
        .map(|m| (m.clone(), m.tool_calls().cloned().collect()));
    for (index, message) in history.iter().enumerate().skip(start) {
        match message.role {
            Role::Assistant => {
                if let Some((answer, calls)) = open.take()
                    && !calls.is_empty()
                {
                    let results = run.made_up_message(&answer, &calls);
                    run.tail.push(results);
                }
                let (kept, calls) = run.answer(message);
                open = Some((kept.clone(), calls));
                run.tail.push(kept);
            }
            Role::User => {
                let calls = open.take().map(|(_, calls)| calls).unwrap_or_default();
                let answered = run.results(index, message, &calls);
                run.tail.push(answered);
            }
        }
    }
    if let Some((_, calls)) = open
        && !calls.is_empty()
    {
        let results = Arc::new(Message::new(
            new_id(),
            Role::User,
            calls.iter().map(|c| run.missing(c)).collect(),
        ));
        run.writes.push(Write::Message(results.clone()));
        run.tail.push(results);
    }
    Checked {
        from: start,
        tail: run.tail,
        new_call_ids: run.new_call_ids,
        writes: run.writes,
        repairs: run.repairs,
    }
}

/// A check in progress.
struct Check<'a> {
    /// Call ids of the part checked before.
    known: &'a HashSet<String>,
    new_call_ids: Vec<String>,
    new_set: HashSet<String>,
    tail: Vec<Arc<Message>>,
    writes: Vec<Write>,
    repairs: Vec<Repair>,
}

impl Check<'_> {
    /// The answer as sent (calls with an id used before left out) and its
    /// calls.
    fn answer(&mut self, message: &Arc<Message>) -> (Arc<Message>, Vec<ToolCall>) {
        let mut calls = Vec::new();
        let mut dropped = false;
        for call in message.tool_calls() {
            if self.known.contains(&call.id) || !self.new_set.insert(call.id.clone()) {
                self.repairs.push(Repair::DuplicateCall {
                    call_id: call.id.clone(),
                });
                dropped = true;
            } else {
                self.new_call_ids.push(call.id.clone());
                calls.push(call.clone());
            }
        }
        if !dropped {
            return (message.clone(), calls);
        }
        // Keep the first call of each id (the one `calls` holds), in order.
        let mut seen = HashSet::new();
        let mut kept = Message::clone(message);
        kept.parts.retain(|part| match part {
            Part::ToolCall(call) => {
                calls.iter().any(|c| c.id == call.id) && seen.insert(call.id.clone())
            }
            _ => true,
        });
        (Arc::new(kept), calls)
    }

    /// The user message at `index` as sent, answering `calls` (none when it
    /// does not follow an answer).
    fn results(
        &mut self,
        index: usize,
        message: &Arc<Message>,
        calls: &[ToolCall],
    ) -> Arc<Message> {
        if in_order(message, calls) {
            return message.clone();
        }
        let repairs_before = self.repairs.len();
        let mut answers: Vec<Option<ToolResult>> = vec![None; calls.len()];
        let mut others = Vec::new();
        for part in &message.parts {
            let Part::ToolResult(result) = part else {
                others.push(part.clone());
                continue;
            };
            let call_id = result.call_id.clone();
            match calls.iter().position(|c| c.id == result.call_id) {
                None => self.repairs.push(Repair::ResultWithoutCall { call_id }),
                Some(at) if answers[at].is_some() => {
                    self.repairs.push(Repair::DuplicateResult { call_id })
                }
                Some(at) => answers[at] = Some(result.clone()),
            }
        }
        let mut parts = Vec::with_capacity(calls.len() + others.len());
        for (call, answer) in calls.iter().zip(answers) {
            let part = match answer {
                Some(result) => Part::ToolResult(result),
                None => {
                    let part = self.missing(call);
                    self.writes.push(Write::Part {
                        index,
                        message_id: message.id.clone(),
                        part: part.clone(),
                    });
                    part
                }
            };
            parts.push(part);
        }
        parts.extend(others);
        if self.repairs.len() == repairs_before {
            self.repairs.push(Repair::Reordered {
                message_id: message.id.clone(),
            });
        }
        let mut repaired = Message::clone(message);
        repaired.parts = parts;
        Arc::new(repaired)
    }

    /// A message of its own for calls followed by another answer: in the
    /// repaired form only (see the module's trade-off).
    fn made_up_message(&mut self, answer: &Message, calls: &[ToolCall]) -> Arc<Message> {
        let parts = calls.iter().map(|c| self.missing(c)).collect();
        Arc::new(Message::new(
            format!("{}-results", answer.id),
            Role::User,
            parts,
        ))
    }

    /// The error result for a call that has none.
    fn missing(&mut self, call: &ToolCall) -> Part {
        self.repairs.push(Repair::MissingResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
        });
        Part::ToolResult(ToolResult::text(
            &call.id,
            &call.name,
            MISSING_RESULT,
            Outcome::Error,
        ))
    }
}

/// Whether `message` is already as sent: its first parts are the results of
/// `calls`, in order, and no other part is a result.
fn in_order(message: &Message, calls: &[ToolCall]) -> bool {
    let mut answered = 0;
    let mut other_seen = false;
    for part in &message.parts {
        match part {
            Part::ToolResult(result) => {
                if other_seen || calls.get(answered).is_none_or(|c| c.id != result.call_id) {
                    return false;
                }
                answered += 1;
            }
            _ => other_seen = true,
        }
    }
    answered == calls.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: &str, calls: &[&str]) -> Arc<Message> {
        let parts = calls
            .iter()
            .map(|c| Part::ToolCall(ToolCall::new(*c, "read", "{}")))
            .collect();
        Arc::new(Message::new(id, Role::Assistant, parts))
    }

    fn result(call: &str) -> Part {
        Part::ToolResult(ToolResult::text(
            call,
            "read",
            format!("out {call}"),
            Outcome::Success,
        ))
    }

    fn user(id: &str, parts: Vec<Part>) -> Arc<Message> {
        Arc::new(Message::new(id, Role::User, parts))
    }

    fn prompt() -> Arc<Message> {
        Arc::new(Message::user_text("p", "go"))
    }

    /// What a check did.
    struct Done {
        from: usize,
        writes: Vec<Write>,
        repairs: Vec<Repair>,
    }

    /// Checks, stores (applies the writes to `history`) and commits, as the
    /// loop does.
    fn repair(history: &mut Vec<Arc<Message>>, validated: &mut Validated) -> Done {
        let checked = check(history, validated);
        for write in &checked.writes {
            write.apply(history);
        }
        let done = Done {
            from: checked.from,
            writes: checked.writes.clone(),
            repairs: checked.repairs.clone(),
        };
        validated.commit(checked, history);
        done
    }

    /// The repaired form of a history loaded from the store.
    fn sent_after_load(history: &[Arc<Message>]) -> Vec<Arc<Message>> {
        let mut loaded = history.to_vec();
        let mut validated = Validated::default();
        let done = repair(&mut loaded, &mut validated);
        assert!(
            done.writes.is_empty(),
            "nothing new is made up after a load"
        );
        validated.sent().to_vec()
    }

    /// (call id, is error) of a message's results, in order; then the count
    /// of its other parts.
    fn shape(message: &Message) -> (Vec<(String, bool)>, usize) {
        let results = message
            .tool_results()
            .map(|r| (r.call_id.clone(), r.is_error))
            .collect();
        (
            results,
            message.parts.len() - message.tool_results().count(),
        )
    }

    #[test]
    fn a_valid_history_is_sent_as_it_is_and_checked_once() {
        let mut history = vec![
            prompt(),
            answer("a1", &["c1", "c2"]),
            user("r1", vec![result("c1"), result("c2"), Part::text("note")]),
            answer("a2", &[]),
        ];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert!(done.repairs.is_empty() && done.writes.is_empty());
        assert_eq!(validated.sent(), &history[..]);
        assert!(
            Arc::ptr_eq(&validated.sent()[1], &history[1]),
            "shared, not copied"
        );
        history.push(Arc::new(Message::user_text("p2", "more")));
        let done = repair(&mut history, &mut validated);
        assert_eq!(done.from, 4, "only the new message is looked at");
        assert_eq!(validated.sent(), &history[..]);
    }

    #[test]
    fn calls_ending_the_history_get_a_stored_results_message() {
        let mut history = vec![prompt(), answer("a1", &["c1", "c2"])];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert_eq!(history.len(), 3, "stored");
        assert!(matches!(&done.writes[..], [Write::Message(m)] if m.id == history[2].id));
        let sent = validated.sent();
        assert_eq!(sent.len(), 3);
        assert_eq!(
            shape(&sent[2]),
            (vec![("c1".into(), true), ("c2".into(), true)], 0)
        );
        let text = sent[2].tool_results().next().unwrap().text_content();
        assert_eq!(text, MISSING_RESULT);
        assert_eq!(sent_after_load(&history), sent);
    }

    #[test]
    fn a_missing_result_in_the_middle_is_stored_in_the_next_message() {
        let mut history = vec![
            prompt(),
            answer("a1", &["c1", "c2", "c3"]),
            user("r1", vec![result("c3"), result("c1")]),
            answer("a2", &[]),
            Arc::new(Message::user_text("p2", "next")),
        ];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert!(
            matches!(&done.writes[..], [Write::Part { index: 2, message_id, .. }] if message_id == "r1")
        );
        assert_eq!(
            done.repairs,
            [Repair::MissingResult {
                call_id: "c2".into(),
                tool: "read".into()
            }]
        );
        // Stored as the store has it: appended.
        assert_eq!(
            shape(&history[2]).0,
            [
                ("c3".into(), false),
                ("c1".into(), false),
                ("c2".into(), true)
            ]
        );
        // Sent in call order.
        let sent = validated.sent();
        assert_eq!(
            shape(&sent[2]).0,
            [
                ("c1".into(), false),
                ("c2".into(), true),
                ("c3".into(), false)
            ]
        );
        assert_eq!(sent_after_load(&history), sent);
    }

    #[test]
    fn results_without_calls_and_second_results_are_left_out() {
        let mut history = vec![
            prompt(),
            answer("a1", &["c1"]),
            user("r1", vec![result("c1"), result("c1"), result("ghost")]),
            user("r2", vec![Part::text("hi"), result("c1")]),
        ];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert!(done.writes.is_empty(), "nothing made up");
        assert_eq!(history[2].parts.len(), 3, "the stored form keeps them");
        let sent = validated.sent();
        assert_eq!(shape(&sent[2]), (vec![("c1".into(), false)], 0));
        assert_eq!(shape(&sent[3]), (vec![], 1));
        assert_eq!(
            done.repairs,
            [
                Repair::DuplicateResult {
                    call_id: "c1".into()
                },
                Repair::ResultWithoutCall {
                    call_id: "ghost".into()
                },
                Repair::ResultWithoutCall {
                    call_id: "c1".into()
                },
            ]
        );
    }

    #[test]
    fn a_call_id_used_before_is_left_out_with_its_result() {
        let mut history = vec![
            prompt(),
            answer("a1", &["c1", "c1"]),
            user("r1", vec![result("c1"), result("c1")]),
        ];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert_eq!(validated.sent()[1].tool_calls().count(), 1);
        assert_eq!(shape(&validated.sent()[2]), (vec![("c1".into(), false)], 0));
        assert!(done.repairs.contains(&Repair::DuplicateCall {
            call_id: "c1".into()
        }));
        // Across checks: the id is remembered.
        history.push(answer("a2", &["c1", "c9"]));
        history.push(user("r2", vec![result("c1"), result("c9")]));
        let done = repair(&mut history, &mut validated);
        assert_eq!(done.from, 3);
        let sent = validated.sent().to_vec();
        let ids: Vec<&str> = sent[3].tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c9"]);
        assert_eq!(shape(&sent[4]), (vec![("c9".into(), false)], 0));
        assert_eq!(sent_after_load(&history), sent);
    }

    #[test]
    fn calls_followed_by_another_answer_get_results_in_the_sent_form() {
        let mut history = vec![prompt(), answer("a1", &["c1"]), answer("a2", &[])];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert!(done.writes.is_empty(), "the store cannot insert");
        assert_eq!(history.len(), 3);
        let sent = validated.sent().to_vec();
        assert_eq!(sent.len(), 4);
        assert_eq!(sent[2].id, "a1-results");
        assert_eq!(shape(&sent[2]), (vec![("c1".into(), true)], 0));
        assert_eq!(sent_after_load(&history), sent);
        // The next check goes on from the stored form's end.
        history.push(Arc::new(Message::user_text("p2", "next")));
        assert_eq!(repair(&mut history, &mut validated).from, 3);
        assert_eq!(validated.sent().len(), 5);
    }

    #[test]
    fn results_come_first_and_in_call_order() {
        let mut history = vec![
            prompt(),
            answer("a1", &["c1", "c2"]),
            user(
                "r1",
                vec![Part::text("typed meanwhile"), result("c2"), result("c1")],
            ),
        ];
        let mut validated = Validated::default();
        let done = repair(&mut history, &mut validated);
        assert_eq!(
            done.repairs,
            [Repair::Reordered {
                message_id: "r1".into()
            }]
        );
        assert!(matches!(
            &validated.sent()[2].parts[..],
            [Part::ToolResult(a), Part::ToolResult(b), Part::Text { .. }]
                if a.call_id == "c1" && b.call_id == "c2"
        ));
    }

    #[test]
    fn a_replaced_or_shortened_history_is_checked_from_scratch() {
        let mut history = vec![
            prompt(),
            answer("a1", &["c1"]),
            user("r1", vec![result("c1")]),
        ];
        let mut validated = Validated::default();
        repair(&mut history, &mut validated);
        // The last message replaced (as pruning or a resume would).
        history[2] = user("r1", vec![result("c1")]);
        assert_eq!(check(&history, &validated).from, 0);
        // Shortened (a rewind).
        history.truncate(1);
        let done = repair(&mut history, &mut validated);
        assert_eq!(done.from, 0);
        assert_eq!(validated.sent().len(), 1);
        // Reset by hand.
        validated.reset();
        assert_eq!(check(&history, &validated).from, 0);
    }
}
