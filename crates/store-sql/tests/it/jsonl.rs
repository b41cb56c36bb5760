//! JSONL export and import: a round trip through the format, redaction, and
//! the refusals; on both backends.

use gyre_protocol::{Message, Origin, Part, ToolResult, ToolResultContent};
use gyre_store::{Checkpoint, SessionStore, StoreError, jsonl};
use serde_json::json;

use crate::common::{assistant, both_backends, every_part_kind, meta};

/// Session `s1` with every part kind, an origin, a state and checkpoints;
/// one message carries "SECRET-KEY" in a tool result.
async fn rich_session(store: &dyn SessionStore) {
    store.create_session(&meta("s1", 100)).await.unwrap();
    let messages = [
        Message::user_text("m1", "please look"),
        assistant("m2", every_part_kind()),
        Message::new(
            "m3",
            gyre_protocol::Role::User,
            vec![Part::ToolResult(ToolResult {
                call_id: "call-1".into(),
                name: "bash".into(),
                content: vec![ToolResultContent::Text {
                    text: "export KEY=SECRET-KEY".into(),
                }],
                is_error: false,
                title: String::new(),
            })],
        ),
        Message::user_text("m4", "continue").with_origin(Origin::Gyre),
    ];
    for message in &messages {
        store.append_message("s1", message).await.unwrap();
    }
    for (id, message_id, call_id) in [("c1", "m2", Some("call-2")), ("c2", "m4", None)] {
        let checkpoint = Checkpoint {
            id: id.into(),
            message_id: message_id.into(),
            call_id: call_id.map(Into::into),
            snapshot: format!("tree-{id}"),
            created_at_ms: 1_700_000_000_123,
        };
        store.add_checkpoint("s1", &checkpoint).await.unwrap();
    }
    store
        .save_state("s1", &json!({"turn": 2, "reason": "tool_use"}))
        .await
        .unwrap();
}

async fn export_text(store: &dyn SessionStore, id: &str, filter: &dyn Fn(&mut Message)) -> String {
    let mut out = Vec::new();
    jsonl::export(store, id, &mut out, filter).await.unwrap();
    String::from_utf8(out).unwrap()
}

fn redact(message: &mut Message) {
    for part in &mut message.parts {
        if let Part::ToolResult(result) = part {
            for content in &mut result.content {
                if let ToolResultContent::Text { text } = content {
                    *text = text.replace("SECRET-KEY", "[redacted]");
                }
            }
        }
    }
}

