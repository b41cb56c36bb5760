//! Usage and provider errors: one clear line on stderr, the right exit code,
//! never a panic or a backtrace.

use gyre_mock::{HttpReply, MockServer, Reply, Script, Step};
use serde_json::json;

use crate::common::*;

fn assert_one_clean_line(err: &str) {
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("gyre: "), "{err:?}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace") && !err.contains("RUST_"),
        "{err:?}"
    );
}

/// Waits before retries are one line each ("gyre: WHAT; retry N in S s"),
/// then the one line that ends the run.
fn assert_retries_then_one_clean_line(err: &str) -> usize {
    let lines: Vec<&str> = err.lines().collect();
    let (last, waits) = lines.split_last().expect("a line on stderr");
    for (i, wait) in waits.iter().enumerate() {
        assert!(
            wait.starts_with("gyre: ") && wait.contains(&format!("; retry {} in ", i + 1)),
            "{err}"
        );
    }
    assert_one_clean_line(last);
    waits.len()
}

#[tokio::test]
async fn missing_key_exits_2_naming_the_variable() {
    let env = Env::new();
    let out = output(env.gyre(&["run", "hello"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert_one_clean_line(&err);
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");

    let out = output(env.gyre(&["-p", "hello", "--provider", "openai"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("OPENAI_API_KEY"));
}

#[tokio::test]
async fn unreachable_base_url_fails_with_a_clear_message() {
    let env = Env::new();
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = env.gyre(&["run", "hello"]);
    cmd.env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"));
    let started = std::time::Instant::now();
    let out = output(cmd).await;
    // Nothing has ever answered there: a wrong URL, a configuration error,
    // after a few quick retries (each one line naming the URL), not minutes.
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(assert_retries_then_one_clean_line(&err) >= 1, "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.contains(&format!("127.0.0.1:{port}")) && last.contains("check the base URL"),
        "names the URL and what to check: {err}"
    );
    assert!(!last.contains("try again"), "{last}");
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
}

/// With the default retry policy (8 retries, up to a minute apart), a port
/// where nothing listens and a host name that does not exist both end with
/// exit 2 after about 3 s, the URL named.
#[tokio::test]
async fn a_wrong_base_url_fails_in_seconds_with_the_default_policy() {
    let env = Env::new();
    env.write_user_config("");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for url in [
        format!("http://127.0.0.1:{port}"),
        "http://gyre-no-such-host.invalid:8080".to_string(),
    ] {
        let mut cmd = env.gyre(&["run", "hello", "--base-url", &url]);
        cmd.env("ANTHROPIC_API_KEY", "k");
        let started = std::time::Instant::now();
        let out = output(cmd).await;
        let took = started.elapsed();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert_retries_then_one_clean_line(&err);
        assert!(err.lines().last().unwrap().contains(&url), "{err}");
        // About 3 s of quick retries; far under the default's minutes.
        assert!(took < std::time::Duration::from_secs(10), "{url}: {took:?}");
    }
}

/// A base URL that points at an ordinary web server: its HTML error page
/// is a configuration error naming the URL and the status, with at most
/// the page's title, asked once.
#[tokio::test]
async fn a_web_server_that_is_not_the_api_is_named_not_retried() {
    let page = "<!DOCTYPE html>\n<html><head><title>501 Not Implemented</title></head>\n<body><h1>Not Implemented</h1>\n<p>POST not supported for current URL.<br />\n</p>\n</body></html>\n";
    let script = Script {
        context_window: None,
        steps: vec![Step {
            reply: Reply::Http(HttpReply {
                status: 501,
                headers: [(
                    "content-type".to_string(),
                    "text/html; charset=iso-8859-1".to_string(),
                )]
                .into_iter()
                .collect(),
                body: Some(page.into()),
                ..HttpReply::default()
            }),
            ..Step::default()
        }],
    };
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(&server, &["run", "hello"])).await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_one_clean_line(&err);
    assert!(
        err.contains(&server.anthropic_base_url()),
        "names the URL: {err}"
    );
    assert!(
        err.contains("HTTP 501") && err.contains("501 Not Implemented"),
        "{err}"
    );
    assert!(!err.contains('<') && !err.contains("try again"), "{err}");
    assert_eq!(server.requests().len(), 1, "asked once");
}

#[tokio::test]
async fn a_rejected_key_exits_2() {
    let script = Script {
        context_window: None,
        steps: vec![Step {
            reply: Reply::Http(HttpReply {
                status: 401,
                ..HttpReply::default()
            }),
            ..Step::default()
        }],
    };
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let out = output(env.gyre_on(&server, &["run", "hello", "--output-format", "json"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json_lines(&out)[0]["subtype"], "error_during_execution");
    assert_one_clean_line(&stderr(&out));
}

#[tokio::test]
async fn server_errors_exit_1() {
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
    let out = output(env.gyre_on(&server, &["run", "hello"])).await;
    assert_eq!(out.status.code(), Some(1));
    // The test config allows 2 retries: two waits, then the failure.
    assert_eq!(assert_retries_then_one_clean_line(&stderr(&out)), 2);
}

#[tokio::test]
async fn bad_usage_exits_2() {
    let env = Env::new();
    for args in [
        vec!["run"],
        vec!["run", "x", "--no-such-flag"],
        vec!["run", "x", "--permission-mode", "yolo"],
        vec!["run", "x", "--provider", "nonesuch"],
        vec!["run", "x", "--max-turns", "0"],
        vec!["run", "   "],
        vec!["run", "x", "--allowed-tools", "bash(rm"],
        vec!["run", "x", "--cwd", "/definitely/not/here"],
    ] {
        let mut cmd = env.gyre(&args);
        cmd.env("ANTHROPIC_API_KEY", "k");
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
    }
}

/// The loop guard ends a run that keeps repeating itself with exit 3 and
/// `error_during_execution`; `[loop_guard]` sets its thresholds.
#[tokio::test]
async fn the_loop_guard_stops_a_repeating_run_with_exit_3() {
    let read = || vec![call("read", json!({"file_path": "a.txt"}))];
    let script = Script::linear(vec![read(), read(), read(), read()]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("a.txt"), "alpha\n");
    env.write_user_config("[loop_guard]\nrepeat = 2\n");
    let out = output(env.run_on(&server, "read a.txt", &[])).await;
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    let lines = json_lines(&out);
    let result = lines.last().unwrap();
    assert_eq!(result["subtype"], "error_during_execution");
    assert!(
        result["error"].as_str().unwrap().contains("loop guard"),
        "{result}"
    );
    assert!(stderr(&out).contains("loop guard"));
    // The first read ran, the next two were refused, the fourth stopped it.
    assert_eq!(server.requests().len(), 4);
}
