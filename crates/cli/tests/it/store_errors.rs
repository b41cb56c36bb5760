//! Store failures a person can act on (issue 22, item 5), on real files: a
//! corrupt database (never written into; every command fails on it), a
//! read-only `GYRE_HOME` (reads work, a run says what to do), a full disk
//! (a real, tiny tmpfs in a private mount namespace).

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use gyre_mock::{Item, MockServer, Reply, Script, Step, StreamReply, When};
use gyre_store_sql::SqliteStore;

use crate::common::*;

/// A home with one finished session, its WAL folded into the file (so the
/// file alone holds everything); returns the session's id.
async fn one_session(env: &Env) -> String {
    let server = MockServer::start(Script::linear(vec![vec![Item::Text("hello".into())]]))
        .await
        .unwrap();
    let out = output(env.run_on(&server, "hi", &[])).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = json_lines(&out)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    SqliteStore::open(&env.database())
        .await
        .unwrap()
        .close()
        .await
        .unwrap();
    id
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn a_corrupt_database_is_never_written_and_every_command_says_to_move_it_aside() {
    let env = Env::new();
    let id = one_session(&env).await;
    let path = env.database();
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 6 * 4096, "the fixture spans several pages");
    // The header page stays; pages in the middle are overwritten.
    let end = bytes.len() - 4096;
    for byte in &mut bytes[2 * 4096..end] {
        *byte = 0xa5;
    }
    std::fs::write(&path, &bytes).unwrap();

    let server = MockServer::start(always("never")).await.unwrap();
    for args in [
        &["run", "again", "--output-format", "stream-json"][..],
        &["run", "more", "--resume", &id][..],
        &["sessions", "list"][..],
        &["sessions", "export", &id][..],
    ] {
        let out = output(env.gyre_on(&server, args)).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout(&out));
        let said = stderr(&out);
        assert!(said.contains("is corrupt"), "{args:?}: {said}");
        assert!(said.contains("move it aside"), "{args:?}: {said}");
        assert!(
            said.contains(&format!("mv {}", path.display())),
            "{args:?}: {said}"
        );
        assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{args:?} wrote into it"
        );
    }
    assert!(
        server.requests().is_empty(),
        "no run got as far as the model"
    );
}

/// As root, permissions do not stop writes: the commands run as `nobody`
/// (`env`'s directories are owned by whoever runs the tests).
fn as_nobody(env: &Env) -> Vec<&'static str> {
    use std::os::unix::fs::MetadataExt;
    if env.home.path().metadata().unwrap().uid() == 0 {
        vec![
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]
    } else {
        Vec::new()
    }
}

/// With the write-ahead log folded into the file (no `-shm` beside it) and
/// with a log left by a run (read through its `-shm`): reads work either way.
#[tokio::test]
async fn a_read_only_home_still_lists_and_exports_and_a_run_says_what_to_do() {
    read_only_home(false).await;
    read_only_home(true).await;
}

async fn read_only_home(with_log: bool) {
    let env = Env::new();
    let id = one_session(&env).await;
    if with_log {
        // A run killed mid-request leaves its log (nothing checkpointed it).
        let server = MockServer::start(Script::new(vec![Step {
            when: When::default(),
            times: None,
            reply: Reply::Stream(StreamReply {
                items: vec![Item::Text("never".into())],
                stall_before_headers_ms: u64::MAX,
                ..StreamReply::default()
            }),
        }]))
        .await
        .unwrap();
        let mut run = env
            .run_on(&server, "again", &["--resume", &id])
            .spawn()
            .unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while server.requests().is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the run asked the model");
        run.start_kill().unwrap();
        run.wait().await.unwrap();
        let mut wal = env.database().into_os_string();
        wal.push("-wal");
        assert!(Path::new(&wal).exists(), "a log is left");
    }
    for dir in [env.workspace.path(), env.config.path()] {
        chmod(dir, 0o755);
    }
    chmod(&env.config.path().join("gyre"), 0o755);
    chmod(&env.config.path().join("gyre/config.toml"), 0o644);
    // Whatever `one_session` left beside the file (logs, spill) stays
    // readable; the home and the database are read-only.
    for entry in std::fs::read_dir(env.home.path()).unwrap() {
        let entry = entry.unwrap().path();
        chmod(&entry, if entry.is_dir() { 0o555 } else { 0o444 });
    }
    chmod(env.home.path(), 0o555);
    let nobody = as_nobody(&env);
    let server = MockServer::start(always("never")).await.unwrap();

    let list = output(env.gyre_via(&nobody, &["sessions", "list"])).await;
    assert_eq!(
        list.status.code(),
        Some(0),
        "log {with_log}: {}",
        stderr(&list)
    );
    assert!(stdout(&list).starts_with(&id), "{}", stdout(&list));
    let export = output(env.gyre_via(&nobody, &["sessions", "export", &id])).await;
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    assert!(stdout(&export).contains("\"type\":\"session\""));

    let mut run = env.gyre_via(&nobody, &["run", "hi"]);
    run.env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url());
    let run = output(run).await;
    assert_eq!(run.status.code(), Some(1), "{}", stdout(&run));
    let said = stderr(&run);
    assert!(said.contains("cannot be written"), "{said}");
    assert!(said.contains("GYRE_HOME"), "{said}");
    assert!(
        said.contains(&env.home.path().display().to_string()),
        "{said}"
    );
    chmod(env.home.path(), 0o700);
}

#[tokio::test]
async fn a_full_disk_says_how_much_is_free_and_where() {
    let env = Env::new();
    let id = one_session(&env).await;
    let home = env.home.path().display().to_string();
    let full = env.workspace.path().join("full");
    std::fs::create_dir(&full).unwrap();
    let full = full.display().to_string();
    // A private mount namespace: a 256 KiB tmpfs over the home, the
    // database copied in, the rest filled.
    let script = format!(
        "mkdir -p /tmp/gyre-full-copy.$$ && cp {home}/sessions.db /tmp/gyre-full-copy.$$/ && \
         mount -t tmpfs -o size=256k tmpfs {full} && cp /tmp/gyre-full-copy.$$/sessions.db {full}/ && \
         rm -r /tmp/gyre-full-copy.$$ && \
         (dd if=/dev/zero of={full}/fill bs=4k 2>/dev/null; true) && exec \"$0\" \"$@\""
    );
    let prefix = ["unshare", "-Urm", "sh", "-c", script.as_str()];
    let server = MockServer::start(always("never")).await.unwrap();
    let mut run = env.gyre_via(&prefix, &["run", "more", "--resume", &id]);
    run.env("GYRE_HOME", &full)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url());
    let run = output(run).await;
    assert_eq!(run.status.code(), Some(1), "{}", stdout(&run));
    let said = stderr(&run);
    assert!(said.contains("is full"), "{said}");
    assert!(
        said.contains(&format!("free on the file system of {full}")),
        "{said}"
    );
    assert!(said.contains("free some space"), "{said}");
    // The real home was never touched.
    assert!(std::fs::metadata(env.database()).unwrap().len() > 0);
}
