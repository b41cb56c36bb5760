//! `decide` over the combinations the loop can meet: one row per case in
//! the tables, then every combination at once against the invariants.

use gyre_llm::{ErrorKind, LlmError};
use gyre_protocol::{FinishReason, RunErrorKind, StopReason, Usage};

use super::*;
use crate::agent::RunLimits;

/// A turn as the tables state it: a text-only answer that ended normally
/// on turn 1 of an unlimited run, unless a row says otherwise.
#[derive(Clone)]
struct Case {
    turn: u32,
    tools: bool,
    stop: Option<StopReason>,
    failure: Option<ErrorKind>,
    cancelled: Cancelled,
    guard: GuardSaid,
    completion: Option<&'static str>,
    todos_open: bool,
    background: bool,
    window_full: bool,
    recoveries: u32,
    reminders: u32,
    errors: u32,
    stop_hook_continuations: u32,
    limits: Limits,
}

fn text() -> Case {
    Case {
        turn: 1,
        tools: false,
        stop: Some(StopReason::EndTurn),
        failure: None,
        cancelled: Cancelled::No,
        guard: GuardSaid::default(),
        completion: None,
        todos_open: false,
        background: false,
        window_full: false,
        recoveries: 0,
        reminders: 0,
        errors: 0,
        stop_hook_continuations: 0,
        limits: Limits {
            max_turns: None,
            completion: Completion::Off,
            stop_hook: false,
            max_stop_continuations: 3,
            compaction: Compaction::Auto,
            max_output_tokens: 8192,
        },
    }
}

fn tools() -> Case {
    Case {
        tools: true,
        stop: Some(StopReason::ToolUse),
        ..text()
    }
}

impl Case {
    fn stop(self, stop: Option<StopReason>) -> Self {
        Self { stop, ..self }
    }
    fn failed(self, kind: ErrorKind) -> Self {
        Self {
            failure: Some(kind),
            stop: None,
            ..self
        }
    }
    fn cancelled(self, cancelled: Cancelled) -> Self {
        Self { cancelled, ..self }
    }
    fn nudge(mut self) -> Self {
        self.guard.nudge = true;
        self
    }
    fn loop_stop(mut self) -> Self {
        self.guard.stop = Some("a repeat".into());
        self
    }
    fn completion(self, result: &'static str) -> Self {
        Self {
            completion: Some(result),
            ..self
        }
    }
    fn todos_open(self) -> Self {
        Self {
            todos_open: true,
            ..self
        }
    }
    fn background(self) -> Self {
        Self {
            background: true,
            ..self
        }
    }
    fn window_full(self) -> Self {
        Self {
            window_full: true,
            ..self
        }
    }
    fn recoveries(self, recoveries: u32) -> Self {
        Self { recoveries, ..self }
    }
    fn reminders(self, reminders: u32) -> Self {
        Self { reminders, ..self }
    }
    fn errors(self, errors: u32) -> Self {
        Self { errors, ..self }
    }
    fn forced(self, stop_hook_continuations: u32) -> Self {
        Self {
            stop_hook_continuations,
            ..self
        }
    }
    /// Turn `turn` of a run allowed `max` turns.
    fn turn_of(mut self, turn: u32, max: u32) -> Self {
        self.turn = turn;
        self.limits.max_turns = Some(max);
        self
    }
    fn required(mut self) -> Self {
        self.limits.completion = Completion::Required;
        self
    }
    fn stop_hook(mut self) -> Self {
        self.limits.stop_hook = true;
        self
    }
    fn compaction_off(mut self) -> Self {
        self.limits.compaction = Compaction::Off;
        self
    }

    fn decide(&self) -> Decision {
        let failure = self
            .failure
            .map(|kind| LlmError::new(kind, None, "the provider failed"));
        let outcome = TurnOutcome {
            turn: self.turn,
            tools_ran: self.tools,
            stop: self.stop,
            failure: failure.as_ref(),
            cancelled: self.cancelled,
            guard: &self.guard,
            completion: self.completion,
            todos_open: self.todos_open,
            background: self.background,
            window_full: self.window_full,
            compaction_failure: None,
            schema_errors: None,
        };
        let state = QueryState {
            turn_count: self.turn,
            max_output_recovery_count: self.recoveries,
            reminder_count: self.reminders,
            consecutive_errors: self.errors,
            stop_hook_continuations: self.stop_hook_continuations,
            ..QueryState::default()
        };
        decide(&outcome, &state, &self.limits)
    }
}

