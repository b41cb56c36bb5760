//! `gyre mcp trust`: shows the current directory's project MCP servers and
//! records that the user trusts them (what trust means and where it is
//! kept: `gyre_host::mcp_trust`).

use std::io::Write;
use std::path::PathBuf;

use gyre_host::config::{Config, user_config_dir};
use gyre_host::exit::{Exit, SUCCESS};
use gyre_host::mcp_trust::{Recorded, is_project, trust};

/// `gyre mcp trust`: shows the current directory's project servers and
/// records that the user trusts them.
pub fn run() -> Result<i32, Exit> {
    let home = gyre_host::home::gyre_home()?;
    let workspace: PathBuf = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Exit::usage(format!("cannot read the current directory: {e}")))?;
    let config = Config::load(user_config_dir().as_deref(), &workspace)
        .map_err(|e| Exit::usage(e.to_string()))?;
    let mut servers = gyre_host::mcp_tools::all(&config, &workspace).map_err(Exit::usage)?;
    servers.retain(|s| is_project(s, &workspace));
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = String::new();
    if servers.is_empty() {
        out.push_str(&format!(
            "no project MCP servers in {}: nothing to trust (the servers of your own \
             ~/.config/gyre/config.toml always start)\n",
            workspace.display()
        ));
    } else {
        for server in &servers {
            let how = match &server.config {
                Ok(config) => format!("{}: {}", config.transport(), config.target()),
                Err(_) => "unusable".to_string(),
            };
            let off = if server.enabled { "" } else { "; disabled" };
            out.push_str(&format!(
                "{}  ({how}; from {}{off})\n",
                server.name, server.source
            ));
        }
        let said = match trust(&home, &workspace).map_err(Exit::failure)? {
            Recorded::New => "trusted",
            Recorded::Changed => "the configuration changed since it was trusted; trusted again",
            Recorded::Unchanged => "already trusted",
        };
        out.push_str(&format!(
            "\n{said}: the terminal UI starts these servers in {} until their configuration changes\n",
            workspace.display()
        ));
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::failure(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(SUCCESS),
    }
}
