//! Every statement both backends run, and the schema's migrations: one text
//! per statement, so SQLite and PostgreSQL execute the same SQL.
//!
//! Invariants:
//! - Portable SQL only: TEXT ids and JSON, BIGINT epoch-ms timestamps
//!   (PostgreSQL's INTEGER is 32-bit; SQLite's BIGINT has INTEGER affinity,
//!   the same 64-bit storage), `$n` placeholders (a number may repeat),
//!   `ON CONFLICT … DO NOTHING` (SQLite ≥ 3.24), no `RETURNING`, no
//!   `FOR UPDATE`, no backend-specific functions. What cannot be said
//!   portably (begin a write transaction, read the clock, lock migrations)
//!   lives in the dialects, never here.
//! - Arguments are only TEXT, nullable TEXT or BIGINT ([`crate::dialect::Arg`]).
//! - Every write to a session first updates its `sessions` row
//!   ([`TOUCH_SESSION`] or [`LOCK_SESSION_ROW`]): on PostgreSQL that row lock
//!   serialises writers of one session (numbering by `MAX(seq) + 1` is then
//!   race-free under READ COMMITTED, where each later statement sees what the
//!   previous holder committed); on SQLite `BEGIN IMMEDIATE` already does.
//! - `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`, the same
//!   numbers on both backends; a migration is never edited once released,
//!   only new ones appended.

// --- schema ---------------------------------------------------------------

pub(crate) const CREATE_VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_version (
    version BIGINT PRIMARY KEY NOT NULL,
    applied_at_ms BIGINT NOT NULL
)";

pub(crate) const CURRENT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM schema_version";

pub(crate) const RECORD_VERSION: &str =
    "INSERT INTO schema_version (version, applied_at_ms) VALUES ($1, $2)";

/// Version 1: sessions, their messages, and the messages' parts.
///
/// Messages are numbered per session (`seq`) so they load in append order
/// whatever their ids; parts are numbered per message (`idx`). `parts.data` is
/// the serde JSON of a `Part`, `sessions.state` the core's serialised state.
const V1: &str = "
CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    cwd TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    state TEXT NULL
);
CREATE INDEX sessions_by_updated ON sessions (updated_at_ms, id);
CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
);
CREATE TABLE parts (
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    idx BIGINT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, message_id, idx),
    FOREIGN KEY (session_id, message_id) REFERENCES messages (session_id, id) ON DELETE CASCADE
);
";

/// Version 2: a message's origin beyond its role (gyre's notices, and the
/// summaries that mark compact boundaries), as the serde JSON of
/// `gyre_protocol::Origin`; NULL for the common case, the conversation itself.
const V2: &str = "ALTER TABLE messages ADD COLUMN origin TEXT NULL;";

/// Version 3: the single-flight lock of a session, and checkpoints.
///
/// A lock row names its holder (a random token, the pid and host of its
/// process) and when it was last renewed, on the clock of the database's
/// host for PostgreSQL. Checkpoints are numbered per session (`seq`) like
/// messages and belong to a message, so cutting the history cuts them too.
const V3: &str = "
CREATE TABLE session_locks (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    token TEXT NOT NULL,
    pid BIGINT NOT NULL,
    host TEXT NOT NULL,
    renewed_at_ms BIGINT NOT NULL
);
CREATE TABLE checkpoints (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    call_id TEXT NULL,
    snapshot TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id),
    FOREIGN KEY (session_id, message_id) REFERENCES messages (session_id, id) ON DELETE CASCADE
);
CREATE INDEX checkpoints_by_message ON checkpoints (session_id, message_id);
";

/// Version 4: the session that spawned a session (a subagent's parent), NULL
/// for one a person started, indexed to find a session's children.
///
/// Not a foreign key: a child may be imported without its parent, and
/// deleting a parent must not fail on (or silently cascade to) its children;
/// what to do with them is the caller's choice.
const V4: &str = "
ALTER TABLE sessions ADD COLUMN parent_id TEXT NULL;
CREATE INDEX sessions_by_parent ON sessions (parent_id, created_at_ms, id);
";

