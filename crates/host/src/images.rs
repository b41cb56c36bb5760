//! Images that go with a prompt (`gyre run -i FILE`, repeatable): read,
//! checked and turned into image parts before the run starts.
//!
//! Invariants: a file that cannot be read, is not PNG, JPEG, GIF or WebP,
//! or is larger than [`MAX_IMAGE_BYTES`] is a usage error naming it (exit
//! 2) and nothing is sent; a model the catalogue knows to take no images
//! is refused by the loop, not here.

use std::path::Path;

use base64::Engine;
use gyre_protocol::{Part, image_media_type};

use crate::exit::Exit;

/// The largest image sent (the providers' limit is about 5 MB once
/// base64-encoded, as for `read`).
pub const MAX_IMAGE_BYTES: usize = 3_750_000;

/// The images at `paths` (relative ones under `cwd`), as image parts.
pub fn load(paths: &[std::path::PathBuf], cwd: &Path) -> Result<Vec<Part>, Exit> {
    paths
        .iter()
        .map(|path| load_one(&cwd.join(path), path))
        .collect()
}

fn load_one(path: &Path, given: &Path) -> Result<Part, Exit> {
    let shown = given.display();
    let bytes = std::fs::read(path)
        .map_err(|e| Exit::usage(format!("--image {shown}: cannot read it: {e}")))?;
    let media_type = image_media_type(&bytes).ok_or_else(|| {
        Exit::usage(format!(
            "--image {shown}: not a PNG, JPEG, GIF or WebP image"
        ))
    })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(Exit::usage(format!(
            "--image {shown}: {} bytes, more than the {MAX_IMAGE_BYTES} an image may have",
            bytes.len()
        )));
    }
    Ok(Part::Image {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}
