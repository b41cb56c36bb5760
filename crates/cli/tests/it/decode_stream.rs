//! `gyre debug decode-stream` on recorded provider responses, one fixture
//! per quirk, and the exit code and `retry` lines of a headless run whose
//! retries run out.
//!
//! Fixtures live in `tests/fixtures/streams/`: `<provider>-<quirk>.sse` (an
//! event-stream body) or `.http` (a whole HTTP response, decoded with
//! `--input http`), each next to `<same name>.jsonl`, the lines the command
//! must print. The provider is the name's prefix (`openai-responses-` before
//! `openai-`). Expected lines are compared as JSON values, exactly, except
//! for two kinds of string:
//! - `"~words"` matches any string containing `words` (error messages are
//!   ours to word; the provider's own words must be quoted);
//! - `"$id:NAME"` matches a non-empty string that is the same for every use
//!   of NAME in the fixture and differs from every other NAME's (ids gyre
//!   makes up at random must be unique).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use gyre_mock::{HttpReply, MockServer, Reply, Script, Step};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::common::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/streams");

struct Fixture {
    name: String,
    path: PathBuf,
    provider: &'static str,
    input: &'static str,
}

impl Fixture {
    fn expected(&self) -> Vec<Value> {
        let path = self.path.with_file_name(format!("{}.jsonl", self.name));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: no expected output ({e})", self.name));
        text.lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{}.jsonl: not JSON ({e}): {line}", self.name))
            })
            .collect()
    }

    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }
}

/// Every fixture, by name; fails when there are none, and when a fixture and
/// its expected output do not come in pairs.
fn fixtures() -> Vec<Fixture> {
    let mut names: Vec<String> = std::fs::read_dir(FIXTURES)
        .unwrap_or_else(|e| panic!("cannot read {FIXTURES}: {e}"))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in &names {
        if let Some(stem) = name.strip_suffix(".jsonl") {
            assert!(
                names.iter().any(|n| n == stem),
                "{name} has no fixture `{stem}` beside it"
            );
            continue;
        }
        let input = if name.ends_with(".sse") {
            "sse"
        } else if name.ends_with(".http") {
            "http"
        } else {
            let known = name == "README.md" || name == ".gitattributes";
            assert!(known, "a stray file among the fixtures: {name}");
            continue;
        };
        let provider = ["openai-responses", "openai", "anthropic", "gemini"]
            .into_iter()
            .find(|p| name.starts_with(&format!("{p}-")))
            .unwrap_or_else(|| panic!("{name}: the name does not start with a provider"));
        assert!(
            names.contains(&format!("{name}.jsonl")),
            "{name} has no expected output {name}.jsonl"
        );
        out.push(Fixture {
            name: name.clone(),
            path: Path::new(FIXTURES).join(name),
            provider,
            input,
        });
    }
    assert!(!out.is_empty(), "no fixtures in {FIXTURES}");
    out
}

/// How stdin is written.
#[derive(Clone, Copy)]
enum Feed {
    AllAtOnce,
    /// Three bytes at a time, with a short pause after each write.
    Trickle,
}

async fn decode(provider: &str, input: &str, bytes: Vec<u8>, feed: Feed) -> Output {
    let mut child = Command::new(GYRE)
        .args([
            "debug",
            "decode-stream",
            "--provider",
            provider,
            "--input",
            input,
        ])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        match feed {
            Feed::AllAtOnce => {
                // The child may exit before reading everything (bad usage).
                let _ = stdin.write_all(&bytes).await;
            }
            Feed::Trickle => {
                for piece in bytes.chunks(3) {
                    if stdin.write_all(piece).await.is_err() {
                        break;
                    }
                    let _ = stdin.flush().await;
                    tokio::time::sleep(Duration::from_micros(300)).await;
                }
            }
        }
    });
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("decode-stream did not finish within 30 s")
        .unwrap();
    writer.await.unwrap();
    out
}

/// Whether `actual` matches `expected` (see the module doc); `ids` binds the
/// `$id:` names.
fn matches(expected: &Value, actual: &Value, ids: &mut BTreeMap<String, String>) -> bool {
    match (expected, actual) {
        (Value::String(e), Value::String(a)) => {
            if let Some(words) = e.strip_prefix('~') {
                return a.contains(words);
            }
            if let Some(name) = e.strip_prefix("$id:") {
                if a.is_empty() {
                    return false;
                }
                if let Some(bound) = ids.get(name) {
                    return bound == a;
                }
                if ids.values().any(|other| other == a) {
                    return false;
                }
                ids.insert(name.to_owned(), a.clone());
                return true;
            }
            e == a
        }
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, ev)| a.get(k).is_some_and(|av| matches(ev, av, ids)))
        }
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(ev, av)| matches(ev, av, ids))
        }
        _ => expected == actual,
    }
}

