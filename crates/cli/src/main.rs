//! The `gyre` command: clap, dispatch, and the small commands.
//!
//! Start-up is kept minimal: arguments are parsed (and `--version` answered)
//! before any runtime, file or network is touched. Each command builds only
//! what it needs.
//!
//! This crate holds no frontend's logic (as codex-rs's `cli`): the clap
//! structs ([`args`]) become `gyre_host::Flags`, and each frontend is a
//! crate of its own: `gyre-exec` (`run`, `-p`), `gyre-tui` (`gyre`
//! alone), `gyre-serve`, `gyre-acp`, `gyre-mcp-server`. Here are only the
//! commands too small for a crate: `sessions`, `agents`, `skills`, `mcp list`,
//! `mcp trust`, `debug decode-stream`, `demo`, `mock-server`, and the
//! sandbox helper's entry point.

mod agents;
mod args;
mod decode_stream;
mod demo;
mod mcp_list;
mod mcp_trust;
mod sessions;
mod skills;

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use clap::Parser;

use gyre_host::{Exit, Settings, home, runtime};

use crate::args::{Cli, Command, DebugCommand, McpCommand, RunArgs};

fn main() -> ExitCode {
    // The sandbox helper (`gyre __sandbox-exec …`) starts before every
    // sandboxed command: it skips clap, and everything else, entirely.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == gyre_sandbox::SUBCOMMAND)
    {
        let rest: Vec<std::ffi::OsString> = std::env::args_os().skip(2).collect();
        let code = gyre_sandbox::helper_main(&rest);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let cli = Cli::parse();
    let code = match dispatch(cli) {
        Ok(code) => code,
        Err(exit) => {
            eprintln!("gyre: {}", exit.message);
            exit.code
        }
    };
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn dispatch(cli: Cli) -> Result<i32, Exit> {
    match cli.command {
        Some(Command::Run { prompt, args }) => headless(prompt, &args),
        Some(Command::Init { focus, args }) => {
            let prompt = format!("/init {}", focus.unwrap_or_default());
            headless(prompt.trim_end().to_string(), &args)
        }
        Some(Command::Agents) => agents::run(),
        Some(Command::Skills) => skills::run(),
        Some(Command::Demo { dir }) => {
            let home = home::gyre_home()?;
            home::init_logging(&home);
            runtime()?.block_on(demo::run(dir, &home))
        }
        Some(Command::Sessions { command }) => {
            let home = home::gyre_home()?;
            home::init_logging(&home);
            runtime()?.block_on(sessions::run(command, &home))
        }
        Some(Command::Acp { args }) => {
            let home = home::gyre_home()?;
            home::init_logging(&home);
            runtime()?.block_on(gyre_acp::run(&home, args.to_flags()))
        }
        Some(Command::McpServer { args }) => {
            let home = home::gyre_home()?;
            home::init_logging(&home);
            runtime()?.block_on(gyre_mcp_server::run(&home, args.to_flags()))
        }
        Some(Command::Serve {
            port,
            host,
            token_env,
            args,
        }) => gyre_serve::run(gyre_serve::Options {
            port,
            host,
            token_env,
            flags: args.to_flags(),
        }),
        Some(Command::MockServer { port, script }) => mock_server(port, script),
        Some(Command::Mcp {
            command: McpCommand::List,
        }) => runtime()?.block_on(mcp_list::run()),
        Some(Command::Mcp {
            command: McpCommand::Trust,
        }) => mcp_trust::run(),
        Some(Command::Debug {
            command: DebugCommand::DecodeStream { provider, input },
        }) => {
            let api = provider.parse().map_err(Exit::usage)?;
            runtime()?.block_on(decode_stream::run(api, input))
        }
        None => top_level(cli),
    }
}

/// `gyre` without a subcommand: `-p` (with the prompt as its value or,
/// as Claude Code writes it, as the argument), the Agent SDKs' streaming
/// input, or the terminal UI.
fn top_level(cli: Cli) -> Result<i32, Exit> {
    let streaming = cli.run.claude.input_format == Some(args::InputFormat::StreamJson);
    match (cli.print, cli.prompt) {
        // With or without `-p`: prompts and control requests on stdin.
        _ if streaming => stream_session(&cli.run),
        (Some(value), Some(prompt)) if value.is_empty() => headless(prompt, &cli.run),
        (Some(value), Some(_)) => Err(Exit::usage(format!(
            "two prompts: `{value}` (after -p) and another; give one"
        ))),
        // `-p` alone: the prompt is on stdin, as `echo … | claude -p`.
        (Some(value), None) if value.is_empty() => {
            if std::io::stdin().is_terminal() {
                return Err(Exit::usage("the prompt is empty: say what gyre should do"));
            }
            headless("-".to_string(), &cli.run)
        }
        (Some(value), None) => headless(value, &cli.run),
        (None, Some(_)) => Err(Exit::usage(
            "a prompt without -p: the terminal UI starts without one; run `gyre -p PROMPT` for a headless run",
        )),
        (None, None) => gyre_tui::host::main(&cli.run.to_flags()),
    }
}

fn headless(prompt: String, args: &RunArgs) -> Result<i32, Exit> {
    let prompt = if prompt == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Exit::usage(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        prompt
    };
    if prompt.trim().is_empty() {
        return Err(Exit::usage("the prompt is empty: say what gyre should do"));
    }
    let flags = args.to_flags();
    let settings = Settings::resolve(&flags)?;
    let home = home::gyre_home()?;
    home::init_logging(&home);
    let images = gyre_host::images::load(&args.images, &settings.workspace)?;
    runtime()?.block_on(async move {
        // `/name args` of a custom command (or `/init`) is expanded first.
        let (settings, prompt) = gyre_host::commands::apply(&flags, settings, prompt).await?;
        gyre_exec::run(&settings, &home, prompt, images).await
    })
}

/// `--input-format stream-json` (with or without `-p`): prompts and control
/// requests on stdin, as the Agent SDKs drive Claude Code.
fn stream_session(args: &RunArgs) -> Result<i32, Exit> {
    let settings = Settings::resolve(&args.to_flags())?;
    if settings.output_format != gyre_host::OutputFormat::StreamJson {
        return Err(Exit::usage(
            "--input-format stream-json needs --output-format stream-json",
        ));
    }
    let home = home::gyre_home()?;
    home::init_logging(&home);
    runtime()?.block_on(gyre_exec::run_stream(&settings, &home))
}

fn mock_server(port: u16, script: Option<std::path::PathBuf>) -> Result<i32, Exit> {
    runtime()?.block_on(async move {
        let script = match script {
            Some(path) => gyre_mock::Script::from_file(&path)
                .await
                .map_err(|e| Exit::usage(e.to_string()))?,
            None => demo::script(),
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let server = gyre_mock::MockServer::start_on(addr, script)
            .await
            .map_err(|e| Exit::failure(format!("cannot listen on {addr}: {e}")))?;
        eprintln!(
            "gyre mock-server on {} (Anthropic: ANTHROPIC_BASE_URL={}, OpenAI: OPENAI_BASE_URL={}); Ctrl-C stops it",
            server.url(),
            server.anthropic_base_url(),
            server.openai_base_url()
        );
        server
            .run_until_ctrl_c()
            .await
            .map_err(|e| Exit::failure(format!("cannot wait for Ctrl-C: {e}")))?;
        Ok(0)
    })
}
