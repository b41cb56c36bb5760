//! The fixed texts gyre writes into a conversation itself: notices to the
//! model (hidden `<system-reminder>`s), the summariser's prompt, and what
//! opens a summary. Constant, so that prompts stay stable cache prefixes.

/// The wrap-up notice sent with the last allowed turn.
pub const WRAP_UP_NOTICE: &str = "<system-reminder>This is the last turn allowed for this task: \
tools are disabled now. Summarise what you did, what is left, and how to continue.</system-reminder>";

/// Sent (as a user-side message) after an answer the provider marked as an
/// error, such as a malformed tool call, so the model answers again.
pub const UNUSABLE_ANSWER_NOTICE: &str = "<system-reminder>Your last answer could not be used: \
the provider reported it as an error (for example a malformed tool call). Answer again; if you \
call a tool, send its arguments as one valid JSON object.</system-reminder>";

/// Sent (as a message from gyre) after an answer cut off by the output
/// limit, so the model carries on where it stopped.
pub const MAX_TOKENS_NOTICE: &str = "<system-reminder>Your last answer was cut off at the output \
token limit. Continue exactly where it stopped, without repeating yourself or apologising. If you \
were writing a tool call, send the whole call again, and split large file contents into several \
smaller writes or edits.</system-reminder>";

/// The system prompt of a summarising request.
pub const COMPACTION_SYSTEM_PROMPT: &str = "\
You are gyre's summariser. You read the transcript of a coding session between a user and a \
coding agent, and write the summary the agent will continue from: the transcript itself will be \
gone. Write for the agent, not for the user. Be precise: exact file paths, names, commands, \
error messages and values. Never add anything the transcript does not show. Do not call tools; \
answer with the summary only.";

/// What a summarising request asks for, after the transcript.
pub const COMPACTION_INSTRUCTIONS: &str = "\
Summarise the transcript above so that the work can continue without it, in these sections:

1. Task: the user's requests (the latest one quoted verbatim) and every constraint or preference \
they stated.
2. State: what is done, what is in progress, and what the agent was doing when the transcript ends.
3. Decisions: the approaches chosen or rejected, and why.
4. Files: every file read, created or changed (paths exactly as written), with what changed and why.
5. Errors: errors and failed attempts met, how each was resolved, and what still fails.
6. Open items: the todo list and everything promised or left to do, in order.
7. Next step: the one next action, precisely.

Keep it under 1,500 words; leave out pleasantries and whatever no longer matters.";

/// Opens a summary message: the model must know it is gyre's, not the user's.
pub const SUMMARY_PREAMBLE: &str = "<system-reminder>The conversation before this point was \
compacted to fit the context window. What follows is gyre's summary of it, not the user's words; \
the messages after it are verbatim.</system-reminder>";

/// Ends a summary that nothing verbatim follows, in the middle of a run.
pub const CONTINUE_AFTER_SUMMARY: &str =
    "Continue the task from where it left off; do not ask the user to repeat anything.";

/// Completion mode (seed 000): sent after a text-only answer while the
/// todo list has open items.
pub const TODOS_OPEN_REMINDER: &str = "<system-reminder>You answered without calling a tool, but \
the todo list still has open items. Continue with the next one, or update the list with \
`todo_write` (mark items completed or cancelled). When everything is done, call \
`attempt_completion` with the result.</system-reminder>";

/// Completion mode (seed 000): sent after a text-only answer when no todo
/// is open.
pub const COMPLETION_REMINDER: &str = "<system-reminder>You answered without calling a tool. If \
the task is done, call `attempt_completion` with the result; otherwise continue with tools.\
</system-reminder>";

/// Sent with the results when the loop guard sees the model repeat a
/// sequence of calls.
pub const LOOP_NUDGE: &str = "<system-reminder>You have made the same sequence of tool calls \
several times in a row, and the results have not changed. Stop and think about why the approach \
is not working; try something different, or answer with what you have. If you repeat the sequence \
again, the run will be stopped.</system-reminder>";
