//! Which sandbox `bash` runs its commands in, and whether it is in force.
//!
//! A sandboxed command is started through the `gyre` binary's helper
//! (`gyre __sandbox-exec POLICY -- SHELL -c SCRIPT`, see the `gyre-sandbox`
//! crate), which restricts itself with Landlock (and seccomp, without
//! network) and then becomes the shell.
//!
//! Invariants:
//! - Nothing is probed while the sandbox is off, and nothing before the
//!   model starts its first `bash` call: then the helper runs once with
//!   `--probe` (in the background, while the call's arguments stream; the
//!   call waits for it), and its [`Report`](gyre_sandbox::Report) is kept
//!   for the session's process.
//! - A command is said to be sandboxed only if the probe found the policy
//!   fully enforced; the helper checks again at every start and refuses to
//!   run the command rather than run it with less.
//! - When the probe finds the sandbox not enforced, the notifier hears so
//!   once, and [`Fallback`] decides: run unsandboxed, or refuse every call.
//!
//! Trade-offs: the probe applies the first call's policy; the kernel's
//! support does not depend on the paths, so one probe speaks for every call.
//! The per-call policy adds the call's own temp file (the working-directory
//! trap's) to the writable paths, so that `read-only` keeps `cd` working.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use gyre_sandbox::Network;
use gyre_sandbox::{Policy, Report};
use serde::Deserialize;
use tokio::sync::OnceCell;

use crate::{ToolError, Workspace};

/// How long the probe may take (it starts a process and applies rules).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Device files every sandboxed shell may write: `>/dev/null` is everywhere.
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// Where a sandboxed command may write (`--sandbox`, `sandbox` in config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox: commands run as gyre's own processes do.
    #[default]
    Off,
    /// Writes only in the workspace, its extra directories and temp dirs.
    WorkspaceWrite,
    /// No writes but to device files such as `/dev/null`.
    ReadOnly,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "off" => Ok(SandboxMode::Off),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "read-only" => Ok(SandboxMode::ReadOnly),
            other => Err(format!(
                "unknown sandbox mode `{other}`: use off, workspace-write or read-only"
            )),
        }
    }
}

/// What happens where the sandbox cannot be enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// Say so once, then run commands unsandboxed.
    #[default]
    Warn,
    /// Say so once, then refuse every `bash` call.
    Refuse,
}

/// The sandbox asked for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Absolute paths commands may not read.
    pub deny_read: Vec<PathBuf>,
    pub network: Network,
    pub fallback: Fallback,
}

/// Hears, once, that the sandbox is not enforced (one sentence).
pub type SandboxNotifier = Arc<dyn Fn(&str) + Send + Sync>;

/// The sandbox of a session's `bash` calls: the policy, the helper that
/// applies it, and what the probe found.
#[derive(Default)]
pub struct Sandbox {
    policy: SandboxPolicy,
    /// The `gyre` binary; `None`: no helper, so nothing can be sandboxed.
    helper: Option<PathBuf>,
    probed: OnceCell<Probed>,
    notifier: Option<SandboxNotifier>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("policy", &self.policy)
            .field("helper", &self.helper)
            .field("probed", &self.probed.get())
            .finish_non_exhaustive()
    }
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Probed {
    Enforced,
    NotEnforced { why: String },
}

/// How one command is started.
#[derive(Debug, Clone)]
pub(crate) enum Launch {
    Direct,
    Sandboxed { helper: PathBuf, policy: Policy },
}

impl Sandbox {
    /// No sandbox.
    pub fn off() -> Sandbox {
        Sandbox::default()
    }

    /// `policy`, applied by `helper` (the `gyre` binary, which answers
    /// `__sandbox-exec`); without a helper nothing can be enforced.
    pub fn new(policy: SandboxPolicy, helper: Option<PathBuf>) -> Sandbox {
        Sandbox {
            policy,
            helper,
            ..Sandbox::default()
        }
    }

    /// Who hears that the sandbox is not enforced (once).
    pub fn with_notifier(mut self, notifier: SandboxNotifier) -> Sandbox {
        self.notifier = Some(notifier);
        self
    }

    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// Whether commands run sandboxed: `None` until the first `bash` call
    /// probed (or while the sandbox is off).
    pub fn enforced(&self) -> Option<bool> {
        self.probed.get().map(|p| *p == Probed::Enforced)
    }

