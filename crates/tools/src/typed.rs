//! Tools written against their argument type.
//!
//! A [`TypedTool`] names its argument struct; [`Typed`] turns it into a
//! [`Tool`]: the JSON schema is derived from the struct once, when the tool is
//! made, and the model's arguments are parsed into it before the tool runs, so
//! a tool body never sees malformed input and every tool reports bad arguments
//! the same way ([`parse_args`]).

use futures::future::BoxFuture;
use gyre_protocol::ToolSpec;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::diagnostics::FileUse;
use crate::{Tool, ToolContext, ToolError, ToolKind, ToolOutput, input_schema, parse_args};

/// A tool described by its name, its description and its argument type.
pub trait TypedTool: Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    type Args: DeserializeOwned + JsonSchema + Send;

    /// Whether this call may change the world (see [`Tool::kind`]).
    fn kind(&self, arguments: &Value) -> ToolKind;

    /// The file this call reads or changes, for the language servers
    /// ([`crate::DiagnosticsHook`]); `None` (the default): none.
    fn touches<'a>(&self, args: &'a Self::Args) -> Option<(&'a str, FileUse)> {
        let _ = args;
        None
    }

    /// Runs the tool with arguments already parsed.
    fn call<'a>(
        &'a self,
        args: Self::Args,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// A [`TypedTool`] usable as a [`Tool`].
#[derive(Debug)]
pub struct Typed<T> {
    spec: ToolSpec,
    tool: T,
}

impl<T: TypedTool> Typed<T> {
    pub fn new(tool: T) -> Self {
        Self {
            spec: ToolSpec {
                name: T::NAME.into(),
                description: T::DESCRIPTION.into(),
                input_schema: input_schema::<T::Args>(),
            },
            tool,
        }
    }

    pub fn inner(&self) -> &T {
        &self.tool
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self, arguments: &Value) -> ToolKind {
        self.tool.kind(arguments)
    }

    /// Arguments that parse into the argument type suit the tool: its schema
    /// is derived from that type.
    fn accepts(&self, arguments: &Value) -> Option<bool> {
        Some(parse_args::<T::Args>(T::NAME, arguments.clone()).is_ok())
    }

    fn run<'a>(
        &'a self,
        arguments: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match parse_args::<T::Args>(T::NAME, arguments) {
            Ok(args) => match self.tool.touches(&args) {
                Some((path, how)) if ctx.diagnostics.is_some() => {
                    let file = Some((path.to_owned(), how));
                    Box::pin(async move {
                        let result = self.tool.call(args, ctx).await;
                        crate::diagnostics::after_call(ctx, file, result).await
                    })
                }
                _ => self.tool.call(args, ctx),
            },
            Err(err) => Box::pin(std::future::ready(Err(err))),
        }
    }
}
