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
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_one_clean_line(&err);
    assert!(
        err.contains(&format!("127.0.0.1:{port}")),
        "names the URL: {err}"
    );
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
    assert_one_clean_line(&stderr(&out));
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
