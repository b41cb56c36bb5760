//! `gyre sessions list|show|export|import|delete` over SQLite
//! (`$GYRE_HOME/sessions.db`).

use std::process::Stdio;

use gyre_mock::MockServer;
use gyre_store::{SessionMeta, SessionStore};
use gyre_store_sql::SqliteStore;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

use crate::common::*;

/// The fields of a list line: id, `YYYY-MM-DD HH:MM`, model, title.
fn fields(line: &str) -> Vec<&str> {
    let fields: Vec<&str> = line.splitn(4, "  ").collect();
    assert_eq!(fields.len(), 4, "{line}");
    let time = fields[1].as_bytes();
    assert!(
        time.len() == 16 && time[4] == b'-' && time[10] == b' ' && time[13] == b':',
        "{line}"
    );
    fields
}

/// Stores a subagent's session of `parent`, as the `task` tool will: in the
/// parent's directory, created `after_ms` after the parent's last update (so
/// it is newer than the parent).
async fn add_child(env: &Env, parent: &str, id: &str, title: &str, after_ms: i64) {
    let store = SqliteStore::open(&env.database()).await.unwrap();
    let of = store.get_session(parent).await.unwrap().unwrap();
    let at = of.updated_at_ms + after_ms;
    let meta = SessionMeta {
        id: id.to_owned(),
        title: title.to_owned(),
        created_at_ms: at,
        updated_at_ms: at,
        parent_id: Some(parent.to_owned()),
        ..of
    };
    store.create_session(&meta).await.unwrap();
    store.close().await.unwrap();
}

/// The short form people read: a UUIDv7's first 13 characters (its
/// creation time to the millisecond).
fn short(id: &str) -> &str {
    &id[..13]
}

async fn gyre_ok(env: &Env, args: &[&str]) -> String {
    let out = output(env.gyre(args)).await;
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[tokio::test]
async fn list_show_export_delete_import() {
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let server = MockServer::start(three_step_script()).await.unwrap();
    let first = session_of(env.run_on(&server, "do it", &[])).await;
    let elsewhere = TempDir::new().unwrap();
    let chat = MockServer::start(always("hello")).await.unwrap();
    let mut cmd = env.run_on(&chat, "second task\nwith details", &[]);
    cmd.current_dir(elsewhere.path());
    let second = session_of(cmd).await;

    // Newest first, one line each, beginning with the full id.
    let list = gyre_ok(&env, &["sessions", "list"]).await;
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert_eq!(
        fields(lines[0]),
        [
            second.as_str(),
            fields(lines[0])[1],
            "claude-sonnet-4-5",
            "second task"
        ]
    );
    assert_eq!(fields(lines[1])[0], first);
    assert_eq!(fields(lines[1])[3], "do it");
    // `--here`: the sessions of the current directory only.
    let here = gyre_ok(&env, &["sessions", "list", "--here"]).await;
    assert_eq!(here.lines().count(), 1, "{here}");
    assert!(here.starts_with(&first), "{here}");

    let show = gyre_ok(&env, &["sessions", "show", &first]).await;
    for expected in [
        format!("session   {first}\n"),
        "title     do it\n".to_owned(),
        "messages  6\n".to_owned(),
        "── user ".to_owned(),
        "  do it\n".to_owned(),
        "  → read {\"file_path\":\"notes.txt\"}".to_owned(),
        "  ← read [".to_owned(),
        "milk".to_owned(),
        "  → bash {\"command\":\"echo built > out.txt\"}".to_owned(),
        "  All done.\n".to_owned(),
    ] {
        assert!(show.contains(&expected), "`{expected}` in:\n{show}");
    }

    let export = gyre_ok(&env, &["sessions", "export", &first]).await;
    let lines = export
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .collect::<Vec<_>>();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 1);
    assert_eq!(lines[0]["meta"]["id"], first.as_str());
    let messages = lines.iter().filter(|l| l["type"] == "message").count();
    assert_eq!(messages, 6, "{export}");
    let file = env.home.path().join("first.jsonl");
    std::fs::write(&file, &export).unwrap();

    assert_eq!(
        gyre_ok(&env, &["sessions", "delete", &first]).await,
        format!("deleted {}\n", short(&first))
    );
    let list = gyre_ok(&env, &["sessions", "list"]).await;
    assert!(
        !list.contains(&first) && list.starts_with(&second),
        "{list}"
    );
    for command in ["show", "export", "delete"] {
        let out = output(env.gyre(&["sessions", command, &first])).await;
        assert_usage_error(&out, &first);
    }

    // Import gives the same session back: the same export, byte for byte.
    let imported = gyre_ok(&env, &["sessions", "import", file.to_str().unwrap()]).await;
    assert_eq!(imported, format!("{first}\n"));
    assert_eq!(gyre_ok(&env, &["sessions", "export", &first]).await, export);
    let list = gyre_ok(&env, &["sessions", "list"]).await;
    assert_eq!(list.lines().count(), 2, "{list}");
    let again = output(env.gyre(&["sessions", "import", file.to_str().unwrap()])).await;
    assert_usage_error(&again, "already exists");
}

