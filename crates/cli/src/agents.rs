//! `gyre agents`: the agents a run in the current directory can use.
//!
//! Invariants:
//! - The catalog is built exactly as a run builds it (`launch`): built-ins,
//!   then the user's `~/.config/gyre/agents`, then the project's
//!   `.gyre/agents`, a later file replacing an earlier agent of its name.
//! - Nothing here needs a provider, a key, the store or a runtime: listing
//!   agents must work before any of them is set up.
//! - stdout carries one line per agent, in the catalog's order (built-ins
//!   first); a file that does not load is said on stderr, and the listing
//!   goes on without it.

use std::io::Write;

use gyre_core::AgentCatalog;
use gyre_core::agents::AgentSource;

use gyre_host::config::user_config_dir;
use gyre_host::exit::{Exit, SUCCESS};

/// Prints the current directory's agents: `NAME  SOURCE  DESCRIPTION`.
pub fn run() -> Result<i32, Exit> {
    let workspace = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Exit::usage(format!("cannot read the current directory: {e}")))?;
    let catalog = gyre_host::agent_catalog(user_config_dir().as_deref(), &workspace);
    let mut out = std::io::stdout().lock();
    let written = write_listing(&mut out, &catalog).and_then(|()| out.flush());
    match written {
        // A reader that stopped reading (`| head`) got what it wanted.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::failure(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(SUCCESS),
    }
}

fn write_listing(out: &mut dyn Write, catalog: &AgentCatalog) -> std::io::Result<()> {
    for profile in catalog.iter() {
        let source = match &profile.source {
            AgentSource::Builtin => "built-in".to_string(),
            AgentSource::File(path) => path.display().to_string(),
        };
        writeln!(
            out,
            "{}  {}  {}",
            profile.name,
            source,
            one_line(&profile.description)
        )?;
    }
    Ok(())
}

/// A description as one line: YAML block scalars may span several.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_come_first_then_files_with_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("reviewer.md");
        std::fs::write(
            &path,
            "---\ndescription: |\n  Reviews a change.\n  Read-only.\n---\nYou review.\n",
        )
        .unwrap();
        let loaded = gyre_core::agents::file::load_dirs(&[dir.path().to_path_buf()]);
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let mut out = Vec::new();
        write_listing(&mut out, &AgentCatalog::new(loaded.profiles)).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let names: Vec<&str> = lines
            .iter()
            .map(|l| l.split("  ").next().unwrap())
            .collect();
        assert_eq!(names, ["build", "plan", "explore", "reviewer"]);
        assert!(
            lines[0].starts_with("build  built-in  General-purpose"),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[3],
            format!("reviewer  {}  Reviews a change. Read-only.", path.display())
        );
    }
}
