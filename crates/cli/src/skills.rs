//! `gyre skills`: the Agent Skills a run in the current directory sees.
//!
//! Invariants:
//! - The skills are loaded exactly as a run loads them
//!   (`gyre_host::skills::load`): the user's directories, then the
//!   project's, a later folder replacing an earlier skill of its name.
//! - Nothing here needs a provider, a key, the store or a runtime.
//! - stdout carries one line per skill, by name; a `SKILL.md` that does not
//!   load is a warning on stderr, and the listing goes on without it.

use std::io::Write;

use gyre_core::skills::SkillSet;
use gyre_host::exit::{Exit, SUCCESS};

/// Prints the current directory's skills: `NAME  SOURCE  PATH  DESCRIPTION`.
pub fn run() -> Result<i32, Exit> {
    let workspace = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Exit::usage(format!("cannot read the current directory: {e}")))?;
    let loaded = gyre_host::skills::load(&workspace);
    for warning in &loaded.warnings {
        eprintln!("gyre: warning: {warning}");
    }
    let mut out = std::io::stdout().lock();
    let written = write_listing(&mut out, &loaded.skills).and_then(|()| out.flush());
    match written {
        // A reader that stopped reading (`| head`) got what it wanted.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::failure(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(SUCCESS),
    }
}

fn write_listing(out: &mut dyn Write, skills: &SkillSet) -> std::io::Result<()> {
    for skill in skills.iter() {
        let description = skill.description.split_whitespace().collect::<Vec<_>>();
        writeln!(
            out,
            "{}  {}  {}  {}",
            skill.name,
            skill.source,
            skill.file().display(),
            description.join(" ")
        )?;
    }
    Ok(())
}
