//! The set of tools offered to the model, in a stable order.
//!
//! Invariants: names are unique (registering a name again replaces the tool
//! in place, keeping its position); `specs()` and `names()` follow
//! registration order, so the tool list sent to the model is byte-identical
//! from one request to the next (prompt caching depends on it).

use std::sync::Arc;

use gyre_protocol::ToolSpec;

use crate::{Tool, Typed};

/// Tools by name, in registration order.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// The built-in tools: read, write, edit, bash, bash_output, kill_shell,
    /// grep, glob, ls, todo_write, web_fetch.
    pub fn builtin() -> Self {
        let mut registry = Registry::new();
        registry.register(Arc::new(Typed::new(crate::ReadTool)));
        registry.register(Arc::new(Typed::new(crate::WriteTool)));
        registry.register(Arc::new(Typed::new(crate::EditTool)));
        // multi_edit goes here, right after edit.
        registry.register(Arc::new(Typed::new(crate::BashTool::new())));
        registry.register(Arc::new(Typed::new(crate::BashOutputTool)));
        registry.register(Arc::new(Typed::new(crate::KillShellTool)));
        registry.register(Arc::new(Typed::new(crate::GrepTool)));
        registry.register(Arc::new(Typed::new(crate::GlobTool)));
        registry.register(Arc::new(Typed::new(crate::LsTool)));
        registry.register(Arc::new(Typed::new(crate::TodoWriteTool)));
        registry.register(Arc::new(Typed::new(crate::WebFetchTool::new())));
        registry
    }

    /// Adds `tool`; a tool of the same name is replaced where it stands.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = &tool.spec().name;
        match self.tools.iter().position(|t| &t.spec().name == name) {
            Some(i) => self.tools[i] = tool,
            None => self.tools.push(tool),
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name).cloned()
    }

    /// The specs of all tools, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec().clone()).collect()
    }

    /// The names of all tools, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name.clone()).collect()
    }

    /// Keeps only the tools whose name satisfies `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|t| keep(&t.spec().name));
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
