//! JSON-RPC 2.0 messages framed as LSP frames them: a `Content-Length`
//! header, a blank line, then that many bytes of JSON.
//!
//! Invariants: a frame larger than [`MAX_FRAME`] is refused (a server gone
//! wrong must not make gyre allocate without bound); other headers
//! (`Content-Type`) are read and ignored.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest message read: a workspace's diagnostics fit many times over.
pub const MAX_FRAME: usize = 64 * 1024 * 1024;

/// Reads one message; `Ok(None)` at the end of the stream.
pub async fn read<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<Value>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let header = line.trim_end();
        if header.is_empty() {
            if length.is_some() {
                break;
            }
            continue;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.unwrap_or_default();
    if length > MAX_FRAME {
        return Err(std::io::Error::other(format!(
            "a message of {length} bytes, more than the {MAX_FRAME} accepted"
        )));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| std::io::Error::other(format!("a message that is not JSON: {e}")))
}

/// Writes one message and flushes it.
pub async fn write<W: AsyncWrite + Unpin>(writer: &mut W, message: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    writer.write_all(&frame).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_extra_headers_are_ignored() {
        let mut buffer = Vec::new();
        write(&mut buffer, &serde_json::json!({"jsonrpc": "2.0", "id": 1}))
            .await
            .unwrap();
        let mut input = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n".to_vec();
        input.extend_from_slice(&buffer);
        let mut reader = tokio::io::BufReader::new(&input[..]);
        let message = read(&mut reader).await.unwrap().unwrap();
        assert_eq!(message["id"], 1);
        assert!(read(&mut reader).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn an_oversized_frame_is_refused() {
        let input = format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 1);
        let mut reader = tokio::io::BufReader::new(input.as_bytes());
        assert!(read(&mut reader).await.is_err());
    }
}