#[tokio::test]
async fn exports_are_redacted_and_import_reads_stdin() {
    let env = Env::new();
    env.write_user_config(&format!(
        "{FAST_RETRIES}[redact]\npatterns = [\"tok_[A-Z0-9]{{10}}\"]\n"
    ));
    let server = MockServer::start(always("Deploying with tok_A1B2C3D4E5 now."))
        .await
        .unwrap();
    let id = session_of(env.run_on(&server, "deploy with tok_Z9Y8X7W6V5", &[])).await;

    let export = gyre_ok(&env, &["sessions", "export", &id]).await;
    for secret in ["tok_A1B2C3D4E5", "tok_Z9Y8X7W6V5"] {
        assert!(!export.contains(secret), "{export}");
    }
    assert!(
        export.contains("Deploying with [REDACTED] now."),
        "{export}"
    );
    assert!(export.contains("deploy with [REDACTED]"), "{export}");
    for view in [
        gyre_ok(&env, &["sessions", "list"]).await,
        gyre_ok(&env, &["sessions", "show", &id]).await,
    ] {
        assert!(
            !view.contains("tok_") && view.contains("[REDACTED]"),
            "{view}"
        );
    }

    gyre_ok(&env, &["sessions", "delete", &id]).await;
    let mut cmd = env.gyre(&["sessions", "import", "-"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(export.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{id}\n"));
    assert_eq!(gyre_ok(&env, &["sessions", "export", &id]).await, export);
}

#[tokio::test]
async fn bad_ids_and_files_are_usage_errors() {
    let env = Env::new();
    for command in ["show", "export", "delete"] {
        let out = output(env.gyre(&["sessions", command, "no-such-session"])).await;
        assert_usage_error(&out, "no-such-session");
    }
    let list = gyre_ok(&env, &["sessions", "list"]).await;
    assert!(list.is_empty(), "{list}");

    let garbage = env.path("garbage.jsonl");
    write(&garbage, "{\"type\":\"message\",\"message\":{}}\n");
    let out = output(env.gyre(&["sessions", "import", garbage.to_str().unwrap()])).await;
    assert_usage_error(&out, "line 1");
    let missing = env.path("missing.jsonl");
    let out = output(env.gyre(&["sessions", "import", missing.to_str().unwrap()])).await;
    assert_usage_error(&out, "missing.jsonl");
}

#[tokio::test]
async fn subagent_sessions_are_listed_with_all_and_shown_with_their_parent() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let parent = session_of(env.run_on(&server, "big task", &[])).await;
    add_child(&env, &parent, "kid-1", "look around", 1_000).await;
    add_child(&env, "kid-1", "grandkid", "look closer", 2_000).await;

    // By default only the session a person started.
    let list = gyre_ok(&env, &["sessions", "list"]).await;
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.starts_with(&parent) && !list.contains("subagent"),
        "{list}"
    );
    for args in [
        &["sessions", "list", "--all"][..],
        &["sessions", "list", "--all", "--here"],
    ] {
        let list = gyre_ok(&env, args).await;
        let lines: Vec<&str> = list.lines().collect();
        assert_eq!(lines.len(), 3, "{args:?}: {list}");
        // Newest first; each line still begins with the full id.
        assert!(lines[0].starts_with("grandkid  "), "{list}");
        assert!(
            lines[0].ends_with("  look closer  (subagent of kid-1)"),
            "{list}"
        );
        assert!(lines[1].starts_with("kid-1  "), "{list}");
        assert!(
            lines[1].ends_with(&format!("  look around  (subagent of {})", short(&parent))),
            "{list}"
        );
        assert_eq!(
            fields(lines[2]),
            [
                parent.as_str(),
                fields(lines[2])[1],
                "claude-sonnet-4-5",
                "big task"
            ]
        );
    }

    let show = gyre_ok(&env, &["sessions", "show", &parent]).await;
    assert!(
        show.contains("\nsubagents:\n  kid-1  look around\n"),
        "{show}"
    );
    assert!(
        !show.contains("grandkid") && !show.contains("parent "),
        "{show}"
    );
    let show = gyre_ok(&env, &["sessions", "show", "kid-1"]).await;
    assert!(
        show.starts_with(&format!("session   kid-1\nparent    {}\n", short(&parent))),
        "{show}"
    );
    assert!(
        show.contains("\nsubagents:\n  grandkid  look closer\n"),
        "{show}"
    );
}

#[tokio::test]
async fn continue_never_picks_a_subagent_session() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let parent = session_of(env.run_on(&server, "first task", &[])).await;
    // Newer than the parent, in the same directory.
    add_child(&env, &parent, "kid-1", "subtask", 60_000).await;

    let continued = session_of(env.run_on(&server, "and again", &["--continue"])).await;
    assert_eq!(continued, parent);
    let sent = server.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("first task") && sent.contains("and again"),
        "{sent}"
    );
}