/// Version 5: fencing tokens. `sessions.lock_generation` is the highest
/// generation of the session's lock ever issued (it survives releases, so
/// generations only grow); `session_locks.generation` the one its holder
/// acquired. A fenced write updates the session row only while
/// `lock_generation` is still the writer's.
const V5: &str = "
ALTER TABLE sessions ADD COLUMN lock_generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE session_locks ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
";

/// Version 6: the commands a run started and may have left running (see
/// `gyre_store::RunningCommand`): found and stopped by the next run.
const V6: &str = "
CREATE TABLE running_commands (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    call_id TEXT NOT NULL,
    host TEXT NOT NULL,
    pgid BIGINT NOT NULL,
    started BIGINT NOT NULL,
    PRIMARY KEY (session_id, call_id, pgid)
);
";

/// Every migration, oldest first.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The schema version this build writes.
pub(crate) const LATEST_VERSION: i64 = MIGRATIONS.len() as i64;

// --- sessions ---------------------------------------------------------------

/// `$8` is the state: NULL for a new session, the state for an import; `$9`
/// the parent.
pub(crate) const INSERT_SESSION: &str = "INSERT INTO sessions \
     (id, cwd, provider, model, title, created_at_ms, updated_at_ms, state, parent_id) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Sets `updated_at_ms`; affects no row when there is no such session.
pub(crate) const TOUCH_SESSION: &str = "UPDATE sessions SET updated_at_ms = $2 WHERE id = $1";

/// [`TOUCH_SESSION`] for a lease holder at generation `$3`: affects no row
/// when the lock was acquired again since (or there is no such session).
pub(crate) const TOUCH_SESSION_FENCED: &str =
    "UPDATE sessions SET updated_at_ms = $2 WHERE id = $1 AND lock_generation = $3";

/// [`LOCK_SESSION_ROW`] for a lease holder at generation `$2`.
pub(crate) const LOCK_SESSION_ROW_FENCED: &str =
    "UPDATE sessions SET updated_at_ms = updated_at_ms WHERE id = $1 AND lock_generation = $2";

/// [`SAVE_STATE`] for a lease holder at generation `$4`.
pub(crate) const SAVE_STATE_FENCED: &str = "UPDATE sessions SET state = $2, updated_at_ms = $3 \
     WHERE id = $1 AND lock_generation = $4";

/// The session's highest issued lock generation; no row when there is no
/// such session.
pub(crate) const SELECT_GENERATION: &str = "SELECT lock_generation FROM sessions WHERE id = $1";

/// Changes nothing but takes the session row's write lock (PostgreSQL) for
/// writes that must not bump `updated_at_ms`.
pub(crate) const LOCK_SESSION_ROW: &str =
    "UPDATE sessions SET updated_at_ms = updated_at_ms WHERE id = $1";

pub(crate) const SAVE_STATE: &str =
    "UPDATE sessions SET state = $2, updated_at_ms = $3 WHERE id = $1";

pub(crate) const SELECT_STATE: &str = "SELECT state FROM sessions WHERE id = $1";

/// The columns the engine reads into a `SessionMeta`, in order (the same in
/// [`LIST_SESSIONS`] and [`LIST_CHILDREN`]).
pub(crate) const SELECT_SESSION: &str = "SELECT id, cwd, provider, model, title, created_at_ms, updated_at_ms, parent_id \
     FROM sessions WHERE id = $1";

pub(crate) const LIST_SESSIONS: &str = "SELECT id, cwd, provider, model, title, created_at_ms, updated_at_ms, parent_id \
     FROM sessions ORDER BY updated_at_ms DESC, id DESC";

/// Oldest first, in the order of the `sessions_by_parent` index.
pub(crate) const LIST_CHILDREN: &str = "SELECT id, cwd, provider, model, title, created_at_ms, updated_at_ms, parent_id \
     FROM sessions WHERE parent_id = $1 ORDER BY created_at_ms, id";

/// Everything of a session, children first (foreign keys need not cascade).
pub(crate) const DELETE_SESSION: &[&str] = &[
    "DELETE FROM running_commands WHERE session_id = $1",
    "DELETE FROM checkpoints WHERE session_id = $1",
    "DELETE FROM parts WHERE session_id = $1",
    "DELETE FROM messages WHERE session_id = $1",
    "DELETE FROM session_locks WHERE session_id = $1",
    "DELETE FROM sessions WHERE id = $1",
];

