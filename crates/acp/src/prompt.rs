//! An ACP prompt (content blocks) as the text of a gyre prompt.
//!
//! Invariants: text blocks are kept as written, in order; a resource link
//! becomes a Markdown link the model can follow with its tools (a
//! `file://` link names a path); an embedded resource's text follows in a
//! `<context>` block naming its URI; images of the kinds the providers take
//! (PNG, JPEG, GIF, WebP) come as image parts after the text
//! ([`prompt_images`]). Content gyre did not advertise (audio, binary
//! resources, other images) is named, not dropped silently, so the model
//! knows something was left out.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use gyre_protocol::Part;

/// The image types every provider takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

fn sent_as_image(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Image(image) if IMAGE_TYPES.contains(&image.mime_type.as_str()))
}

/// The images of `blocks` as parts of the prompt, in order.
pub fn prompt_images(blocks: &[ContentBlock]) -> Vec<Part> {
    blocks
        .iter()
        .filter(|b| sent_as_image(b))
        .filter_map(|b| match b {
            ContentBlock::Image(image) => Some(Part::Image {
                media_type: image.mime_type.clone(),
                data: image.data.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The prompt text of `blocks`.
pub fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut text = String::new();
    let mut context = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                let target = link.uri.strip_prefix("file://").unwrap_or(&link.uri);
                text.push_str(&format!("[{}]({target})", link.name));
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => {
                    let uri = resource
                        .uri
                        .strip_prefix("file://")
                        .unwrap_or(&resource.uri);
                    context.push_str(&format!(
                        "\n\n<context ref=\"{uri}\">\n{}\n</context>",
                        resource.text
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(resource) => {
                    text.push_str(&format!("[binary resource {} not included]", resource.uri));
                }
                _ => text.push_str("[a resource of an unknown kind, not included]"),
            },
            block if sent_as_image(block) => {}
            ContentBlock::Image(image) => text.push_str(&format!(
                "[an image of type {}, not included]",
                image.mime_type
            )),
            ContentBlock::Audio(_) => text.push_str("[audio, not included]"),
            _ => text.push_str("[content of an unknown kind, not included]"),
        }
    }
    text.push_str(&context);
    text
}

#[cfg(test)]
mod tests {

    use super::*;
    use serde_json::json;

    fn blocks(value: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_links_and_embedded_context_make_one_prompt() {
        let prompt = blocks(json!([
            {"type": "text", "text": "Explain "},
            {"type": "resource_link", "name": "main.rs", "uri": "file:///w/src/main.rs"},
            {"type": "resource", "resource": {"uri": "file:///w/notes.md", "text": "be brief"}},
            {"type": "text", "text": " please"}
        ]));
        assert_eq!(
            prompt_text(&prompt),
            "Explain [main.rs](/w/src/main.rs) please\n\n<context ref=\"/w/notes.md\">\nbe brief\n</context>"
        );
    }

    #[test]
    fn unadvertised_content_is_named() {
        let prompt = blocks(json!([
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "image", "data": "AAAA", "mimeType": "image/tiff"},
            {"type": "resource", "resource": {"uri": "file:///w/a.bin", "blob": "AAAA"}}
        ]));
        assert_eq!(
            prompt_text(&prompt),
            "[an image of type image/tiff, not included][binary resource file:///w/a.bin not included]"
        );
        assert_eq!(
            prompt_images(&prompt),
            [Part::Image {
                media_type: "image/png".into(),
                data: "AAAA".into()
            }]
        );
    }
}