    /// How to start a command in `workspace` that may also write `file`.
    pub(crate) async fn launch(
        &self,
        workspace: &Workspace,
        file: Option<&Path>,
    ) -> Result<Launch, ToolError> {
        let mode = self.policy.mode;
        if mode == SandboxMode::Off {
            return Ok(Launch::Direct);
        }
        let policy = self.rules(workspace, file);
        let probed = self.probed_with(&policy).await;
        match (probed, self.policy.fallback) {
            (Probed::Enforced, _) => Ok(Launch::Sandboxed {
                // Enforced implies a helper answered the probe.
                helper: self.helper.clone().unwrap_or_default(),
                policy,
            }),
            (Probed::NotEnforced { .. }, Fallback::Warn) => Ok(Launch::Direct),
            (Probed::NotEnforced { why }, Fallback::Refuse) => Err(ToolError::Failed(format!(
                "bash is refused: the sandbox ({}) is not enforced here ({why}), and the \
                 configuration says `fallback = \"refuse\"`; use other tools, or ask the user \
                 to run gyre with `--sandbox off`",
                mode.as_str()
            ))),
        }
    }

    /// The probe's finding, probing with `policy` if nobody has yet.
    async fn probed_with(&self, policy: &Policy) -> &Probed {
        self.probed
            .get_or_init(|| async {
                let probed = probe(self.helper.as_deref(), policy).await;
                self.announce(&probed);
                probed
            })
            .await
    }

    /// Starts the probe in the background if it has not run yet, so that it
    /// overlaps the model's streaming: the loop calls this when the model
    /// begins a `bash` call (its arguments are still coming). Does nothing
    /// while the sandbox is off or once probed.
    pub fn prewarm(self: &Arc<Self>, workspace: &Arc<Workspace>) {
        if self.policy.mode == SandboxMode::Off || self.probed.initialized() {
            return;
        }
        let sandbox = self.clone();
        let workspace = workspace.clone();
        tokio::spawn(async move {
            let policy = sandbox.rules(&workspace, None);
            sandbox.probed_with(&policy).await;
        });
    }

    /// What a sandboxed command may do, for a result whose command was
    /// denied something.
    pub(crate) fn denial_note(&self) -> String {
        let writes = match self.policy.mode {
            SandboxMode::ReadOnly => "may not write files",
            SandboxMode::WorkspaceWrite | SandboxMode::Off => {
                "may write only in the workspace, its extra directories and the temp dirs"
            }
        };
        let network = match self.policy.network {
            Network::Allowed => "",
            Network::Denied => " and cannot use the network",
        };
        format!(
            "Note: the command ran in gyre's sandbox ({}): it {writes}{network}, and some paths \
             may be unreadable. Work within that, or ask the user to run gyre with a wider \
             `--sandbox`.",
            self.policy.mode.as_str()
        )
    }

    /// The Landlock policy of one command.
    fn rules(&self, workspace: &Workspace, file: Option<&Path>) -> Policy {
        let mut writable: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
        if self.policy.mode == SandboxMode::WorkspaceWrite {
            writable.push(workspace.root().to_path_buf());
            writable.extend(workspace.extra_dirs().iter().cloned());
            writable.push(PathBuf::from("/tmp"));
            writable.push(PathBuf::from("/dev/shm"));
            writable.push(std::env::temp_dir());
        }
        writable.extend(file.map(Path::to_path_buf));
        writable.dedup();
        Policy {
            writable,
            deny_read: self.policy.deny_read.clone(),
            network: self.policy.network,
        }
    }

    fn announce(&self, probed: &Probed) {
        let mode = self.policy.mode.as_str();
        match probed {
            Probed::Enforced => {
                tracing::info!(mode, network = ?self.policy.network, "sandbox enforced");
            }
            Probed::NotEnforced { why } => {
                let then = match self.policy.fallback {
                    Fallback::Warn => {
                        "bash commands run unsandboxed (`[sandbox] fallback = \"warn\"`)"
                    }
                    Fallback::Refuse => {
                        "bash commands are refused (`[sandbox] fallback = \"refuse\"`)"
                    }
                };
                let message = format!("the sandbox ({mode}) is not enforced: {why}; {then}");
                tracing::warn!("{message}");
                if let Some(notify) = &self.notifier {
                    notify(&message);
                }
            }
        }
    }
}

