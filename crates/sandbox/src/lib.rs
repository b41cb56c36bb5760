//! gyre's sandbox for shell commands: on Linux, Landlock filesystem rules
//! and (optionally) a seccomp filter that takes the network away.
//!
//! How it is used: gyre never restricts itself. To run a command sandboxed,
//! it starts its own binary as a helper, `gyre __sandbox-exec POLICY --
//! PROGRAM ARGS…` (see [`exec_args`]); the helper ([`helper_main`]) restricts
//! itself with [`apply`] and then `exec`s the program, which inherits the
//! restrictions (Landlock and seccomp survive `exec` and are inherited by
//! every child). This needs no `unsafe` and no `pre_exec` hook. The same
//! helper with `--probe` ([`probe_args`]) applies a policy and prints a
//! [`Report`] instead of running anything: that is how gyre learns whether
//! the kernel enforces the rules before it says the sandbox is on.
//!
//! Invariants:
//! - The helper never runs a program with less than the policy asked for:
//!   unless Landlock says `FullyEnforced` (and the network filter, when
//!   asked for, is installed) it refuses with exit code [`REFUSED_EXIT`] and
//!   a `gyre: sandbox: …` line on stderr.
//! - A policy grants reading everywhere except under `deny_read`, and
//!   writing only under `writable` (directories or single files).
//!
//! Trade-offs: Landlock only grants, never denies, so `deny_read` is built
//! by granting read on every sibling along the path to each denied path, as
//! the directories are when the helper starts. Files created later directly
//! in such an ancestor directory (e.g. a new file in `~` when `~/.ssh` is
//! denied) are not readable by that command; names inside a denied
//! directory can still be listed (listing is granted from `/` down), but
//! not read. A denied path inside a writable directory stays readable (the
//! write grant includes reading). The filesystem rules handle Landlock's
//! ABI 3 rights (with truncation): an older kernel only partly enforces
//! them, which counts as not enforced.

#[cfg(target_os = "linux")]
mod linux;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The hidden subcommand of the `gyre` binary that runs the helper.
pub const SUBCOMMAND: &str = "__sandbox-exec";
/// The helper's flag that probes instead of running a program.
pub const PROBE_FLAG: &str = "--probe";
/// The helper's exit code when it refuses to run a program (like a shell's
/// "cannot execute").
pub const REFUSED_EXIT: i32 = 126;

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Directories (and files) the command may write, and read.
    pub writable: Vec<PathBuf>,
    /// Paths the command may not read (nor anything under them).
    pub deny_read: Vec<PathBuf>,
    pub network: Network,
}

/// Whether a sandboxed command may open network sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    #[default]
    Allowed,
    /// `socket()` for any family but `AF_UNIX` fails with `EPERM`.
    Denied,
}

/// How far the kernel enforces the filesystem rules (Landlock's
/// `RulesetStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    FullyEnforced,
    PartiallyEnforced,
    NotEnforced,
}

impl Enforcement {
    pub fn describe(self) -> &'static str {
        match self {
            Enforcement::FullyEnforced => "fully enforced",
            Enforcement::PartiallyEnforced => "only partially enforced",
            Enforcement::NotEnforced => "not enforced",
        }
    }
}

/// What applying a policy gave: the helper's `--probe` prints it as one
/// JSON line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub landlock: Enforcement,
    /// Whether the network filter was asked for and installed.
    pub network: NetworkFilter,
    /// Why it is not fully enforced, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The seccomp network filter's state after applying a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkFilter {
    NotAsked,
    Installed,
    Failed,
}

impl Report {
    /// Whether everything the policy asked for is in force.
    pub fn enforced(&self) -> bool {
        self.landlock == Enforcement::FullyEnforced && self.network != NetworkFilter::Failed
    }

    pub(crate) fn failed(problem: String) -> Report {
        Report {
            landlock: Enforcement::NotEnforced,
            network: NetworkFilter::NotAsked,
            problem: Some(problem),
        }
    }
}

