//! `--input-format stream-json`: one process, one session, many turns, as
//! the Claude Agent SDKs drive Claude Code (`ClaudeSDKClient`, and
//! `query()`, which always streams its input).
//!
//! stdin carries prompts and control requests one JSON object a line
//! (`protocol`, pure decoding and encoding) for as long as it is open;
//! stdout carries the stream-json lines of every turn, the answers to the
//! SDK's control requests, and gyre's own requests to the SDK
//! (`control`: `can_use_tool` with `--permission-prompt-tool stdio`).
//! Control answers may come before `system/init`, which is printed when the
//! first prompt starts the session.
//!
//! The driver is small: a reader task (stdin → decoded messages; the SDK's
//! answers go straight to the waiting request), a writer task (the only one
//! that touches stdout), and a loop over prompts, control requests and the
//! live session's updates. Prompts that come while a turn runs wait in the
//! session's queue. Every channel is bounded; a line longer than
//! [`MAX_LINE`] is refused (said on stderr) and skipped. When stdin closes,
//! the queued turns finish, then the process exits 0, as Claude Code does
//! (each turn's outcome is in its `result` line).

mod agents;
mod control;
mod protocol;
mod requests;
mod sdk_mcp;

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use gyre_core::{Approvals, LiveSession, Reader, RunRequest, Update};
use gyre_host::exit::{Exit, SUCCESS};
use gyre_host::{AgentFactory, Settings};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use crate::headless::init_info;
use crate::output::StreamJson;
use control::{Controller, SdkPrompt};
use protocol::Incoming;

/// The longest line read from stdin (a prompt with a pasted file is long;
/// a runaway writer is not let to grow memory without end).
const MAX_LINE: usize = 16 << 20;

/// The session once its first prompt started it.
struct Started {
    factory: AgentFactory,
    live: Arc<LiveSession>,
    reader: Reader,
    lines: StreamJson,
}

/// What the control requests may change, and the session they act on.
pub(crate) struct Driver {
    settings: Settings,
    started: Option<Started>,
    out: mpsc::Sender<Value>,
    controller: Arc<Controller>,
}

