//! The read side: sessions, their state and their messages.
//!
//! Invariants:
//! - Each read is one statement, so it sees one consistent snapshot without
//!   an explicit transaction, even while another process writes.
//! - Rows are streamed and decoded one at a time; nothing but the result is
//!   buffered.
//! - A row that cannot be decoded is a [`StoreError::Decode`] naming the file
//!   and session, never a panic.

use futures::TryStreamExt;
use gyre_protocol::{Message, Origin, Role};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::SqliteStore;
use crate::{SessionMeta, StoreError};

impl SqliteStore {
    pub(super) async fn select_state(
        &self,
        session_id: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let mut conn = self.conn.lock().await;
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT state FROM sessions WHERE id = $1")
                .bind(session_id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| self.query_error("load the session state", e))?;
        drop(conn);
        match row {
            None => Err(self.session_not_found(session_id)),
            Some((None,)) => Ok(None),
            Some((Some(text),)) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| self.decode_error(session_id, "session state", e.to_string())),
        }
    }

    pub(super) async fn select_messages(
        &self,
        session_id: &str,
    ) -> Result<Vec<Message>, StoreError> {
        const ACTION: &str = "load the messages";
        // One statement, so one consistent snapshot. Starting from `sessions`
        // tells a missing session (no row) from an empty one (one row of NULLs).
        let mut conn = self.conn.lock().await;
        let mut rows = sqlx::query(
            "SELECT m.id, m.role, p.data, m.origin \
             FROM sessions s \
             LEFT JOIN messages m ON m.session_id = s.id \
             LEFT JOIN parts p ON p.session_id = m.session_id AND p.message_id = m.id \
             WHERE s.id = $1 \
             ORDER BY m.seq, p.idx",
        )
        .bind(session_id)
        .fetch(&mut *conn);
        let mut session_exists = false;
        let mut messages: Vec<Message> = Vec::new();
        while let Some(row) = rows
            .try_next()
            .await
            .map_err(|e| self.query_error(ACTION, e))?
        {
            session_exists = true;
            let (id, role, data, origin) =
                message_row(&row).map_err(|e| self.query_error(ACTION, e))?;
            let Some(id) = id else { continue };
            if messages.last().is_none_or(|m| m.id != id) {
                let role = parse_role(role.as_deref()).ok_or_else(|| {
                    self.decode_error(session_id, "message role", format!("{role:?}"))
                })?;
                let origin = match origin {
                    None => Origin::Conversation,
                    Some(text) => serde_json::from_str(&text).map_err(|e| {
                        self.decode_error(session_id, "message origin", e.to_string())
                    })?,
                };
                messages.push(Message::new(id, role, Vec::new()).with_origin(origin));
            }
            if let (Some(data), Some(message)) = (data, messages.last_mut()) {
                let part = serde_json::from_str(&data)
                    .map_err(|e| self.decode_error(session_id, "message part", e.to_string()))?;
                message.parts.push(part);
            }
        }
        if !session_exists {
            return Err(self.session_not_found(session_id));
        }
        Ok(messages)
    }

    pub(super) async fn select_session(
        &self,
        session_id: &str,
    ) -> Result<Option<SessionMeta>, StoreError> {
        let mut conn = self.conn.lock().await;
        let row = sqlx::query(
            "SELECT id, cwd, provider, model, title, created_at_ms, updated_at_ms \
             FROM sessions WHERE id = $1",
        )
        .bind(session_id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| self.query_error("load a session", e))?;
        row.as_ref()
            .map(session_row)
            .transpose()
            .map_err(|e| self.query_error("load a session", e))
    }

    pub(super) async fn select_sessions(&self) -> Result<Vec<SessionMeta>, StoreError> {
        const ACTION: &str = "list the sessions";
        let mut conn = self.conn.lock().await;
        let mut rows = sqlx::query(
            "SELECT id, cwd, provider, model, title, created_at_ms, updated_at_ms \
             FROM sessions ORDER BY updated_at_ms DESC, id DESC",
        )
        .fetch(&mut *conn);
        let mut sessions = Vec::new();
        while let Some(row) = rows
            .try_next()
            .await
            .map_err(|e| self.query_error(ACTION, e))?
        {
            sessions.push(session_row(&row).map_err(|e| self.query_error(ACTION, e))?);
        }
        Ok(sessions)
    }
}

type MessageRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn message_row(row: &SqliteRow) -> Result<MessageRow, sqlx::Error> {
    Ok((
        row.try_get(0)?,
        row.try_get(1)?,
        row.try_get(2)?,
        row.try_get(3)?,
    ))
}

/// Reads the columns both session queries select, in their order.
fn session_row(row: &SqliteRow) -> Result<SessionMeta, sqlx::Error> {
    Ok(SessionMeta {
        id: row.try_get(0)?,
        cwd: row.try_get(1)?,
        provider: row.try_get(2)?,
        model: row.try_get(3)?,
        title: row.try_get(4)?,
        created_at_ms: row.try_get(5)?,
        updated_at_ms: row.try_get(6)?,
    })
}

pub(super) fn parse_role(name: Option<&str>) -> Option<Role> {
    match name? {
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        _ => None,
    }
}
