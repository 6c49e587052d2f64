//! What PostgreSQL does its own way, for the operations written once in `crate::sql`:
//! the workspace lock (the `audit_heads` row), the chain head kept in that row, the
//! announcement of events to the other nodes, and the sweeper's row locks. The names are
//! the same in `sqlite/dialect.rs`.

use super::sql::audit::{push_events, EventRow};
use super::sql::expiry::Due;
use crate::codec::{database, millis, Columns};
use crate::{AuditRows, StoreError, StoreResult};
use airlock_digest::GENESIS_HASH;
use jiff::Timestamp;
use sqlx::QueryBuilder;

pub(crate) type Db = sqlx::Postgres;
pub(crate) type Conn = sqlx::PgConnection;
pub(crate) type Pool = sqlx::PgPool;

/// The column that orders rows created in the same millisecond: an identity column
/// standing in for SQLite's rowid.
pub(crate) const ORD: &str = "ord";

/// Several nodes write the same database: what one caches, another may change.
pub(crate) const SINGLE_WRITER: bool = false;

/// Appended to a read that a write depends on: the row stays locked until commit.
pub(crate) const FOR_UPDATE: &str = " FOR UPDATE";

/// The channel every appended event is announced on (delivered on commit).
pub(crate) const CHANNEL: &str = "airlock_events";

/// Locks `workspace` for the rest of the transaction; `false` when no such workspace
/// exists.
///
/// INVARIANT: every write transaction on a workspace calls this before it reads for
/// update or writes any other row of the workspace. All transactions thus take their
/// locks in one order (head, then rows; several heads in workspace order, see
/// `expiry`), so they queue and never deadlock, and writes of one workspace are
/// serialised across nodes as SQLite's single writer serialises them in one process.
pub(crate) async fn lock_workspace(conn: &mut Conn, workspace: &str) -> StoreResult<bool> {
    Ok(lock_head(conn, workspace).await?.is_some())
}

/// [`lock_workspace`], returning the head it locked, `(seq, hash)`, for an operation that
/// appends without writing the head in between: one round trip fewer than reading it
/// again ([`chain_head`]). `None` when no such workspace exists.
pub(crate) async fn lock_head(
    conn: &mut Conn,
    workspace: &str,
) -> StoreResult<Option<(u64, String)>> {
    let row = sqlx::query("SELECT seq, hash FROM audit_heads WHERE workspace = $1 FOR UPDATE")
        .bind(workspace)
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
    row.map(|row| {
        let columns = Columns::new(&row, "audit_heads");
        Ok((columns.unsigned("seq")?, columns.text("hash")?))
    })
    .transpose()
}

/// The head row is born with its workspace: every later write locks it.
pub(crate) async fn create_chain(conn: &mut Conn, workspace: &str) -> StoreResult<()> {
    sqlx::query("INSERT INTO audit_heads (workspace, seq, hash) VALUES ($1, 0, $2)")
        .bind(workspace)
        .bind(GENESIS_HASH)
        .execute(conn)
        .await
        .map_err(database)?;
    Ok(())
}

/// The last `seq` and hash of `workspace`'s chain, from its head row. Already locked by
/// the operation; read again so the head is the one this transaction last wrote.
pub(crate) async fn chain_head(conn: &mut Conn, workspace: &str) -> StoreResult<(u64, String)> {
    lock_head(conn, workspace)
        .await?
        .ok_or_else(|| StoreError::Database(format!("no workspace {workspace}")))
}

/// Moves `workspace`'s head row to its newest record.
pub(crate) async fn move_head(
    conn: &mut Conn,
    workspace: &str,
    seq: u64,
    hash: &str,
) -> StoreResult<()> {
    sqlx::query("UPDATE audit_heads SET seq = $1, hash = $2 WHERE workspace = $3")
        .bind(crate::codec::to_i64(seq)?)
        .bind(hash)
        .bind(workspace)
        .execute(conn)
        .await
        .map_err(database)?;
    Ok(())
}

/// Inserts the events and announces each on [`CHANNEL`], so the other nodes' listeners
/// (`listen.rs`) learn of them on commit: one statement, the announcements made in the
/// events' order from the rows as inserted.
pub(crate) async fn insert_events(conn: &mut Conn, events: &[EventRow<'_>]) -> StoreResult<()> {
    let mut insert = QueryBuilder::<Db>::new("WITH inserted AS (");
    push_events(&mut insert, events);
    // Small on purpose (NOTIFY payloads are limited to 8000 bytes): what changed and
    // where (`call_id` only when the data names one as a string); a listener reads the
    // rest from the tables.
    insert.push(
        " RETURNING id, workspace, kind, data::json -> 'call_id' AS call_id)
         SELECT count(pg_notify(",
    );
    insert.push_bind(CHANNEL).push(
        ", json_build_object('workspace', workspace, 'id', id, 'kind', kind,
             'call_id', CASE json_typeof(call_id) WHEN 'string' THEN call_id END)::text))
         FROM (SELECT * FROM inserted ORDER BY id) AS announced",
    );
    let announced: i64 = insert
        .build_query_scalar()
        .fetch_one(&mut *conn)
        .await
        .map_err(database)?;
    if usize::try_from(announced).ok() != Some(events.len()) {
        return Err(StoreError::Database(format!(
            "{} events inserted, {announced} announced",
            events.len()
        )));
    }
    Ok(())
}

/// The approvals of `due` still due, read again under the workspace locks (another node
/// may have decided or expired some of them meanwhile) and locked, skipping those another
/// sweeper holds.
pub(crate) async fn still_due(conn: &mut Conn, due: Due, now: Timestamp) -> StoreResult<Due> {
    let ids: Vec<String> = due.into_iter().map(|(_, id)| id).collect();
    let rows = sqlx::query(
        "SELECT workspace, id FROM approvals
         WHERE id = ANY($1) AND status = 'pending' AND deadline <= $2
         ORDER BY deadline, ord
         FOR UPDATE SKIP LOCKED",
    )
    .bind(&ids)
    .bind(millis(now))
    .fetch_all(conn)
    .await
    .map_err(database)?;
    rows.iter()
        .map(|row| {
            let columns = Columns::new(row, "approvals");
            Ok((columns.text("workspace")?, columns.text("id")?))
        })
        .collect()
}

/// A read transaction's snapshot: by default each PostgreSQL statement sees the commits
/// made before it started; `REPEATABLE READ` keeps the first statement's view for them all.
pub(crate) async fn snapshot(conn: &mut Conn) -> StoreResult<()> {
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(conn)
        .await
        .map_err(database)?;
    Ok(())
}

/// Nothing to map on PostgreSQL: its server reads the pages.
pub(crate) async fn map_file(_conn: &mut Conn, _mapped: bool) -> StoreResult<()> {
    Ok(())
}

/// No aggregated page on PostgreSQL: rows arrive over the wire as fast as the caller
/// reads them.
pub(crate) async fn audit_page(
    _conn: &mut Conn,
    _workspace: &str,
    _after: u64,
    _limit: u32,
) -> StoreResult<Option<AuditRows>> {
    Ok(None)
}