#[tokio::test]
async fn delete_takes_the_subagent_sessions_with_it() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let parent = session_of(env.run_on(&server, "big task", &[])).await;
    let other = session_of(env.run_on(&server, "other task", &[])).await;
    add_child(&env, &parent, "kid-1", "one", 1_000).await;
    add_child(&env, &parent, "kid-2", "two", 2_000).await;
    add_child(&env, "kid-1", "grandkid", "deeper", 3_000).await;
    add_child(&env, &other, "other-kid", "kept", 1_000).await;

    // Children before their parents, one line each.
    assert_eq!(
        gyre_ok(&env, &["sessions", "delete", &parent]).await,
        format!(
            "deleted grandkid\ndeleted kid-2\ndeleted kid-1\ndeleted {}\n",
            short(&parent)
        )
    );
    let list = gyre_ok(&env, &["sessions", "list", "--all"]).await;
    let ids: Vec<&str> = list.lines().map(|line| fields(line)[0]).collect();
    assert_eq!(ids, ["other-kid", other.as_str()], "{list}");
    for id in [parent.as_str(), "kid-1", "grandkid"] {
        let out = output(env.gyre(&["sessions", "show", id])).await;
        assert_usage_error(&out, id);
    }

    // A subagent's session alone: its parent stays.
    assert_eq!(
        gyre_ok(&env, &["sessions", "delete", "other-kid"]).await,
        "deleted other-kid\n"
    );
    assert_eq!(
        gyre_ok(&env, &["sessions", "list", "--all"])
            .await
            .lines()
            .count(),
        1
    );
}

#[tokio::test]
async fn a_prefix_of_an_id_names_its_session_and_an_ambiguous_one_is_refused() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let first = session_of(env.run_on(&server, "first task", &[])).await;
    let prefix = short(&first);
    let show = gyre_ok(&env, &["sessions", "show", prefix]).await;
    assert!(show.starts_with(&format!("session   {first}\n")), "{show}");
    // `--resume` with the short form goes on in the same session.
    let resumed = session_of(env.run_on(&server, "and again", &["--resume", prefix])).await;
    assert_eq!(resumed, first);
    let sent = server.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("first task") && sent.contains("and again"),
        "{sent}"
    );

    add_child(&env, &first, "kid-1", "one", 1_000).await;
    add_child(&env, &first, "kid-2", "two", 2_000).await;
    let out = output(env.gyre(&["sessions", "show", "kid"])).await;
    assert_usage_error(&out, "the id prefix kid names 2 sessions");
    let err = stderr(&out);
    assert!(err.contains("kid-1") && err.contains("kid-2"), "{err}");
    let out = output(env.run_on(&server, "x", &["--resume", "kid"])).await;
    assert_usage_error(&out, "give more of the id");
    let out = output(env.gyre(&["sessions", "show", "nothing-like-it"])).await;
    assert_usage_error(&out, "there is no session nothing-like-it");
}
