//! Commands die with their run (issue 22, item 2): a `gyre run` killed with
//! SIGKILL while `bash` runs takes the command's whole process group with
//! it, so a late effect of the command never happens. And a background
//! subagent a killed run left running is announced to the model once after
//! `--resume` (item 4).

use std::time::Duration;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use serde_json::json;

use crate::common::*;

/// The processes of group `pgid` still alive (zombies count as gone).
pub(crate) fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        if fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str()) {
            members.push(pid);
        }
    }
    members
}

#[tokio::test]
async fn a_killed_run_takes_its_command_with_it() {
    let command = "echo $$ > cmd.pid; sleep 5; echo LATE >> f";
    let script = Script::new(vec![Step {
        when: When::default(),
        times: None,
        reply: Reply::Stream(StreamReply {
            items: vec![call("bash", json!({ "command": command }))],
            ..StreamReply::default()
        }),
    }]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let mut gyre = env.run_on(&server, "write late", &[]).spawn().unwrap();
    let pid_file = env.path("cmd.pid");
    let pgid: i32 = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(text) = std::fs::read_to_string(&pid_file)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the command started");
    assert!(!group_members(pgid).is_empty(), "the command runs");

    gyre.start_kill().unwrap();
    gyre.wait().await.unwrap();
    let killed_at = std::time::Instant::now();
    // Gone within a second (it takes milliseconds; the bound is the
    // issue's acceptance, far above the expected value).
    while !group_members(pgid).is_empty() && killed_at.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(group_members(pgid), Vec::<i32>::new(), "left alive");
    // The command would have written after 5 s: wait past that.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let late = std::fs::read_to_string(env.path("f")).unwrap_or_default();
    assert!(!late.contains("LATE"), "f: {late:?}");
}

fn step(when: When, reply: StreamReply) -> Step {
    Step {
        when,
        times: None,
        reply: Reply::Stream(reply),
    }
}

fn saying(items: Vec<Item>) -> StreamReply {
    StreamReply {
        items,
        ..StreamReply::default()
    }
}

/// A run is killed while its background subagent waits for the model; the
/// resumed run tells the model, once, that the task was interrupted and
/// how to continue it, in the first request it makes.
#[tokio::test]
async fn a_background_task_of_a_killed_run_is_announced_after_resume() {
    let contains = |text: &str| When {
        last_message_contains: Some(text.into()),
        ..When::default()
    };
    let script = Script::new(vec![
        step(
            When {
                body_contains: Some("<status>interrupted</status>".into()),
                ..When::default()
            },
            saying(vec![Item::Text("told of the survey".into())]),
        ),
        // The subagent's request hangs until the run is killed.
        step(
            contains("SUBTASK"),
            StreamReply {
                stall_before_headers_ms: u64::MAX,
                ..saying(vec![Item::Text("never".into())])
            },
        ),
        step(
            contains("Started task"),
            saying(vec![Item::Text("waiting for the survey".into())]),
        ),
        step(
            contains("start the survey"),
            saying(vec![call(
                "task",
                json!({"description": "survey", "prompt": "SUBTASK survey the files", "background": true}),
            )]),
        ),
        step(When::default(), saying(vec![Item::Text("other".into())])),
    ]);
    let server = MockServer::start(script).await.unwrap();
    let env = Env::new();
    let mut gyre = env
        .run_on(&server, "start the survey", &[])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let asked = |needle: &'static str| {
        let server = &server;
        async move {
            tokio::time::timeout(Duration::from_secs(30), async {
                while !server
                    .requests()
                    .iter()
                    .any(|r| r.body.to_string().contains(needle))
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
            .await
            .expect(needle)
        }
    };
    asked("SUBTASK").await;
    asked("Started task").await;
    gyre.start_kill().unwrap();
    let killed = gyre.wait_with_output().await.unwrap();
    let first_line = String::from_utf8_lossy(&killed.stdout)
        .lines()
        .next()
        .map(str::to_string)
        .unwrap();
    let init: serde_json::Value = serde_json::from_str(&first_line).unwrap();
    let id = init["session_id"].as_str().unwrap().to_string();

    let resumed = output(env.run_on(&server, "what happened?", &["--resume", &id])).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let lines = json_lines(&resumed);
    let told: Vec<_> = lines
        .iter()
        .filter(|l| l["subtype"] == "task_notification")
        .collect();
    assert_eq!(told.len(), 1, "{lines:#?}");
    assert!(
        told[0]["result"].as_str().unwrap().contains("resume"),
        "{:?}",
        told[0]
    );
    let result = lines.last().unwrap();
    assert_eq!(result["result"], "told of the survey", "{result}");
    let notified = server
        .requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("<status>interrupted</status>"))
        .count();
    assert_eq!(notified, 1, "told once");

    // A later run does not tell it again.
    let again = output(env.run_on(&server, "and now?", &["--resume", &id])).await;
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        !json_lines(&again)
            .iter()
            .any(|l| l["subtype"] == "task_notification")
    );
}
