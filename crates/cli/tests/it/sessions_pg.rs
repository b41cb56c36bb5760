//! `GYRE_DATABASE_URL`: runs and `gyre sessions …` on a real PostgreSQL, in
//! a fresh schema of the database `GYRE_TEST_DATABASE_URL` names (created
//! here, dropped afterwards). Without that variable the tests fail, saying
//! so: a skipped PostgreSQL test would pass without testing anything.

use std::sync::atomic::{AtomicUsize, Ordering};

use gyre_mock::MockServer;
use sqlx::{Connection, PgConnection};

use crate::common::*;

const TEST_URL_ENV: &str = "GYRE_TEST_DATABASE_URL";

/// A schema of its own on the test server; dropped by [`Schema::drop_now`],
/// or else (a failed test) on drop.
pub struct Schema {
    server_url: String,
    name: String,
    /// `GYRE_DATABASE_URL` for gyre: the server URL with the schema as its
    /// search path.
    pub url: String,
}

impl Schema {
    pub async fn create() -> Schema {
        let Ok(server_url) = std::env::var(TEST_URL_ENV) else {
            panic!(
                "set {TEST_URL_ENV} to a PostgreSQL database these tests may create schemas in, \
                 e.g. postgres://gyre:gyre@127.0.0.1:5432/gyre_test?sslmode=disable"
            );
        };
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "gyre_cli_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        exec(&server_url, &format!("CREATE SCHEMA {name}")).await;
        let separator = if server_url.contains('?') { '&' } else { '?' };
        let url = format!("{server_url}{separator}options[search_path]={name}");
        Schema {
            server_url,
            name,
            url,
        }
    }

    pub async fn drop_now(mut self) {
        let name = std::mem::take(&mut self.name);
        exec(&self.server_url, &format!("DROP SCHEMA {name} CASCADE")).await;
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        if self.name.is_empty() {
            return;
        }
        let (url, sql) = (
            self.server_url.clone(),
            format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
        // Outside async: a thread with a runtime of its own.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&url).await.ok()?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut conn)
                    .await
                    .ok()
            })
        })
        .join();
    }
}

async fn exec(url: &str, sql: &str) {
    let mut conn = PgConnection::connect(url)
        .await
        .unwrap_or_else(|e| panic!("could not connect to {TEST_URL_ENV}: {e}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

async fn gyre_pg(env: &Env, schema: &Schema, args: &[&str]) -> String {
    let mut cmd = env.gyre(args);
    cmd.env("GYRE_DATABASE_URL", &schema.url);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[tokio::test]
async fn sessions_live_in_postgres_and_round_trip() {
    let schema = Schema::create().await;
    let env = Env::new();
    write(&env.path("notes.txt"), "milk\n");
    let server = MockServer::start(three_step_script()).await.unwrap();
    let mut cmd = env.run_on(&server, "do it", &[]);
    cmd.env("GYRE_DATABASE_URL", &schema.url);
    let id = session_of(cmd).await;
    assert!(
        !env.database().exists(),
        "nothing goes to $GYRE_HOME/sessions.db"
    );

    let list = gyre_pg(&env, &schema, &["sessions", "list", "--here"]).await;
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(list.starts_with(&format!("{id}  ")), "{list}");

    let export = gyre_pg(&env, &schema, &["sessions", "export", &id]).await;
    let kinds: Vec<String> = export
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    let count = |kind: &str| kinds.iter().filter(|k| k.trim_matches('"') == kind).count();
    assert_eq!(count("session"), 1, "{export}");
    assert_eq!(count("message"), 6, "{export}");
    assert_eq!(count("checkpoint"), 1, "one before the bash call: {export}");
    let file = env.home.path().join("export.jsonl");
    std::fs::write(&file, &export).unwrap();

    gyre_pg(&env, &schema, &["sessions", "delete", &id]).await;
    assert_eq!(gyre_pg(&env, &schema, &["sessions", "list"]).await, "");
    let imported = gyre_pg(
        &env,
        &schema,
        &["sessions", "import", file.to_str().unwrap()],
    )
    .await;
    assert_eq!(imported, format!("{id}\n"));
    assert_eq!(
        gyre_pg(&env, &schema, &["sessions", "export", &id]).await,
        export
    );

    // The same session goes on from PostgreSQL.
    let chat = MockServer::start(always("resumed")).await.unwrap();
    let mut cmd = env.run_on(&chat, "more", &["--continue"]);
    cmd.env("GYRE_DATABASE_URL", &schema.url);
    assert_eq!(session_of(cmd).await, id);
    schema.drop_now().await;
}

#[tokio::test]
async fn a_refused_connection_does_not_show_the_password() {
    let Ok(server_url) = std::env::var(TEST_URL_ENV) else {
        panic!("set {TEST_URL_ENV} (see sessions_live_in_postgres_and_round_trip)");
    };
    // The test server's address with a user and password it does not know.
    let rest = server_url.split_once('@').map_or("", |(_, rest)| rest);
    let url = format!("postgres://nobody:pw-hunter2-secret@{rest}");
    let env = Env::new();
    let mut cmd = env.gyre(&["sessions", "list"]);
    cmd.env("GYRE_DATABASE_URL", &url);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("pw-hunter2-secret"), "{err}");
    assert!(err.contains("postgres://nobody@"), "{err}");

    let mut cmd = env.gyre(&["sessions", "list"]);
    cmd.env("GYRE_DATABASE_URL", "postgress://u:pw-hunter2-secret@h/d");
    let out = output(cmd).await;
    assert_usage_error(&out, "GYRE_DATABASE_URL");
    assert!(!stderr(&out).contains("pw-hunter2-secret"));
}
