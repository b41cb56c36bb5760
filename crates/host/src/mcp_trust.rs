//! Trust in a project's own MCP servers: those of the workspace's
//! `.mcp.json` and of its `.gyre/config.toml` (and `config.local.toml`)
//! `[mcp_servers]`. A cloned repository's servers run arbitrary commands
//! (and `${VAR}` expansion can send a key to any URL), so the interactive
//! TUI starts them only once the user ran `gyre mcp trust` in that
//! workspace; the user's own `~/.config/gyre/config.toml` servers are
//! always trusted.
//!
//! Invariants:
//! - Trust is recorded in `$GYRE_HOME/mcp-trust.json`: the workspace's
//!   canonical path with the SHA-256 of its project MCP configuration
//!   (the bytes of `.mcp.json`, and the `mcp_servers` table of each
//!   project config file, so that another key of those files changing
//!   does not matter). Any change of that configuration lapses the trust.
//! - An untrusted project server is never started: it is reported
//!   `failed` with [`NOT_TRUSTED`] through the usual server statuses (the
//!   TUI's `/mcp`, the event stream), and the other servers start.
//! - Only the TUI asks for trust ([`ProjectMcp::NeedsTrust`]); `gyre run`,
//!   `acp`, `serve` and `mcp-server` start project servers as configured
//!   (headless or driven by a program the user set up: nobody to ask).
//! - A trust file that cannot be read or parsed trusts nothing (said in
//!   the log); `gyre mcp trust` writes a new one whole (temp file, rename).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use gyre_mcp::ServerEntry;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What an untrusted project server reports instead of starting.
pub const NOT_TRUSTED: &str = "not started: this project's MCP servers are not trusted yet; \
     run `gyre mcp trust` here to start them";

/// The trust file, in `$GYRE_HOME`.
const FILE_NAME: &str = "mcp-trust.json";

/// Whether a frontend starts the project's MCP servers without trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProjectMcp {
    /// As configured (headless runs and programs: `run`, `acp`, `serve`,
    /// `mcp-server`).
    #[default]
    Start,
    /// Only once `gyre mcp trust` recorded this configuration (the TUI).
    NeedsTrust,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    /// Canonical workspace path → hash of its project MCP configuration.
    #[serde(default)]
    workspaces: BTreeMap<String, String>,
}

/// Whether `entry` is configured by the project in `workspace` (rather
/// than by the user's own config file).
pub fn is_project(entry: &ServerEntry, workspace: &Path) -> bool {
    let source = Path::new(&entry.source);
    source == workspace.join(gyre_mcp::config::FILE_NAME)
        || source.starts_with(workspace.join(".gyre"))
}

/// `servers` as a session in `workspace` starts them under `policy`:
/// untrusted project servers get [`NOT_TRUSTED`] instead of their
/// configuration. Reads files only when a project server would start.
pub fn gate(
    servers: &[ServerEntry],
    workspace: &Path,
    home: &Path,
    policy: ProjectMcp,
) -> Vec<ServerEntry> {
    let mut servers = servers.to_vec();
    let any_project = servers
        .iter()
        .any(|s| s.enabled && is_project(s, workspace));
    if policy == ProjectMcp::Start || !any_project || is_trusted(home, workspace) {
        return servers;
    }
    for server in servers.iter_mut().filter(|s| is_project(s, workspace)) {
        server.config = Err(NOT_TRUSTED.to_string());
    }
    servers
}

/// Whether the user trusted `workspace`'s current project MCP
/// configuration.
pub fn is_trusted(home: &Path, workspace: &Path) -> bool {
    let key = workspace.to_string_lossy();
    load(home)
        .workspaces
        .get(key.as_ref())
        .is_some_and(|hash| *hash == config_hash(workspace))
}

/// How `gyre mcp trust` changed the trust file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The workspace was not trusted before.
    New,
    /// It was, with another configuration.
    Changed,
    /// This very configuration was trusted already.
    Unchanged,
}

/// Records that the user trusts `workspace`'s current project MCP
/// configuration. Err: one sentence.
pub fn trust(home: &Path, workspace: &Path) -> Result<Recorded, String> {
    let mut file = load(home);
    let hash = config_hash(workspace);
    let key = workspace.to_string_lossy().into_owned();
    let recorded = match file.workspaces.insert(key, hash.clone()) {
        None => Recorded::New,
        Some(old) if old == hash => return Ok(Recorded::Unchanged),
        Some(_) => Recorded::Changed,
    };
    let path = home.join(FILE_NAME);
    let problem = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    std::fs::create_dir_all(home).map_err(|e| problem(&e))?;
    let text = serde_json::to_string_pretty(&file).map_err(|e| problem(&e))?;
    let mut temp = tempfile::NamedTempFile::new_in(home).map_err(|e| problem(&e))?;
    temp.write_all(text.as_bytes()).map_err(|e| problem(&e))?;
    temp.persist(&path).map_err(|e| problem(&e.error))?;
    Ok(recorded)
}

