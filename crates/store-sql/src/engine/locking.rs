//! The single-flight lock's statements (the rules are in [`crate::lock`]).
//!
//! Invariants:
//! - `try_lock` is one write transaction: insert-if-free, else read the
//!   holder and judge it, then renew (own token) or compare-and-swap a stale
//!   holder away. A lost swap means another contender changed the row in
//!   between; the call then judges the row it wrote, a bounded number of
//!   times.
//! - Times come from [`Dialect::clock_ms`], one clock for every contender.
//! - An insert or a takeover issues the session's next generation in the
//!   same transaction (`sessions.lock_generation + 1`, copied into the lock
//!   row); re-entry returns the lock row's. The session row is taken first,
//!   like every write does, so the fenced writes of the previous holder
//!   queue behind the takeover and then find the generation moved on.

use std::time::Duration;

use gyre_store::{LockAttempt, LockHolder, StoreError};

use super::Backend;
use crate::dialect::{Arg, Dialect};
use crate::lock::{Verdict, judge};
use crate::sql;

/// Rounds of read-judge-write within one `try_lock` before giving up on a
/// lock that changes hands every time.
const ATTEMPTS: usize = 4;

pub(super) async fn try_lock<B: Backend>(
    b: &B,
    session_id: &str,
    me: &LockHolder,
    lease: Duration,
) -> Result<LockAttempt, StoreError> {
    const ACTION: &str = "take the session lock";
    let fail = |e| b.fail(ACTION, e);
    let pid = i64::from(me.pid);
    let mut conn = b.conn().await?;
    let mut tx = B::Db::begin_write(&mut conn).await.map_err(fail)?;
    // The session row first, as every write takes it (one lock order on
    // PostgreSQL); its count tells whether the session exists.
    let found = B::Db::execute(&mut tx, sql::LOCK_SESSION_ROW, &[Arg::Text(session_id)])
        .await
        .map_err(fail)?;
    if found == 0 {
        return Err(b.session_not_found(session_id));
    }
    for _ in 0..ATTEMPTS {
        let now = B::Db::clock_ms(&mut tx).await.map_err(fail)?;
        let mine = [
            Arg::Text(&me.token),
            Arg::Int(pid),
            Arg::Text(&me.host),
            Arg::Int(now),
        ];
        let inserted = B::Db::execute(
            &mut tx,
            sql::INSERT_LOCK,
            &[&[Arg::Text(session_id)][..], &mine].concat(),
        )
        .await
        .map_err(fail)?;
        if inserted > 0 {
            let generation = next_generation(b, &mut tx, session_id).await?;
            tx.commit().await.map_err(fail)?;
            return Ok(LockAttempt::Acquired { generation });
        }
        let row = B::Db::fetch_optional(&mut tx, sql::SELECT_LOCK, &[Arg::Text(session_id)])
            .await
            .map_err(fail)?;
        let Some(row) = row else {
            // The holder released it in between: the next round takes it.
            continue;
        };
        let (current, renewed_at, generation) = lock_row(b, session_id, &row)?;
        let renewed_ms_ago = now.saturating_sub(renewed_at);
        match judge(&current, renewed_ms_ago, me, lease) {
            Verdict::Live => {
                tx.commit().await.map_err(fail)?;
                return Ok(LockAttempt::Busy {
                    holder: current,
                    renewed_ms_ago,
                });
            }
            Verdict::Own => {
                let renewed = B::Db::execute(
                    &mut tx,
                    sql::RENEW_LOCK,
                    &[Arg::Text(session_id), Arg::Text(&me.token), Arg::Int(now)],
                )
                .await
                .map_err(fail)?;
                if renewed > 0 {
                    tx.commit().await.map_err(fail)?;
                    return Ok(LockAttempt::Acquired { generation });
                }
            }
            Verdict::Stale => {
                let seen = [
                    Arg::Text(session_id),
                    Arg::Text(&current.token),
                    Arg::Int(renewed_at),
                ];
                let swapped =
                    B::Db::execute(&mut tx, sql::TAKE_OVER_LOCK, &[&seen[..], &mine].concat())
                        .await
                        .map_err(fail)?;
                if swapped > 0 {
                    let generation = next_generation(b, &mut tx, session_id).await?;
                    tx.commit().await.map_err(fail)?;
                    return Ok(LockAttempt::Acquired { generation });
                }
            }
        }
    }
    Err(fail(sqlx::Error::Io(std::io::Error::other(format!(
        "the lock changed hands {ATTEMPTS} times while it was being taken"
    )))))
}

