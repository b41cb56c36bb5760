//! Provider-side web search (`[web_search]`): the setting, and the searches
//! and sources a stream reports, rendered for the user.
//!
//! The search runs on the provider's servers (Anthropic's `web_search` server
//! tool, OpenAI Responses' `web_search` tool, Gemini's `google_search`
//! grounding), so it never becomes a [`gyre_protocol::ToolCall`]: the loop
//! has nothing to run. What it found reaches the user as one text part after
//! the answer ("Searched: …", then the cited sources), built only from the
//! decoded stream, so the history holds the same bytes on every replay.
//!
//! Trade-off: the provider's own search blocks (Anthropic's
//! `server_tool_use` / `web_search_tool_result` with their encrypted
//! content) are not kept in the history, as gyre's parts have no opaque
//! provider block; the next request carries the answer and the sources as
//! text, which the APIs accept.

/// Web search as the request asks for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WebSearch {
    /// The most searches per request (Anthropic `max_uses`); `None`: the
    /// provider's default. The other APIs have no such limit.
    pub max_uses: Option<u32>,
}

/// Searches made and sources cited in one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct Found {
    queries: Vec<String>,
    /// `(url, title)`, in first-cited order, without repeats.
    sources: Vec<(String, String)>,
}

/// A bound on what one answer may list, against a runaway stream.
const MAX_ITEMS: usize = 64;

impl Found {
    pub(crate) fn query(&mut self, query: &str) {
        let query = query.trim();
        if !query.is_empty()
            && self.queries.len() < MAX_ITEMS
            && !self.queries.iter().any(|q| q == query)
        {
            self.queries.push(query.to_owned());
        }
    }

    pub(crate) fn source(&mut self, url: &str, title: &str) {
        let url = url.trim();
        if !url.is_empty()
            && self.sources.len() < MAX_ITEMS
            && !self.sources.iter().any(|(u, _)| u == url)
        {
            self.sources.push((url.to_owned(), title.trim().to_owned()));
        }
    }

    /// A Responses `web_search_call`'s action (`{"type": "search",
    /// "query": …}`).
    pub(crate) fn responses_action(&mut self, action: Option<&serde_json::Value>) {
        let query = action.and_then(|a| a.get("query"));
        if let Some(query) = query.and_then(serde_json::Value::as_str) {
            self.query(query);
        }
    }

    /// A Responses output text's annotation: a `url_citation` is a source.
    pub(crate) fn responses_annotation(&mut self, annotation: &serde_json::Value) {
        let field = |name| annotation.get(name).and_then(serde_json::Value::as_str);
        if field("type") == Some("url_citation")
            && let Some(url) = field("url")
        {
            self.source(url, field("title").unwrap_or_default());
        }
    }

    /// The text shown after the answer; `None` when nothing was searched
    /// or cited. Starts with a blank line, so it reads apart from the answer.
    pub(crate) fn render(&self) -> Option<String> {
        if self.queries.is_empty() && self.sources.is_empty() {
            return None;
        }
        let mut text = String::from("\n\n");
        if !self.queries.is_empty() {
            text.push_str("Searched the web: ");
            let quoted: Vec<String> = self.queries.iter().map(|q| format!("\"{q}\"")).collect();
            text.push_str(&quoted.join(", "));
            text.push('\n');
        }
        if !self.sources.is_empty() {
            text.push_str("Sources:\n");
            for (url, title) in &self.sources {
                if title.is_empty() {
                    text.push_str(&format!("- {url}\n"));
                } else {
                    text.push_str(&format!("- {title}: {url}\n"));
                }
            }
        }
        Some(text)
    }

    /// Pushes the rendered text as a delta and a completed text part.
    pub(crate) fn emit(&mut self, out: &mut std::collections::VecDeque<crate::ModelEvent>) {
        if let Some(text) = self.render() {
            out.push_back(crate::ModelEvent::TextDelta(text.clone()));
            out.push_back(crate::ModelEvent::PartCompleted(
                gyre_protocol::Part::Text { text },
            ));
        }
        *self = Found::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_queries_and_sources_once_each() {
        let mut found = Found::default();
        assert_eq!(found.render(), None);
        found.query("rust 1.95");
        found.query("rust 1.95");
        found.source("https://a.example/", "A");
        found.source("https://a.example/", "A again");
        found.source("https://b.example/", "");
        assert_eq!(
            found.render().unwrap(),
            "\n\nSearched the web: \"rust 1.95\"\nSources:\n- A: https://a.example/\n- https://b.example/\n"
        );
    }
}
