//! One client per wire API against a test server's URL, with a dummy key.

use gyre_llm::{
    AnthropicClient, ClientConfig, GeminiClient, ModelClient, OpenAiChatClient,
    OpenAiResponsesClient,
};

pub fn anthropic(url: String) -> Box<dyn ModelClient> {
    Box::new(AnthropicClient::new(ClientConfig::new(
        url,
        Some("k".into()),
    )))
}

pub fn chat(url: String) -> Box<dyn ModelClient> {
    Box::new(OpenAiChatClient::new(ClientConfig::new(
        url,
        Some("k".into()),
    )))
}

pub fn responses(url: String) -> Box<dyn ModelClient> {
    Box::new(OpenAiResponsesClient::new(ClientConfig::new(
        url,
        Some("k".into()),
    )))
}

pub fn gemini(url: String) -> Box<dyn ModelClient> {
    Box::new(GeminiClient::new(ClientConfig::new(url, Some("k".into()))))
}
