//! The SDK's control requests and gyre's answers: `initialize`,
//! `interrupt`, `set_permission_mode`, `set_model`, `mcp_status`; any
//! other subtype gets an error answer naming it, never silence.
//!
//! The SDK's hook matchers become callback hooks of the session (set
//! before the first prompt, as `initialize` always is).
//!
//! A mode or model set before the first prompt applies to the session
//! from its start; set later, the live session's agent is rebuilt with it
//! (the next turn uses it; a running turn finishes as it began).

use gyre_core::{Abort, PermissionMode};
use serde_json::{Value, json};

use super::Driver;
use super::protocol::{self, Request};
use crate::headless::init_info;
use crate::output::CLAUDE_CODE_VERSION;

impl Driver {
    /// The answer line to the SDK's request `id`.
    pub(super) fn request(&mut self, id: &str, request: Request) -> Value {
        match self.answer(request) {
            Ok(response) => protocol::success(id, response),
            Err(why) => protocol::error(id, &why),
        }
    }

    fn answer(&mut self, request: Request) -> Result<Value, String> {
        match request {
            Request::Initialize { hooks, agents } => {
                if let Some(agents) = agents.as_ref().and_then(Value::as_object) {
                    for (name, definition) in agents {
                        match super::agents::profile(name, definition) {
                            Ok(profile) => self.settings.sdk_agents.push(profile),
                            Err(why) => eprintln!("gyre: warning: the SDK's agent {why}"),
                        }
                    }
                }
                if let Some(hooks) = &hooks {
                    let (config, unknown) = super::control::sdk_hooks(hooks);
                    if !unknown.is_empty() {
                        eprintln!(
                            "gyre: warning: the SDK's {} hooks are not run (gyre has no such events)",
                            unknown.join(", ")
                        );
                    }
                    for (event, matchers) in config {
                        self.settings
                            .hooks
                            .entry(event)
                            .or_default()
                            .extend(matchers);
                    }
                    self.settings.hook_callbacks = Some(std::sync::Arc::new(
                        super::control::SdkHooks(self.controller.clone()),
                    ));
                }
                let info = init_info(&self.settings);
                Ok(json!({
                    "commands": [], "agents": info.agents.iter()
                        .map(|name| json!({"name": name, "description": ""}))
                        .collect::<Vec<_>>(),
                    "output_style": "default", "available_output_styles": ["default"],
                    "models": [], "account": {"apiKeySource": info.api_key_source},
                    "pid": std::process::id(),
                    "claude_code_version": CLAUDE_CODE_VERSION,
                    "gyre_version": env!("CARGO_PKG_VERSION"),
                    "current_permission_mode": info.permission_mode,
                    "session_state": "idle",
                }))
            }
            Request::Interrupt => {
                if let Some(started) = &self.started {
                    started.live.abort(Abort::CurrentRun);
                }
                Ok(json!({}))
            }
            Request::SetPermissionMode { mode } => {
                let mode: PermissionMode = mode.parse()?;
                self.settings.permissions.mode = mode;
                self.rebuild(|config| config.permissions.mode = mode)?;
                Ok(json!({}))
            }
            Request::SetModel { model } => {
                let model = model.unwrap_or_else(|| self.settings.provider.model.clone());
                self.settings.provider.model = model.clone();
                self.rebuild(|config| config.model = model)?;
                Ok(json!({}))
            }
            Request::McpStatus => {
                let servers: Vec<Value> = init_info(&self.settings)
                    .mcp_servers
                    .iter()
                    .map(|(name, status)| json!({"name": name, "status": status}))
                    .collect();
                Ok(json!({"mcpServers": servers}))
            }
            Request::Unsupported { subtype } => {
                Err(format!("Unsupported control request subtype: {subtype}"))
            }
        }
    }

    /// The live session's agent, rebuilt with `adjust` (nothing to do
    /// before the session starts: the settings carry the change).
    fn rebuild(&mut self, adjust: impl FnOnce(&mut gyre_core::AgentConfig)) -> Result<(), String> {
        let Some(started) = &self.started else {
            return Ok(());
        };
        let name = self
            .settings
            .agent
            .clone()
            .unwrap_or_else(|| started.factory.default_agent().to_string());
        let (agent, _) = started
            .factory
            .agent_with(&name, adjust)
            .map_err(|e| e.to_string())?;
        started.live.set_agent(agent);
        Ok(())
    }
}