/// Runs the session until stdin closes and its last turn ends.
pub async fn run_stream(settings: &Settings, home: &Path) -> Result<i32, Exit> {
    let (out, out_rx) = mpsc::channel::<Value>(256);
    let writer = tokio::spawn(write_lines(out_rx));
    let controller = Arc::new(Controller::new(out.clone()));
    let (in_tx, mut in_rx) = mpsc::channel::<Incoming>(64);
    let reader = tokio::spawn(read_lines(in_tx, controller.clone()));
    let mut driver = Driver {
        settings: settings.clone(),
        started: None,
        out,
        controller,
    };

    let mut stdin_open = true;
    loop {
        let live = driver.started.as_ref().map(|s| s.live.clone());
        let next_update = async {
            match driver.started.as_mut() {
                Some(started) => Some(started.reader.next().await),
                None => std::future::pending().await,
            }
        };
        let idle = async {
            match live {
                Some(live) if !stdin_open => live.idle().await,
                None if !stdin_open => {}
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            incoming = in_rx.recv(), if stdin_open => match incoming {
                Some(Incoming::User { text, images }) => driver.prompt(home, text, images).await?,
                Some(Incoming::Request { id, request }) => {
                    let answer = driver.request(&id, request);
                    driver.send(answer).await;
                }
                Some(_) => {}
                None => stdin_open = false,
            },
            Some(update) = next_update => {
                if let Ok(numbered) = update {
                    driver.print(&numbered.update).await;
                }
            }
            () = idle => break,
        }
    }
    // Whatever the session said before going idle.
    if let Some(started) = driver.started.as_mut() {
        while let Some(Ok(numbered)) = started.reader.try_next() {
            let update = numbered.update.clone();
            let lines = print_lines(&mut started.lines, &update);
            for mut line in lines {
                if line["type"] == "result" {
                    let structured = driver.settings.output_schema.is_some();
                    crate::headless::with_structured(&mut line, structured);
                }
                let _ = driver.out.send(line).await;
            }
        }
        started.live.close().await;
    }
    reader.abort();
    // The end (other senders may outlive the session: an agent's prompt).
    driver.send(Value::Null).await;
    let _ = writer.await;
    Ok(SUCCESS)
}

impl Driver {
    async fn send(&self, line: Value) {
        // A closed stdout ends the writer; the reader's EOF ends the rest.
        let _ = self.out.send(line).await;
    }

    async fn print(&mut self, update: &Update) {
        let Some(started) = self.started.as_mut() else {
            return;
        };
        let structured = self.settings.output_schema.is_some();
        for mut line in print_lines(&mut started.lines, update) {
            if line["type"] == "result" {
                crate::headless::with_structured(&mut line, structured);
            }
            let _ = self.out.send(line).await;
        }
    }

    /// A prompt: the first starts the session, each runs as a turn (queued
    /// behind a running one).
    async fn prompt(
        &mut self,
        home: &Path,
        text: String,
        images: Vec<gyre_protocol::Part>,
    ) -> Result<(), Exit> {
        if self.started.is_none() {
            let approvals = if self.settings.permission_prompt_stdio {
                Approvals::Prompt(Arc::new(SdkPrompt(self.controller.clone())))
            } else {
                self.settings.approvals()
            };
            let (factory, agent, session) =
                self.settings.start_with(home, &text, approvals).await?;
            // The SDK's in-process MCP servers, before the first request.
            if let Some(late) = &agent.config().late_tools {
                for server in &self.settings.sdk_mcp_servers {
                    match sdk_mcp::connect(&self.controller, server).await {
                        Ok(tools) => {
                            late.add(server, tools);
                        }
                        Err(why) => {
                            eprintln!("gyre: the SDK's MCP server `{server}` failed: {why}")
                        }
                    }
                }
            }
            let live = LiveSession::new(agent, session);
            let lines = StreamJson::new(
                live.id().to_string(),
                self.settings.include_partial_messages,
            )
            .with_init(init_info(&self.settings))
            .with_pricing(self.settings.pricing);
            let reader = live.read_after(live.last_seq());
            self.started = Some(Started {
                factory,
                live,
                reader,
                lines,
            });
        }
        if let Some(started) = &self.started {
            started.live.submit(RunRequest {
                images,
                ..RunRequest::prompt(text)
            });
        }
        Ok(())
    }
}

fn print_lines(lines: &mut StreamJson, update: &Update) -> Vec<Value> {
    match update {
        Update::Event { event, .. } => lines.lines(event),
        Update::Status(_) => Vec::new(),
    }
}

/// stdin → decoded messages; answers to gyre's requests go straight to
/// the request waiting for them (a turn may be waiting on one).
async fn read_lines(to: mpsc::Sender<Incoming>, controller: Arc<Controller>) {
    let mut lines = FramedRead::new(
        tokio::io::stdin(),
        LinesCodec::new_with_max_length(MAX_LINE),
    );
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                eprintln!("gyre: a stdin line longer than {MAX_LINE} bytes was skipped");
                continue;
            }
            Err(LinesCodecError::Io(e)) => {
                eprintln!("gyre: cannot read stdin: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match protocol::decode(&line) {
            Ok(Incoming::Response { id, result }) => controller.answered(&id, result),
            Ok(incoming) => {
                if to.send(incoming).await.is_err() {
                    break;
                }
            }
            Err(why) => eprintln!("gyre: stdin: {why}"),
        }
    }
    controller.close();
}

/// The only writer of stdout: one JSON object a line, flushed each.
async fn write_lines(mut from: mpsc::Receiver<Value>) {
    let mut stdout = tokio::io::stdout();
    while let Some(line) = from.recv().await {
        if line.is_null() {
            return;
        }
        let mut text = line.to_string();
        text.push('\n');
        if stdout.write_all(text.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
            // The reader is gone; drain so senders never block.
            from.close();
            while from.recv().await.is_some() {}
            return;
        }
    }
}
