//! `read`: a window of a text file, with line numbers; or an image, for a
//! model that takes images.
//!
//! Invariants: the file is streamed, so memory stays bounded whatever its size
//! (a line is kept up to a cap, the output up to [`MAX_OUTPUT_BYTES`]); binary
//! files are refused after sniffing their first bytes, except PNG, JPEG, GIF
//! and WebP images (known by their magic bytes), which come back as an image
//! part of at most [`MAX_IMAGE_BYTES`] when the model takes images; every line
//! shown is numbered as `{n:>6}\t{line}` so that `edit` can be aimed
//! precisely; a partial window says how to read on (`offset`).
//!
//! Every file read is recorded in the session's [`crate::FileTracker`] with
//! its stamp (from before the read) and the hash of the bytes read, so that
//! `write` and `edit` can tell whether it changed since. A read of any window
//! counts as a read of the file.
//!
//! Trade-off: the whole file is scanned to report its line count (and hash
//! it), which costs one sequential read of a large file but tells the model
//! where it stands.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use base64::Engine;
use futures::future::BoxFuture;
use gyre_protocol::{Outcome, ToolResultContent};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::files::{ContentHasher, FileStamp};
use crate::{FileTracker, ImageSupport, ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

const NAME: &str = "read";
const DEFAULT_LIMIT: usize = 2_000;
const MAX_LINE_CHARS: usize = 2_000;
/// Larger than the general tool output limit: reading code is the commonest
/// call, and paging through a file costs a model turn per page.
const MAX_OUTPUT_BYTES: usize = 50_000;
const SNIFF_BYTES: usize = 8 * 1024;
/// The largest image returned: its base64 form stays within the 5 MB per
/// image that providers accept.
const MAX_IMAGE_BYTES: u64 = 3_750_000;

const DESCRIPTION: &str = "Read a text file. Returns lines numbered as `<line number><TAB><text>` \
(the number and tab are not part of the file). By default up to 2000 lines from the start; \
use `offset` (1-based line) and `limit` to read a window of a long file. Lines over 2000 \
characters are cut. PNG, JPEG, GIF and WebP images are shown as images when the model takes \
them; other binary files are refused; for a directory use `ls`. Read a file before editing or \
overwriting it.";

#[derive(Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Path of the file, absolute or relative to the workspace root.
    file_path: String,
    /// 1-based line number to start from (default 1).
    offset: Option<usize>,
    /// Maximum number of lines to return (default 2000).
    limit: Option<usize>,
}

/// The `read` tool.
#[derive(Debug, Default)]
pub struct ReadTool;

impl TypedTool for ReadTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ReadArgs;

    fn touches<'a>(&self, args: &'a Self::Args) -> Option<(&'a str, crate::FileUse)> {
        Some((&args.file_path, crate::FileUse::Read))
    }

    fn kind(&self, _arguments: &Value) -> ToolKind {
        ToolKind::ReadOnly
    }

    fn call<'a>(
        &'a self,
        args: ReadArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if args.limit == Some(0) {
                return Err(ToolError::invalid(NAME, "limit must be at least 1"));
            }
            if let Some(fs) = &ctx.fs
                && crate::workspace_fs::reads_text(&args.file_path)
            {
                let (path, offset, limit) = (&args.file_path, args.offset, args.limit);
                return crate::workspace_fs::read(fs.as_ref(), ctx, path, offset, limit).await;
            }
            let workspace = ctx.workspace.clone();
            let session = ctx.session.clone();
            let images = ctx.images;
            crate::blocking(&ctx.cancel, move |cancel| {
                let target = Target {
                    workspace: &workspace,
                    files: &session.files,
                    images,
                };
                read(&target, &args, cancel)
            })
            .await
        })
    }
}

/// The lines chosen for display and the scan's totals.
struct Window {
    first: usize,
    /// The last line in the window (inclusive) and the last line shown; they
    /// differ when the output budget ran out first.
    last_wanted: usize,
    last_shown: usize,
    total_lines: usize,
    text: String,
    /// Hash of every byte scanned (the whole file).
    content_hash: u64,
}

