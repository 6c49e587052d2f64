//! What SQLite does its own way, for the operations written once in `crate::sql`. The
//! names are the same in `postgres/dialect.rs`; each says what it stands for there.
//!
//! SQLite runs every write on one writer connection (`writer.rs`), so there is no row
//! lock to take: the workspace "lock" only says whether to go on, and the chain head is
//! read from the newest audit record.

use super::sql::audit::{push_events, EventRow};
use super::sql::expiry::Due;
use crate::audit_rows::SEPARATOR;
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
pub(crate) async fn insert_events(conn: &mut Conn, events: &[EventRow<'_>]) -> StoreResult<()> {
    let mut insert = QueryBuilder::<Db>::new("");
    push_events(&mut insert, events);
    insert.build().execute(conn).await.map_err(database)?;
    Ok(())
}

/// Nothing to lock beside the writer connection; `true`: go on (a missing workspace shows
/// as the rows the operation does not find).
pub(crate) async fn lock_workspace(_conn: &mut Conn, _workspace: &str) -> StoreResult<bool> {
    Ok(true)
}

/// Nothing locked and no head read here: the writer serialises, and the chain reads its
/// head when it appends (`None`).
pub(crate) async fn lock_head(
    _conn: &mut Conn,
    _workspace: &str,
) -> StoreResult<Option<(u64, String)>> {
    Ok(None)
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
/// into one text, its values separated by [`SEPARATOR`], plus the list of seqs, so a page
/// of records crosses into Rust as one row: handing rows over one at a time (a channel
/// message and an allocation per value) cost more than everything else verification
/// does. (A list of each value's length, written with `format` for every row, was a
/// tenth of SQLite's time.) `group_concat` promises no order, so the result is used only
/// if its seqs rise and every column holds exactly one value per row; otherwise (`None`)
/// the caller reads the page row by row.
///
/// The page is first read as the seq range `(after, after + limit]`, which SQLite
/// aggregates straight from the table (about a tenth less CPU than the `ORDER BY ..
/// LIMIT` subquery, which it runs as a co-routine). It is the answer only when it holds
/// `limit` rows with rising whole seqs: then it holds every whole number of the range,
/// and no row with `seq > after` sorts before its last (SQLite orders numbers before text
/// and blobs, and a real number there would be in the range, counted, and not read as a
/// whole seq). Otherwise (the chain's last page, a gap in the chain) the page is read
/// with `LIMIT`.
pub(crate) async fn audit_page(
    conn: &mut Conn,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Option<AuditRows>> {
    let last = after
        .checked_add(u64::from(limit))
        .and_then(|last| i64::try_from(last).ok());
    if let Some(last) = last {
        let range = aggregated(
            sqlx::query(RANGE_PAGE)
                .bind(workspace)
                .bind(to_i64(after)?)
                .bind(last),
            &mut *conn,
        )
        .await?;
        if let Some(page) = range.filter(|page| page.len() == limit as usize) {
            return Ok(Some(page));
        }
    }
    aggregated(
        sqlx::query(LIMIT_PAGE)
            .bind(workspace)
            .bind(to_i64(after)?)
            .bind(i64::from(limit)),
        conn,
    )
    .await
}

/// A read transaction's snapshot: SQLite's deferred `BEGIN` already takes one at its first
/// read and keeps it (WAL).
pub(crate) async fn snapshot(_conn: &mut Conn) -> StoreResult<()> {
    Ok(())
}

/// Whether `conn` maps the database file ([`super::MAP_BYTES`] of it) or reads it, for the
/// audit chain's long reads (`sql/pages.rs`). Mapped, a sealed segment's overflow pages
/// are copied from the mapping, with no system call and no copy through the kernel
/// (BENCHMARKS.md, "Sealed segments read through a mapping"). Unmapped again after each
/// read: the pages a mapping has touched count in the process's RSS for as long as it
/// lasts.
pub(crate) async fn map_file(conn: &mut Conn, mapped: bool) -> StoreResult<()> {
    let bytes = if mapped { super::MAP_BYTES } else { 0 };
    sqlx::query(&format!("PRAGMA mmap_size = {bytes}"))
        .execute(conn)
        .await
        .map_err(database)?;
    Ok(())
}

/// The query's `char(31)` is the separator the page is cut at.
const _: () = assert!(SEPARATOR == 31);

/// The columns of a page, aggregated; `FROM` follows.
macro_rules! aggregated_columns {
    () => {
        "SELECT count(*), group_concat(seq, ' '),
                group_concat(at, char(31)), group_concat(actor, char(31)),
                group_concat(kind, char(31)), group_concat(subject, char(31)),
                group_concat(data, char(31)), group_concat(prev_hash, char(31)),
                group_concat(hash, char(31))"
    };
}

/// The rows with `$2 < seq <= $3`.
const RANGE_PAGE: &str = concat!(
    aggregated_columns!(),
    " FROM audit WHERE workspace = $1 AND seq > $2 AND seq <= $3"
);

/// The first `$3` rows with `seq > $2`.
const LIMIT_PAGE: &str = concat!(
    aggregated_columns!(),
    " FROM (SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
            WHERE workspace = $1 AND seq > $2 ORDER BY seq LIMIT $3)"
);

/// Runs a page query of [`aggregated_columns`] and cuts its one row into rows; `None`
/// when they do not add up.
async fn aggregated<'q>(
    query: sqlx::query::Query<'q, Db, sqlx::sqlite::SqliteArguments<'q>>,
    conn: &mut Conn,
) -> StoreResult<Option<AuditRows>> {
    let row = query.fetch_one(conn).await.map_err(database)?;
    let count: i64 = row.try_get(0).map_err(database)?;
    if count == 0 {
        return Ok(Some(AuditRows::default()));
    }
    let seqs: Option<&str> = row.try_get(1).map_err(database)?;
    let mut columns: [String; 7] = Default::default();
    for (index, column) in columns.iter_mut().enumerate() {
        let text: Option<String> = row.try_get(index + 2).map_err(database)?;
        *column = text.unwrap_or_default();
    }
    let count = usize::try_from(count).unwrap_or(0);
    Ok(AuditRows::from_separated(
        count,
        seqs.unwrap_or_default(),
        columns,
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The aggregated page is what verification reads: it must be the one used when the
    /// columns are ordinary (not silently replaced by the row-by-row read), and declined
    /// when a value holds the separator.
    #[tokio::test]
    async fn the_aggregated_page_is_used_unless_a_value_holds_the_separator() {
        let pool = sqlx::sqlite::SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        let mut conn = pool.acquire().await.unwrap();
        sqlx::raw_sql(
            "CREATE TABLE audit (workspace TEXT, seq INTEGER, at TEXT, actor TEXT, kind TEXT,
                 subject TEXT, data TEXT, prev_hash TEXT, hash TEXT, PRIMARY KEY (workspace, seq));
             INSERT INTO audit VALUES
                 ('ws', 1, 't1', 'a1', '', 's1', '{\"k\":[1]}', 'p1', 'h1'),
                 ('ws', 2, 't2', 'a2', 'k2', '', '[]', 'p2', 'h2'),
                 ('other', 3, 't3', 'a3', 'k3', 's3', '{}', 'p3', 'h3'),
                 ('ws', 4, 't4', 'a4', 'k4', 's4', '{}', 'p4', 'h4');",
        )
        .execute(&mut *conn)
        .await
        .unwrap();
        let page = audit_page(&mut conn, "ws", 0, 10).await.unwrap().unwrap();
        let mut expected = AuditRows::default();
        expected.push(1, ["t1", "a1", "", "s1", r#"{"k":[1]}"#, "p1", "h1"]);
        expected.push(2, ["t2", "a2", "k2", "", "[]", "p2", "h2"]);
        expected.push(4, ["t4", "a4", "k4", "s4", "{}", "p4", "h4"]);
        assert!(page.iter().eq(expected.iter()));
        let page = audit_page(&mut conn, "ws", 1, 1).await.unwrap().unwrap();
        assert_eq!(page.last_seq(), Some(2));
        assert!(audit_page(&mut conn, "ws", 4, 10)
            .await
            .unwrap()
            .unwrap()
            .is_empty());
        // Both reads: the seq range when it is whole, the `LIMIT` read across the gap.
        for (after, limit, seqs) in [(0, 2, vec![1, 2]), (0, 3, vec![1, 2, 4])] {
            let page = audit_page(&mut conn, "ws", after, limit)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(page.iter().map(|row| row.seq).collect::<Vec<_>>(), seqs);
            assert!(page.iter().eq(expected.iter().take(seqs.len())));
        }

        // A seq that is not a whole number. A real one sorts among the numbers: inside a
        // range, it is counted there, and neither read can be cut into rows with whole
        // seqs, so the page is read row by row. A text one sorts after every number: it
        // is missing from a range, and the `LIMIT` read finds it after the last number.
        for (seq, after, limit, page) in [
            ("2.5", 0, 3, None),
            ("2.5", 1, 2, None),
            ("'x'", 0, 3, Some(vec![1, 2, 4])),
            ("'x'", 4, 1, None),
        ] {
            sqlx::query(&format!(
                "INSERT INTO audit VALUES ('ws', {seq}, 't', 'a', 'k', 's', '{{}}', 'p', 'h')"
            ))
            .execute(&mut *conn)
            .await
            .unwrap();
            let read = audit_page(&mut conn, "ws", after, limit).await.unwrap();
            let seqs = read.map(|read| read.iter().map(|row| row.seq).collect::<Vec<_>>());
            assert_eq!(seqs, page, "{seq} {after} {limit}");
            sqlx::query(&format!("DELETE FROM audit WHERE seq = {seq}"))
                .execute(&mut *conn)
                .await
                .unwrap();
        }

        sqlx::query("UPDATE audit SET actor = 'a' || char(31) WHERE seq = 2")
            .execute(&mut *conn)
            .await
            .unwrap();
        assert!(audit_page(&mut conn, "ws", 0, 10).await.unwrap().is_none());
    }
}