fn load(home: &Path) -> TrustFile {
    let path = home.join(FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return TrustFile::default(),
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "the MCP trust file cannot be read");
            return TrustFile::default();
        }
    };
    serde_json::from_str(&text).unwrap_or_else(|error| {
        tracing::warn!(path = %path.display(), %error, "the MCP trust file does not parse");
        TrustFile::default()
    })
}

/// The SHA-256 (hex) of `workspace`'s project MCP configuration.
fn config_hash(workspace: &Path) -> String {
    let mut hasher = Sha256::new();
    let mut part = |label: &str, bytes: &[u8]| {
        hasher.update(label.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    let mcp_json = std::fs::read(workspace.join(gyre_mcp::config::FILE_NAME)).unwrap_or_default();
    part(gyre_mcp::config::FILE_NAME, &mcp_json);
    for name in ["config.toml", "config.local.toml"] {
        let table = mcp_servers_table(&workspace.join(".gyre").join(name));
        part(name, table.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The `mcp_servers` table of a config file, written out again (empty
/// when the file or the table is missing; the whole text when it does
/// not parse).
fn mcp_servers_table(path: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    match toml::from_str::<toml::Table>(&text) {
        Ok(table) => table
            .get("mcp_servers")
            .map(ToString::to_string)
            .unwrap_or_default(),
        Err(_) => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, source: &Path) -> ServerEntry {
        ServerEntry {
            name: name.into(),
            config: Err("unused".into()),
            timeouts: Default::default(),
            source: source.display().to_string(),
            enabled: true,
        }
    }

    #[test]
    fn trust_lapses_when_the_project_mcp_configuration_changes() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let ws = workspace.path();
        std::fs::create_dir(ws.join(".gyre")).unwrap();
        std::fs::write(
            ws.join(".mcp.json"),
            r#"{"mcpServers": {"a": {"command": "x"}}}"#,
        )
        .unwrap();
        std::fs::write(
            ws.join(".gyre/config.toml"),
            "model = \"m\"\n[mcp_servers.b]\ncommand = \"y\"\n",
        )
        .unwrap();
        assert!(!is_trusted(home.path(), ws));
        assert_eq!(trust(home.path(), ws), Ok(Recorded::New));
        assert!(is_trusted(home.path(), ws));
        assert_eq!(trust(home.path(), ws), Ok(Recorded::Unchanged));

        // Another key of the project config does not matter; its servers do.
        std::fs::write(
            ws.join(".gyre/config.toml"),
            "model = \"n\"\n[mcp_servers.b]\ncommand = \"y\"\n",
        )
        .unwrap();
        assert!(is_trusted(home.path(), ws));
        std::fs::write(
            ws.join(".gyre/config.local.toml"),
            "[mcp_servers.b]\ncommand = \"evil\"\n",
        )
        .unwrap();
        assert!(!is_trusted(home.path(), ws));
        assert_eq!(trust(home.path(), ws), Ok(Recorded::Changed));
        std::fs::write(
            ws.join(".mcp.json"),
            r#"{"mcpServers": {"a": {"command": "z"}}}"#,
        )
        .unwrap();
        assert!(!is_trusted(home.path(), ws));

        // A broken trust file trusts nothing.
        trust(home.path(), ws).unwrap();
        std::fs::write(home.path().join(FILE_NAME), "{oops").unwrap();
        assert!(!is_trusted(home.path(), ws));
    }

    #[test]
    fn only_untrusted_project_servers_are_held_back() {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let ws = workspace.path();
        let servers = vec![
            entry("mine", Path::new("/home/u/.config/gyre/config.toml")),
            entry("json", &ws.join(".mcp.json")),
            entry("toml", &ws.join(".gyre/config.local.toml")),
        ];
        let started = gate(&servers, ws, home.path(), ProjectMcp::Start);
        assert_eq!(started, servers);
        let gated = gate(&servers, ws, home.path(), ProjectMcp::NeedsTrust);
        assert_eq!(gated[0], servers[0]);
        for held in &gated[1..] {
            assert_eq!(held.config, Err(NOT_TRUSTED.to_string()));
        }
        trust(home.path(), ws).unwrap();
        assert_eq!(
            gate(&servers, ws, home.path(), ProjectMcp::NeedsTrust),
            servers
        );
    }
}
