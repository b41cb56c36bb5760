//! An ACP prompt (content blocks) as the text of a gyre prompt.
//!
//! Invariants: text blocks are kept as written, in order; a resource link
//! becomes a Markdown link the model can follow with its tools (a
//! `file://` link names a path); an embedded resource's text follows in a
//! `<context>` block naming its URI. Content gyre did not advertise
//! (images, audio, binary resources) is named, not dropped silently, so the
//! model knows something was left out.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

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
            ContentBlock::Image(_) => text.push_str("[an image, not included]"),
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
            {"type": "resource", "resource": {"uri": "file:///w/a.bin", "blob": "AAAA"}}
        ]));
        assert_eq!(
            prompt_text(&prompt),
            "[an image, not included][binary resource file:///w/a.bin not included]"
        );
    }
}