/// Where and for whom `read` reads.
struct Target<'a> {
    workspace: &'a crate::Workspace,
    files: &'a FileTracker,
    images: ImageSupport,
}

fn read(
    target: &Target<'_>,
    args: &ReadArgs,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let workspace = target.workspace;
    let path = workspace.resolve_read(&args.file_path)?;
    let shown = workspace.relative(&path);
    let metadata = std::fs::metadata(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound {
            path: args.file_path.clone(),
        },
        _ => ToolError::io(&args.file_path, e),
    })?;
    if metadata.is_dir() {
        return Err(ToolError::IsADirectory {
            path: args.file_path.clone(),
        });
    }
    if !metadata.is_file() {
        // A FIFO or device would block or never end.
        return Err(ToolError::Failed(format!(
            "`{shown}` is not a regular file (a pipe, socket or device); read only reads files"
        )));
    }
    let file = File::open(&path).map_err(|e| ToolError::io(&args.file_path, e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let sniff = reader
        .fill_buf()
        .map_err(|e| ToolError::io(&args.file_path, e))?;
    if let Some(media_type) = image_type(sniff) {
        let stamp = FileStamp::of(&metadata);
        return read_image(target, &path, &shown, media_type, stamp, reader);
    }
    if content_inspector::inspect(&sniff[..sniff.len().min(SNIFF_BYTES)]).is_binary() {
        return Err(ToolError::Binary {
            path: args.file_path.clone(),
        });
    }

    let first = args.offset.unwrap_or(1).max(1);
    let last_wanted = first.saturating_add(args.limit.unwrap_or(DEFAULT_LIMIT)) - 1;
    let window = scan(&mut reader, first, last_wanted, cancel)
        .map_err(|e| ToolError::io(&args.file_path, e))?;
    target
        .files
        .record(&path, FileStamp::of(&metadata), Some(window.content_hash));

    if window.total_lines == 0 {
        return Ok(ToolOutput::text(
            format!("read {shown} (empty)"),
            "(the file is empty)",
        ));
    }
    if first > window.total_lines {
        return Err(ToolError::invalid(
            NAME,
            format!(
                "offset {first} is past the end of `{shown}`, which has {} lines",
                window.total_lines
            ),
        ));
    }
    let mut text = window.text;
    if window.last_shown < window.total_lines {
        let why = if window.last_shown < window.last_wanted.min(window.total_lines) {
            " (output size limit reached)"
        } else {
            ""
        };
        text.push_str(&format!(
            "\n[showing lines {}-{} of {}{why}; call read with offset={} to continue]",
            window.first,
            window.last_shown,
            window.total_lines,
            window.last_shown + 1
        ));
    }
    Ok(ToolOutput::text(
        format!(
            "read {shown} (lines {}-{} of {})",
            window.first, window.last_shown, window.total_lines
        ),
        text,
    ))
}

/// The media type of an image format models take, by its magic bytes.
fn image_type(head: &[u8]) -> Option<&'static str> {
    gyre_protocol::image_media_type(head)
}

