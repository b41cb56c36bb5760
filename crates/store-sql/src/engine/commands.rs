//! The commands a run started and may have left running: recorded while
//! they run, read and forgotten by the next run of the session.
//!
//! Invariants:
//! - Each call is one write transaction that first takes the session row
//!   ([`take_row`]), fenced like every other write of a lease holder.
//! - A record is keyed by session, call and process group: recording the
//!   same again replaces it.

use gyre_store::{RunningCommand, StoreError};

use super::Backend;
use super::write::take_row;
use crate::dialect::{Arg, Dialect};
use crate::sql;

pub(super) async fn record_command<B: Backend>(
    b: &B,
    session_id: &str,
    command: &RunningCommand,
    fence: Option<i64>,
) -> Result<(), StoreError> {
    const ACTION: &str = "record a running command";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    if take_row(b, &mut tx, session_id, None, fence, ACTION).await? == 0 {
        return Err(b.session_not_found(session_id));
    }
    for statement in sql::RECORD_COMMAND {
        B::Db::execute(
            &mut tx,
            statement,
            &[
                Arg::Text(session_id),
                Arg::Text(&command.call_id),
                Arg::Text(&command.host),
                Arg::Int(command.pgid),
                Arg::Int(command.started),
            ],
        )
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    }
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

pub(super) async fn forget_commands<B: Backend>(
    b: &B,
    session_id: &str,
    call_id: Option<&str>,
    fence: Option<i64>,
) -> Result<(), StoreError> {
    const ACTION: &str = "forget running commands";
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn)
        .await
        .map_err(|e| b.fail(ACTION, e))?;
    if take_row(b, &mut tx, session_id, None, fence, ACTION).await? == 0 {
        return Err(b.session_not_found(session_id));
    }
    let done = match call_id {
        Some(call_id) => {
            B::Db::execute(
                &mut tx,
                sql::FORGET_CALL_COMMANDS,
                &[Arg::Text(session_id), Arg::Text(call_id)],
            )
            .await
        }
        None => B::Db::execute(&mut tx, sql::FORGET_ALL_COMMANDS, &[Arg::Text(session_id)]).await,
    };
    done.map_err(|e| b.fail(ACTION, e))?;
    tx.commit().await.map_err(|e| b.fail(ACTION, e))
}

pub(super) async fn running_commands<B: Backend>(
    b: &B,
    session_id: &str,
) -> Result<Vec<RunningCommand>, StoreError> {
    const ACTION: &str = "read the running commands";
    let mut conn = b.conn().await?;
    let mut commands = Vec::new();
    let mut rows = B::Db::fetch(&mut conn, sql::SELECT_COMMANDS, &[Arg::Text(session_id)]);
    while let Some(row) = futures::TryStreamExt::try_next(&mut rows)
        .await
        .map_err(|e| b.fail(ACTION, e))?
    {
        let bad = |reason: String| b.decode_error(session_id, "running command", reason);
        let text = |i| {
            B::Db::text(&row, i)
                .map_err(|e| bad(e.to_string()))?
                .ok_or_else(|| bad(format!("column {i} is NULL")))
        };
        let int = |i| {
            B::Db::int(&row, i)
                .map_err(|e| bad(e.to_string()))?
                .ok_or_else(|| bad(format!("column {i} is NULL")))
        };
        commands.push(RunningCommand {
            call_id: text(0)?,
            host: text(1)?,
            pgid: int(2)?,
            started: int(3)?,
        });
    }
    Ok(commands)
}