/// What a row expects: the step and transition, or how the run ends.
#[derive(Debug, Clone, PartialEq)]
enum Want {
    On(Step, Transition),
    End(FinishReason, Option<RunErrorKind>),
}

fn on(step: Step, transition: Transition) -> Want {
    Want::On(step, transition)
}

fn ends(reason: FinishReason, kind: Option<RunErrorKind>) -> Want {
    Want::End(reason, kind)
}

fn got(decision: &Decision) -> Want {
    match &decision.next {
        Next::Continue(step) => Want::On(step.clone(), decision.transition),
        Next::End(end) => Want::End(end.reason, end.error.as_ref().map(|e| e.kind)),
    }
}

use Cancelled::{AfterAnswer, InAnswer};
use ErrorKind::{Auth, ContextOverflow as Overflowed, Network};
use FinishReason::{Cancelled as WasCancelled, Completed, Failed, LoopGuard, MaxTurns};
use RunErrorKind::{Cancelled as ByUser, Limit, Provider};
use StopReason::{ContextOverflow, Error, MaxTokens};
use Transition::{CutOff, Reminder, StopHook, TaskNotification, ToolRound, UnusableAnswer, WrapUp};

#[test]
#[rustfmt::skip]
fn each_case_decides_as_its_row_says() {
    let remind = Step::Remind(COMPLETION_REMINDER);
    let remind_todos = Step::Remind(TODOS_OPEN_REMINDER);
    let rows: Vec<(&str, Case, Want)> = vec![
        // What the answer was.
        ("text only: the run completes", text(), ends(Completed, None)),
        ("tools ran: their results go back", tools(), on(Step::ToolResults, ToolRound)),
        ("tools ran, answer cut off: results go back", tools().stop(Some(MaxTokens)), on(Step::ToolResults, ToolRound)),
        ("tools ran, unusable answer: results go back", tools().stop(Some(Error)), on(Step::ToolResults, ToolRound)),
        ("unusable answer: asked again", text().stop(Some(Error)), on(Step::AskAgain, UnusableAnswer)),
        ("cut off: continued", text().stop(Some(MaxTokens)), on(Step::ContinueCut { compact: false }, CutOff)),
        ("cut off, window full: compacted, continued", text().stop(Some(MaxTokens)).window_full(), on(Step::ContinueCut { compact: true }, CutOff)),
        ("window overflow stop: compacted, continued", text().stop(Some(ContextOverflow)).window_full(), on(Step::ContinueCut { compact: true }, CutOff)),
        ("cut off, window full, compaction off: overflow", text().stop(Some(MaxTokens)).window_full().compaction_off(), ends(Failed, Some(RunErrorKind::ContextOverflow))),
        ("cut off the 3rd time in a row: continued", text().stop(Some(MaxTokens)).recoveries(2), on(Step::ContinueCut { compact: false }, CutOff)),
        ("cut off the 4th time in a row: ends", text().stop(Some(MaxTokens)).recoveries(3), ends(Failed, Some(Provider))),
        ("tools ran, cut off the 4th time: ends", tools().stop(Some(MaxTokens)).recoveries(3), ends(Failed, Some(Provider))),
        // Failures.
        ("request failed: ends", text().failed(Network), ends(Failed, Some(Provider))),
        ("auth failure: ends as auth", text().failed(Auth), ends(Failed, Some(RunErrorKind::Auth))),
        ("overflow failure: ends as overflow", text().failed(Overflowed), ends(Failed, Some(RunErrorKind::ContextOverflow))),
        ("stream broke after tools started: results go back", tools().failed(Network), on(Step::ToolResults, ToolRound)),
        ("non-transient failure after tools: ends", tools().failed(Auth), ends(Failed, Some(RunErrorKind::Auth))),
        // Errors in a row.
        ("2nd unusable answer in a row: asked again", text().stop(Some(Error)).errors(1), on(Step::AskAgain, UnusableAnswer)),
        ("3rd unusable answer in a row: ends", text().stop(Some(Error)).errors(2), ends(Failed, Some(Provider))),
        ("3rd broken stream after tools in a row: ends", tools().failed(Network).errors(2), ends(Failed, Some(Provider))),
        ("a clean turn after errors: goes on", tools().errors(2), on(Step::ToolResults, ToolRound)),
        // Wrap-up (the turn limit).
        ("tools ran, next turn is the last: wrap up", tools().turn_of(1, 2), on(Step::ToolResults, WrapUp)),
        ("tools ran on the last turn: max turns", tools().turn_of(2, 2), ends(MaxTurns, Some(Limit))),
        ("text on the last turn: max turns", text().turn_of(2, 2), ends(MaxTurns, Some(Limit))),
        ("unusable answer on the last turn: max turns", text().stop(Some(Error)).turn_of(2, 2), ends(MaxTurns, Some(Limit))),
        ("unusable answer before the last: asked again", text().stop(Some(Error)).turn_of(1, 2), on(Step::AskAgain, UnusableAnswer)),
        ("cut off the 4th time on the last turn: output limit first", text().stop(Some(MaxTokens)).recoveries(3).turn_of(2, 2), ends(Failed, Some(Provider))),
        ("failure on the last turn: the failure", text().failed(Network).turn_of(2, 2), ends(Failed, Some(Provider))),
        // Cancellation wins over everything.
        ("cancelled while answering", tools().cancelled(InAnswer), ends(WasCancelled, Some(ByUser))),
        ("cancelled while tools ran", tools().cancelled(AfterAnswer), ends(WasCancelled, Some(ByUser))),
        ("cancelled with a completion result", tools().completion("done").cancelled(AfterAnswer), ends(WasCancelled, Some(ByUser))),
        ("cancelled with a loop stop", tools().loop_stop().cancelled(AfterAnswer), ends(WasCancelled, Some(ByUser))),
        // The loop guard.
        ("loop guard nudge: results go back", tools().nudge(), on(Step::ToolResults, ToolRound)),
        ("loop guard stop: ends", tools().loop_stop(), ends(LoopGuard, Some(Limit))),
        ("loop guard stop wins over completion", tools().loop_stop().completion("done"), ends(LoopGuard, Some(Limit))),
        ("loop guard stop wins over a failure", tools().loop_stop().failed(Auth), ends(LoopGuard, Some(Limit))),
        // Completion mode.
        ("attempt_completion succeeded: completes", tools().required().completion("done"), ends(Completed, None)),
        ("attempt_completion on the last turn: completes", tools().turn_of(2, 2).completion("done"), ends(Completed, None)),
        ("attempt_completion with a failure: completes", tools().failed(Auth).completion("done"), ends(Completed, None)),
        ("text in completion mode: reminded", text().required(), on(remind.clone(), Reminder)),
        ("3rd reminder in a row: reminded", text().required().reminders(2), on(remind.clone(), Reminder)),
        ("past the reminders: completes", text().required().reminders(3), ends(Completed, None)),
        ("open todos: reminded of them", text().required().todos_open().reminders(3), on(remind_todos, Reminder)),
        ("open todos, past their bound: completes", text().required().todos_open().reminders(10), ends(Completed, None)),
        ("reminded on the turn before the last", text().required().turn_of(1, 2), on(remind, Reminder)),
        ("text on the last turn in completion mode: max turns", text().required().turn_of(2, 2), ends(MaxTurns, Some(Limit))),
        // Background subagents.
        ("text while tasks run: wait for one", text().background(), on(Step::AwaitBackground, TaskNotification)),
        ("tasks run, completion mode: wait first", text().background().required(), on(Step::AwaitBackground, TaskNotification)),
        ("tasks run, tools ran: results go back", tools().background(), on(Step::ToolResults, ToolRound)),
        ("tasks run, unusable answer: asked again", text().background().stop(Some(Error)), on(Step::AskAgain, UnusableAnswer)),
        ("tasks run, last turn: max turns", text().background().turn_of(2, 2), ends(MaxTurns, Some(Limit))),
        // The Stop hook.
        ("text with a Stop hook: ask it", text().stop_hook(), on(Step::AskStopHook, StopHook)),
        ("Stop hook forced its bound: completes", text().stop_hook().forced(3), ends(Completed, None)),
        ("reminder before the Stop hook", text().stop_hook().required(), on(Step::Remind(COMPLETION_REMINDER), Reminder)),
        ("past the reminders: the Stop hook", text().stop_hook().required().reminders(3), on(Step::AskStopHook, StopHook)),
        ("tasks run before the Stop hook", text().stop_hook().background(), on(Step::AwaitBackground, TaskNotification)),
    ];
    let mut wrong = Vec::new();
    for (name, case, want) in rows {
        let decided = case.decide();
        if got(&decided) != want {
            wrong.push(format!("{name}: got {:?}, want {want:?}", got(&decided)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
#[rustfmt::skip]
fn counters_move_as_the_loop_needs() {
    // (row, case, (cut-offs in a row, reminders, errors in a row) after)
    let rows: Vec<(&str, Case, (u32, u32, u32))> = vec![
        ("a clean text answer resets errors and cut-offs", text().recoveries(2).errors(2), (0, 0, 0)),
        ("a cut-off answer counts", text().stop(Some(MaxTokens)).recoveries(1), (2, 0, 0)),
        ("tools reset the reminders", tools().reminders(2), (0, 0, 0)),
        ("a reminder counts", text().required().reminders(1), (0, 2, 0)),
        ("an unusable answer counts an error", text().stop(Some(Error)).errors(1), (0, 0, 2)),
        ("a broken stream after tools counts an error", tools().failed(Network), (0, 0, 1)),
        ("a completion ends before the reminders reset", tools().completion("done").reminders(2), (0, 2, 0)),
        ("a cancelled cut-off answer still counts", text().stop(Some(MaxTokens)).cancelled(AfterAnswer), (1, 0, 0)),
    ];
    for (name, case, want) in rows {
        let c = case.decide().counters;
        let got = (
            c.max_output_recovery_count,
            c.reminder_count,
            c.consecutive_errors,
        );
        assert_eq!(got, want, "{name}");
    }
}

#[test]
#[rustfmt::skip]
fn notices_go_with_the_results() {
    let rows: Vec<(&str, Case, Vec<&str>)> = vec![
        ("plain results", tools(), vec![]),
        ("a cut-off call is asked again", tools().stop(Some(MaxTokens)), vec![MAX_TOKENS_NOTICE]),
        ("a nudge", tools().nudge(), vec![LOOP_NUDGE]),
        ("the next turn is the last", tools().turn_of(1, 2), vec![WRAP_UP_NOTICE]),
        ("all three, in order", tools().stop(Some(MaxTokens)).nudge().turn_of(2, 3), vec![MAX_TOKENS_NOTICE, LOOP_NUDGE, WRAP_UP_NOTICE]),
        ("a nudge also when the run stops", tools().nudge().loop_stop(), vec![LOOP_NUDGE]),
        ("no cut-off notice on the last turn", tools().stop(Some(MaxTokens)).turn_of(2, 2), vec![]),
        ("no cut-off notice when cancelled in the answer", tools().stop(Some(MaxTokens)).cancelled(InAnswer), vec![]),
        ("no results, no notices", text().nudge(), vec![]),
    ];
    for (name, case, want) in rows {
        assert_eq!(case.decide().result_notices, want, "{name}");
    }
}

#[test]
fn a_completion_ends_with_its_result_as_the_final_text() {
    let decided = tools().completion("all done").decide();
    let Next::End(end) = decided.next else {
        panic!("a completion ends the run");
    };
    assert_eq!(end.final_text.as_deref(), Some("all done"));
    assert_eq!(decided.transition, Transition::Finished(Completed));
}

#[test]
fn every_notice_message_says_when_the_next_turn_is_the_last() {
    assert!(text().stop(Some(Error)).turn_of(1, 2).decide().wrap_up_next);
    assert!(!text().stop(Some(Error)).turn_of(1, 3).decide().wrap_up_next);
    assert!(!text().stop(Some(Error)).decide().wrap_up_next);
}

/// Every combination the loop can meet, against the invariants of the
/// module: the transition says what happened, an end is `Finished` with
/// its reason, and the same input decides the same.
#[test]
fn every_combination_keeps_the_invariants() {
    let stops = [
        None,
        Some(StopReason::EndTurn),
        Some(StopReason::ToolUse),
        Some(MaxTokens),
        Some(ContextOverflow),
        Some(StopReason::Refusal),
        Some(StopReason::PauseTurn),
        Some(Error),
    ];
    let failures = [None, Some(Network), Some(Auth), Some(Overflowed)];
    let cancels = [Cancelled::No, InAnswer, AfterAnswer];
    let turns = [(1, None), (1, Some(2)), (2, Some(2))];
    let mut seen = 0u32;
    for tools_ran in [false, true] {
        for stop in stops {
            for failure in failures {
                for cancelled in cancels {
                    for (turn, max) in turns {
                        for bits in 0u32..1 << 9 {
                            let bit = |n: u32| bits & (1 << n) != 0;
                            let mut case = Case {
                                tools: tools_ran,
                                stop,
                                failure,
                                cancelled,
                                turn,
                                guard: GuardSaid {
                                    nudge: bit(0),
                                    stop: bit(1).then(|| "a repeat".to_string()),
                                },
                                completion: bit(2).then_some("done"),
                                background: bit(3),
                                window_full: bit(4),
                                todos_open: bit(5),
                                recoveries: if bit(6) { 3 } else { 0 },
                                errors: if bit(7) { 2 } else { 0 },
                                ..text()
                            };
                            case.limits.max_turns = max;
                            if bit(8) {
                                case = case.required().stop_hook();
                            }
                            check(&case);
                            seen += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(seen, 2 * 8 * 4 * 3 * 3 * 512);
}

fn check(case: &Case) {
    let decided = case.decide();
    let again = case.decide();
    assert_eq!(
        got(&decided),
        got(&again),
        "the same input decides the same"
    );
    assert_eq!(decided.counters, again.counters);
    let cut_off = matches!(case.stop, Some(MaxTokens | ContextOverflow));
    match &decided.next {
        Next::End(end) => {
            assert_eq!(decided.transition, Transition::Finished(end.reason));
            if case.cancelled != Cancelled::No {
                assert_eq!(end.reason, WasCancelled);
            }
        }
        Next::Continue(step) => {
            assert_eq!(case.cancelled, Cancelled::No, "a cancelled run goes on");
            assert!(case.guard.stop.is_none(), "past a loop stop");
            assert!(case.completion.is_none(), "past a completion");
            assert!(
                !case.limits.is_last_turn(case.turn),
                "past the last allowed turn"
            );
            match decided.transition {
                ToolRound | WrapUp => {
                    assert!(case.tools, "a tool round without tools");
                    assert_eq!(*step, Step::ToolResults);
                    assert_eq!(
                        decided.transition == WrapUp,
                        case.limits.is_last_turn(case.turn + 1)
                    );
                }
                UnusableAnswer => {
                    assert!(!case.tools && case.stop == Some(Error));
                    assert_eq!(*step, Step::AskAgain);
                }
                CutOff => {
                    assert!(!case.tools && cut_off);
                    assert!(matches!(step, Step::ContinueCut { .. }));
                }
                TaskNotification => {
                    assert!(!case.tools && case.background);
                    assert_eq!(*step, Step::AwaitBackground);
                }
                Reminder => {
                    assert!(!case.tools && case.limits.completion == Completion::Required);
                    assert!(matches!(step, Step::Remind(_)));
                }
                StopHook => {
                    assert!(!case.tools && case.limits.stop_hook);
                    assert_eq!(*step, Step::AskStopHook);
                }
                Transition::UserPrompt | Transition::Finished(_) => {
                    panic!("{:?} after a turn", decided.transition)
                }
            }
        }
    }
}

#[test]
#[rustfmt::skip]
fn budgets_end_the_run_before_the_next_request() {
    let usage = |input: u64, output: u64| Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    };
    let cost = |max: f64| RunLimits {
        max_cost_usd: Some(max),
        max_tokens: None,
    };
    let tokens = |max: u64| RunLimits {
        max_cost_usd: None,
        max_tokens: Some(max),
    };
    // (row, limits, usage, cost spent, ends)
    let rows: Vec<(&str, RunLimits, Usage, f64, bool)> = vec![
        ("no budget", RunLimits::default(), usage(10_000, 10_000), 100.0, false),
        ("under the cost budget", cost(1.0), usage(0, 0), 0.5, false),
        ("at the cost budget", cost(1.0), usage(0, 0), 1.0, true),
        ("under the token budget", tokens(100), usage(50, 49), 0.0, false),
        ("at the token budget", tokens(100), usage(50, 50), 0.0, true),
        ("a zero budget ends before the first request", cost(0.0), usage(0, 0), 0.0, true),
    ];
    for (name, limits, usage, spent, want) in rows {
        let ended = over_budget(&limits, &usage, spent);
        assert_eq!(ended.is_some(), want, "{name}");
        if let Some(end) = ended {
            assert_eq!(end.reason, FinishReason::Budget, "{name}");
        }
    }
}