/// Restricts the calling process (and everything it will `exec` or start)
/// to `policy`. Irreversible: only the helper calls it, never gyre itself.
pub fn apply(policy: &Policy) -> Report {
    #[cfg(target_os = "linux")]
    {
        linux::apply(policy)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = policy;
        Report::failed("the sandbox needs Linux (Landlock)".to_owned())
    }
}

/// The helper's arguments (after the binary) that run `program args…`
/// under `policy`.
pub fn exec_args(policy: &Policy, program: &Path, args: &[&str]) -> Vec<OsString> {
    let mut all = vec![OsString::from(SUBCOMMAND), encode(policy), "--".into()];
    all.push(program.as_os_str().to_owned());
    all.extend(args.iter().map(OsString::from));
    all
}

/// The helper's arguments that probe `policy` and print a [`Report`].
pub fn probe_args(policy: &Policy) -> Vec<OsString> {
    vec![SUBCOMMAND.into(), PROBE_FLAG.into(), encode(policy)]
}

fn encode(policy: &Policy) -> OsString {
    // A policy is plain data: serialising it cannot fail.
    serde_json::to_string(policy).unwrap_or_default().into()
}

/// `gyre __sandbox-exec …`: `args` are the arguments after the subcommand.
/// Returns the exit code when it does not `exec` a program.
pub fn helper_main(args: &[OsString]) -> i32 {
    let (probe, rest) = match args.first() {
        Some(flag) if flag == PROBE_FLAG => (true, &args[1..]),
        _ => (false, args),
    };
    let Some(policy) = rest
        .first()
        .and_then(|text| serde_json::from_str::<Policy>(&text.to_string_lossy()).ok())
    else {
        eprintln!(
            "gyre: sandbox: usage: gyre {SUBCOMMAND} [{PROBE_FLAG}] POLICY [-- PROGRAM ARGS…]"
        );
        return 2;
    };
    let report = apply(&policy);
    if probe {
        println!("{}", serde_json::to_string(&report).unwrap_or_default());
        return 0;
    }
    if !report.enforced() {
        let why = report.problem.as_deref().unwrap_or("no reason given");
        eprintln!(
            "gyre: sandbox: Landlock is {} ({why}); the command was not run",
            report.landlock.describe()
        );
        return REFUSED_EXIT;
    }
    let (Some(separator), Some(program)) = (rest.get(1), rest.get(2)) else {
        eprintln!("gyre: sandbox: no program to run after `--`");
        return 2;
    };
    if separator != "--" {
        eprintln!("gyre: sandbox: expected `--` before the program");
        return 2;
    }
    exec(program, &rest[3..])
}

#[cfg(unix)]
fn exec(program: &OsString, args: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    // `exec` only returns on failure; the environment, working directory,
    // process group and file descriptors are the helper's, as gyre set them.
    let error = std::process::Command::new(program).args(args).exec();
    eprintln!(
        "gyre: sandbox: cannot run {}: {error}",
        Path::new(program).display()
    );
    REFUSED_EXIT + 1
}

#[cfg(not(unix))]
fn exec(program: &OsString, _args: &[OsString]) -> i32 {
    eprintln!(
        "gyre: sandbox: cannot run {}: not supported here",
        Path::new(program).display()
    );
    REFUSED_EXIT + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_args_carry_the_policy_then_the_program() {
        let policy = Policy {
            writable: vec!["/w".into()],
            deny_read: vec![],
            network: Network::Denied,
        };
        let args = exec_args(&policy, Path::new("/bin/bash"), &["-c", "echo hi"]);
        assert_eq!(args[0], SUBCOMMAND);
        let decoded: Policy = serde_json::from_str(&args[1].to_string_lossy()).unwrap();
        assert_eq!(decoded, policy);
        assert_eq!(args[2..], ["--", "/bin/bash", "-c", "echo hi"]);
    }

    #[test]
    fn a_report_with_a_failed_network_filter_is_not_enforced() {
        let mut report = Report {
            landlock: Enforcement::FullyEnforced,
            network: NetworkFilter::Installed,
            problem: None,
        };
        assert!(report.enforced());
        report.network = NetworkFilter::Failed;
        assert!(!report.enforced());
        report = Report::failed("x".into());
        assert!(!report.enforced());
    }
}
