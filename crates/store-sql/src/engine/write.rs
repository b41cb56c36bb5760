//! Appending to a session, and removing one: the writes of the loop's hot
//! path (one transaction per append).
//!
//! Invariants:
//! - Messages are numbered per session (`seq`) and parts per message (`idx`)
//!   at insert time, inside the writing transaction, so loads come back in
//!   append order whatever the ids.
//! - Every append and state save bumps `sessions.updated_at_ms`, which orders
//!   [`gyre_store::SessionStore::list_sessions`]; its `UPDATE` is the
//!   transaction's first statement, taking the session row's lock before
//!   anything is numbered.

use gyre_protocol::{Message, Part};
use gyre_store::{SessionMeta, StoreError};

use super::{Backend, as_int, encode_origin, encode_part, role_name};
use crate::dialect::{Arg, Dialect, local_now_ms};
use crate::error::is_unique_violation;
use crate::sql;

/// The arguments of [`sql::INSERT_SESSION`] (and of [`sql::FORK_SESSION`]
/// once `$8` names the source).
pub(super) fn session_args<'a>(meta: &'a SessionMeta, state: Option<&'a str>) -> [Arg<'a>; 9] {
    [
        Arg::Text(&meta.id),
        Arg::Text(&meta.cwd),
        Arg::Text(&meta.provider),
        Arg::Text(&meta.model),
        Arg::Text(&meta.title),
        Arg::Int(meta.created_at_ms),
        Arg::Int(meta.updated_at_ms),
        Arg::MaybeText(state),
        Arg::MaybeText(meta.parent_id.as_deref()),
    ]
}

pub(super) async fn create_session<B: Backend>(
    b: &B,
    meta: &SessionMeta,
) -> Result<(), StoreError> {
    let mut conn = b.conn().await?;
    match B::Db::execute(&mut conn, sql::INSERT_SESSION, &session_args(meta, None)).await {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(b.session_exists(&meta.id)),
        Err(e) => Err(b.fail("create a session", e)),
    }
}

/// A message's columns and parts, encoded before any connection is taken.
pub(super) struct EncodedMessage<'m> {
    pub(super) message: &'m Message,
    pub(super) origin: Option<String>,
    pub(super) parts: Vec<String>,
}

impl<'m> EncodedMessage<'m> {
    pub(super) fn new(message: &'m Message) -> Result<Self, StoreError> {
        Ok(EncodedMessage {
            message,
            origin: encode_origin(&message.origin)?,
            parts: message
                .parts
                .iter()
                .map(encode_part)
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Inserts a message after the session's last one, with its parts, inside
/// the caller's transaction.
pub(super) async fn insert_message<B: Backend>(
    b: &B,
    conn: &mut <B::Db as sqlx::Database>::Connection,
    session_id: &str,
    encoded: &EncodedMessage<'_>,
    now: i64,
    action: &'static str,
) -> Result<(), StoreError> {
    let message = encoded.message;
    let inserted = B::Db::execute(
        conn,
        sql::APPEND_MESSAGE,
        &[
            Arg::Text(session_id),
            Arg::Text(&message.id),
            Arg::Text(role_name(message.role)),
            Arg::Int(now),
            Arg::MaybeText(encoded.origin.as_deref()),
        ],
    )
    .await;
    match inserted {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => {
            return Err(StoreError::MessageExists {
                session_id: session_id.to_owned(),
                message_id: message.id.clone(),
            });
        }
        Err(e) => return Err(b.fail(action, e)),
    }
    for (idx, data) in encoded.parts.iter().enumerate() {
        B::Db::execute(
            conn,
            sql::INSERT_PART,
            &[
                Arg::Text(session_id),
                Arg::Text(&message.id),
                Arg::Int(as_int(idx)),
                Arg::Text(data),
            ],
        )
        .await
        .map_err(|e| b.fail(action, e))?;
    }
    Ok(())
}

pub(super) async fn append_message<B: Backend>(
    b: &B,
    session_id: &str,
    message: &Message,
) -> Result<(), StoreError> {
    const ACTION: &str = "append a message";
    let encoded = EncodedMessage::new(message)?;
    let now = local_now_ms();
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    let touched = B::Db::execute(
        &mut tx,
        sql::TOUCH_SESSION,
        &[Arg::Text(session_id), Arg::Int(now)],
    )
    .await
    .map_err(|e| b.fail(ACTION, e))?;
    if touched == 0 {
        return Err(b.session_not_found(session_id));
    }
    insert_message(b, &mut tx, session_id, &encoded, now, ACTION).await?;
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

pub(super) async fn append_part<B: Backend>(
    b: &B,
    session_id: &str,
    message_id: &str,
    part: &Part,
) -> Result<(), StoreError> {
    const ACTION: &str = "append a part";
    let data = encode_part(part)?;
    let now = local_now_ms();
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    // A missing session inserts no part below, which reports the message
    // missing: the same answer as before the session row was taken first.
    B::Db::execute(
        &mut tx,
        sql::TOUCH_SESSION,
        &[Arg::Text(session_id), Arg::Int(now)],
    )
    .await
    .map_err(|e| b.fail(ACTION, e))?;
    let inserted = B::Db::execute(
        &mut tx,
        sql::APPEND_PART,
        &[
            Arg::Text(session_id),
            Arg::Text(message_id),
            Arg::Text(&data),
        ],
    )
    .await
    .map_err(|e| b.fail(ACTION, e))?;
    if inserted == 0 {
        return Err(StoreError::MessageNotFound {
            session_id: session_id.to_owned(),
            message_id: message_id.to_owned(),
        });
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

pub(super) async fn discard_message<B: Backend>(
    b: &B,
    session_id: &str,
    message_id: &str,
) -> Result<(), StoreError> {
    const ACTION: &str = "discard a message";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    B::Db::execute(&mut tx, sql::LOCK_SESSION_ROW, &[Arg::Text(session_id)])
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    for statement in sql::DELETE_MESSAGE {
        B::Db::execute(
            &mut tx,
            statement,
            &[Arg::Text(session_id), Arg::Text(message_id)],
        )
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

pub(super) async fn save_state<B: Backend>(
    b: &B,
    session_id: &str,
    state: &serde_json::Value,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(state).map_err(|source| StoreError::Encode {
        what: "session state",
        source,
    })?;
    let mut conn = b.conn().await?;
    let updated = B::Db::execute(
        &mut conn,
        sql::SAVE_STATE,
        &[
            Arg::Text(session_id),
            Arg::Text(&text),
            Arg::Int(local_now_ms()),
        ],
    )
    .await
    .map_err(|e| b.fail("save the session state", e))?;
    if updated == 0 {
        return Err(b.session_not_found(session_id));
    }
    Ok(())
}

pub(super) async fn delete_session<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<bool, StoreError> {
    const ACTION: &str = "delete a session";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    // Taken first so that no append to the session commits in between.
    let found = B::Db::execute(&mut tx, sql::LOCK_SESSION_ROW, &[Arg::Text(session_id)])
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    if found == 0 {
        return Ok(false);
    }
    for statement in sql::DELETE_SESSION {
        B::Db::execute(&mut tx, statement, &[Arg::Text(session_id)])
            .await
            .map_err(|e| b.fail(ACTION, e))?;
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))?;
    Ok(true)
}
