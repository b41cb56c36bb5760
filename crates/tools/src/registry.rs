//! The set of tools offered to the model, in a stable order.
//!
//! Invariants: names are unique (registering a name again replaces the tool
//! in place, keeping its position); `specs()` and `names()` follow
//! registration order, so the tool list sent to the model is byte-identical
//! from one request to the next (prompt caching depends on it).
//!
//! Each tool's argument schema is compiled into a validator once, on its first
//! [`Registry::validate`], and kept with the tool (clones of the registry
//! share it). A schema the validator cannot compile is logged and that tool's
//! arguments go unchecked here; its own parsing still refuses bad input.

use std::sync::{Arc, OnceLock};

use gyre_protocol::ToolSpec;
use serde_json::Value;

use crate::{Tool, ToolError, Typed};

/// A registered tool and its lazily compiled argument validator.
#[derive(Clone)]
pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    validator: Arc<OnceLock<Option<jsonschema::Validator>>>,
}

impl Entry {
    pub(crate) fn new(tool: Arc<dyn Tool>) -> Self {
        Entry {
            tool,
            validator: Arc::new(OnceLock::new()),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.tool.spec().name
    }

    fn validator(&self) -> Option<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| {
                let spec = self.tool.spec();
                // The draft follows the schema's `$schema` (an MCP server
                // may send draft-07), else 2020-12, which ours are.
                match jsonschema::validator_for(&spec.input_schema) {
                    Ok(validator) => Some(validator),
                    Err(error) => {
                        tracing::warn!(
                            tool = %spec.name,
                            %error,
                            "the tool's input schema does not compile; its arguments are not validated"
                        );
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// Tools by name, in registration order.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Entry>,
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

    /// The built-in tools: read, write, edit, multi_edit, bash, bash_output,
    /// kill_shell, grep, glob, ls, todo_write, web_fetch.
    pub fn builtin() -> Self {
        let mut registry = Registry::new();
        registry.register(Arc::new(Typed::new(crate::ReadTool)));
        registry.register(Arc::new(Typed::new(crate::WriteTool)));
        registry.register(Arc::new(Typed::new(crate::EditTool)));
        registry.register(Arc::new(Typed::new(crate::MultiEditTool)));
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
        let entry = Entry::new(tool);
        match self.tools.iter().position(|t| t.name() == entry.name()) {
            Some(i) => self.tools[i] = entry,
            None => self.tools.push(entry),
        }
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entry(name).map(|e| e.tool.clone())
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.tools.iter().find(|e| e.name() == name)
    }

    /// Checks `arguments` against the input schema of the tool `name`, before
    /// it runs. The error names the tool, each offending field (up to three)
    /// and what was expected, e.g. ``invalid arguments for `read`:
    /// `limit` must be an integer, got "ten"``. An unknown tool is an error
    /// too; a tool whose schema does not compile passes unchecked. Members
    /// set to `null` count as not given. Arguments a tool [`Tool::accepts`]
    /// skip the schema (a validator is compiled only for a tool whose
    /// arguments were once wrong, or that cannot tell).
    pub fn validate(&self, name: &str, arguments: &Value) -> Result<(), ToolError> {
        let Some(entry) = self.entry(name) else {
            return Err(ToolError::InvalidArguments(format!(
                "there is no tool `{name}`; the tools are: {}",
                self.names().join(", ")
            )));
        };
        // The common case, arguments that parse, needs no schema validator.
        if entry.tool.accepts(arguments) == Some(true) {
            return Ok(());
        }
        let Some(validator) = entry.validator() else {
            return Ok(());
        };
        if validator.is_valid(arguments) {
            return Ok(());
        }
        // `null` for "not given" (see `schema`): fine if that is all.
        let mut without_nulls = arguments.clone();
        if crate::schema::drop_null_members(&mut without_nulls)
            && validator.is_valid(&without_nulls)
        {
            return Ok(());
        }
        Err(ToolError::invalid(
            name,
            crate::schema::describe_violations(validator.iter_errors(arguments)),
        ))
    }

    /// The specs of all tools, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|e| e.tool.spec().clone()).collect()
    }

    /// The names of all tools, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|e| e.name().to_owned()).collect()
    }

    /// These tools followed by the tools of `late` that `keep` accepts, in
    /// join order; a late tool whose name is already here is left out
    /// (the built-in one stays). Validators are shared with `late`.
    pub fn with_late(
        &self,
        late: &crate::LateSnapshot,
        mut keep: impl FnMut(&dyn Tool) -> bool,
    ) -> Registry {
        let mut registry = self.clone();
        for entry in late.entries() {
            if keep(entry.tool.as_ref()) && self.entry(entry.name()).is_none() {
                registry.tools.push(entry.clone());
            }
        }
        registry
    }

    /// Keeps only the tools whose name satisfies `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.tools.retain(|e| keep(e.name()));
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}
