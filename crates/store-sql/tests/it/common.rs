//! Fixtures shared by the tests, and [`both_backends!`], which runs one test
//! body against SQLite (a temp file) and PostgreSQL (a fresh schema in the
//! database `GYRE_TEST_DATABASE_URL` names, dropped afterwards).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gyre_protocol::{Message, Part, Role, ToolCall, ToolResult, ToolResultContent};
use gyre_store::{Location, SessionMeta, SessionStore};
use gyre_store_sql::{SqliteStore, parse_location};
use sqlx::{Connection, PgConnection, SqliteConnection};
use tempfile::TempDir;

pub const DATABASE_URL_ENV: &str = "GYRE_TEST_DATABASE_URL";

/// Runs the body once per backend: `NAME::sqlite` and `NAME::postgres`.
macro_rules! both_backends {
    ($($(#[$attr:meta])* async fn $name:ident($db:ident: &TestDb) $body:block)*) => {$(
        $(#[$attr])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use crate::common::{Backend, TestDb};

            async fn body($db: &TestDb) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let db = TestDb::new(Backend::Sqlite).await;
                body(&db).await;
                db.finish().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let db = TestDb::new(Backend::Postgres).await;
                body(&db).await;
                db.finish().await;
            }
        }
    )*};
}
pub(crate) use both_backends;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One empty database of one backend, for one test.
pub struct TestDb {
    pub backend: Backend,
    location: Location,
    /// The SQLite file's directory, removed on drop.
    _dir: Option<TempDir>,
    /// The PostgreSQL server and this test's schema in it, dropped by
    /// [`TestDb::finish`] or else on drop.
    pg: Option<(String, String)>,
    /// A connection to the PostgreSQL schema beside the stores: connecting
    /// costs more than most tests (SCRAM and TLS in a debug build).
    admin: Option<tokio::sync::Mutex<PgConnection>>,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        match backend {
            Backend::Sqlite => {
                let (dir, path) = temp_db();
                TestDb {
                    backend,
                    location: Location::sqlite(path),
                    _dir: Some(dir),
                    pg: None,
                    admin: None,
                }
            }
            Backend::Postgres => {
                let Ok(url) = std::env::var(DATABASE_URL_ENV) else {
                    panic!(
                        "set {DATABASE_URL_ENV} to a PostgreSQL database these tests may create \
                         schemas in, e.g. postgres://gyre:gyre@127.0.0.1:5432/gyre_test"
                    );
                };
                let schema = unique_schema();
                let mut admin = PgConnection::connect(&url).await.unwrap_or_else(|e| {
                    panic!("could not connect to {DATABASE_URL_ENV}: {e}");
                });
                let sql = format!("CREATE SCHEMA {schema}; SET search_path TO {schema}");
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut admin)
                    .await
                    .unwrap();
                let separator = if url.contains('?') { '&' } else { '?' };
                let scoped = format!("{url}{separator}options[search_path]={schema}");
                TestDb {
                    backend,
                    location: parse_location(&scoped).unwrap(),
                    _dir: None,
                    pg: Some((url, schema)),
                    admin: Some(tokio::sync::Mutex::new(admin)),
                }
            }
        }
    }

    /// Drops the PostgreSQL schema (a test that panics leaves it to drop).
    pub async fn finish(mut self) {
        let (Some((_, schema)), Some(admin)) = (self.pg.take(), self.admin.take()) else {
            return;
        };
        let mut admin = admin.into_inner();
        let sql = format!("DROP SCHEMA {schema} CASCADE");
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.unwrap();
    }

    /// A store on this database; each call is a new one (a new process, as
    /// far as the database can tell).
    pub async fn open(&self) -> Arc<dyn SessionStore> {
        gyre_store_sql::open(&self.location).await.unwrap()
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Runs SQL (several statements allowed) beside the store.
    pub async fn exec(&self, sql: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match self.backend {
            Backend::Sqlite => {
                let mut conn = self.sqlite_conn().await;
                sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
                conn.close().await.unwrap();
            }
            Backend::Postgres => {
                let mut conn = self.pg_conn().await;
                sqlx::raw_sql(sql).execute(&mut *conn).await.unwrap();
            }
        }
    }

    /// The rows of a two-column query (text, nullable text).
    pub async fn pairs(&self, sql: &str) -> Vec<(String, Option<String>)> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match self.backend {
            Backend::Sqlite => {
                let mut conn = self.sqlite_conn().await;
                sqlx::query_as(sql).fetch_all(&mut conn).await.unwrap()
            }
            Backend::Postgres => {
                let mut conn = self.pg_conn().await;
                sqlx::query_as(sql).fetch_all(&mut *conn).await.unwrap()
            }
        }
    }

    /// The versions recorded in `schema_version`, in order.
    pub async fn versions(&self) -> Vec<i64> {
        let sql = "SELECT version FROM schema_version ORDER BY version";
        match self.backend {
            Backend::Sqlite => {
                let mut conn = self.sqlite_conn().await;
                sqlx::query_scalar(sql).fetch_all(&mut conn).await.unwrap()
            }
            Backend::Postgres => {
                let mut conn = self.pg_conn().await;
                sqlx::query_scalar(sql).fetch_all(&mut *conn).await.unwrap()
            }
        }
    }

    async fn sqlite_conn(&self) -> SqliteConnection {
        let path = self.location.sqlite_path().unwrap();
        SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap()
    }

    async fn pg_conn(&self) -> tokio::sync::MutexGuard<'_, PgConnection> {
        self.admin.as_ref().unwrap().lock().await
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((url, schema)) = self.pg.take() else {
            return;
        };
        // Drop runs outside async; a thread of its own may block on a
        // runtime of its own, also while the test's runtime shuts down.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&url).await.ok()?;
                let sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        });
        let _ = dropped.join();
    }
}

