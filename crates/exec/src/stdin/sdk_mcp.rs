//! The Agent SDK's in-process MCP servers (`create_sdk_mcp_server`;
//! `--mcp-config` servers of `"type": "sdk"`): their JSON-RPC messages go
//! over the control protocol as `mcp_message` requests, and their tools
//! join the session's tools as `mcp__SERVER__TOOL`, as any MCP server's.
//!
//! Connected before the first turn, so the first request offers them; a
//! server that fails to answer is said on stderr and the session goes on
//! without it.

use std::sync::Arc;

use futures::future::BoxFuture;
use gyre_protocol::{Outcome, ToolResultContent, ToolSpec};
use gyre_tools::{Tool, ToolContext, ToolError, ToolKind, ToolOutput};
use serde_json::{Value, json};

use super::control::Controller;

/// One JSON-RPC exchange with the SDK's server `server`; the result, or
/// the error said in one sentence.
async fn exchange(controller: &Controller, server: &str, message: Value) -> Result<Value, String> {
    let response = controller
        .ask(json!({"subtype": "mcp_message", "server_name": server, "message": message}))
        .await?;
    let reply = response.get("mcp_response").cloned().unwrap_or(Value::Null);
    if let Some(error) = reply.get("error") {
        return Err(format!(
            "the SDK's MCP server `{server}` answered an error: {error}"
        ));
    }
    Ok(reply.get("result").cloned().unwrap_or(Value::Null))
}

/// Initializes the SDK's server `server` and lists its tools.
pub async fn connect(
    controller: &Arc<Controller>,
    server: &str,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    exchange(
        controller,
        server,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "gyre", "version": env!("CARGO_PKG_VERSION")}}}),
    )
    .await?;
    exchange(
        controller,
        server,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;
    let listed = exchange(
        controller,
        server,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await?;
    let tools = listed
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(tools
        .iter()
        .filter_map(|tool| {
            let name = tool.get("name")?.as_str()?.to_string();
            let read_only = tool
                .get("annotations")
                .and_then(|a| a.get("readOnlyHint"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Some(Arc::new(SdkTool {
                spec: ToolSpec {
                    name: format!("mcp__{server}__{name}"),
                    description: tool
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    input_schema: tool
                        .get("inputSchema")
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object"})),
                },
                server: server.to_string(),
                tool: name,
                read_only,
                controller: controller.clone(),
            }) as Arc<dyn Tool>)
        })
        .collect())
}

/// A tool of an SDK server, called with `tools/call`.
struct SdkTool {
    spec: ToolSpec,
    server: String,
    tool: String,
    read_only: bool,
    controller: Arc<Controller>,
}

impl Tool for SdkTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        if self.read_only {
            ToolKind::ReadOnly
        } else {
            ToolKind::Mutating
        }
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let call = exchange(
                &self.controller,
                &self.server,
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": self.tool, "arguments": arguments}}),
            );
            let result = tokio::select! {
                result = call => result.map_err(ToolError::Failed)?,
                () = ctx.cancel.cancelled() => {
                    return Err(ToolError::Cancelled { output: String::new() });
                }
            };
            let text: Vec<&str> = result
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("text").and_then(Value::as_str))
                .collect();
            let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
            Ok(ToolOutput {
                content: vec![ToolResultContent::Text {
                    text: text.join("\n"),
                }],
                title: format!("{} (SDK server {})", self.tool, self.server),
                outcome: if is_error {
                    Outcome::Error
                } else {
                    Outcome::Success
                },
            })
        })
    }
}
