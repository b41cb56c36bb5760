//! Commands die with their run: each shell command starts a watcher in its
//! own process group, with the read end of a pipe whose only write end gyre
//! holds (the "lifeline") for as long as it wants the command. When gyre
//! dies in any way (SIGKILL, a crash, OOM) the kernel closes that end; the
//! watcher reads end-of-file and kills the whole group (grandchildren
//! included) at once.
//!
//! Why a pipe and not `PR_SET_PDEATHSIG`: the parent-death signal fires when
//! the *thread* that spawned the child exits, and tokio retires idle
//! blocking threads, which would kill long-running and background commands
//! at random; it also reaches only the direct child, not its group. A
//! pipe's end-of-file depends on nothing but the process holding the write
//! end, needs no `unsafe` and no `pre_exec`, and works sandboxed too (the
//! watcher is started by the shell the sandbox helper becomes).
//!
//! Invariants:
//! - The shell gets the lifeline as its stdin; the prefix hands it to the
//!   watcher on fd 3 and gives the command a null stdin, as before.
//! - The watcher is started through a subshell that exits at once, so it is
//!   not a child of the command's shell: `wait`, `jobs` and `$!` in the
//!   command never see it; it stays in the group, so the group kills that
//!   end a call (timeout, cancellation, the end of a background job) take it
//!   too. Its stdout and stderr are /dev/null: it never holds the output
//!   pipe open.
//! - The prefix and the command are one line, so the shell reports the
//!   command's line numbers as the model wrote them; `$$` is still the
//!   group's leader, the command's shell.
//! - The lifeline's write end is close-on-exec (Rust creates pipes so): no
//!   other child of gyre holds it, so its end-of-file means gyre let go.
//!
//! Trade-off: one short-lived subshell and one sleeping watcher per command
//! (a few hundred kB while the command runs).

/// Runs before the command, on its line: starts the watcher (fd 3 is the
/// lifeline inside it), then points the shell's stdin at /dev/null.
const PREFIX: &str =
    "( ( read -r _ <&3; kill -KILL 0 ) >/dev/null 2>&1 & ) 3<&0; exec </dev/null 3<&-; ";

/// `script` with the watcher started first.
pub(crate) fn supervised(script: &str) -> String {
    format!("{PREFIX}{script}")
}
