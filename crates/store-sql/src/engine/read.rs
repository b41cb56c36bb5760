//! The read side: sessions, their state, messages and checkpoints.
//!
//! Invariants:
//! - Each read is one statement, so it sees one consistent snapshot without
//!   an explicit transaction, even while another process writes; an export
//!   reads in one read transaction, one snapshot for all its statements.
//! - Rows are streamed and decoded one at a time; nothing but the result is
//!   buffered.
//! - A row that cannot be decoded is a [`StoreError::Decode`] naming the
//!   database and session, never a panic.

use futures::TryStreamExt;
use gyre_protocol::{Message, Origin};
use gyre_store::{Checkpoint, SessionMeta, SessionRecord, StoreError};

use super::{Backend, parse_role};
use crate::dialect::{Arg, Dialect};
use crate::sql;

type Row<B> = <<B as Backend>::Db as sqlx::Database>::Row;
type Conn<B> = <<B as Backend>::Db as sqlx::Database>::Connection;

/// Everything of a session from one snapshot: a read transaction, so a
/// session being written is exported whole up to some commit.
pub(super) async fn export_session<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<SessionRecord, StoreError> {
    const ACTION: &str = "export a session";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_read(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    let Some(meta) = session_in(b, &mut tx, session_id).await? else {
        return Err(b.session_not_found(session_id));
    };
    let record = SessionRecord {
        meta,
        state: state_in(b, &mut tx, session_id).await?,
        messages: messages_in(b, &mut tx, session_id).await?,
        checkpoints: checkpoints_in(b, &mut tx, session_id).await?,
    };
    tx.commit().await.map_err(|e| b.fail(ACTION, e))?;
    Ok(record)
}

pub(super) async fn load_state<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<Option<serde_json::Value>, StoreError> {
    let mut conn = b.conn().await?;
    state_in(b, &mut conn, session_id).await
}

async fn state_in<B: Backend>(
    b: &B,
    conn: &mut Conn<B>,
    session_id: &str,
) -> Result<Option<serde_json::Value>, StoreError> {
    const ACTION: &str = "load the session state";
    let row = B::Db::fetch_optional(conn, sql::SELECT_STATE, &[Arg::Text(session_id)])
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    let Some(row) = row else {
        return Err(b.session_not_found(session_id));
    };
    match B::Db::text(&row, 0).map_err(|e| b.fail(ACTION, e))? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| b.decode_error(session_id, "session state", e.to_string())),
    }
}

pub(super) async fn load_messages<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<Vec<Message>, StoreError> {
    let mut conn = b.conn().await?;
    messages_in(b, &mut conn, session_id).await
}

async fn messages_in<B: Backend>(
    b: &B,
    conn: &mut Conn<B>,
    session_id: &str,
) -> Result<Vec<Message>, StoreError> {
    const ACTION: &str = "load the messages";
    let mut rows = B::Db::fetch(conn, sql::SELECT_MESSAGES, &[Arg::Text(session_id)]);
    let mut session_exists = false;
    let mut messages: Vec<Message> = Vec::new();
    while let Some(row) = rows.try_next().await.map_err(|e| b.fail(ACTION, e))? {
        session_exists = true;
        let column = |i| B::Db::text(&row, i).map_err(|e| b.fail(ACTION, e));
        let Some(id) = column(0)? else { continue };
        if messages.last().is_none_or(|m| m.id != id) {
            let role = column(1)?;
            let role = parse_role(role.as_deref())
                .ok_or_else(|| b.decode_error(session_id, "message role", format!("{role:?}")))?;
            let origin = match column(3)? {
                None => Origin::Conversation,
                Some(text) => serde_json::from_str(&text)
                    .map_err(|e| b.decode_error(session_id, "message origin", e.to_string()))?,
            };
            messages.push(Message::new(id, role, Vec::new()).with_origin(origin));
        }
        if let (Some(data), Some(message)) = (column(2)?, messages.last_mut()) {
            let part = serde_json::from_str(&data)
                .map_err(|e| b.decode_error(session_id, "message part", e.to_string()))?;
            message.parts.push(part);
        }
    }
    if !session_exists {
        return Err(b.session_not_found(session_id));
    }
    Ok(messages)
}

