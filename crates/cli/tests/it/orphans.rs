//! Commands die with their run (issue 22, item 2): a `gyre run` killed with
//! SIGKILL while `bash` runs takes the command's whole process group with
//! it, so a late effect of the command never happens.

use std::time::Duration;

use gyre_mock::{MockServer, Reply, Script, Step, StreamReply, When};
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
