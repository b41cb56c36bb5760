//! Which language servers exist: `[lsp.NAME]` tables over built-in
//! defaults, and the `[diagnostics]` settings of the wait after an edit.
//!
//! Invariants: a server whose command is not found (on `PATH`, or at the
//! path given) is left out without a word, so a machine without a server
//! behaves as before. For each file extension the first server that has it
//! serves it: configured servers (in name order) before the defaults, so a
//! table of one's own takes a language over. A table named like a default
//! changes only the keys it gives.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// `[lsp.NAME]`: one language server, started over stdio.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The program (looked up on `PATH` unless it holds a `/`).
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// File extensions it serves, without the dot (`py`, `rs`).
    pub extensions: Option<Vec<String>>,
    /// Files or directories that mark a project's root (`Cargo.toml`); the
    /// nearest directory above a file holding one is the server's root,
    /// else the workspace.
    pub root_markers: Option<Vec<String>>,
    /// Sent as `initializationOptions` in `initialize`.
    pub initialization_options: Option<serde_json::Value>,
    /// `false`: never started (turns a default off).
    pub enabled: Option<bool>,
}

/// `[diagnostics]`: what is waited for and shown after a change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticsConfig {
    /// `false`: no language server is started (default true).
    pub enabled: Option<bool>,
    /// How long an edit waits for its file's diagnostics (default 1500).
    pub wait_ms: Option<u64>,
    /// Whether warnings are shown too (default false: errors only).
    pub warnings: Option<bool>,
    /// The most diagnostics shown per file (default 20).
    pub max_shown: Option<usize>,
    /// Restarts of a server that exited before it is given up (default 3).
    pub max_restarts: Option<u32>,
}

/// The settings in force, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    pub wait: Duration,
    pub warnings: bool,
    pub max_shown: usize,
    pub max_restarts: u32,
}

impl From<&DiagnosticsConfig> for Settings {
    fn from(config: &DiagnosticsConfig) -> Self {
        Settings {
            wait: Duration::from_millis(config.wait_ms.unwrap_or(1500)),
            warnings: config.warnings.unwrap_or(false),
            max_shown: config.max_shown.unwrap_or(20).max(1),
            max_restarts: config.max_restarts.unwrap_or(3),
        }
    }
}

/// A server ready to be started: its command found.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub extensions: Vec<String>,
    pub root_markers: Vec<String>,
    pub initialization_options: Option<serde_json::Value>,
}

/// The built-in servers: (name, command, args, extensions, root markers).
/// basedpyright comes before pyright: where both are installed, the fork.
type DefaultServer = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);
/// Where a Python project starts, for both pyright servers.
const PYTHON_ROOTS: &[&str] = &[
    "pyproject.toml",
    "pyrightconfig.json",
    "setup.py",
    "setup.cfg",
];
const DEFAULTS: &[DefaultServer] = &[
    (
        "rust-analyzer",
        "rust-analyzer",
        &[],
        &["rs"],
        &["Cargo.toml"],
    ),
    ("gopls", "gopls", &[], &["go"], &["go.mod", "go.work"]),
    (
        "basedpyright",
        "basedpyright-langserver",
        &["--stdio"],
        &["py", "pyi"],
        PYTHON_ROOTS,
    ),
    (
        "pyright",
        "pyright-langserver",
        &["--stdio"],
        &["py", "pyi"],
        PYTHON_ROOTS,
    ),
    (
        "typescript",
        "typescript-language-server",
        &["--stdio"],
        &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    ),
    (
        "clangd",
        "clangd",
        &[],
        &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
        &["compile_commands.json", "compile_flags.txt", ".clangd"],
    ),
];

/// The servers that can start, in the order they are chosen: configured
/// ones first, then the defaults not configured; those whose command is
/// missing or that are turned off are left out. `workspace` resolves a
/// relative command path.
pub fn servers(configured: &BTreeMap<String, ServerConfig>, workspace: &Path) -> Vec<Server> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let defaults = DEFAULTS.iter().map(|(name, command, args, ext, roots)| {
        let config = ServerConfig {
            command: Some((*command).to_owned()),
            args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
            extensions: Some(ext.iter().map(|e| (*e).to_owned()).collect()),
            root_markers: Some(roots.iter().map(|r| (*r).to_owned()).collect()),
            initialization_options: None,
            enabled: None,
        };
        ((*name).to_owned(), config)
    });
    let defaults: BTreeMap<String, ServerConfig> = defaults.collect();
    let mut order: Vec<(String, ServerConfig)> = Vec::new();
    for (name, own) in configured {
        let base = defaults.get(name).cloned().unwrap_or_default();
        order.push((name.clone(), overlay(base, own.clone())));
    }
    for (name, ..) in DEFAULTS {
        if !configured.contains_key(*name)
            && let Some(config) = defaults.get(*name)
        {
            order.push(((*name).to_owned(), config.clone()));
        }
    }
    order
        .into_iter()
        .filter(|(_, c)| c.enabled != Some(false))
        .filter_map(|(name, config)| {
            let program = find_program(config.command.as_deref()?, &path, workspace)?;
            Some(Server {
                name,
                program,
                args: config.args.unwrap_or_default(),
                extensions: config.extensions.unwrap_or_default(),
                root_markers: config.root_markers.unwrap_or_default(),
                initialization_options: config.initialization_options,
            })
        })
        .collect()
}

fn overlay(base: ServerConfig, own: ServerConfig) -> ServerConfig {
    ServerConfig {
        command: own.command.or(base.command),
        args: own.args.or(base.args),
        extensions: own.extensions.or(base.extensions),
        root_markers: own.root_markers.or(base.root_markers),
        initialization_options: own.initialization_options.or(base.initialization_options),
        enabled: own.enabled.or(base.enabled),
    }
}

/// The executable `command` names, if there is one.
fn find_program(command: &str, path: &std::ffi::OsStr, workspace: &Path) -> Option<PathBuf> {
    let is_executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let candidate = workspace.join(command);
        return is_executable(&candidate).then_some(candidate);
    }
    std::env::split_paths(path)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_command_is_left_out_and_a_table_overlays_its_default() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("fake-ls");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut configured = BTreeMap::new();
        configured.insert(
            "pyright".to_owned(),
            ServerConfig {
                command: Some(script.display().to_string()),
                ..ServerConfig::default()
            },
        );
        configured.insert(
            "nowhere".to_owned(),
            ServerConfig {
                command: Some("gyre-no-such-language-server".into()),
                extensions: Some(vec!["zz".into()]),
                ..ServerConfig::default()
            },
        );
        let servers = servers(&configured, dir.path());
        let pyright = servers.iter().find(|s| s.name == "pyright").unwrap();
        assert_eq!(pyright.program, script);
        assert_eq!(pyright.args, ["--stdio"]);
        assert_eq!(pyright.extensions, ["py", "pyi"]);
        assert!(servers.iter().all(|s| s.name != "nowhere"));
        assert_eq!(servers[0].name, "pyright", "configured servers come first");
    }
}
