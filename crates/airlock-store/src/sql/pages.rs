//! Reading a workspace's audit chain back, and sealing its oldest records into segments.
//!
//! A record lives in one of two places. Appended, it is a row of `audit` (`audit.rs`).
//! Once a chain has more than [`SEAL`] records in `audit`, the sealer ([`seal_audit`])
//! moves its oldest [`SEAL`] into a row of `audit_segments` (several when they are larger
//! than [`SEGMENT_BYTES`]; each a run of consecutive records, at least one): their columns
//! byte for byte, in the layout of [`AuditRows::to_segment`]. It deletes their rows in the same
//! transaction. Nothing about a record changes but where it is kept, so its hash still
//! recomputes from what is stored, and an edit in a segment breaks the chain as an edit
//! in a row does. The chain's newest record always stays in `audit` (SQLite reads the
//! head there).
//!
//! Why: verifying a chain reads every record (a million and more). Read as rows, each
//! costs the database about a microsecond before it is hashed; a segment is one read for
//! a thousand records, the page verification reads (BENCHMARKS.md, "Sealed segments").
//! A segment is a value of a megabyte or so: `airlock serve` gives SQLite's C allocations
//! to mimalloc (`override`), which reuses such blocks where glibc's malloc mapped each one
//! afresh.
//!
//! Every read here is made in one snapshot, so that a seal committing meanwhile cannot
//! hide a record (moved into a segment after the segments were looked at) or show one
//! twice.

use super::dialect::{self, Conn, Pool};
use super::{Backend, Row};
use crate::audit_rows::{checked_segment, stored_seq};
use crate::codec::{database, to_i64};
use crate::{AuditRows, StoreError, StoreResult};
use airlock_protocol::AuditRecord;
use sqlx::{Acquire, Row as _};

/// Records one seal moves (one transaction), and the most a segment holds.
pub(crate) const SEAL: u32 = 1000;

/// The size a segment's body stays within (unless one record alone is larger): a seal of
/// large records is cut into several segments.
pub(crate) const SEGMENT_BYTES: usize = 8 * 1024 * 1024;