/// Issues the session's next lock generation to the lock just taken, inside
/// the taking transaction; the generation issued.
async fn next_generation<B: Backend>(
    b: &B,
    conn: &mut <B::Db as sqlx::Database>::Connection,
    session_id: &str,
) -> Result<i64, StoreError> {
    let fail = |e| b.fail("take the session lock", e);
    for statement in sql::NEXT_GENERATION {
        B::Db::execute(conn, statement, &[Arg::Text(session_id)])
            .await
            .map_err(fail)?;
    }
    current_generation(b, conn, session_id)
        .await?
        .ok_or_else(|| b.session_not_found(session_id))
}

/// The session's highest issued lock generation; `None` when there is no
/// such session.
pub(super) async fn current_generation<B: Backend>(
    b: &B,
    conn: &mut <B::Db as sqlx::Database>::Connection,
    session_id: &str,
) -> Result<Option<i64>, StoreError> {
    let fail = |e| b.fail("read the session lock's generation", e);
    let row = B::Db::fetch_optional(conn, sql::SELECT_GENERATION, &[Arg::Text(session_id)])
        .await
        .map_err(fail)?;
    match row {
        Some(row) => Ok(Some(B::Db::int(&row, 0).map_err(fail)?.unwrap_or(0))),
        None => Ok(None),
    }
}

/// A lock row: its holder, when it was last renewed, and its generation.
fn lock_row<B: Backend>(
    b: &B,
    session_id: &str,
    row: &<B::Db as sqlx::Database>::Row,
) -> Result<(LockHolder, i64, i64), StoreError> {
    let bad = |reason: String| b.decode_error(session_id, "session lock", reason);
    let text = |i| {
        B::Db::text(row, i)
            .map_err(|e| bad(e.to_string()))?
            .ok_or_else(|| bad(format!("column {i} is NULL")))
    };
    let int = |i| {
        B::Db::int(row, i)
            .map_err(|e| bad(e.to_string()))?
            .ok_or_else(|| bad(format!("column {i} is NULL")))
    };
    let pid = int(1)?;
    let holder = LockHolder {
        token: text(0)?,
        pid: u32::try_from(pid).map_err(|_| bad(format!("pid {pid} is out of range")))?,
        host: text(2)?,
    };
    Ok((holder, int(3)?, int(4)?))
}

pub(super) async fn renew_lock<B: Backend>(
    b: &B,
    session_id: &str,
    me: &LockHolder,
) -> Result<bool, StoreError> {
    let fail = |e| b.fail("renew the session lock", e);
    let mut conn = b.conn().await?;
    let now = B::Db::clock_ms(&mut conn).await.map_err(fail)?;
    let renewed = B::Db::execute(
        &mut conn,
        sql::RENEW_LOCK,
        &[Arg::Text(session_id), Arg::Text(&me.token), Arg::Int(now)],
    )
    .await
    .map_err(fail)?;
    Ok(renewed > 0)
}

pub(super) async fn unlock<B: Backend>(
    b: &B,
    session_id: &str,
    me: &LockHolder,
) -> Result<(), StoreError> {
    let mut conn = b.conn().await?;
    B::Db::execute(
        &mut conn,
        sql::DELETE_LOCK,
        &[Arg::Text(session_id), Arg::Text(&me.token)],
    )
    .await
    .map_err(|e| b.fail("release the session lock", e))?;
    Ok(())
}
