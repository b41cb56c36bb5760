//! The kill-and-resume campaign (issue 22, item 6), bounded: episodes of a
//! multi-turn script whose every turn appends to a ledger with `bash`; each
//! episode SIGKILLs the run at a random moment, then resumes it (killing some
//! resumes too) until it finishes. Invariants after every episode: each
//! effect at most once; the session always resumable; every call exactly
//! one result, after it; no lock left that blocks (no resume ever waits);
//! no command of a killed run alive once the resume settled it.
//!
//! `GYRE_KILL_CAMPAIGN_EPISODES` (default 24) and `GYRE_KILL_CAMPAIGN_SEED`
//! make longer or other campaigns.

use std::collections::HashMap;
use std::time::Duration;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::*;
use crate::orphans::group_members;

const TURNS: u32 = 4;

/// xorshift64*: reproducible from the seed, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn script() -> Script {
    let mut steps: Vec<Step> = (0..TURNS)
        .map(|k| Step {
            when: When {
                tool_results: Some(k),
                ..When::default()
            },
            times: None,
            reply: Reply::Stream(StreamReply {
                items: vec![
                    Item::Text(format!("Step {k}.")),
                    call(
                        "bash",
                        json!({ "command": format!("echo $$ >> pids.txt; sleep 0.{k}; echo T{k} >> ledger.txt; sleep 0.2") }),
                    ),
                ],
                ..StreamReply::default()
            }),
        })
        .collect();
    steps.push(Step {
        when: When::default(),
        times: None,
        reply: Reply::Stream(StreamReply {
            items: vec![Item::Text("ledger done".into())],
            ..StreamReply::default()
        }),
    });
    Script::new(steps)
}

/// Starts a run (`resume`: of that session), kills it after `kill_after_ms`
/// if given; its stdout lines and whether it finished by itself.
async fn run_once(
    env: &Env,
    server: &MockServer,
    resume: Option<&str>,
    kill_after_ms: Option<u64>,
) -> (Vec<Value>, Option<i32>) {
    let extra: Vec<&str> = resume.map(|id| vec!["--resume", id]).unwrap_or_default();
    let mut child = env
        .run_on(server, "keep the ledger", &extra)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let read_all = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(value) = serde_json::from_str::<Value>(&line) {
                seen.push(value);
            }
        }
    };
    let limit = Duration::from_millis(kill_after_ms.unwrap_or(60_000));
    let finished = tokio::time::timeout(limit, read_all).await.is_ok();
    if !finished {
        child.start_kill().unwrap();
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("gyre ended")
        .unwrap();
    let code = if finished { status.code() } else { None };
    (seen, code)
}

fn session_of(lines: &[Value]) -> Option<String> {
    lines
        .iter()
        .find(|l| l["subtype"] == "init")
        .and_then(|l| l["session_id"].as_str())
        .map(str::to_owned)
}

async fn episode(rng: &mut Rng, n: u64) {
    let server = MockServer::start(script()).await.unwrap();
    let env = Env::new();
    // The first run, killed somewhere in its turns (or before its first
    // line: then it is simply started again).
    let mut id = None;
    for _ in 0..5 {
        let (lines, _) = run_once(&env, &server, None, Some(100 + rng.below(1_500))).await;
        id = session_of(&lines);
        if id.is_some() {
            break;
        }
    }
    let id = id.unwrap_or_else(|| panic!("episode {n}: no session started"));
    let mut done = false;
    for attempt in 0..8 {
        // The first resumes may be killed too; the last ones run to the end.
        let kill = (attempt < 2 && rng.below(2) == 0).then(|| 50 + rng.below(1_200));
        let (lines, code) = run_once(&env, &server, Some(&id), kill).await;
        assert!(
            lines.iter().all(|l| l["subtype"] != "session_busy"),
            "episode {n}: a resume waited for a lock: {lines:?}"
        );
        if kill.is_none() {
            assert_eq!(code, Some(0), "episode {n}: the resume failed: {lines:?}");
        }
        if code == Some(0) && lines.last().is_some_and(|l| l["result"] == "ledger done") {
            done = true;
            break;
        }
    }
    assert!(done, "episode {n}: never finished");

    // Each effect at most once.
    let ledger = std::fs::read_to_string(env.path("ledger.txt")).unwrap_or_default();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in ledger.lines() {
        *counts.entry(line).or_default() += 1;
    }
    assert!(counts.values().all(|&c| c == 1), "episode {n}: {ledger:?}");
    // No command of a killed run alive.
    let pids = std::fs::read_to_string(env.path("pids.txt")).unwrap_or_default();
    for pid in pids.lines().filter_map(|p| p.trim().parse::<i32>().ok()) {
        assert_eq!(
            group_members(pid),
            Vec::<i32>::new(),
            "episode {n}: group {pid} alive"
        );
    }
    // Every call exactly one result, after it, in call order.
    let export = output(env.gyre(&["sessions", "export", &id])).await;
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let mut calls: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    for line in stdout(&export).lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        for part in line["message"]["parts"].as_array().into_iter().flatten() {
            match part["type"].as_str() {
                Some("tool_call") => calls.push(part["id"].as_str().unwrap().to_owned()),
                Some("tool_result") => {
                    let call = part["call_id"].as_str().unwrap().to_owned();
                    assert!(
                        calls.contains(&call),
                        "episode {n}: result before call {call}"
                    );
                    assert!(
                        !answered.contains(&call),
                        "episode {n}: {call} answered twice"
                    );
                    answered.push(call);
                }
                _ => {}
            }
        }
    }
    assert_eq!(
        answered, calls,
        "episode {n}: results in call order, one each"
    );
}

#[tokio::test]
async fn random_kills_and_resumes_keep_every_invariant() {
    let episodes = env_number("GYRE_KILL_CAMPAIGN_EPISODES", 24);
    let seed = env_number("GYRE_KILL_CAMPAIGN_SEED", 0x9e37_79b9_7f4a_7c15);
    let mut rng = Rng(seed.max(1));
    for n in 0..episodes {
        episode(&mut rng, n).await;
    }
}
