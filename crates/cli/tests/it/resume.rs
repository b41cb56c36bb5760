//! `--continue`, `--fork` and `--at`: which session a run goes on in.

use gyre_mock::MockServer;
use gyre_protocol::Role;
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use tempfile::TempDir;

use crate::common::*;

#[tokio::test]
async fn continue_picks_the_newest_session_of_this_directory() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let older = session_of(env.run_on(&server, "first task", &[])).await;
    let newer = session_of(env.run_on(&server, "second task", &[])).await;
    let elsewhere = TempDir::new().unwrap();
    let mut cmd = env.run_on(&server, "another directory", &[]);
    cmd.current_dir(elsewhere.path());
    let other = session_of(cmd).await;
    assert!(older != newer && newer != other);

    // The other directory's session is the newest of all, but not of this one.
    let continued = session_of(env.run_on(&server, "and again", &["--continue"])).await;
    assert_eq!(continued, newer);
    let sent = server.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("second task") && sent.contains("and again"),
        "{sent}"
    );
    assert!(
        !sent.contains("first task") && !sent.contains("another directory"),
        "{sent}"
    );

    // `--cwd` names the directory too.
    let dir = elsewhere.path().to_str().unwrap();
    let continued = session_of(env.run_on(&server, "there", &["--continue", "--cwd", dir])).await;
    assert_eq!(continued, other);

    let empty = TempDir::new().unwrap();
    let mut cmd = env.run_on(&server, "nothing here", &["--continue"]);
    cmd.current_dir(empty.path());
    assert_usage_error(&output(cmd).await, "--continue");
}

#[tokio::test]
async fn fork_at_copies_through_the_message_and_leaves_the_original() {
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let server = MockServer::start(three_step_script()).await.unwrap();
    let original = session_of(env.run_on(&server, "do it", &[])).await;
    let before = {
        let store = SqliteStore::open(&env.database()).await.unwrap();
        store.load_messages(&original).await.unwrap()
    };
    assert_eq!(before.len(), 6, "{before:?}");
    // Through the result of `read`, before the `bash` call.
    let at = before[2].id.clone();

    let chat = MockServer::start(always("forked answer")).await.unwrap();
    let fork = session_of(env.run_on(
        &chat,
        "go on from there",
        &["--resume", &original, "--fork", "--at", &at],
    ))
    .await;
    assert_ne!(fork, original, "the run goes on in the copy");
    let sent = chat.requests()[0].body.to_string();
    assert!(
        sent.contains("milk") && !sent.contains("echo built"),
        "{sent}"
    );

    let store = SqliteStore::open(&env.database()).await.unwrap();
    assert_eq!(store.load_messages(&original).await.unwrap(), before);
    let copied = store.load_messages(&fork).await.unwrap();
    assert_eq!(copied.len(), 5, "{copied:?}");
    assert_eq!(copied[..3], before[..3]);
    assert_eq!(copied[3].role, Role::User);
    assert_eq!(copied[3].text(), "go on from there");
    assert_eq!(copied[4].text(), "forked answer");
    let meta = store.get_session(&fork).await.unwrap().unwrap();
    assert_eq!(meta.title, "fork of do it");
    let source = store.get_session(&original).await.unwrap().unwrap();
    assert_eq!(source.title, "do it");
    drop(store);

    // `--continue --fork`: a copy of the newest session here (the fork).
    let again = session_of(env.run_on(&chat, "once more", &["--continue", "--fork"])).await;
    assert!(again != fork && again != original);
    let store = SqliteStore::open(&env.database()).await.unwrap();
    assert_eq!(store.load_messages(&fork).await.unwrap().len(), 5);
    assert_eq!(store.load_messages(&again).await.unwrap().len(), 7);
    let meta = store.get_session(&again).await.unwrap().unwrap();
    assert_eq!(meta.title, "fork of fork of do it");
}

#[tokio::test]
async fn fork_flags_are_checked() {
    let env = Env::new();
    let server = MockServer::start(always("ok")).await.unwrap();
    let id = session_of(env.run_on(&server, "task", &[])).await;

    let cases: [(&[&str], &str); 4] = [
        (&["--resume", &id, "--fork", "--at", "nope"], "nope"),
        (&["--resume", "missing-id", "--fork"], "missing-id"),
        (&["--fork"], "--resume"),
        (&["--at", "x"], "--fork"),
    ];
    for (flags, needle) in cases {
        let out = output(env.run_on(&server, "go", flags)).await;
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{flags:?}: {}", stderr(&out));
    }
    let out = output(env.run_on(&server, "go", &["--resume", &id, "--continue"])).await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // Nothing was forked by the refused runs.
    let list = output(env.gyre(&["sessions", "list"])).await;
    assert_eq!(stdout(&list).lines().count(), 1, "{}", stdout(&list));
}
