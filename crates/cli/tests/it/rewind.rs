//! `gyre sessions replay` and `gyre sessions rewind` on real runs.

use gyre_mock::{Item, MockServer, Script};
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;
use serde_json::{Value, json};

use crate::common::*;

const RUN: [&str; 4] = [
    "--output-format",
    "stream-json",
    "--permission-mode",
    "bypassPermissions",
];

fn without_timings(mut line: Value) -> Value {
    if let Some(object) = line.as_object_mut() {
        object.remove("duration_ms");
        // Fresh for every line printed, and what only a live run knows
        // (its settings) is not in a replay.
        for key in [
            "uuid",
            "duration_api_ms",
            "permissionMode",
            "agents",
            "slash_commands",
            "mcp_servers",
            "apiKeySource",
        ] {
            object.remove(key);
        }
        // Per-turn usage is not stored with the message.
        if let Some(message) = object.get_mut("message").and_then(Value::as_object_mut) {
            message.remove("usage");
            message.remove("stop_reason");
        }
    }
    line
}

#[tokio::test]
async fn a_replay_prints_what_the_runs_printed() {
    let script = Script::linear(vec![
        vec![Item::Text("Listing.".into()), call("ls", json!({}))],
        vec![Item::Text("One file.".into())],
        vec![Item::Text("Still one.".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("a.txt"), "a");
    let first = output(env.gyre_on(&server, &[&["run", "list"][..], &RUN[..]].concat())).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let mut live = json_lines(&first);
    let id = live[0]["session_id"].as_str().unwrap().to_string();
    let second = output(env.gyre_on(
        &server,
        &[&["run", "again", "--resume", &id][..], &RUN[..]].concat(),
    ))
    .await;
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    live.extend(json_lines(&second));

    let replayed = output(env.gyre(&["sessions", "replay", &id])).await;
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let replayed: Vec<Value> = json_lines(&replayed)
        .into_iter()
        .map(without_timings)
        .collect();
    let live: Vec<Value> = live.into_iter().map(without_timings).collect();
    assert_eq!(replayed, live);
    assert_eq!(server.requests().len(), 3, "no model was called");

    let missing = output(env.gyre(&["sessions", "replay", "nope"])).await;
    assert_eq!(missing.status.code(), Some(2));
}

/// Edits two files and deletes a third with `bash`; a rewind to the first
/// message puts all three back exactly, and the conversation too.
#[tokio::test]
async fn a_rewind_restores_edited_and_deleted_files() {
    let script = Script::linear(vec![
        vec![
            call("read", json!({"file_path": "a.txt"})),
            call("read", json!({"file_path": "b.txt"})),
        ],
        vec![
            call(
                "edit",
                json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
            ),
            call(
                "edit",
                json!({"file_path": "b.txt", "old_string": "beta", "new_string": "BETA"}),
            ),
        ],
        vec![call("bash", json!({"command": "rm c.txt"}))],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    write(&env.path("a.txt"), "alpha\n");
    write(&env.path("b.txt"), "beta\n");
    write(&env.path("c.txt"), "gamma\n");
    let out =
        output(env.gyre_on(&server, &[&["run", "change things"][..], &RUN[..]].concat())).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = json_lines(&out)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!env.path("c.txt").exists());

    let store = SqliteStore::open(&env.database()).await.unwrap();
    let first = store.load_messages(&id).await.unwrap()[0].id.clone();
    drop(store);
    let rewound = output(env.gyre(&["sessions", "rewind", &id, "--to", &first])).await;
    assert_eq!(rewound.status.code(), Some(0), "{}", stderr(&rewound));
    assert!(
        stdout(&rewound).contains("files restored"),
        "{}",
        stdout(&rewound)
    );
    assert_eq!(
        std::fs::read_to_string(env.path("a.txt")).unwrap(),
        "alpha\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("b.txt")).unwrap(),
        "beta\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("c.txt")).unwrap(),
        "gamma\n"
    );
    let store = SqliteStore::open(&env.database()).await.unwrap();
    assert_eq!(store.load_messages(&id).await.unwrap().len(), 1);

    let unknown = output(env.gyre(&["sessions", "rewind", &id, "--to", "nope"])).await;
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no message nope"),
        "{}",
        stderr(&unknown)
    );
}

/// A write made with checkpoints off cannot be rewound: the rewind says
/// which message has no checkpoint, exits non-zero and changes nothing
/// (never "files unchanged").
#[tokio::test]
async fn a_files_rewind_without_a_checkpoint_is_refused() {
    let script = Script::linear(vec![
        vec![call(
            "write",
            json!({"file_path": "a.txt", "content": "overwritten\n"}),
        )],
        vec![Item::Text("done".into())],
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    env.write_user_config(&format!("checkpoints = false\n{FAST_RETRIES}"));
    write(&env.path("a.txt"), "original\n");
    let out = output(env.gyre_on(&server, &[&["run", "overwrite"][..], &RUN[..]].concat())).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = json_lines(&out)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let store = SqliteStore::open(&env.database()).await.unwrap();
    let messages = store.load_messages(&id).await.unwrap();
    let (first, answer) = (messages[0].id.clone(), messages[1].id.clone());
    drop(store);

    let rewound = output(env.gyre(&["sessions", "rewind", &id, "--to", &first])).await;
    assert_eq!(rewound.status.code(), Some(1), "{}", stdout(&rewound));
    let said = stderr(&rewound);
    assert!(said.contains("cannot rewind the files"), "{said}");
    assert!(said.contains(&answer), "names the message: {said}");
    assert!(!stdout(&rewound).contains("files unchanged"));
    // Nothing changed: the conversation is whole.
    let store = SqliteStore::open(&env.database()).await.unwrap();
    assert_eq!(
        store.load_messages(&id).await.unwrap().len(),
        messages.len()
    );
    drop(store);
    // The conversation alone can still be rewound.
    let conversation = output(env.gyre(&[
        "sessions",
        "rewind",
        &id,
        "--to",
        &first,
        "--conversation-only",
    ]))
    .await;
    assert_eq!(
        conversation.status.code(),
        Some(0),
        "{}",
        stderr(&conversation)
    );
}

/// A checkpoint that cannot be taken (here: the checkpoints directory is a
/// file) does not stop the write, and is said where the user looks: a
/// `system` line in stream-json, a warning on stderr in text mode.
#[tokio::test]
async fn a_failed_checkpoint_is_said_and_the_call_still_runs() {
    let script = || {
        Script::linear(vec![
            vec![call(
                "write",
                json!({"file_path": "new.txt", "content": "written\n"}),
            )],
            vec![Item::Text("done".into())],
        ])
    };
    let env = Env::new();
    std::fs::write(env.home.path().join("checkpoints"), "not a directory").unwrap();

    let server = MockServer::start(script()).await.unwrap();
    let out = output(env.gyre_on(&server, &[&["run", "overwrite"][..], &RUN[..]].concat())).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines = json_lines(&out);
    let failed: Vec<&Value> = lines
        .iter()
        .filter(|l| l["subtype"] == "checkpoint_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{lines:#?}");
    assert_eq!(failed[0]["type"], "system");
    let message = failed[0]["message"].as_str().unwrap();
    assert!(message.contains("no checkpoint"), "{message}");
    assert!(failed[0]["tool_use_id"].is_string());
    assert_eq!(
        std::fs::read_to_string(env.path("new.txt")).unwrap(),
        "written\n"
    );

    std::fs::remove_file(env.path("new.txt")).unwrap();
    let server = MockServer::start(script()).await.unwrap();
    let text = output(env.gyre_on(
        &server,
        &["run", "overwrite", "--permission-mode", "bypassPermissions"],
    ))
    .await;
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let said = stderr(&text);
    assert!(
        said.contains("gyre: warning: no checkpoint before this change"),
        "{said}"
    );
    assert!(stdout(&text).contains("done"));
}