/// A schema name no other test (in this or another process) uses.
fn unique_schema() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "gyre_t_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh directory and the database path inside it (in a subdirectory that
/// does not exist yet, so `open` must create it).
pub fn temp_db() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("sessions.db");
    (dir, path)
}

pub async fn open(path: &std::path::Path) -> SqliteStore {
    SqliteStore::open(path).await.unwrap()
}

pub fn meta(id: &str, updated_at_ms: i64) -> SessionMeta {
    SessionMeta {
        id: id.to_owned(),
        cwd: "/work/project".to_owned(),
        provider: "anthropic".to_owned(),
        model: "claude-test".to_owned(),
        title: format!("title of {id}"),
        created_at_ms: updated_at_ms,
        updated_at_ms,
        parent_id: None,
    }
}

/// One part of every kind, with the fields most likely to be lost set.
pub fn every_part_kind() -> Vec<Part> {
    vec![
        Part::text("plain text with \"quotes\", a newline\nand unicode ✓"),
        Part::Reasoning {
            text: "thinking".into(),
            signature: Some("sig-abc".into()),
            redacted: false,
        },
        Part::Reasoning {
            text: String::new(),
            signature: None,
            redacted: true,
        },
        // Arguments are kept byte for byte, even when they are not JSON.
        Part::ToolCall(ToolCall::new(
            "call-1",
            "read",
            r#"{ "file_path" : "a.rs" }"#,
        )),
        Part::ToolCall(ToolCall::new("call-2", "bash", "{not json")),
        Part::ToolResult(ToolResult {
            call_id: "call-1".into(),
            name: "read".into(),
            content: vec![
                ToolResultContent::Text {
                    text: "fn main() {}".into(),
                },
                ToolResultContent::Image {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                },
            ],
            is_error: false,
            title: "read a.rs (1 line)".into(),
        }),
        Part::ToolResult(ToolResult {
            call_id: "call-2".into(),
            name: "bash".into(),
            content: vec![],
            is_error: true,
            title: String::new(),
        }),
        Part::Image {
            media_type: "image/jpeg".into(),
            data: "/9j/4AAQ".into(),
        },
    ]
}

pub fn assistant(id: &str, parts: Vec<Part>) -> Message {
    Message::new(id, Role::Assistant, parts)
}

/// The ids of `messages`, in order.
pub fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.id.as_str()).collect()
}