/// [`crate::Store::audit_after`]: the records of [`audit_rows_after`], each `data` parsed.
pub(crate) async fn audit_after(
    pool: &Pool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Vec<AuditRecord>> {
    let page = audit_rows_after(pool, workspace, after, limit).await?;
    page.iter()
        .map(|row| {
            let data = serde_json::from_str(row.data).map_err(|error| StoreError::Corrupt {
                table: "audit",
                detail: format!("data of seq {}: {error}", row.seq),
            })?;
            Ok(row.record(data))
        })
        .collect()
}

/// [`crate::Store::audit_rows_after`]: the records of `workspace` with `seq > after`, at
/// most `limit`, in chain order, from the segments and the rows alike.
pub(crate) async fn audit_rows_after(
    pool: &Pool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<AuditRows> {
    let mut conn = pool.acquire().await.map_err(database)?;
    // SQLite maps the file while it reads the page, and unmaps it after, whatever the
    // read gave (`dialect::map_file`).
    dialect::map_file(&mut conn, true).await?;
    let page = read_in_snapshot(&mut conn, workspace, after, limit).await;
    let unmapped = dialect::map_file(&mut conn, false).await;
    let page = page?;
    unmapped?;
    Ok(page)
}

/// [`read_page`] in a snapshot of its own.
async fn read_in_snapshot(
    conn: &mut Conn,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<AuditRows> {
    let mut snapshot = conn.begin().await.map_err(database)?;
    dialect::snapshot(&mut snapshot).await?;
    let page = read_page(&mut snapshot, workspace, after, limit).await?;
    // Nothing was written; ending the transaction either way frees its snapshot.
    snapshot.rollback().await.map_err(database)?;
    Ok(page)
}

/// [`audit_rows_after`] inside its snapshot: the segments that come next and the rows
/// before and after them, taken in seq order until the page is full or the chain ends.
async fn read_page(
    conn: &mut Conn,
    workspace: &str,
    mut after: u64,
    limit: u32,
) -> StoreResult<AuditRows> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut page = AuditRows::default();
    'page: while page.len() < limit {
        let segments = next_segments(conn, workspace, after, limit - page.len()).await?;
        if segments.is_empty() {
            let rows = rows_after(conn, workspace, after, None, limit - page.len()).await?;
            append(&mut page, rows, after, limit);
            break;
        }
        for row in &segments {
            // Read back only when reached: a segment past the page is not its concern.
            let segment = segment(row)?;
            let first = segment.first_seq().unwrap_or(u64::MAX);
            if first > after.saturating_add(1) {
                // Rows below the segment (only ever a chain altered by hand: the sealer
                // takes the oldest rows): they come first.
                let rows =
                    rows_after(conn, workspace, after, Some(first), limit - page.len()).await?;
                after = rows.last_seq().unwrap_or(after);
                append(&mut page, rows, 0, limit);
            }
            if page.len() < limit {
                append(&mut page, segment, after, limit);
                after = page.last_seq().unwrap_or(after);
            }
            if page.len() >= limit {
                break 'page;
            }
        }
    }
    Ok(page)
}

/// Adds `rows` past `after` to `page`, up to `limit` rows in all; taken whole when `page`
/// is empty and they all belong to it.
fn append(page: &mut AuditRows, rows: AuditRows, after: u64, limit: usize) {
    let want = limit.saturating_sub(page.len());
    let whole = rows.len() <= want && rows.first_seq().is_none_or(|first| first > after);
    if page.is_empty() && whole {
        *page = rows;
    } else {
        page.extend_after(&rows, after, want);
    }
}

/// The rows of the next segments of `workspace` holding records after `after`, in order:
/// those holding records up to `after + want` (a segment holds at most [`SEAL`] records,
/// so its last seq is at most that much further on), else the next one, wherever it is
/// (seqs that jump: a chain altered by hand).
async fn next_segments(
    conn: &mut Conn,
    workspace: &str,
    after: u64,
    want: usize,
) -> StoreResult<Vec<Row>> {
    let reach = after.saturating_add(u64::try_from(want).unwrap_or(u64::MAX));
    let within = sqlx::query(
        "SELECT first_seq, last_seq, body FROM audit_segments
         WHERE workspace = $1 AND last_seq > $2 AND last_seq <= $3 AND first_seq <= $4
         ORDER BY last_seq",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(to_i64(
        reach
            .saturating_add(u64::from(SEAL))
            .min(i64::MAX.unsigned_abs()),
    )?)
    .bind(to_i64(reach.min(i64::MAX.unsigned_abs()))?)
    .fetch_all(&mut *conn)
    .await
    .map_err(database)?;
    if !within.is_empty() {
        return Ok(within);
    }
    sqlx::query(
        "SELECT first_seq, last_seq, body FROM audit_segments
         WHERE workspace = $1 AND last_seq > $2 ORDER BY last_seq LIMIT 1",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .fetch_all(&mut *conn)
    .await
    .map_err(database)
}

/// A row of `audit_segments` read back ([`checked_segment`]).
fn segment(row: &Row) -> StoreResult<AuditRows> {
    let first: i64 = row.try_get(0).map_err(database)?;
    let last: i64 = row.try_get(1).map_err(database)?;
    let body: &[u8] = row.try_get(2).map_err(database)?;
    checked_segment(AuditRows::from_segment(body), first, last)
}

/// The rows of `audit` with `after < seq < below`, at most `limit`, in seq order: the
/// backend's own fast page when it has one and nothing bounds the rows above, else row
/// by row.
async fn rows_after(
    conn: &mut Conn,
    workspace: &str,
    after: u64,
    below: Option<u64>,
    limit: usize,
) -> StoreResult<AuditRows> {
    let limit = u32::try_from(limit).unwrap_or(u32::MAX);
    if below.is_none() {
        if let Some(page) = dialect::audit_page(&mut *conn, workspace, after, limit).await? {
            return Ok(page);
        }
    }
    let below = match below {
        Some(below) => to_i64(below)?,
        None => i64::MAX,
    };
    let rows: Vec<Row> = sqlx::query(
        "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
         WHERE workspace = $1 AND seq > $2 AND seq < $3 ORDER BY seq LIMIT $4",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(below)
    .bind(i64::from(limit))
    .fetch_all(&mut *conn)
    .await
    .map_err(database)?;
    let mut page = AuditRows::with_capacity(rows.len());
    for row in &rows {
        let seq = stored_seq(row.try_get(0).map_err(database)?)?;
        let mut columns = [""; 7];
        for (index, column) in columns.iter_mut().enumerate() {
            *column = row.try_get(index + 1).map_err(database)?;
        }
        page.push(seq, columns);
    }
    Ok(page)
}

/// [`crate::Store::workspaces_to_seal`]: the workspaces with more than [`SEAL`] records
/// in `audit` (by the span of their seqs: two index lookups each).
pub(crate) async fn workspaces_to_seal(pool: &Pool) -> StoreResult<Vec<String>> {
    sqlx::query_scalar(
        "SELECT id FROM workspaces w
         WHERE (SELECT max(seq) FROM audit a WHERE a.workspace = w.id)
             - (SELECT min(seq) FROM audit a WHERE a.workspace = w.id) >= $1
         ORDER BY id",
    )
    .bind(i64::from(SEAL))
    .fetch_all(pool)
    .await
    .map_err(database)
}

/// [`crate::Store::seal_audit`]: moves the oldest [`SEAL`] records of `workspace`'s rows
/// into segments when more than that many are there; how many it moved (0 or [`SEAL`]).
///
/// The records are read beside the writer, then written as one transaction that inserts
/// the segments and deletes exactly their rows. Records are never changed once appended,
/// so the rows deleted are the rows read; should the count differ (a seal by another node
/// that committed first, whose segments are then already there, or a row added by hand),
/// the transaction is refused whole (`Conflict`).
pub(crate) async fn seal_audit(store: &Backend, workspace: &str) -> StoreResult<u64> {
    let rows = {
        let mut conn = store.reads().acquire().await.map_err(database)?;
        rows_after(&mut conn, workspace, 0, None, SEAL as usize + 1).await?
    };
    if rows.len() <= SEAL as usize {
        return Ok(0);
    }
    let mut segments = Vec::new();
    let mut current = AuditRows::default();
    let mut bytes = 0;
    for row in rows.iter().take(SEAL as usize) {
        let size = row.size();
        if !current.is_empty() && bytes + size > SEGMENT_BYTES {
            segments.push(std::mem::take(&mut current));
            bytes = 0;
        }
        current.push_row(&row);
        bytes += size;
    }
    segments.push(current);
    let mut bodies = Vec::with_capacity(segments.len());
    for segment in &segments {
        let (Some(first), Some(last), Some(body)) = (
            segment.first_seq(),
            segment.last_seq(),
            segment.to_segment(),
        ) else {
            return Ok(0);
        };
        bodies.push((first, last, segment.len(), body));
    }
    write_transaction!(store, |conn| write_segments(conn, workspace, &bodies))
}

/// Inserts each segment (`first`, `last`, records, body) and deletes their rows.
async fn write_segments(
    conn: &mut Conn,
    workspace: &str,
    segments: &[(u64, u64, usize, Vec<u8>)],
) -> StoreResult<u64> {
    let mut records = 0;
    for (first, last, count, body) in segments {
        sqlx::query(
            "INSERT INTO audit_segments (workspace, first_seq, last_seq, records, body)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(workspace)
        .bind(to_i64(*first)?)
        .bind(to_i64(*last)?)
        .bind(i64::try_from(*count).unwrap_or(i64::MAX))
        .bind(body.as_slice())
        .execute(&mut *conn)
        .await
        .map_err(database)?;
        records += u64::try_from(*count).unwrap_or(u64::MAX);
    }
    let (Some((first, ..)), Some((_, last, ..))) = (segments.first(), segments.last()) else {
        return Ok(0);
    };
    let deleted = sqlx::query("DELETE FROM audit WHERE workspace = $1 AND seq >= $2 AND seq <= $3")
        .bind(workspace)
        .bind(to_i64(*first)?)
        .bind(to_i64(*last)?)
        .execute(&mut *conn)
        .await
        .map_err(database)?;
    if deleted.rows_affected() != records {
        return Err(StoreError::Conflict(format!(
            "the audit records {first}..={last} changed while they were sealed"
        )));
    }
    Ok(records)
}
