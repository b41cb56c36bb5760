//! `gyre demo`: a real run with real tools on a generated sample project,
//! driven by the built-in scripted model over real HTTP on 127.0.0.1. No key,
//! no network. The same code path as `gyre run` from the agent down; only the
//! model is scripted.

use std::path::{Path, PathBuf};

use futures::StreamExt;
use gyre_core::{PermissionMode, Permissions};
use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_protocol::Event;
use owo_colors::{OwoColorize, Stream::Stdout};
use serde_json::json;

use gyre_exec::HumanView;
use gyre_host::Settings;
use gyre_host::exit::{Exit, code_for};
use gyre_host::provider::{Provider, Wire};

const PROMPT: &str = "The tests fail (sh test.sh). Find the bug and fix it.";

const MATH_SH: &str = r#"# Arithmetic helpers for the tiny calculator.

add() {
  echo $(( $1 + $2 ))
}

# Prints the mean of its arguments, rounded down.
average() {
  total=0
  for n in "$@"; do
    total=$(( total + n ))
  done
  echo $(( total / ($# + 1) ))
}
"#;

const TEST_SH: &str = r#"#!/bin/sh
# The calculator's tests. Run: sh test.sh
. "$(dirname "$0")/lib/math.sh"

failures=0
check() {
  if [ "$2" = "$3" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1: got $2, expected $3"
    failures=$((failures + 1))
  fi
}

check "add 2 3" "$(add 2 3)" 5
check "average 2 4 6" "$(average 2 4 6)" 4
check "average 10" "$(average 10)" 10

if [ "$failures" -ne 0 ]; then
  echo "$failures test(s) failed"
  exit 1
fi
echo "all tests passed"
"#;

const README_MD: &str =
    "# calc\n\nA tiny calculator in POSIX shell. Run the tests with `sh test.sh`.\n";

/// Writes the sample project (a shell library whose `average` divides by one
/// too many) into `dir`.
pub fn write_sample_project(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("lib"))?;
    std::fs::write(dir.join("lib/math.sh"), MATH_SH)?;
    std::fs::write(dir.join("test.sh"), TEST_SH)?;
    std::fs::write(dir.join("README.md"), README_MD)?;
    Ok(())
}

fn tool(name: &str, arguments: serde_json::Value) -> Item {
    Item::ToolCall {
        id: None,
        name: name.into(),
        arguments,
        fragments: None,
    }
}

/// The scripted model of the demo: list and search, read, edit, test, summarise.
pub fn script() -> Script {
    let turns = vec![
        vec![
            Item::Text("I'll look at the project layout and search for the averaging code.".into()),
            tool("ls", json!({})),
            tool("grep", json!({"pattern": "average", "output_mode": "content"})),
        ],
        vec![
            Item::Text("`average` is defined in lib/math.sh. Let me read it.".into()),
            tool("read", json!({"file_path": "lib/math.sh"})),
        ],
        vec![
            Item::Text(
                "Found it: the total is divided by `$# + 1` instead of by the number of arguments, `$#`. Fixing that."
                    .into(),
            ),
            tool(
                "edit",
                json!({
                    "file_path": "lib/math.sh",
                    "old_string": "echo $(( total / ($# + 1) ))",
                    "new_string": "echo $(( total / $# ))",
                }),
            ),
        ],
        vec![
            Item::Text("Now the tests.".into()),
            tool("bash", json!({"command": "sh test.sh", "description": "Run the test suite"})),
        ],
        vec![Item::Text(
            "Fixed. `average` in lib/math.sh divided the sum by `$# + 1`, so every mean came out too small; \
             it now divides by `$#`, the number of arguments. All three tests pass (`sh test.sh`)."
                .into(),
        )],
    ];
    let steps = turns
        .into_iter()
        .enumerate()
        .map(|(turn, items)| Step {
            when: When {
                turn: Some(turn as u32),
                ..When::default()
            },
            times: None,
            reply: Reply::Stream(StreamReply {
                items,
                // Slow enough to watch it stream, fast enough not to wait.
                delay_between_ms: 6,
                ..StreamReply::default()
            }),
        })
        .collect();
    Script::new(steps)
}

pub async fn run(dir: Option<PathBuf>, home: &Path) -> Result<i32, Exit> {
    let project = match dir {
        Some(dir) => dir,
        None => tempfile::Builder::new()
            .prefix("gyre-demo-")
            .tempdir()
            .map_err(|e| Exit::failure(format!("cannot create a temporary directory: {e}")))?
            .keep(),
    };
    write_sample_project(&project).map_err(|e| {
        Exit::failure(format!(
            "cannot write the sample project in {}: {e}",
            project.display()
        ))
    })?;
    let project = std::fs::canonicalize(&project)
        .map_err(|e| Exit::failure(format!("cannot use {}: {e}", project.display())))?;

    let server = MockServer::start(script())
        .await
        .map_err(|e| Exit::failure(format!("cannot start the scripted model on 127.0.0.1: {e}")))?;
    // A run with every default (as `gyre run` with no flags and no config
    // file) but what the demo needs.
    let settings = Settings {
        provider: Provider {
            name: "anthropic".into(),
            wire: Wire::Anthropic,
            base_url: server.anthropic_base_url(),
            api_key: Some("demo-key".into()),
            model: "gyre-demo-model".into(),
            small_model: None,
        },
        workspace: project.clone(),
        max_turns: Some(20),
        // The project is a throwaway sample: let the scripted model act.
        permissions: Permissions {
            mode: PermissionMode::BypassPermissions,
            ..Permissions::default()
        },
        max_output_tokens: 4096,
        context: gyre_core::ContextConfig {
            window: Some(200_000),
            ..Default::default()
        },
        // A throwaway project: nothing to rewind.
        checkpoints: false,
        ..Settings::default()
    };

    let heading = format!(
        "gyre demo: a scripted model fixes a bug in {}",
        project.display()
    );
    println!("{}", heading.if_supports_color(Stdout, |t| t.bold()));
    println!(
        "{} {PROMPT}\n",
        ">".if_supports_color(Stdout, |t| t.green())
    );

    let (agent, session) = settings.start(home, PROMPT).await?;
    let session_id = session.id().to_string();
    let mut run = agent.run(session, PROMPT.to_string());
    let mut view = HumanView::new();
    let mut summary = None;
    while let Some(event) = run.events.next().await {
        view.show(&event);
        if let Event::RunFinished(finished) = event {
            summary = Some(finished);
        }
    }
    server.shutdown().await;
    let summary = summary.ok_or_else(|| Exit::failure("the demo run ended without a result"))?;

    println!();
    if let Some(error) = &summary.error {
        println!("The demo run did not finish: {}", error.message);
    }
    let project = project.display();
    println!(
        "{} turns, {} ms. The project is at {project} (its tests: sh {project}/test.sh).",
        summary.num_turns, summary.duration_ms
    );
    // `start` succeeded, so the location is valid; it only names it here.
    if let Ok(location) = gyre_host::store::location(home) {
        println!("The session ({session_id}) is stored in {location}.");
    }
    println!("\nWith a real model:");
    // acceptEdits and the one test command allowed: in the default mode a
    // headless run refuses edits, so the suggested task could not be done.
    println!(
        "  ANTHROPIC_API_KEY=sk-ant-… gyre run \"add a test for add with negative numbers\" --cwd {project} \\\n      --permission-mode acceptEdits --allowed-tools \"bash(sh test.sh)\""
    );
    Ok(code_for(&summary))
}
