//! The `stream_event` sequence of one streamed model answer under
//! `--include-partial-messages`, as the Anthropic Messages API streams it
//! and Claude Code forwards it: `message_start`, then per content block
//! `content_block_start` (with its `index`), its deltas and
//! `content_block_stop`, then `message_delta` (stop reason, output
//! tokens) and `message_stop`.
//!
//! gyre's events carry deltas, not blocks, so the blocks are inferred: a
//! block ends when a delta of another kind (or another tool call) begins.
//! A tool call's arguments arrive whole (`ToolCallReady`), so they are one
//! `input_json_delta`. One [`Answer`] lives per streaming run (the
//! top-level one and each running subagent), from its first delta or
//! `TurnStarted` to its `TurnCompleted`: state is a few integers.

use serde_json::{Value, json};

/// What kind of content block is open.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    ToolUse(String),
}

/// One streamed answer's open block and next index.
#[derive(Debug)]
pub(super) struct Answer {
    open: Option<(usize, Block)>,
    next_index: usize,
}

impl Answer {
    /// `message_start` of a new answer of `model`.
    pub(super) fn start(model: &str) -> (Answer, Value) {
        let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
        let event = json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }});
        (
            Answer {
                open: None,
                next_index: 0,
            },
            event,
        )
    }

    pub(super) fn text(&mut self, text: &str) -> Vec<Value> {
        let mut out = self.switch_to(Block::Text);
        out.push(self.delta(json!({"type": "text_delta", "text": text})));
        out
    }

    pub(super) fn thinking(&mut self, text: &str) -> Vec<Value> {
        let mut out = self.switch_to(Block::Thinking);
        out.push(self.delta(json!({"type": "thinking_delta", "thinking": text})));
        out
    }

    pub(super) fn tool_started(&mut self, id: &str, name: &str) -> Vec<Value> {
        let mut out = self.stop_block();
        out.push(self.begin(
            Block::ToolUse(id.to_string()),
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
        ));
        out
    }

    /// A call's whole arguments, in the block `tool_started` opened for it
    /// (or a new one, when no start was seen).
    pub(super) fn tool_ready(&mut self, id: &str, name: &str, arguments: &str) -> Vec<Value> {
        let mut out = Vec::new();
        if !matches!(&self.open, Some((_, Block::ToolUse(open))) if open == id) {
            out = self.tool_started(id, name);
        }
        out.push(self.delta(json!({"type": "input_json_delta", "partial_json": arguments})));
        out
    }

    /// The answer's end: the open block's stop, `message_delta`,
    /// `message_stop`.
    pub(super) fn finish(mut self, stop_reason: Option<Value>, output_tokens: u64) -> Vec<Value> {
        let mut out = self.stop_block();
        out.push(json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}}));
        out.push(json!({"type": "message_stop"}));
        out
    }

    fn switch_to(&mut self, block: Block) -> Vec<Value> {
        if matches!(&self.open, Some((_, open)) if *open == block) {
            return Vec::new();
        }
        let mut out = self.stop_block();
        let content_block = match block {
            Block::Text => json!({"type": "text", "text": ""}),
            Block::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
            Block::ToolUse(_) => json!({"type": "tool_use"}),
        };
        out.push(self.begin(block, content_block));
        out
    }

    fn begin(&mut self, block: Block, content_block: Value) -> Value {
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((index, block));
        json!({"type": "content_block_start", "index": index, "content_block": content_block})
    }

    fn delta(&self, delta: Value) -> Value {
        let index = self.open.as_ref().map_or(0, |(index, _)| *index);
        json!({"type": "content_block_delta", "index": index, "delta": delta})
    }

    fn stop_block(&mut self) -> Vec<Value> {
        match self.open.take() {
            Some((index, _)) => vec![json!({"type": "content_block_stop", "index": index})],
            None => Vec::new(),
        }
    }
}