/// Runs the helper with `--probe` and reads its report.
async fn probe(helper: Option<&Path>, policy: &Policy) -> Probed {
    let Some(helper) = helper else {
        return Probed::NotEnforced {
            why: "no sandbox helper is configured".to_owned(),
        };
    };
    let run = tokio::process::Command::new(helper)
        .args(gyre_sandbox::probe_args(policy))
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(PROBE_TIMEOUT, run).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => {
            return Probed::NotEnforced {
                why: format!("the sandbox helper {} did not start: {e}", helper.display()),
            };
        }
        Err(_) => {
            return Probed::NotEnforced {
                why: "the sandbox helper did not answer in time".to_owned(),
            };
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    match serde_json::from_str::<Report>(text.trim()) {
        Ok(report) if report.enforced() => Probed::Enforced,
        Ok(report) => Probed::NotEnforced {
            why: format!(
                "Landlock is {}{}",
                report.landlock.describe(),
                report.problem.map(|p| format!(": {p}")).unwrap_or_default()
            ),
        },
        Err(_) => Probed::NotEnforced {
            why: format!(
                "the sandbox helper {} gave no report (exit status {})",
                helper.display(),
                output.status
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    #[tokio::test]
    async fn off_starts_commands_directly_without_probing() {
        let (_dir, ws) = workspace();
        let sandbox = Sandbox::off();
        assert!(matches!(
            sandbox.launch(&ws, None).await,
            Ok(Launch::Direct)
        ));
        assert_eq!(sandbox.enforced(), None);
    }

    #[tokio::test]
    async fn without_a_helper_warn_runs_unsandboxed_and_says_so_once() {
        let (_dir, ws) = workspace();
        let heard = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = heard.clone();
        let sandbox = Sandbox {
            policy: SandboxPolicy {
                mode: SandboxMode::WorkspaceWrite,
                ..SandboxPolicy::default()
            },
            ..Sandbox::default()
        }
        .with_notifier(Arc::new(move |m| sink.lock().unwrap().push(m.to_owned())));
        for _ in 0..2 {
            assert!(matches!(
                sandbox.launch(&ws, None).await,
                Ok(Launch::Direct)
            ));
        }
        assert_eq!(sandbox.enforced(), Some(false));
        let heard = heard.lock().unwrap();
        assert_eq!(heard.len(), 1, "{heard:?}");
        assert!(heard[0].contains("not enforced"), "{heard:?}");
    }

    #[tokio::test]
    async fn a_prewarmed_probe_is_the_one_a_call_uses() {
        let (_dir, ws) = workspace();
        let ws = Arc::new(ws);
        let heard = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink = heard.clone();
        let sandbox = Arc::new(
            Sandbox {
                policy: SandboxPolicy {
                    mode: SandboxMode::WorkspaceWrite,
                    ..SandboxPolicy::default()
                },
                ..Sandbox::default()
            }
            .with_notifier(Arc::new(move |m| sink.lock().unwrap().push(m.to_owned()))),
        );
        sandbox.prewarm(&ws);
        sandbox.prewarm(&ws);
        assert!(matches!(
            sandbox.launch(&ws, None).await,
            Ok(Launch::Direct)
        ));
        assert_eq!(sandbox.enforced(), Some(false));
        assert_eq!(heard.lock().unwrap().len(), 1, "probed once");
        // Off: nothing to probe, ever.
        let off = Arc::new(Sandbox::off());
        off.prewarm(&ws);
        assert_eq!(off.enforced(), None);
    }

    #[tokio::test]
    async fn refuse_refuses_every_call_when_not_enforced() {
        let (_dir, ws) = workspace();
        let sandbox = Sandbox::new(
            SandboxPolicy {
                mode: SandboxMode::ReadOnly,
                fallback: Fallback::Refuse,
                ..SandboxPolicy::default()
            },
            Some(PathBuf::from("/nonexistent/gyre")),
        );
        for _ in 0..2 {
            let err = sandbox.launch(&ws, None).await.unwrap_err().to_string();
            assert!(err.contains("bash is refused"), "{err}");
            assert!(err.contains("did not start"), "{err}");
        }
    }

    #[test]
    fn read_only_writes_only_devices_and_the_given_file() {
        let (_dir, ws) = workspace();
        let sandbox = Sandbox {
            policy: SandboxPolicy {
                mode: SandboxMode::ReadOnly,
                ..SandboxPolicy::default()
            },
            ..Sandbox::default()
        };
        let rules = sandbox.rules(&ws, Some(Path::new("/tmp/gyre-cwd-x")));
        assert!(rules.writable.contains(&PathBuf::from("/dev/null")));
        assert!(rules.writable.contains(&PathBuf::from("/tmp/gyre-cwd-x")));
        assert!(!rules.writable.contains(&ws.root().to_path_buf()));
        assert!(!rules.writable.contains(&PathBuf::from("/tmp")));
    }

    #[test]
    fn modes_parse_from_their_names() {
        for mode in [
            SandboxMode::Off,
            SandboxMode::WorkspaceWrite,
            SandboxMode::ReadOnly,
        ] {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
        }
        assert!("on".parse::<SandboxMode>().is_err());
    }
}