// --- messages ---------------------------------------------------------------

/// Numbers the message after the session's last one.
pub(crate) const APPEND_MESSAGE: &str = "INSERT INTO messages (session_id, seq, id, role, created_at_ms, origin) \
     SELECT $1, COALESCE(MAX(seq) + 1, 0), $2, $3, $4, $5 \
     FROM messages WHERE session_id = $1";

pub(crate) const INSERT_PART: &str =
    "INSERT INTO parts (session_id, message_id, idx, data) VALUES ($1, $2, $3, $4)";

/// Selecting from `messages` inserts nothing when the message is missing,
/// which tells so without a separate lookup.
pub(crate) const APPEND_PART: &str = "INSERT INTO parts (session_id, message_id, idx, data) \
     SELECT m.session_id, m.id, \
            (SELECT COALESCE(MAX(p.idx) + 1, 0) FROM parts p \
             WHERE p.session_id = $1 AND p.message_id = $2), \
            $3 \
     FROM messages m WHERE m.session_id = $1 AND m.id = $2";

/// One message with its parts and checkpoints, children first.
pub(crate) const DELETE_MESSAGE: &[&str] = &[
    "DELETE FROM checkpoints WHERE session_id = $1 AND message_id = $2",
    "DELETE FROM parts WHERE session_id = $1 AND message_id = $2",
    "DELETE FROM messages WHERE session_id = $1 AND id = $2",
];

/// Starting from `sessions` tells a missing session (no row) from an empty
/// one (one row of NULLs). Columns: message id, role, part data, origin.
pub(crate) const SELECT_MESSAGES: &str = "SELECT m.id, m.role, p.data, m.origin \
     FROM sessions s \
     LEFT JOIN messages m ON m.session_id = s.id \
     LEFT JOIN parts p ON p.session_id = m.session_id AND p.message_id = m.id \
     WHERE s.id = $1 \
     ORDER BY m.seq, p.idx";

pub(crate) const MESSAGE_SEQ: &str = "SELECT seq FROM messages WHERE session_id = $1 AND id = $2";

/// The messages numbered after `$2`, with their parts and checkpoints,
/// children first; the last statement's count is the messages removed.
pub(crate) const DELETE_AFTER: &[&str] = &[
    "DELETE FROM checkpoints WHERE session_id = $1 AND message_id IN \
     (SELECT id FROM messages WHERE session_id = $1 AND seq > $2)",
    "DELETE FROM parts WHERE session_id = $1 AND message_id IN \
     (SELECT id FROM messages WHERE session_id = $1 AND seq > $2)",
    "DELETE FROM messages WHERE session_id = $1 AND seq > $2",
];

// --- forks ----------------------------------------------------------------

/// A new session (`$1`…`$7`, parent `$9`) with the state of session `$8`.
pub(crate) const FORK_SESSION: &str = "INSERT INTO sessions \
     (id, cwd, provider, model, title, created_at_ms, updated_at_ms, state, parent_id) \
     SELECT $1, $2, $3, $4, $5, $6, $7, s.state, $9 FROM sessions s WHERE s.id = $8";

/// Copies of session `$2`'s messages numbered up to `$3` (with their parts
/// and checkpoints) into session `$1`, keeping ids and numbers.
pub(crate) const FORK_COPY: &[&str] = &[
    "INSERT INTO messages (session_id, seq, id, role, created_at_ms, origin) \
     SELECT $1, seq, id, role, created_at_ms, origin FROM messages \
     WHERE session_id = $2 AND seq <= $3",
    "INSERT INTO parts (session_id, message_id, idx, data) \
     SELECT $1, p.message_id, p.idx, p.data FROM parts p \
     JOIN messages m ON m.session_id = p.session_id AND m.id = p.message_id \
     WHERE p.session_id = $2 AND m.seq <= $3",
    "INSERT INTO checkpoints \
     (session_id, seq, id, message_id, call_id, snapshot, created_at_ms) \
     SELECT $1, c.seq, c.id, c.message_id, c.call_id, c.snapshot, c.created_at_ms \
     FROM checkpoints c \
     JOIN messages m ON m.session_id = c.session_id AND m.id = c.message_id \
     WHERE c.session_id = $2 AND m.seq <= $3",
];

