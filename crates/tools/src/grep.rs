//! `grep`: search file contents with a regular expression (ripgrep's engine).
//!
//! Invariants: the walk honours ignore files and skips hidden, binary and
//! symlinked files (see `walk`); paths are shown relative to the workspace
//! root; the report stops growing at `head_limit` entries or at the output
//! byte limit, and then says so — the search itself stops there too, so a
//! huge tree costs no more than the answer needs.

use std::path::Path;

use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::truncate::{DEFAULT_MAX_BYTES, truncate_line};
use crate::walk::{Hidden, walker};
use crate::{ToolContext, ToolError, ToolKind, ToolOutput, TypedTool, Workspace};

const NAME: &str = "grep";
const MAX_LINE_CHARS: usize = 500;
/// A file whose single line needs more memory than this is skipped.
const HEAP_LIMIT: usize = 32 * 1024 * 1024;
const MAX_CONTEXT: usize = 20;

const DESCRIPTION: &str = "Search file contents with a regular expression (ripgrep syntax, \
e.g. `fn\\s+main`, `log.*Error`; escape braces and dots as needed). Searches the workspace root \
or `path`, honouring .gitignore and skipping hidden and binary files; filter files with `glob` \
(e.g. `*.rs`, `src/**/*.{ts,tsx}`). `output_mode`: `files_with_matches` (default, paths only), \
`content` (matching lines as `path:line:text`, with `context` lines around), or `count`. \
Use `head_limit` to see only the first entries.";

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
enum OutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// The regular expression to search for.
    pattern: String,
    /// File or directory to search (default: the workspace root).
    path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs`.
    glob: Option<String>,
    /// `files_with_matches` (default), `content` or `count`.
    output_mode: Option<OutputMode>,
    /// Ignore case (default false).
    #[serde(default)]
    case_insensitive: bool,
    /// Lines of context before and after each match (content mode).
    context: Option<usize>,
    /// Return only the first N lines or entries.
    head_limit: Option<usize>,
}

/// The `grep` tool.
#[derive(Debug, Default)]
pub struct GrepTool;

impl TypedTool for GrepTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = GrepArgs;

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: GrepArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let workspace = ctx.workspace.clone();
            crate::blocking(&ctx.cancel, move |cancel| grep(&workspace, &args, cancel)).await
        })
    }
}

fn grep(
    workspace: &Workspace,
    args: &GrepArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| ToolError::invalid(NAME, format!("invalid regex: {e}")))?;
    let given = args.path.as_deref().unwrap_or("");
    let root = workspace.resolve_read(given)?;
    if !root.exists() {
        return Err(ToolError::NotFound {
            path: given.to_owned(),
        });
    }
    let mut builder = walker(&root, Hidden::Skip);
    if let Some(glob) = args.glob.as_deref().filter(|g| !g.is_empty()) {
        let overrides = OverrideBuilder::new(&root)
            .add(glob)
            .and_then(|b| b.build())
            .map_err(|e| ToolError::invalid(NAME, format!("invalid glob `{glob}`: {e}")))?;
        builder.overrides(overrides);
    }
    let mode = args.output_mode.unwrap_or_default();
    let context = match mode {
        OutputMode::Content => args.context.unwrap_or(0).min(MAX_CONTEXT),
        _ => 0,
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .before_context(context)
        .after_context(context)
        .heap_limit(Some(HEAP_LIMIT))
        .build();
    let mut report = Report::new(mode, args.head_limit, context);

    for entry in builder.build() {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled {
                output: String::new(),
            });
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        search_file(
            &mut searcher,
            &matcher,
            entry.path(),
            workspace,
            &mut report,
        );
        if report.cut.is_some() {
            break;
        }
    }
    Ok(report.finish(&args.pattern))
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    workspace: &Workspace,
    report: &mut Report,
) {
    let mut sink = FileSink {
        display: workspace.relative(path),
        report,
        matches: 0,
    };
    // A file that cannot be read (permissions, vanished, too long a line) is
    // skipped like ripgrep does; the other files still count.
    let _ = searcher.search_path(matcher, path, &mut sink);
    let (display, matches) = (sink.display, sink.matches);
    if matches > 0 {
        report.files += 1;
        report.matches += matches;
        if report.mode == OutputMode::Count {
            report.push(format!("{display}:{matches}"));
        }
    }
}

/// Why the report stopped growing.
#[derive(Clone, Copy)]
enum Cut {
    HeadLimit(usize),
    Size,
}

/// The output being built, within its limits.
struct Report {
    mode: OutputMode,
    text: String,
    entries: usize,
    head_limit: Option<usize>,
    cut: Option<Cut>,
    files: usize,
    matches: u64,
    /// The file of the last content line, to separate files' context groups.
    last_file: Option<String>,
    /// Whether groups of different files are separated by `--` (with context).
    separate_files: bool,
}

impl Report {
    fn new(mode: OutputMode, head_limit: Option<usize>, context: usize) -> Self {
        Report {
            mode,
            text: String::new(),
            entries: 0,
            head_limit,
            cut: None,
            files: 0,
            matches: 0,
            last_file: None,
            separate_files: context > 0,
        }
    }

    /// Adds one entry; returns whether more may follow.
    fn push(&mut self, entry: String) -> bool {
        if self.cut.is_some() {
            return false;
        }
        if let Some(limit) = self.head_limit
            && self.entries >= limit
        {
            self.cut = Some(Cut::HeadLimit(limit));
            return false;
        }
        if self.text.len() + entry.len() + 1 > DEFAULT_MAX_BYTES {
            self.cut = Some(Cut::Size);
            return false;
        }
        self.text.push_str(&entry);
        self.text.push('\n');
        self.entries += 1;
        true
    }

    fn finish(self, pattern: &str) -> ToolOutput {
        let summary = match self.mode {
            OutputMode::FilesWithMatches => format!("{} files", self.files),
            _ => format!("{} matches in {} files", self.matches, self.files),
        };
        let title = format!(
            "grep {} ({summary})",
            crate::truncate::truncate_line(pattern, 60)
        );
        if self.entries == 0 && self.cut.is_none() {
            return ToolOutput::text(title, "No matches found.");
        }
        let mut text = self.text;
        match self.cut {
            None => {}
            Some(Cut::HeadLimit(limit)) => text.push_str(&format!(
                "[results cut at head_limit={limit}; more matches exist]\n"
            )),
            Some(Cut::Size) => text.push_str(&format!(
                "[output cut at {DEFAULT_MAX_BYTES} bytes after {} entries; narrow the search \
                 with path, glob or a more specific pattern]\n",
                self.entries
            )),
        }
        ToolOutput::text(title, text)
    }
}

/// Receives one file's matches.
struct FileSink<'r> {
    display: String,
    report: &'r mut Report,
    matches: u64,
}

impl FileSink<'_> {
    fn line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) -> bool {
        if self.report.last_file.as_deref() != Some(self.display.as_str()) {
            if self.report.last_file.is_some()
                && self.report.separate_files
                && !self.report.push("--".into())
            {
                return false;
            }
            self.report.last_file = Some(self.display.clone());
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = truncate_line(text, MAX_LINE_CHARS);
        let number = number.unwrap_or(0);
        self.report.push(format!(
            "{}{separator}{number}{separator}{text}",
            self.display
        ))
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        match self.report.mode {
            OutputMode::FilesWithMatches => {
                let display = self.display.clone();
                self.report.push(display);
                // One match is enough to list the file.
                Ok(false)
            }
            OutputMode::Count => Ok(true),
            OutputMode::Content => Ok(self.line(':', mat.line_number(), mat.bytes())),
        }
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        Ok(self.line('-', ctx.line_number(), ctx.bytes()))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        Ok(self.report.push("--".into()))
    }
}
