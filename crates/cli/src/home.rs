//! Where gyre keeps its data (`$GYRE_HOME`), and logging to a file there.
//!
//! Logs never go to stdout or stderr: stdout may carry stream-json, and the
//! terminal belongs to the user.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
    let filter = tracing_subscriber::EnvFilter::try_from_env("GYRE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .try_init();
}
