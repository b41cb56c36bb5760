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
//! - A fenced write (`fence: Some(generation)`) makes that first `UPDATE`
//!   conditional on the session's lock generation ([`take_row`]): when the
//!   lock was acquired since, it changes no row and the write stops there,
//!   rolled back, with [`StoreError::Fenced`]. No extra statement runs on
//!   the way that succeeds.

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

/// The first statement of a write to a session: updates its row (the
/// modification time to `now` when given), fenced when `fence` is given.
/// How many rows it changed (0: no such session); a fenced write that
/// changed none is [`StoreError::Fenced`] or
/// [`StoreError::SessionNotFound`], told apart only on that failing path.
pub(super) async fn take_row<B: Backend>(
    b: &B,
    conn: &mut <B::Db as sqlx::Database>::Connection,
    session_id: &str,
    now: Option<i64>,
    fence: Option<i64>,
    action: &'static str,
) -> Result<u64, StoreError> {
    let fail = |e| b.fail(action, e);
    let changed = match (now, fence) {
        (Some(now), None) => {
            B::Db::execute(
                conn,
                sql::TOUCH_SESSION,
                &[Arg::Text(session_id), Arg::Int(now)],
            )
            .await
        }
        (Some(now), Some(generation)) => {
            B::Db::execute(
                conn,
                sql::TOUCH_SESSION_FENCED,
                &[Arg::Text(session_id), Arg::Int(now), Arg::Int(generation)],
            )
            .await
        }
        (None, None) => B::Db::execute(conn, sql::LOCK_SESSION_ROW, &[Arg::Text(session_id)]).await,
        (None, Some(generation)) => {
            B::Db::execute(
                conn,
                sql::LOCK_SESSION_ROW_FENCED,
                &[Arg::Text(session_id), Arg::Int(generation)],
            )
            .await
        }
    }
    .map_err(fail)?;
    match fence {
        Some(generation) if changed == 0 => Err(fenced(b, conn, session_id, generation).await),
        _ => Ok(changed),
    }
}

/// Why a fenced write found no session row to update.
pub(super) async fn fenced<B: Backend>(
    b: &B,
    conn: &mut <B::Db as sqlx::Database>::Connection,
    session_id: &str,
    generation: i64,
) -> StoreError {
    match super::locking::current_generation(b, conn, session_id).await {
        Ok(Some(current)) => StoreError::Fenced {
            session_id: session_id.to_owned(),
            generation,
            current,
        },
        Ok(None) => b.session_not_found(session_id),
        Err(error) => error,
    }
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
    fence: Option<i64>,
) -> Result<(), StoreError> {
    const ACTION: &str = "append a message";
    let encoded = EncodedMessage::new(message)?;
    let now = local_now_ms();
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    let touched = take_row(b, &mut tx, session_id, Some(now), fence, ACTION).await?;
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
    fence: Option<i64>,
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
    take_row(b, &mut tx, session_id, Some(now), fence, ACTION).await?;
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
    fence: Option<i64>,
) -> Result<(), StoreError> {
    const ACTION: &str = "discard a message";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    take_row(b, &mut tx, session_id, None, fence, ACTION).await?;
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
    fence: Option<i64>,
) -> Result<(), StoreError> {
    let text = serde_json::to_string(state).map_err(|source| StoreError::Encode {
        what: "session state",
        source,
    })?;
    let mut conn = b.conn().await?;
    let args = [
        Arg::Text(session_id),
        Arg::Text(&text),
        Arg::Int(local_now_ms()),
    ];
    // One statement, fenced by its own condition: no transaction needed.
    let updated = match fence {
        None => B::Db::execute(&mut conn, sql::SAVE_STATE, &args).await,
        Some(generation) => {
            B::Db::execute(
                &mut conn,
                sql::SAVE_STATE_FENCED,
                &[&args[..], &[Arg::Int(generation)]].concat(),
            )
            .await
        }
    }
    .map_err(|e| b.fail("save the session state", e))?;
    if updated == 0 {
        return Err(match fence {
            Some(generation) => fenced(b, &mut conn, session_id, generation).await,
            None => b.session_not_found(session_id),
        });
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