both_backends! {
    async fn export_then_import_round_trips_everything(db: &TestDb) {
        let store = db.open().await;
        rich_session(store.as_ref()).await;
        let original = store.export_session("s1").await.unwrap();
        let text = export_text(store.as_ref(), "s1", &|_| {}).await;

        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 4 + 2);
        assert!(lines[0].starts_with(r#"{"type":"session","version":1,"meta":{"id":"s1""#), "{}", lines[0]);
        assert!(lines[1..5].iter().all(|l| l.starts_with(r#"{"type":"message","message":{"#)));
        assert!(lines[5..].iter().all(|l| l.starts_with(r#"{"type":"checkpoint","checkpoint":{"#)));

        // Into an empty database of the same backend, as another machine would.
        let target = TestDb::new(db.backend).await;
        let other = target.open().await;
        let imported = jsonl::import(other.as_ref(), text.as_bytes()).await.unwrap();
        assert_eq!(imported, original.meta);
        assert_eq!(other.export_session("s1").await.unwrap(), original);
        assert_eq!(other.get_session("s1").await.unwrap(), Some(original.meta.clone()));
        assert_eq!(other.load_messages("s1").await.unwrap(), original.messages);
        assert_eq!(other.checkpoints("s1").await.unwrap(), original.checkpoints);
        assert_eq!(other.load_state("s1").await.unwrap(), original.state);
        assert_eq!(export_text(other.as_ref(), "s1", &|_| {}).await, text, "byte for byte");
        target.finish().await;

        // And back into the same database once the original is gone.
        store.delete_session("s1").await.unwrap();
        jsonl::import(store.as_ref(), text.as_bytes()).await.unwrap();
        assert_eq!(store.export_session("s1").await.unwrap(), original);
    }

    async fn the_export_filter_redacts_what_is_written_and_nothing_stored(db: &TestDb) {
        let store = db.open().await;
        rich_session(store.as_ref()).await;
        let text = export_text(store.as_ref(), "s1", &redact).await;
        assert!(!text.contains("SECRET-KEY"), "{text}");
        assert!(text.contains("export KEY=[redacted]"));
        assert!(export_text(store.as_ref(), "s1", &|_| {}).await.contains("SECRET-KEY"));

        store.delete_session("s1").await.unwrap();
        jsonl::import(store.as_ref(), text.as_bytes()).await.unwrap();
        let messages = store.load_messages("s1").await.unwrap();
        assert_eq!(messages.len(), 4);
        assert!(!format!("{messages:?}").contains("SECRET-KEY"));
        assert_eq!(messages[3].origin, Origin::Gyre);
    }

    async fn an_existing_id_or_a_bad_line_imports_nothing(db: &TestDb) {
        let store = db.open().await;
        rich_session(store.as_ref()).await;
        let text = export_text(store.as_ref(), "s1", &|_| {}).await;

        // The id is taken: refused, the existing session untouched.
        let before = store.export_session("s1").await.unwrap();
        let err = jsonl::import(store.as_ref(), text.as_bytes()).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::SessionExists { session_id, .. } if session_id == "s1"),
            "{err:?}"
        );
        assert_eq!(store.export_session("s1").await.unwrap(), before);

        // Under a new id, with one line spoiled: nothing of it is created.
        let renamed = text.replacen(r#""id":"s1""#, r#""id":"s2""#, 1);
        let mut lines: Vec<&str> = renamed.lines().collect();
        lines[3] = "{\"type\":\"message\",\"message\":{\"id\":";
        let err = jsonl::import(store.as_ref(), lines.join("\n").as_bytes()).await.unwrap_err();
        assert!(matches!(err, StoreError::ImportLine { line: 4, .. }), "{err:?}");
        assert!(err.to_string().starts_with("line 4 of the session import:"), "{err}");
        assert_eq!(store.get_session("s2").await.unwrap(), None);

        // Unknown line types and blank lines are skipped.
        let mut lines: Vec<String> = renamed.lines().map(str::to_owned).collect();
        lines.insert(1, r#"{"type":"annotation","note":{"from":"a newer gyre"}}"#.to_owned());
        lines.insert(2, "   ".to_owned());
        let meta = jsonl::import(store.as_ref(), lines.join("\n").as_bytes()).await.unwrap();
        assert_eq!(meta.id, "s2");
        assert_eq!(store.load_messages("s2").await.unwrap(), before.messages);
    }
}

/// Each refusal names its line, and reading stops before anything is
/// written (the parser alone decides).
#[test]
fn malformed_exports_are_refused_by_line() {
    let session = r#"{"type":"session","version":1,"meta":{"id":"s","cwd":"/","provider":"p","model":"m","title":"t","created_at_ms":1,"updated_at_ms":1},"state":null}"#;
    let message = |id: &str| {
        format!(r#"{{"type":"message","message":{{"id":"{id}","role":"user","parts":[]}}}}"#)
    };
    let checkpoint = |message_id: &str| {
        format!(
            r#"{{"type":"checkpoint","checkpoint":{{"id":"c","message_id":"{message_id}","snapshot":"x","created_at_ms":1}}}}"#
        )
    };
    let cases: Vec<(String, usize, &str)> = vec![
        (String::new(), 1, "without a session line"),
        ("\n\n".into(), 3, "without a session line"),
        (message("m1"), 1, "before the session line"),
        (format!("{session}\n{session}"), 2, "a second session line"),
        (
            session.replace(r#""version":1"#, r#""version":2"#),
            1,
            "newer than the 1",
        ),
        (
            format!("{session}\n{}\n{}", message("m1"), message("m1")),
            3,
            "appears twice",
        ),
        (
            format!("{session}\n{}\n{}", message("m1"), checkpoint("m2")),
            3,
            "not above it",
        ),
        (
            format!(
                "{session}\n{}\n{}\n{}",
                message("m1"),
                checkpoint("m1"),
                checkpoint("m1")
            ),
            4,
            "appears twice",
        ),
        (format!("{session}\nnot json"), 2, "not a valid export line"),
        (
            format!("{session}\n{{\"no_type\":1}}"),
            2,
            "not a valid export line",
        ),
        (
            format!("{session}\n{{\"type\":\"message\"}}"),
            2,
            "not a valid export line",
        ),
    ];
    for (input, line, reason) in cases {
        match jsonl::read_record(input.as_bytes()) {
            Err(StoreError::ImportLine {
                line: got,
                reason: why,
            }) => {
                assert_eq!(got, line, "{input:?}: {why}");
                assert!(why.contains(reason), "{input:?}: {why}");
            }
            other => panic!("{input:?} gave {other:?}"),
        }
    }
    // Invalid UTF-8 is a read error of its line.
    let mut bytes = session.as_bytes().to_vec();
    bytes.extend(b"\n\xff\xfe\n");
    assert!(matches!(
        jsonl::read_record(bytes.as_slice()),
        Err(StoreError::ImportLine { line: 2, .. })
    ));
}