/// `None` when the output is as expected, else what differs.
fn compare(fixture: &Fixture, out: &Output) -> Option<String> {
    let mut problems = Vec::new();
    if out.status.code() != Some(0) {
        problems.push(format!(
            "exit code {:?}, stderr: {}",
            out.status.code(),
            stderr(out)
        ));
    }
    let expected = fixture.expected();
    let actual: Vec<Result<Value, String>> = stdout(out)
        .lines()
        .map(|line| serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line}")))
        .collect();
    let mut ids = BTreeMap::new();
    for i in 0..expected.len().max(actual.len()) {
        match (expected.get(i), actual.get(i)) {
            (Some(e), Some(Ok(a))) if matches(e, a, &mut ids) => {}
            (e, a) => problems.push(format!(
                "line {}: expected {}, got {}",
                i + 1,
                e.map_or("nothing".into(), Value::to_string),
                match a {
                    None => "nothing".into(),
                    Some(Ok(a)) => a.to_string(),
                    Some(Err(e)) => e.clone(),
                }
            )),
        }
    }
    (!problems.is_empty()).then(|| {
        format!(
            "{} (--provider {} --input {}):\n  {}",
            fixture.name,
            fixture.provider,
            fixture.input,
            problems.join("\n  ")
        )
    })
}

#[tokio::test]
async fn every_fixture_decodes_to_its_expected_lines() {
    let fixtures = fixtures();
    let mut runs = tokio::task::JoinSet::new();
    for (i, fixture) in fixtures.iter().enumerate() {
        let (provider, input, bytes) = (fixture.provider, fixture.input, fixture.bytes());
        runs.spawn(async move { (i, decode(provider, input, bytes, Feed::AllAtOnce).await) });
    }
    let mut failures = Vec::new();
    while let Some(done) = runs.join_next().await {
        let (i, out) = done.unwrap();
        if let Some(problem) = compare(&fixtures[i], &out) {
            failures.push(problem);
        }
    }
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures decoded differently:\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn stdin_trickling_in_gives_the_same_output_as_all_at_once() {
    for name in [
        "gemini-bare-error-after-last-event.sse",
        "anthropic-chunked-200.http",
    ] {
        let fixture = fixtures()
            .into_iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no fixture {name}"));
        let (provider, input) = (fixture.provider, fixture.input);
        let whole = decode(provider, input, fixture.bytes(), Feed::AllAtOnce).await;
        let trickled = decode(provider, input, fixture.bytes(), Feed::Trickle).await;
        assert_eq!(
            trickled.status.code(),
            Some(0),
            "{name}: {}",
            stderr(&trickled)
        );
        assert_eq!(stdout(&trickled), stdout(&whole), "{name}");
        assert!(!stdout(&whole).is_empty(), "{name}");
        assert_eq!(compare(&fixture, &trickled), None);
    }
}

#[tokio::test]
async fn an_unknown_provider_is_bad_usage() {
    let out = decode("nonesuch", "sse", b"data: {}\n\n".to_vec(), Feed::AllAtOnce).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("nonesuch"), "names what was given: {err}");
    assert!(
        err.contains("anthropic") && err.contains("openai-responses") && err.contains("gemini"),
        "names what is accepted: {err}"
    );
}

#[tokio::test]
async fn garbage_as_an_http_response_is_bad_usage() {
    for garbage in [
        &b"this is not an HTTP response"[..],
        b"garbage\r\n\r\ndata: {}\n\n",
        b"",
    ] {
        let out = decode("anthropic", "http", garbage.to_vec(), Feed::AllAtOnce).await;
        let shown = String::from_utf8_lossy(garbage);
        assert_eq!(out.status.code(), Some(2), "{shown:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{shown:?}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains("HTTP"), "{shown:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err:?}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[tokio::test]
async fn a_run_whose_retries_run_out_reports_each_retry_and_exits_1() {
    let script = Script {
        context_window: None,
        steps: vec![Step {
            reply: Reply::Http(HttpReply {
                status: 500,
                ..HttpReply::default()
            }),
            ..Step::default()
        }],
    };
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    env.write_user_config("[retry]\nmax_retries = 2\ninitial_delay_ms = 10\nmax_delay_ms = 20\n");
    let out =
        output(env.gyre_on(&server, &["run", "hello", "--output-format", "stream-json"])).await;

    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let lines = json_lines(&out);
    let retries: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "system" && l["subtype"] == "retry")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(retries.len(), 2, "one per retry: {lines:#?}");
    for (n, &i) in retries.iter().enumerate() {
        assert_eq!(lines[i]["attempt"], n as u64 + 1, "{}", lines[i]);
        assert_eq!(lines[i]["reason"], "server_error", "{}", lines[i]);
        assert!(lines[i]["delay_ms"].as_u64().unwrap() <= 20, "{}", lines[i]);
    }
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result", "the result line comes last");
    assert_eq!(result["is_error"], true, "{result}");
    assert!(retries.iter().all(|&i| i < lines.len() - 1));
    assert_eq!(server.requests().len(), 3, "1 attempt + max_retries (2)");
}
