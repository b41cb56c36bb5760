//! Two `gyre run --resume ID` on one session at once: the second waits for
//! the first (saying so), then runs on the history the first left.

use std::time::Duration;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_store::SessionStore;
use gyre_store_sql::SqliteStore;

use crate::common::*;

fn on(last: &str, text: &str, stall_ms: u64) -> Step {
    Step {
        when: When {
            last_message_contains: Some(last.into()),
            ..When::default()
        },
        times: None,
        reply: Reply::Stream(StreamReply {
            items: vec![Item::Text(text.into())],
            stall_before_headers_ms: stall_ms,
            ..StreamReply::default()
        }),
    }
}

#[tokio::test]
async fn a_second_resume_waits_for_the_first_and_both_land_in_order() {
    let script = Script::new(vec![
        on("start", "started", 0),
        on("slow one", "slow answer", 1_500),
        on("quick one", "quick answer", 0),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let args = [
        "--output-format",
        "stream-json",
        "--permission-mode",
        "bypassPermissions",
    ];
    let first = output(env.gyre_on(&server, &[&["run", "start"][..], &args[..]].concat())).await;
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let id = json_lines(&first)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let slow = env
        .gyre_on(
            &server,
            &[&["run", "slow one", "--resume", &id][..], &args[..]].concat(),
        )
        .spawn()
        .unwrap();
    // The slow run holds the session once its request is in.
    tokio::time::timeout(Duration::from_secs(10), async {
        while server.requests().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let quick = output(env.gyre_on(
        &server,
        &[&["run", "quick one", "--resume", &id][..], &args[..]].concat(),
    ));
    let (slow, quick) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(30), slow.wait_with_output()),
        quick
    );
    let slow = slow.unwrap().unwrap();
    assert_eq!(slow.status.code(), Some(0), "{}", stderr(&slow));
    assert_eq!(quick.status.code(), Some(0), "{}", stderr(&quick));
    let lines = json_lines(&quick);
    assert!(
        lines.iter().any(|l| l["subtype"] == "session_busy"),
        "the second run said it waited: {lines:?}"
    );
    assert_eq!(lines.last().unwrap()["result"], "quick answer");

    let store = SqliteStore::open(&env.database()).await.unwrap();
    let texts: Vec<String> = store
        .load_messages(&id)
        .await
        .unwrap()
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(
        texts,
        [
            "start",
            "started",
            "slow one",
            "slow answer",
            "quick one",
            "quick answer"
        ]
    );
    // The quick run's request carried the slow run's exchange.
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("slow answer"), "{last}");
}
