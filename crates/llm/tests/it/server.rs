//! A tiny scripted HTTP/1.1 server on 127.0.0.1:0: every connection gets the
//! same scripted response, and every request is recorded.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// One step of a scripted response.
#[derive(Clone)]
pub enum Step {
    Write(Vec<u8>),
    /// Keep the connection open and send nothing more.
    Stall,
    /// Wait, then go on with the script.
    Pause(std::time::Duration),
}

/// A request as the server saw it.
#[derive(Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct Server {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    requests: mpsc::UnboundedReceiver<Recorded>,
}

impl Server {
    pub async fn start(script: Vec<Step>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (sender, requests) = mpsc::unbounded_channel();
        let script = Arc::new(script);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let script = Arc::clone(&script);
                let sender = sender.clone();
                tokio::spawn(async move { serve(socket, &script, sender).await });
            }
        });
        Server { url, requests }
    }

    /// The next recorded request (waits for it).
    pub async fn request(&mut self) -> Recorded {
        self.requests.recv().await.unwrap()
    }

    /// Requests recorded so far, without waiting.
    pub fn recorded_now(&mut self) -> usize {
        let mut n = 0;
        while self.requests.try_recv().is_ok() {
            n += 1;
        }
        n
    }
}

async fn serve(mut socket: TcpStream, script: &[Step], sender: mpsc::UnboundedSender<Recorded>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let _ = sender.send(request);
    for step in script {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(bytes).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
            }
            Step::Stall => std::future::pending::<()>().await,
            Step::Pause(wait) => tokio::time::sleep(*wait).await,
        }
    }
    // Dropping the socket closes the connection.
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at;
        }
        assert!(buffer.len() < 1 << 20, "request headers too large");
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[header_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A complete `text/event-stream` response, chunked, one chunk per event.
pub fn sse_response(transcript: &str) -> Vec<Step> {
    let mut steps = vec![sse_head()];
    for event in transcript.split_inclusive("\n\n") {
        steps.push(Step::Write(http_chunk(event.as_bytes())));
    }
    steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
    steps
}

/// The head of a chunked event-stream response.
pub fn sse_head() -> Step {
    Step::Write(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec(),
    )
}

/// One chunk in chunked transfer encoding.
pub fn http_chunk(bytes: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    out
}

/// A complete response with a body and extra headers.
pub fn response(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<Step> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    vec![Step::Write(head.into_bytes())]
}

/// A complete `text/event-stream` response whose body is cut into HTTP chunks
/// of `size` bytes (0: one chunk), regardless of event boundaries.
pub fn sse_chunked(transcript: &str, size: usize) -> Vec<Step> {
    let bytes = transcript.as_bytes();
    sse_in_chunks(bytes, if size == 0 { bytes.len() } else { size })
}

/// A `text/event-stream` response whose body is `body` cut into chunks of
/// `size` bytes (each written, and flushed, separately).
pub fn sse_in_chunks(body: &[u8], size: usize) -> Vec<Step> {
    let mut steps = vec![sse_head()];
    for piece in body.chunks(size.max(1)) {
        steps.push(Step::Write(http_chunk(piece)));
    }
    steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
    steps
}
