//! Images in a prompt typed here: `@shot.png` (a mention of an image file
//! of the workspace) and a pasted image path (a token that is an existing
//! image file's path, quoted or not) go with the prompt as image parts; the
//! text stays as typed, so the model sees which file each image is.
//!
//! Invariants: only files whose bytes are PNG, JPEG, GIF or WebP count
//! (by their magic, [`gyre_protocol::image_media_type`]); one that cannot be
//! read or is too large is left out with a warning, never an error that
//! loses the prompt; the same file is attached once. A model that takes no
//! images refuses them in the loop, which says so.

use std::path::{Path, PathBuf};

use base64::Engine;
use gyre_protocol::{Part, image_media_type};

use super::{App, Backend};
use crate::transcript::NoticeKind;

/// The largest image attached (as `gyre run -i`).
const MAX_IMAGE_BYTES: u64 = 3_750_000;

/// File name endings of the image formats models take.
const IMAGE_ENDINGS: [&str; 5] = [".png", ".jpg", ".jpeg", ".gif", ".webp"];

impl<B: Backend> App<B> {
    /// The image parts `text` mentions, with a warning for each that
    /// cannot be attached.
    pub(super) fn prompt_images(&mut self, text: &str) -> Vec<Part> {
        let root = self.backend.workspace().to_path_buf();
        let mut seen: Vec<PathBuf> = Vec::new();
        let mut parts = Vec::new();
        for path in image_paths(text, &root) {
            if seen.contains(&path) {
                continue;
            }
            match read_image(&path) {
                Ok(Some(part)) => parts.push(part),
                Ok(None) => {}
                Err(why) => self.notice(
                    NoticeKind::Warning,
                    format!("{} is not attached: {why}", path.display()),
                ),
            }
            seen.push(path);
        }
        parts
    }
}

/// Paths of `text`'s tokens that name an image file: `@path` (relative to
/// `root`) and absolute or `~/` paths as a terminal pastes them.
fn image_paths(text: &str, root: &Path) -> Vec<PathBuf> {
    text.split_whitespace()
        .filter_map(|token| {
            let token = token
                .trim_start_matches(['\'', '"', '('])
                .trim_end_matches(|c| {
                    matches!(c, '\'' | '"' | ')' | ',' | '.' | '?' | '!' | ';' | ':')
                });
            let lower = token.to_ascii_lowercase();
            if !IMAGE_ENDINGS.iter().any(|end| lower.ends_with(end)) {
                return None;
            }
            let path = if let Some(mention) = token.strip_prefix('@') {
                root.join(mention)
            } else if let Some(home) = token.strip_prefix("~/") {
                std::env::home_dir()?.join(home)
            } else if token.starts_with('/') {
                PathBuf::from(token)
            } else {
                return None;
            };
            path.is_file().then_some(path)
        })
        .collect()
}

/// The image at `path` as a part; `None` when it is not an image after all.
fn read_image(path: &Path) -> Result<Option<Part>, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_IMAGE_BYTES {
        return Err(format!("{len} bytes, more than {MAX_IMAGE_BYTES}"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    Ok(image_media_type(&bytes).map(|media_type| Part::Image {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_pasted_paths_of_existing_images_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.png"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let pasted = dir.path().join("a.png");
        let text = format!(
            "see @a.png and @missing.png and @notes.txt and '{}' and a.png",
            pasted.display()
        );
        let paths = image_paths(&text, dir.path());
        assert_eq!(paths, vec![dir.path().join("a.png"), pasted]);
    }
}
