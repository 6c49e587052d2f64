//! What PostgreSQL does its own way, for the operations written once in `crate::sql`:
//! the workspace lock (the `audit_heads` row), the chain head kept in that row, the
//! announcement of events to the other nodes, and the sweeper's row locks. The names are
//! the same in `sqlite/dialect.rs`.

use super::sql::audit::EventRow;
use super::sql::expiry::Due;
use crate::codec::{database, millis, Columns};
use crate::{AuditRows, StoreError, StoreResult};
use airlock_digest::GENESIS_HASH;
use jiff::Timestamp;
use serde_json::json;
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
    Ok(locked_head(conn, workspace).await?.is_some())
}

/// The head row of `workspace`, locked (a second `FOR UPDATE` by the same transaction
/// does not wait).
async fn locked_head(conn: &mut Conn, workspace: &str) -> StoreResult<Option<(u64, String)>> {
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
    locked_head(conn, workspace)
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
/// (`listen.rs`) learn of them on commit.
pub(crate) async fn insert_events(
    conn: &mut Conn,
    mut insert: QueryBuilder<'_, Db>,
    events: &[EventRow<'_>],
) -> StoreResult<()> {
    insert.push(" RETURNING id");
    let ids: Vec<i64> = insert
        .build_query_scalar()
        .fetch_all(&mut *conn)
        .await
        .map_err(database)?;
    if ids.len() != events.len() {
        return Err(StoreError::Database(format!(
            "{} events inserted, {} ids returned",
            events.len(),
            ids.len()
        )));
    }
    // Small on purpose (NOTIFY payloads are limited to 8000 bytes): what changed and
    // where; a listener reads the rest from the tables.
    let payloads: Vec<String> = events
        .iter()
        .zip(ids)
        .map(|((workspace, event, _), id)| {
            json!({
                "workspace": workspace,
                "id": id,
                "kind": event.kind,
                "call_id": event.data.get("call_id").and_then(|call_id| call_id.as_str()),
            })
            .to_string()
        })
        .collect();
    sqlx::query(
        "SELECT pg_notify($1, payload) FROM unnest($2::text[]) WITH ORDINALITY AS p(payload, n) ORDER BY n",
    )
    .bind(CHANNEL)
    .bind(&payloads)
    .execute(conn)
    .await
    .map_err(database)?;
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

/// No aggregated page on PostgreSQL: rows arrive over the wire as fast as the caller
/// reads them.
pub(crate) async fn audit_page(
    _pool: &Pool,
    _workspace: &str,
    _after: u64,
    _limit: u32,
) -> StoreResult<Option<AuditRows>> {
    Ok(None)
}
