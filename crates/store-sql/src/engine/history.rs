//! Reshaping a session's history: checkpoints, cutting it after a message,
//! forking it into a new session, and importing a whole one.
//!
//! Invariants:
//! - Each call is one write transaction that first takes the (source)
//!   session's row, so no append to it commits while its history is read or
//!   cut: a fork copies one consistent prefix.
//! - Messages keep their ids, numbers, parts and origins when copied; new
//!   appends to a fork are numbered after the copies.
//! - A failed call leaves nothing behind (an import never creates half a
//!   session).

use gyre_store::{Checkpoint, SessionMeta, SessionRecord, StoreError};

use super::Backend;
use super::write::{EncodedMessage, insert_message, session_args, take_row};
use crate::dialect::{Arg, Dialect, local_now_ms};
use crate::error::is_unique_violation;
use crate::sql;

type Conn<B> = <<B as Backend>::Db as sqlx::Database>::Connection;

pub(super) async fn add_checkpoint<B: Backend>(
    b: &B,
    session_id: &str,
    checkpoint: &Checkpoint,
    fence: Option<i64>,
) -> Result<(), StoreError> {
    const ACTION: &str = "add a checkpoint";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    let touched = take_row(b, &mut tx, session_id, Some(local_now_ms()), fence, ACTION).await?;
    if touched == 0 {
        return Err(b.session_not_found(session_id));
    }
    insert_checkpoint(b, &mut tx, session_id, checkpoint, ACTION).await?;
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

async fn insert_checkpoint<B: Backend>(
    b: &B,
    conn: &mut Conn<B>,
    session_id: &str,
    checkpoint: &Checkpoint,
    action: &'static str,
) -> Result<(), StoreError> {
    let inserted = B::Db::execute(
        conn,
        sql::APPEND_CHECKPOINT,
        &[
            Arg::Text(session_id),
            Arg::Text(&checkpoint.message_id),
            Arg::Text(&checkpoint.id),
            Arg::MaybeText(checkpoint.call_id.as_deref()),
            Arg::Text(&checkpoint.snapshot),
            Arg::Int(checkpoint.created_at_ms),
        ],
    )
    .await;
    match inserted {
        Ok(0) => Err(StoreError::MessageNotFound {
            session_id: session_id.to_owned(),
            message_id: checkpoint.message_id.clone(),
        }),
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(StoreError::CheckpointExists {
            session_id: session_id.to_owned(),
            checkpoint_id: checkpoint.id.clone(),
        }),
        Err(e) => Err(b.fail(action, e)),
    }
}

/// The number (`seq`) of a message of the session.
async fn message_seq<B: Backend>(
    b: &B,
    conn: &mut Conn<B>,
    session_id: &str,
    message_id: &str,
    action: &'static str,
) -> Result<i64, StoreError> {
    let row = B::Db::fetch_optional(
        conn,
        sql::MESSAGE_SEQ,
        &[Arg::Text(session_id), Arg::Text(message_id)],
    )
    .await
    .map_err(|e| b.fail(action, e))?;
    let seq = match row {
        Some(row) => B::Db::int(&row, 0).map_err(|e| b.fail(action, e))?,
        None => None,
    };
    seq.ok_or_else(|| StoreError::MessageNotFound {
        session_id: session_id.to_owned(),
        message_id: message_id.to_owned(),
    })
}

pub(super) async fn truncate_after<B: Backend>(
    b: &B,
    session_id: &str,
    message_id: &str,
) -> Result<u64, StoreError> {
    const ACTION: &str = "cut the history";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    B::Db::execute(
        &mut tx,
        sql::TOUCH_SESSION,
        &[Arg::Text(session_id), Arg::Int(local_now_ms())],
    )
    .await
    .map_err(|e| b.fail(ACTION, e))?;
    let seq = message_seq(b, &mut tx, session_id, message_id, ACTION).await?;
    let mut removed = 0;
    for statement in sql::DELETE_AFTER {
        // The last statement removes the messages; its count is the answer.
        removed = B::Db::execute(&mut tx, statement, &[Arg::Text(session_id), Arg::Int(seq)])
            .await
            .map_err(|e| b.fail(ACTION, e))?;
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))?;
    Ok(removed)
}

pub(super) async fn fork_session<B: Backend>(
    b: &B,
    from_id: &str,
    new_meta: &SessionMeta,
    through: Option<&str>,
) -> Result<(), StoreError> {
    const ACTION: &str = "fork a session";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    let found = B::Db::execute(&mut tx, sql::LOCK_SESSION_ROW, &[Arg::Text(from_id)])
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    if found == 0 {
        return Err(b.session_not_found(from_id));
    }
    let last = match through {
        Some(message_id) => message_seq(b, &mut tx, from_id, message_id, ACTION).await?,
        None => i64::MAX,
    };
    let mut args = session_args(new_meta, None);
    args[7] = Arg::Text(from_id);
    match B::Db::execute(&mut tx, sql::FORK_SESSION, &args).await {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => return Err(b.session_exists(&new_meta.id)),
        Err(e) => return Err(b.fail(ACTION, e)),
    }
    for statement in sql::FORK_COPY {
        B::Db::execute(
            &mut tx,
            statement,
            &[Arg::Text(&new_meta.id), Arg::Text(from_id), Arg::Int(last)],
        )
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

pub(super) async fn import_session<B: Backend>(
    b: &B,
    record: &SessionRecord,
) -> Result<(), StoreError> {
    const ACTION: &str = "import a session";
    let state = record
        .state
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|source| StoreError::Encode {
            what: "session state",
            source,
        })?;
    let messages = record
        .messages
        .iter()
        .map(EncodedMessage::new)
        .collect::<Result<Vec<_>, _>>()?;
    let session_id = record.meta.id.as_str();
    let now = local_now_ms();
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    match B::Db::execute(
        &mut tx,
        sql::INSERT_SESSION,
        &session_args(&record.meta, state.as_deref()),
    )
    .await
    {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => return Err(b.session_exists(session_id)),
        Err(e) => return Err(b.fail(ACTION, e)),
    }
    for encoded in &messages {
        insert_message(b, &mut tx, session_id, encoded, now, ACTION).await?;
    }
    for checkpoint in &record.checkpoints {
        insert_checkpoint(b, &mut tx, session_id, checkpoint, ACTION).await?;
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}
