//! `gyre mcp list`: the MCP servers a run in the current directory would
//! start, each started to show its state and its tools.
//!
//! Invariants:
//! - The servers are exactly a run's (`mcp_tools`: config.toml's, then
//!   `.mcp.json`'s whose names config.toml does not use), plus the disabled
//!   ones, listed as such; sorted by name.
//! - Servers start concurrently, each bounded by its start timeout; each is
//!   closed once its tools are listed. A server that fails is listed with
//!   its reason and the exit code stays 0; a bad config file is exit 2.
//! - Nothing here needs a provider, a key or the store. Environment and
//!   header values are never printed (they may hold secrets).

use std::io::Write;

use gyre_mcp::{ListedTool, ServerEntry};

use gyre_host::config::{Config, user_config_dir};
use gyre_host::exit::{Exit, SUCCESS};

/// Characters of a tool's description shown (its first line).
const DESCRIPTION_CHARS: usize = 100;

pub async fn run() -> Result<i32, Exit> {
    let workspace = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Exit::usage(format!("cannot read the current directory: {e}")))?;
    let config = Config::load(user_config_dir().as_deref(), &workspace)
        .map_err(|e| Exit::usage(e.to_string()))?;
    let mut servers = gyre_host::mcp_tools::all(&config, &workspace).map_err(Exit::usage)?;
    servers.sort_by(|a, b| a.name.cmp(&b.name));
    let probes = futures::future::join_all(servers.iter().map(|server| async move {
        match server.enabled {
            true => Some(gyre_mcp::probe(server).await),
            false => None,
        }
    }))
    .await;
    let mut out = std::io::stdout().lock();
    let written = write_listing(&mut out, &servers, &probes).and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Exit::failure(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(SUCCESS),
    }
}

type Probe = Option<Result<Vec<ListedTool>, String>>;

fn write_listing(
    out: &mut dyn Write,
    servers: &[ServerEntry],
    probes: &[Probe],
) -> std::io::Result<()> {
    if servers.is_empty() {
        return writeln!(
            out,
            "no MCP servers configured: add [mcp_servers.NAME] to ~/.config/gyre/config.toml or \
             .gyre/config.toml, or mcpServers to .mcp.json"
        );
    }
    let (mut ready, mut failed, mut disabled) = (0, 0, 0);
    for (server, probe) in servers.iter().zip(probes) {
        let how = match &server.config {
            Ok(config) => format!("{}: {}", config.transport(), config.target()),
            Err(_) => "unusable".to_string(),
        };
        writeln!(out, "{}  ({how}; from {})", server.name, server.source)?;
        match probe {
            None => {
                disabled += 1;
                writeln!(out, "  disabled (enabled = false)")?;
            }
            Some(Err(why)) => {
                failed += 1;
                writeln!(out, "  failed: {why}")?;
            }
            Some(Ok(tools)) => {
                ready += 1;
                let noun = if tools.len() == 1 { "tool" } else { "tools" };
                writeln!(out, "  ready: {} {noun}", tools.len())?;
                for tool in tools {
                    let kind = if tool.info.read_only {
                        "read-only"
                    } else {
                        "mutating"
                    };
                    let description = first_line(tool.info.description.as_deref().unwrap_or(""));
                    writeln!(out, "    {}  {kind}  {description}", tool.name)?;
                }
            }
        }
    }
    let count = servers.len();
    let noun = if count == 1 { "server" } else { "servers" };
    let mut summary = format!("\n{count} {noun}: {ready} ready, {failed} failed");
    if disabled > 0 {
        summary.push_str(&format!(", {disabled} disabled"));
    }
    writeln!(out, "{summary}")
}

/// The first non-empty line of `text`, cut to [`DESCRIPTION_CHARS`].
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(DESCRIPTION_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_show_their_first_line_cut() {
        assert_eq!(first_line("\n  Echoes back.\nMore."), "Echoes back.");
        let long = "é".repeat(150);
        assert_eq!(first_line(&long).chars().count(), DESCRIPTION_CHARS + 1);
    }
}
