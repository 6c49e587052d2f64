//! What SQLite does its own way, for the operations written once in `crate::sql`. The
//! names are the same in `postgres/dialect.rs`; each says what it stands for there.
//!
//! SQLite runs every write on one writer connection (`writer.rs`), so there is no row
//! lock to take: the workspace "lock" only says whether to go on, and the chain head is
//! read from the newest audit record.

use super::sql::audit::EventRow;
use super::sql::expiry::Due;
use crate::codec::{database, to_i64, Columns};
use crate::{AuditRows, StoreResult};
use airlock_digest::GENESIS_HASH;
use jiff::Timestamp;
use sqlx::{QueryBuilder, Row};

pub(crate) type Db = sqlx::Sqlite;
pub(crate) type Conn = sqlx::SqliteConnection;
pub(crate) type Pool = sqlx::SqlitePool;

/// The column that orders rows created in the same millisecond: insertion order.
pub(crate) const ORD: &str = "rowid";

/// One server per database file: every write goes through this process (see
/// `Store::single_writer`).
pub(crate) const SINGLE_WRITER: bool = true;

/// Appended to a read that a write depends on; the writer connection already excludes
/// every other writer.
pub(crate) const FOR_UPDATE: &str = "";

/// Inserts the events. Nobody else is told: this process is the only one serving them.
pub(crate) async fn insert_events(
    conn: &mut Conn,
    mut insert: QueryBuilder<'_, Db>,
    _events: &[EventRow<'_>],
) -> StoreResult<()> {
    insert.build().execute(conn).await.map_err(database)?;
    Ok(())
}

/// Nothing to lock beside the writer connection; `true`: go on (a missing workspace shows
/// as the rows the operation does not find).
pub(crate) async fn lock_workspace(_conn: &mut Conn, _workspace: &str) -> StoreResult<bool> {
    Ok(true)
}

/// A new workspace's chain needs no row: it is empty until its first record.
pub(crate) async fn create_chain(_conn: &mut Conn, _workspace: &str) -> StoreResult<()> {
    Ok(())
}

/// The last `seq` and hash of `workspace`'s chain (0 and the genesis hash when empty).
pub(crate) async fn chain_head(conn: &mut Conn, workspace: &str) -> StoreResult<(u64, String)> {
    let head =
        sqlx::query("SELECT seq, hash FROM audit WHERE workspace = $1 ORDER BY seq DESC LIMIT 1")
            .bind(workspace)
            .fetch_optional(&mut *conn)
            .await
            .map_err(database)?;
    match head {
        Some(row) => {
            let columns = Columns::new(&row, "audit");
            Ok((columns.unsigned("seq")?, columns.text("hash")?))
        }
        None => Ok((0, GENESIS_HASH.to_owned())),
    }
}

/// The head is the newest record itself: nothing to move.
pub(crate) async fn move_head(
    _conn: &mut Conn,
    _workspace: &str,
    _seq: u64,
    _hash: &str,
) -> StoreResult<()> {
    Ok(())
}

/// The due approvals found are still due: no other writer could have closed them.
pub(crate) async fn still_due(_conn: &mut Conn, due: Due, _now: Timestamp) -> StoreResult<Due> {
    Ok(due)
}

/// A page of [`crate::Store::audit_rows_after`], aggregated by SQLite itself: each column
/// into one text plus a list of lengths, so a page of 10,000 records crosses into Rust as one
/// row: handing rows over one at a time (a channel message and an allocation per value)
/// cost more than everything else verification does. `group_concat` promises no order,
/// so the result is used only if its seqs rise and its lengths add up; otherwise (`None`)
/// the caller reads the page row by row.
pub(crate) async fn audit_page(
    readers: &Pool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Option<AuditRows>> {
    let row = sqlx::query(
        "SELECT count(*),
                group_concat(format('%d %d %d %d %d %d %d %d', seq, octet_length(at),
                    octet_length(actor), octet_length(kind), octet_length(subject),
                    octet_length(data), octet_length(prev_hash), octet_length(hash)), ' '),
                group_concat(at, ''), group_concat(actor, ''), group_concat(kind, ''),
                group_concat(subject, ''), group_concat(data, ''),
                group_concat(prev_hash, ''), group_concat(hash, '')
         FROM (SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
               WHERE workspace = $1 AND seq > $2 ORDER BY seq LIMIT $3)",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_one(readers)
    .await
    .map_err(database)?;
    let count: i64 = row.try_get(0).map_err(database)?;
    if count == 0 {
        return Ok(Some(AuditRows::default()));
    }
    let numbers: Option<&str> = row.try_get(1).map_err(database)?;
    let mut columns: [String; 7] = Default::default();
    for (index, column) in columns.iter_mut().enumerate() {
        let text: Option<String> = row.try_get(index + 2).map_err(database)?;
        *column = text.unwrap_or_default();
    }
    let count = usize::try_from(count).unwrap_or(0);
    Ok(AuditRows::from_columns(
        count,
        numbers.unwrap_or_default(),
        columns,
    ))
}
