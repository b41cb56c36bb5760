//! `gyre` alone: the interactive terminal UI in the current directory (or
//! `--cwd`), ready for input, with no first-run dialog.
//!
//! Invariants:
//! - Everything that can be wrong with the flags, the config or the key is
//!   said before the terminal is taken (exit 2, one line), as for `gyre run`.
//! - Without a terminal on stdin and stdout it refuses at once (exit 2),
//!   pointing at `gyre run`.
//! - While the UI runs, stderr goes to the log file: nothing but frames
//!   reaches the screen. The terminal is restored however it ends.
//! - Exit status: 0 when the user quits; 128+N when signal N stopped it.
//! - The project's MCP servers (`.mcp.json`, `.gyre/config.toml`) start
//!   only where the user trusted them (`mcp_trust`); the others are
//!   reported `failed`, saying how to trust them.

mod backend;

use std::path::Path;

use gyre_core::Approvals;
use gyre_host::exit::{Exit, SUCCESS};
use gyre_host::session_choice::{NewSession, Pick, open_session};
use gyre_host::{Flags, Host};

use crate::palette::{ColorMode, Palette};
use crate::{AppOptions, Ended};

pub use backend::HostBackend;

/// Runs the TUI until the user quits.
pub fn main(args: &Flags) -> Result<i32, Exit> {
    if !crate::terminal::is_interactive() {
        return Err(Exit::usage(
            "the interactive terminal UI needs a terminal on stdin and stdout; run a task headless with `gyre run \"PROMPT\"`",
        ));
    }
    let home = gyre_host::home::gyre_home()?;
    gyre_host::home::init_logging(&home);
    gyre_host::runtime()?.block_on(run(args, &home))
}

async fn run(args: &Flags, home: &Path) -> Result<i32, Exit> {
    // The project's own MCP servers start only once the user trusted them
    // (`gyre mcp trust`): the TUI is where a freshly cloned repository is
    // opened.
    let host = Host::open(home, args.clone(), Approvals::Interactive)
        .await?
        .needing_mcp_trust();
    let factory = host.factory(None).await?;
    let backend = HostBackend::new(host, factory);
    // `--resume`, `--continue` (and `--fork`): the session is opened now, so
    // a wrong id is said before the screen changes.
    let opened = match backend.settings().session.pick {
        Pick::New => None,
        _ => {
            let cwd = backend.workspace_dir();
            let settings = backend.settings();
            let session = open_session(
                backend.store(),
                backend.location(),
                &settings.session,
                NewSession {
                    cwd: &cwd,
                    provider: &settings.provider.name,
                    model: &settings.provider.model,
                    prompt: "",
                },
            )
            .await?;
            Some(backend.opened(session).await?)
        }
    };
    let palette = match std::env::var_os("NO_COLOR").filter(|v| !v.is_empty()) {
        Some(_) => Palette::new(ColorMode::Plain),
        None => Palette::default(),
    };
    let options = AppOptions {
        palette,
        choice: backend.initial_choice(),
        opened,
        inline: !backend.settings().alt_screen,
    };
    let log = home.join("logs").join("gyre.log");
    let ended = crate::run(backend, options, Some(&log))
        .await
        .map_err(|e| Exit::failure(format!("the terminal failed: {e}")))?;
    Ok(match ended {
        Ended::Quit | Ended::TerminalClosed => SUCCESS,
        Ended::Signal(number) => 128 + number,
    })
}

#[cfg(test)]
mod tests;