// --- checkpoints ------------------------------------------------------------

/// Numbers the checkpoint after the session's last one; inserts nothing when
/// message `$2` is not in session `$1`.
pub(crate) const APPEND_CHECKPOINT: &str = "INSERT INTO checkpoints \
     (session_id, seq, id, message_id, call_id, snapshot, created_at_ms) \
     SELECT m.session_id, \
            (SELECT COALESCE(MAX(c.seq) + 1, 0) FROM checkpoints c WHERE c.session_id = $1), \
            $3, m.id, $4, $5, $6 \
     FROM messages m WHERE m.session_id = $1 AND m.id = $2";

/// Like [`SELECT_MESSAGES`], one row of NULLs for a session without
/// checkpoints. Columns: id, message id, call id, snapshot, created at.
pub(crate) const SELECT_CHECKPOINTS: &str = "SELECT c.id, c.message_id, c.call_id, c.snapshot, c.created_at_ms \
     FROM sessions s LEFT JOIN checkpoints c ON c.session_id = s.id \
     WHERE s.id = $1 ORDER BY c.seq";

// --- running commands ------------------------------------------------------

/// Replaces a record of the same call and group.
pub(crate) const RECORD_COMMAND: &[&str] = &[
    "DELETE FROM running_commands WHERE session_id = $1 AND call_id = $2 AND pgid = $4",
    "INSERT INTO running_commands (session_id, call_id, host, pgid, started) \
     VALUES ($1, $2, $3, $4, $5)",
];

pub(crate) const FORGET_CALL_COMMANDS: &str =
    "DELETE FROM running_commands WHERE session_id = $1 AND call_id = $2";

pub(crate) const FORGET_ALL_COMMANDS: &str = "DELETE FROM running_commands WHERE session_id = $1";

/// Columns: call id, host, pgid, started.
pub(crate) const SELECT_COMMANDS: &str = "SELECT call_id, host, pgid, started \
     FROM running_commands WHERE session_id = $1 ORDER BY started, pgid";

// --- locks ----------------------------------------------------------------

/// Takes a free lock; inserts nothing when the lock is held or the session
/// does not exist.
pub(crate) const INSERT_LOCK: &str = "INSERT INTO session_locks (session_id, token, pid, host, renewed_at_ms) \
     SELECT id, $2, $3, $4, $5 FROM sessions WHERE id = $1 \
     ON CONFLICT (session_id) DO NOTHING";

/// Columns: token, pid, host, renewed at, generation.
pub(crate) const SELECT_LOCK: &str = "SELECT token, pid, host, renewed_at_ms, generation \
     FROM session_locks WHERE session_id = $1";

/// Issues the session's next lock generation to the lock's holder (after an
/// insert or a takeover, in the same transaction).
pub(crate) const NEXT_GENERATION: &[&str] = &[
    "UPDATE sessions SET lock_generation = lock_generation + 1 WHERE id = $1",
    "UPDATE session_locks SET generation = \
     (SELECT lock_generation FROM sessions WHERE id = $1) WHERE session_id = $1",
];

/// Renews a lock only for its holder's token.
pub(crate) const RENEW_LOCK: &str =
    "UPDATE session_locks SET renewed_at_ms = $3 WHERE session_id = $1 AND token = $2";

/// Compare-and-swap: replaces the holder only if the lock is still exactly
/// the stale one that was read (`$2` token, `$3` renewal), so two contenders
/// cannot both take it over.
pub(crate) const TAKE_OVER_LOCK: &str = "UPDATE session_locks \
     SET token = $4, pid = $5, host = $6, renewed_at_ms = $7 \
     WHERE session_id = $1 AND token = $2 AND renewed_at_ms = $3";

pub(crate) const DELETE_LOCK: &str =
    "DELETE FROM session_locks WHERE session_id = $1 AND token = $2";
