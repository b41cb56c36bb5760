//! Property tests of the decode path: any chunking of a valid stream, with
//! any of the three line endings, decodes to the same events as the whole
//! body; random bytes never panic and end in an error or a finished answer.

use bytes::Bytes;
use futures::StreamExt;
use gyre_llm::{ErrorKind, ModelEvent, ModelStream, decode_anthropic_sse, decode_openai_chat_sse};
use proptest::prelude::*;

type Outcome = (Vec<ModelEvent>, Option<(ErrorKind, String)>);

const ANTHROPIC: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"usage":{"input_tokens":9,"cache_read_input_tokens":100,"output_tokens":1}}}"#,
    "\n\n: comment\n\nevent: content_block_start\n",
    r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Ünïcode ✓ 🦀 thoughts"}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln+/=="}}"#,
    "\n\nevent: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":0}"#,
    "\n\nevent: ping\n",
    r#"data: {"type":"ping"}"#,
    "\n\nevent: content_block_start\n",
    r#"data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Line one\nline — two"}}"#,
    "\n\nevent: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":1}"#,
    "\n\nevent: content_block_start\n",
    r#"data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":"}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":" \"ä.rs\"}"}}"#,
    "\n\nevent: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":2}"#,
    "\n\nevent: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":77}}"#,
    "\n\nevent: message_stop\n",
    r#"data: {"type":"message_stop"}"#,
    "\n\n",
);

const OPENAI: &str = concat!(
    ": keep-alive\n\n",
    r#"data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Thïnk ✓"}}]}"#,
    "\n\n",
    r#"data: {"id":"c","choices":[{"index":0,"delta":{"content":"Réading 🦀"}}]}"#,
    "\n\n",
    r#"data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"file_"}}]}}]}"#,
    "\n\n",
    r#"data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"path\": \"a.rs\"}"}}]}}]}"#,
    "\n\n",
    r#"data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    "\n\n",
    r#"data: {"id":"c","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":10}}}"#,
    "\n\n",
    "data: [DONE]\n\n",
);

#[derive(Debug, Clone, Copy)]
enum Api {
    Anthropic,
    OpenAi,
}

fn decode(api: Api, chunks: Vec<Vec<u8>>) -> Outcome {
    let source = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::io::Error>(Bytes::from(c))),
    );
    let mut stream: ModelStream = match api {
        Api::Anthropic => decode_anthropic_sse(source),
        Api::OpenAi => decode_openai_chat_sse(source),
    };
    futures::executor::block_on(async {
        let mut events = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(event) => events.push(event),
                Err(error) => {
                    assert!(stream.next().await.is_none(), "an item followed an error");
                    return (events, Some((error.kind, error.message)));
                }
            }
        }
        (events, None)
    })
}

/// Cuts `bytes` into pieces whose sizes cycle through `sizes`.
fn split(bytes: &[u8], sizes: &[usize]) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + size).min(bytes.len());
        chunks.push(bytes[at..end].to_vec());
        at = end;
    }
    chunks
}

fn with_line_endings(text: &str, ending: usize) -> Vec<u8> {
    match ending {
        0 => text.to_owned(),
        1 => text.replace('\n', "\r\n"),
        _ => text.replace('\n', "\r"),
    }
    .into_bytes()
}

fn check_chunking(api: Api, transcript: &str, sizes: &[usize], ending: usize) {
    let expected = decode(api, vec![transcript.as_bytes().to_vec()]);
    assert_eq!(expected.1, None, "the reference decode failed");
    assert!(matches!(expected.0.last(), Some(ModelEvent::Finished(_))));
    let body = with_line_endings(transcript, ending);
    assert_eq!(decode(api, split(&body, sizes)), expected);
}

/// An outcome of bad input: it ends, in an error or a finished answer, and
/// nothing follows an error (checked in `decode`).
fn assert_clean_end(outcome: &Outcome) {
    let finished = matches!(outcome.0.last(), Some(ModelEvent::Finished(_)));
    assert!(outcome.1.is_some() || finished, "{outcome:?}");
}

/// Lines that look like SSE, with bits of JSON, for garbage near the format.
fn sse_ish_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(": c".to_owned()),
        Just("event: message_stop".to_owned()),
        Just("event: error".to_owned()),
        Just("data: [DONE]".to_owned()),
        Just(r#"data: {"type":"message_stop"}"#.to_owned()),
        Just(r#"data: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#.to_owned()),
        Just(r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#.to_owned()),
        Just(r#"error: {"message":"boom"}"#.to_owned()),
        "data: [ -~]{0,40}",
        "[a-z{}\":, ]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_chunking_of_an_anthropic_stream_decodes_the_same(
        sizes in prop::collection::vec(1usize..64, 1..24),
        ending in 0usize..3,
    ) {
        check_chunking(Api::Anthropic, ANTHROPIC, &sizes, ending);
    }

    #[test]
    fn any_chunking_of_an_openai_stream_decodes_the_same(
        sizes in prop::collection::vec(1usize..64, 1..24),
        ending in 0usize..3,
    ) {
        check_chunking(Api::OpenAi, OPENAI, &sizes, ending);
    }

    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        sizes in prop::collection::vec(1usize..128, 1..8),
    ) {
        for api in [Api::Anthropic, Api::OpenAi] {
            assert_clean_end(&decode(api, split(&bytes, &sizes)));
        }
    }

    #[test]
    fn sse_shaped_garbage_never_panics(
        lines in prop::collection::vec(sse_ish_line(), 0..24),
        sizes in prop::collection::vec(1usize..32, 1..8),
        ending in 0usize..3,
    ) {
        let body = with_line_endings(&lines.join("\n"), ending);
        for api in [Api::Anthropic, Api::OpenAi] {
            assert_clean_end(&decode(api, split(&body, &sizes)));
        }
    }
}
