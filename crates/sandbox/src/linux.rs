//! Landlock and seccomp on Linux.
//!
//! Invariant: [`apply`] installs the filesystem rules first (Landlock's
//! `restrict_self` also sets `PR_SET_NO_NEW_PRIVS`, which an unprivileged
//! seccomp filter needs), then the network filter; a report that is not
//! fully enforced makes the helper refuse to run anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::{Enforcement, Network, NetworkFilter, Policy, Report};

/// The Landlock rights handled: ABI 3 (Linux 6.2) adds truncation, without
/// which a read-only file could still be emptied.
const ABI_USED: ABI = ABI::V3;

pub(crate) fn apply(policy: &Policy) -> Report {
    let landlock = match restrict_files(policy) {
        Ok(status) => status,
        Err(problem) => return Report::failed(problem),
    };
    let mut report = Report {
        landlock,
        network: NetworkFilter::NotAsked,
        problem: match landlock {
            Enforcement::FullyEnforced => None,
            Enforcement::PartiallyEnforced => Some(format!(
                "the kernel lacks some of Landlock ABI {} rights",
                ABI_USED as i32
            )),
            Enforcement::NotEnforced => {
                Some("the kernel does not support Landlock, or it is disabled".to_owned())
            }
        },
    };
    if policy.network == Network::Denied {
        match deny_network() {
            Ok(()) => report.network = NetworkFilter::Installed,
            Err(problem) => {
                report.network = NetworkFilter::Failed;
                report.problem = Some(format!("the network filter failed: {problem}"));
            }
        }
    }
    report
}

fn restrict_files(policy: &Policy) -> Result<Enforcement, String> {
    let all = AccessFs::from_all(ABI_USED);
    let read = AccessFs::from_read(ABI_USED);
    let readable = ReadGrants::for_denied(&policy.deny_read);
    let status = Ruleset::default()
        // Best effort: an older kernel gives a lower status, not an error;
        // the status decides.
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(&readable.full, read)))
        .and_then(|r| r.add_rules(path_beneath_rules(&readable.list_only, AccessFs::ReadDir)))
        .and_then(|r| r.add_rules(path_beneath_rules(&policy.writable, all)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("Landlock: {e}"))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::FullyEnforced,
        RulesetStatus::PartiallyEnforced => Enforcement::PartiallyEnforced,
        RulesetStatus::NotEnforced => Enforcement::NotEnforced,
    })
}

/// Where reading is granted.
#[derive(Debug, Default, PartialEq)]
struct ReadGrants {
    /// Read files, list directories, execute: everything under these.
    full: Vec<PathBuf>,
    /// Listing only (from `/`, so every directory can be listed).
    list_only: Vec<PathBuf>,
}

impl ReadGrants {
    /// Everything readable but `denied`: the siblings along the path to
    /// each denied path get full read, the ancestors themselves listing.
    fn for_denied(denied: &[PathBuf]) -> ReadGrants {
        // A denied path that does not exist has nothing to protect; a
        // symlinked one is protected where it points.
        let denied: BTreeSet<PathBuf> = denied
            .iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .filter(|p| p.parent().is_some())
            .collect();
        if denied.is_empty() {
            return ReadGrants {
                full: vec![PathBuf::from("/")],
                list_only: Vec::new(),
            };
        }
        let ancestors: BTreeSet<PathBuf> = denied
            .iter()
            .flat_map(|p| p.ancestors().skip(1).map(Path::to_path_buf))
            .collect();
        let mut grants = ReadGrants {
            full: Vec::new(),
            list_only: vec![PathBuf::from("/")],
        };
        for dir in &ancestors {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if denied.contains(&path) || ancestors.contains(&path) {
                    continue;
                }
                // A link to a denied path, or to one of its ancestors (which
                // would grant everything under it), is not followed.
                let target = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                let reaches_denied = denied
                    .iter()
                    .any(|d| target.starts_with(d) || d.starts_with(&target));
                if !reaches_denied {
                    grants.full.push(path);
                }
            }
        }
        grants
    }
}

/// Installs a seccomp filter under which `socket()` for any family but
/// `AF_UNIX` fails with `EPERM`, and so does `io_uring_setup` (io_uring
/// can open sockets without the `socket` system call).
fn deny_network() -> Result<(), String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let not_unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| e.to_string())?;
    let rules = [
        (
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(|e| e.to_string())?],
        ),
        (libc::SYS_io_uring_setup, vec![]),
    ];
    let filter = SeccompFilter::new(
        rules.into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_denied_reads_everything() {
        assert_eq!(
            ReadGrants::for_denied(&[PathBuf::from("/no/such/path")]),
            ReadGrants {
                full: vec![PathBuf::from("/")],
                list_only: vec![],
            }
        );
    }

    #[test]
    fn a_denied_dir_is_left_out_but_its_siblings_are_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for name in ["secret", "open"] {
            std::fs::create_dir(root.join(name)).unwrap();
        }
        std::fs::write(root.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("secret"), root.join("link")).unwrap();
        let grants = ReadGrants::for_denied(&[root.join("secret")]);
        assert!(grants.full.contains(&root.join("open")));
        assert!(grants.full.contains(&root.join("file")));
        assert!(!grants.full.contains(&root.join("secret")));
        assert!(!grants.full.contains(&root.join("link")), "links to it too");
        assert!(
            grants.full.iter().all(|p| !root.starts_with(p)),
            "no ancestor gets full read: {:?}",
            grants.full
        );
        assert_eq!(grants.list_only, vec![PathBuf::from("/")]);
    }
}
