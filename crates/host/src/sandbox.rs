//! The sandbox of a run's `bash` commands, from `--sandbox` and `[sandbox]`.
//!
//! The default is `workspace-write` with the network allowed and the
//! `warn` fallback: a command can write the workspace, its extra
//! directories and the temp dirs, and a kernel without Landlock costs one
//! warning, not the run. The helper that applies the sandbox is this very
//! binary (`gyre __sandbox-exec`, answered in `main` before anything else).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gyre_tools::{Fallback, Network, Sandbox, SandboxMode, SandboxPolicy};

use crate::config::SandboxSection;

/// The mode when neither a flag nor a config file names one.
pub const DEFAULT_MODE: SandboxMode = SandboxMode::WorkspaceWrite;

/// `--sandbox` over `[sandbox]` over the defaults; `deny_read` paths are
/// made absolute (`~/` is `home`, a relative path is in `workspace`).
pub fn policy(
    flag: Option<SandboxMode>,
    section: &SandboxSection,
    workspace: &Path,
    home: Option<&Path>,
) -> SandboxPolicy {
    let deny_read = section
        .deny_read
        .iter()
        .flatten()
        .filter_map(|path| absolute(path, workspace, home))
        .collect();
    SandboxPolicy {
        mode: flag.or(section.mode).unwrap_or(DEFAULT_MODE),
        deny_read,
        network: match section.network {
            Some(false) => Network::Denied,
            Some(true) | None => Network::Allowed,
        },
        fallback: section.fallback.unwrap_or_default(),
    }
}

/// Removes from a project's `[sandbox]` what would loosen `base` (the
/// user's, over the defaults); returns the settings removed, as written.
pub fn narrow(project: &mut SandboxSection, base: &SandboxSection) -> Vec<String> {
    let strictness = |mode: SandboxMode| match mode {
        SandboxMode::Off => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::ReadOnly => 2,
    };
    let mut ignored = Vec::new();
    let base_mode = base.mode.unwrap_or(DEFAULT_MODE);
    if let Some(mode) = project.mode
        && strictness(mode) < strictness(base_mode)
    {
        ignored.push(format!("[sandbox] mode = \"{}\"", mode.as_str()));
        project.mode = None;
    }
    if project.network == Some(true) && base.network == Some(false) {
        ignored.push("[sandbox] network = true".to_owned());
        project.network = None;
    }
    if project.fallback == Some(Fallback::Warn) && base.fallback == Some(Fallback::Refuse) {
        ignored.push("[sandbox] fallback = \"warn\"".to_owned());
        project.fallback = None;
    }
    ignored
}

/// `~` and `~/x` need a home directory; without one such a path is dropped
/// (there is nothing it could name).
fn absolute(path: &str, workspace: &Path, home: Option<&Path>) -> Option<PathBuf> {
    match path.strip_prefix('~') {
        Some("") => home.map(Path::to_path_buf),
        Some(rest) if rest.starts_with('/') => home.map(|h| h.join(rest.trim_start_matches('/'))),
        _ => Some(workspace.join(path)),
    }
}

/// The run's sandbox: this binary as its helper; a kernel that does not
/// enforce it is said once on stderr, as `gyre: warning: …`.
pub fn sandbox(policy: SandboxPolicy) -> Arc<Sandbox> {
    if policy.mode == SandboxMode::Off {
        return Arc::new(Sandbox::off());
    }
    let helper = std::env::current_exe().ok();
    Arc::new(
        Sandbox::new(policy, helper).with_notifier(Arc::new(|message: &str| {
            eprintln!("gyre: warning: {message}");
        })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_and_paths_become_absolute() {
        let section = SandboxSection {
            mode: Some(SandboxMode::ReadOnly),
            deny_read: Some(vec![
                "~/.ssh".into(),
                "secrets".into(),
                "/etc/shadow".into(),
            ]),
            network: Some(false),
            fallback: None,
        };
        let policy = policy(
            Some(SandboxMode::Off),
            &section,
            Path::new("/w"),
            Some(Path::new("/home/u")),
        );
        assert_eq!(policy.mode, SandboxMode::Off);
        assert_eq!(
            policy.deny_read,
            [
                PathBuf::from("/home/u/.ssh"),
                PathBuf::from("/w/secrets"),
                PathBuf::from("/etc/shadow")
            ]
        );
        assert_eq!(policy.network, Network::Denied);
    }

    #[test]
    fn a_project_may_narrow_the_sandbox_but_not_loosen_it() {
        let user = SandboxSection {
            network: Some(false),
            fallback: Some(Fallback::Refuse),
            ..SandboxSection::default()
        };
        let mut loosening = SandboxSection {
            mode: Some(SandboxMode::Off),
            network: Some(true),
            fallback: Some(Fallback::Warn),
            deny_read: Some(vec!["x".into()]),
        };
        let ignored = narrow(&mut loosening, &user);
        assert_eq!(ignored.len(), 3, "{ignored:?}");
        assert_eq!(
            (loosening.mode, loosening.network, loosening.fallback),
            (None, None, None)
        );
        assert!(loosening.deny_read.is_some(), "denying more is narrowing");
        let mut tightening = SandboxSection {
            mode: Some(SandboxMode::ReadOnly),
            network: Some(false),
            ..SandboxSection::default()
        };
        assert!(narrow(&mut tightening, &SandboxSection::default()).is_empty());
        assert_eq!(tightening.mode, Some(SandboxMode::ReadOnly));
    }

    #[test]
    fn defaults_are_workspace_write_with_network() {
        let policy = policy(None, &SandboxSection::default(), Path::new("/w"), None);
        assert_eq!(policy.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(policy.network, Network::Allowed);
        assert!(policy.deny_read.is_empty());
    }
}