pub(super) async fn get_session<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<Option<SessionMeta>, StoreError> {
    let mut conn = b.conn().await?;
    session_in(b, &mut conn, session_id).await
}

async fn session_in<B: Backend>(
    b: &B,
    conn: &mut Conn<B>,
    session_id: &str,
) -> Result<Option<SessionMeta>, StoreError> {
    const ACTION: &str = "load a session";
    let row = B::Db::fetch_optional(conn, sql::SELECT_SESSION, &[Arg::Text(session_id)])
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    row.map(|row| session_row(b, &row, ACTION)).transpose()
}

pub(super) async fn list_sessions<B: Backend>(b: &B) -> Result<Vec<SessionMeta>, StoreError> {
    sessions_of(b, sql::LIST_SESSIONS, &[], "list the sessions").await
}

pub(super) async fn list_children<B: Backend>(
    b: &B,
    parent_id: &str,
) -> Result<Vec<SessionMeta>, StoreError> {
    let args = [Arg::Text(parent_id)];
    sessions_of(b, sql::LIST_CHILDREN, &args, "list a session's children").await
}

/// The sessions a query selecting [`sql::SELECT_SESSION`]'s columns finds.
async fn sessions_of<B: Backend>(
    b: &B,
    query: &'static str,
    args: &[Arg<'_>],
    action: &'static str,
) -> Result<Vec<SessionMeta>, StoreError> {
    let mut conn = b.conn().await?;
    let mut rows = B::Db::fetch(&mut conn, query, args);
    let mut sessions = Vec::new();
    while let Some(row) = rows.try_next().await.map_err(|e| b.fail(action, e))? {
        sessions.push(session_row(b, &row, action)?);
    }
    Ok(sessions)
}

pub(super) async fn checkpoints<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<Vec<Checkpoint>, StoreError> {
    let mut conn = b.conn().await?;
    checkpoints_in(b, &mut conn, session_id).await
}

async fn checkpoints_in<B: Backend>(
    b: &B,
    conn: &mut Conn<B>,
    session_id: &str,
) -> Result<Vec<Checkpoint>, StoreError> {
    const ACTION: &str = "load the checkpoints";
    let mut rows = B::Db::fetch(conn, sql::SELECT_CHECKPOINTS, &[Arg::Text(session_id)]);
    let mut session_exists = false;
    let mut checkpoints = Vec::new();
    while let Some(row) = rows.try_next().await.map_err(|e| b.fail(ACTION, e))? {
        session_exists = true;
        let text = |i| B::Db::text(&row, i).map_err(|e| b.fail(ACTION, e));
        let Some(id) = text(0)? else { continue };
        let missing = |what| b.decode_error(session_id, what, "NULL".to_owned());
        checkpoints.push(Checkpoint {
            id,
            message_id: text(1)?.ok_or_else(|| missing("checkpoint message"))?,
            call_id: text(2)?,
            snapshot: text(3)?.ok_or_else(|| missing("checkpoint snapshot"))?,
            created_at_ms: B::Db::int(&row, 4)
                .map_err(|e| b.fail(ACTION, e))?
                .ok_or_else(|| missing("checkpoint time"))?,
        });
    }
    if !session_exists {
        return Err(b.session_not_found(session_id));
    }
    Ok(checkpoints)
}

/// Reads the columns every session query selects, in their order.
fn session_row<B: Backend>(
    b: &B,
    row: &Row<B>,
    action: &'static str,
) -> Result<SessionMeta, StoreError> {
    let text = |i| {
        B::Db::text(row, i)
            .map_err(|e| b.fail(action, e))?
            .ok_or_else(|| b.fail(action, null_column(i)))
    };
    let int = |i| {
        B::Db::int(row, i)
            .map_err(|e| b.fail(action, e))?
            .ok_or_else(|| b.fail(action, null_column(i)))
    };
    Ok(SessionMeta {
        id: text(0)?,
        cwd: text(1)?,
        provider: text(2)?,
        model: text(3)?,
        title: text(4)?,
        created_at_ms: int(5)?,
        updated_at_ms: int(6)?,
        parent_id: B::Db::text(row, 7).map_err(|e| b.fail(action, e))?,
    })
}

/// A NULL where the schema says NOT NULL.
fn null_column(index: usize) -> sqlx::Error {
    sqlx::Error::Decode(format!("column {index} is NULL").into())
}