/// The image at `path` as an image part, if the model takes images and it is
/// small enough.
fn read_image(
    target: &Target<'_>,
    path: &std::path::Path,
    shown: &str,
    media_type: &str,
    stamp: FileStamp,
    reader: BufReader<File>,
) -> Result<ToolOutput, ToolError> {
    if target.images == ImageSupport::NotAccepted {
        return Err(ToolError::Failed(format!(
            "`{shown}` is an image ({media_type}), and the current model does not take images, \
             so read cannot show it; describe what you need from it to the user instead"
        )));
    }
    if stamp.len > MAX_IMAGE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{shown}` is an image ({media_type}) of {} bytes, more than read returns \
             ({MAX_IMAGE_BYTES} bytes); make a smaller copy with a command in bash and read that",
            stamp.len
        )));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(stamp.len).unwrap_or(0));
    // One byte more than the cap tells a file that grew since its stamp.
    reader
        .take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(shown, e))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(ToolError::Failed(format!(
            "`{shown}` grew past {MAX_IMAGE_BYTES} bytes while it was read; read it again"
        )));
    }
    target
        .files
        .record(path, stamp, Some(ContentHasher::of(&bytes)));
    let size = bytes.len();
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolOutput {
        content: vec![
            ToolResultContent::Text {
                text: format!("image {shown} ({media_type}, {size} bytes)"),
            },
            ToolResultContent::Image {
                media_type: media_type.to_owned(),
                data,
            },
        ],
        title: format!("read {shown} ({media_type}, {size} bytes)"),
        outcome: Outcome::Success,
    })
}

/// Streams the file once: formats lines `first..=last_wanted` (within the
/// output budget) and counts all lines.
fn scan(
    reader: &mut impl BufRead,
    first: usize,
    last_wanted: usize,
    cancel: &CancellationToken,
) -> std::io::Result<Window> {
    let line_cap_bytes = MAX_LINE_CHARS * 4;
    let mut window = Window {
        first,
        last_wanted,
        last_shown: 0,
        total_lines: 0,
        text: String::new(),
        content_hash: 0,
    };
    let mut hasher = ContentHasher::new();
    let mut budget_spent = false;
    let mut line: Vec<u8> = Vec::new();
    let mut line_cut = false;
    let mut line_open = false;
    loop {
        if cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let number = window.total_lines + 1;
        let wanted = !budget_spent && number >= first && number <= last_wanted;
        if !wanted {
            // Only counting: whole buffers at a time.
            let newlines = buf.iter().filter(|&&b| b == b'\n').count();
            let crosses_into_window = !budget_spent
                && number < first
                && window.total_lines + newlines >= first.saturating_sub(1)
                && newlines > 0;
            if !crosses_into_window {
                window.total_lines += newlines;
                line_open = buf.last() != Some(&b'\n');
                let len = buf.len();
                hasher.update(buf);
                reader.consume(len);
                continue;
            }
        }
        let (end, newline) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        if wanted {
            let room = line_cap_bytes.saturating_sub(line.len());
            line.extend_from_slice(&buf[..end.min(room)]);
            line_cut |= end > room;
        }
        hasher.update(&buf[..end + usize::from(newline)]);
        reader.consume(end + usize::from(newline));
        line_open = !newline;
        if newline {
            window.total_lines += 1;
            if wanted {
                budget_spent = !push_line(&mut window, number, &line, line_cut);
            }
            line.clear();
            line_cut = false;
        }
    }
    window.content_hash = hasher.finish();
    if line_open {
        window.total_lines += 1;
        let number = window.total_lines;
        if !budget_spent && number >= first && number <= last_wanted {
            push_line(&mut window, number, &line, line_cut);
        }
    }
    Ok(window)
}

/// Appends one numbered line unless it would exceed the output budget;
/// returns whether it was appended.
fn push_line(window: &mut Window, number: usize, raw: &[u8], cut_bytes: bool) -> bool {
    let decoded = String::from_utf8_lossy(raw);
    let text = decoded.strip_suffix('\r').unwrap_or(&decoded);
    let (text, cut) = match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => (&text[..i], true),
        None => (text, cut_bytes),
    };
    let marker = if cut {
        " [... line cut at 2000 characters]"
    } else {
        ""
    };
    let entry = format!("{number:>6}\t{text}{marker}\n");
    if window.text.len() + entry.len() > MAX_OUTPUT_BYTES && window.last_shown > 0 {
        return false;
    }
    window.text.push_str(&entry);
    window.last_shown = number;
    true
}

#[cfg(test)]
mod tests {
    use super::image_type;

    #[test]
    fn images_are_known_by_their_magic_bytes() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_type(&[0xff, 0xd8, 0xff, 0xe0]), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF87a.."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(image_type(b"\x89PNG\0\0"), None);
        assert_eq!(image_type(b""), None);
    }
}
