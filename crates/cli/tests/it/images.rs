//! Images in the prompt: `gyre run -i FILE` (repeatable) and Claude's image
//! blocks on stream-json input reach each wire API as its image part; a
//! model the catalogue knows to take no images is refused with a sentence.

use base64::Engine;
use gyre_mock::MockServer;
use serde_json::Value;

use crate::common::*;

/// A PNG's signature and a little more: what gyre checks is the magic.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-test-image";

fn png_base64() -> String {
    base64::engine::general_purpose::STANDARD.encode(PNG)
}

fn env_with_image() -> Env {
    let env = Env::new();
    std::fs::write(env.path("shot.png"), PNG).unwrap();
    env
}

/// The first request of `gyre run -i shot.png` on `provider`.
async fn first_request(provider: &str) -> Value {
    let server = MockServer::start(always("a cat")).await.unwrap();
    let env = env_with_image();
    let mut cmd = env.gyre(&[
        "run",
        "what is this?",
        "-i",
        "shot.png",
        "--provider",
        provider,
        "--output-format",
        "json",
    ]);
    cmd.env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("GEMINI_API_KEY", "k")
        .env("GOOGLE_GEMINI_BASE_URL", server.gemini_base_url());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    server.requests()[0].body.clone()
}

#[tokio::test]
async fn an_image_file_is_an_image_part_on_every_api() {
    let data = png_base64();
    let anthropic = first_request("anthropic").await;
    let content = &anthropic["messages"][0]["content"];
    assert_eq!(content[0]["text"], "what is this?");
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[1]["source"]["type"], "base64");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    assert_eq!(content[1]["source"]["data"], data.as_str());

    let chat = first_request("openai").await;
    let said = chat["messages"].to_string();
    assert!(said.contains("\"image_url\""), "{said}");
    assert!(
        said.contains(&format!("data:image/png;base64,{data}")),
        "{said}"
    );

    let responses = first_request("openai-responses").await;
    let said = responses["input"].to_string();
    assert!(said.contains("\"input_image\""), "{said}");
    assert!(
        said.contains(&format!("data:image/png;base64,{data}")),
        "{said}"
    );

    let gemini = first_request("gemini").await;
    let said = gemini["contents"].to_string();
    assert!(said.contains("\"inlineData\""), "{said}");
    assert!(said.contains("\"mimeType\":\"image/png\""), "{said}");
    assert!(said.contains(&data), "{said}");
}

#[tokio::test]
async fn a_model_without_images_refuses_them_and_bad_files_are_usage_errors() {
    let server = MockServer::start(always("ok")).await.unwrap();
    let env = env_with_image();
    let mut cmd = env.gyre(&[
        "run",
        "look",
        "-i",
        "shot.png",
        "--provider",
        "openai",
        "--model",
        "o3-mini",
    ]);
    cmd.env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.openai_base_url());
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("the model o3-mini takes no images"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty(), "nothing was sent");

    std::fs::write(env.path("notes.txt"), "not an image").unwrap();
    let out = output(env.gyre_on(&server, &["run", "look", "--image", "notes.txt"])).await;
    assert_usage_error(
        &out,
        "--image notes.txt: not a PNG, JPEG, GIF or WebP image",
    );
    let out = output(env.gyre_on(&server, &["run", "look", "-i", "gone.png"])).await;
    assert_usage_error(&out, "--image gone.png: cannot read it");
}

#[tokio::test]
async fn stream_json_input_takes_claude_s_image_blocks() {
    let server = MockServer::start(always("a cat")).await.unwrap();
    let env = Env::new();
    let mut cmd = env.gyre_on(
        &server,
        &[
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ],
    );
    cmd.stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let line = serde_json::json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_base64()}}
        ]}});
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let content = &server.requests()[0].body["messages"][0]["content"];
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[1]["source"]["data"], png_base64().as_str());
}
