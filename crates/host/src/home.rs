//! Where gyre keeps its data (`$GYRE_HOME`), and logging to a file there.
//!
//! Logs never go to stdout or stderr: stdout may carry stream-json, and the
//! terminal belongs to the user.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::exit::Exit;

/// `$GYRE_HOME`, else the XDG data directory (`~/.local/share/gyre`).
pub fn gyre_home() -> Result<PathBuf, Exit> {
    if let Some(home) = std::env::var_os("GYRE_HOME").filter(|h| !h.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .map(|s| s.data_dir().join("gyre"))
        .map_err(|_| {
            Exit::usage(
                "cannot find a home directory: set GYRE_HOME to where gyre may keep its data",
            )
        })
}

pub fn database_path(home: &Path) -> PathBuf {
    home.join("sessions.db")
}

/// Where the file checkpoints of every workspace are kept (one directory
/// per workspace under it, `Checkpointer::dir_for`).
pub fn checkpoints_root(home: &Path) -> PathBuf {
    home.join("checkpoints")
}

/// Sends `tracing` output to `$GYRE_HOME/logs/gyre.log` (level from
/// `GYRE_LOG`, default `info`). Logging is best effort: a log file that cannot
/// be opened is not a reason to fail a run.
pub fn init_logging(home: &Path) {
    let dir = home.join("logs");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let Ok(file) = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("gyre.log"))
    else {
        return;
    };
    // `Targets` ("info", "debug,gyre_core=trace") rather than `EnvFilter`:
    // the same syntax for levels and targets, without compiling regexes at
    // every start (that code alone was a visible part of start-up memory).
    let filter = std::env::var("GYRE_LOG")
        .ok()
        .and_then(|spec| spec.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO));
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(Mutex::new(file))
                .with_ansi(false),
        )
        .with(filter)
        .try_init();
}
