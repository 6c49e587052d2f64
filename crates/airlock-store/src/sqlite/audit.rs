//! The audit chain and the workspace event stream: appending [`Effects`] inside an
//! operation's transaction, and reading them back.
//!
//! INVARIANT: [`append_many`] (and [`append_effects`], one of it) is the only writer of the `audit` and `events` tables,
//! and it runs inside the write transaction of the operation whose change it records, so
//! a change and its record commit together or not at all (G8). Because every write
//! transaction runs on the one writer connection, reading the chain head and appending
//! after it cannot race with another append.

use super::codec::{database, json_text, millis, to_i64, Columns};
use crate::{AuditEntry, AuditRows, Effects, StoreError, StoreResult};
use airlock_policy::digest::{audit_hash, GENESIS_HASH};
use airlock_protocol::{AuditRecord, WorkspaceEvent};
use serde_json::json;
use sqlx::{QueryBuilder, Row, Sqlite, SqliteConnection, SqlitePool};

/// Rows per multi-row `INSERT`: far below SQLite's limit on bound values (32,766).
const ROWS_PER_STATEMENT: usize = 256;

/// Appends `effects` to `workspace`'s audit chain and event stream.
pub(crate) async fn append_effects(
    conn: &mut SqliteConnection,
    workspace: &str,
    effects: &Effects,
) -> StoreResult<()> {
    append_many(conn, &[(workspace, effects)]).await
}

/// An audit record ready to insert.
struct AuditRow<'a> {
    workspace: &'a str,
    seq: i64,
    at: String,
    entry: &'a AuditEntry,
    data: String,
    prev_hash: String,
    hash: String,
}

/// Appends each `(workspace, effects)` in order: the audit records of all of them in one
/// multi-row statement, then the events in another (a group commit hands many at once).
///
/// Each audit record gets `seq` = previous + 1 (1 for the first), `prev_hash` = the
/// previous record's hash (64 zeros for the first), `at` = the entry's RFC 3339 text,
/// and `hash` = `audit_hash(prev_hash, record without hash)` (DESIGN.md §6.3). The chain
/// head of each workspace is read once, inside the transaction.
pub(crate) async fn append_many(
    conn: &mut SqliteConnection,
    batch: &[(&str, &Effects)],
) -> StoreResult<()> {
    // (workspace, last seq, last hash) of each chain this batch extends.
    let mut heads: Vec<(&str, u64, String)> = Vec::new();
    let mut rows: Vec<AuditRow<'_>> = Vec::new();
    for &(workspace, effects) in batch {
        if effects.audit.is_empty() {
            continue;
        }
        let index = match heads.iter().position(|(known, ..)| *known == workspace) {
            Some(index) => index,
            None => {
                let (seq, hash) = chain_head(&mut *conn, workspace).await?;
                heads.push((workspace, seq, hash));
                heads.len() - 1
            }
        };
        let (_, seq, prev_hash) = &mut heads[index];
        for entry in &effects.audit {
            *seq += 1;
            // The text hashed is the text stored: a verifier recomputes from the row.
            let at = entry.at.to_string();
            let record = json!({
                "seq": *seq,
                "at": at,
                "actor": entry.actor,
                "kind": entry.kind,
                "subject": entry.subject,
                "data": entry.data,
                "prev_hash": prev_hash,
            });
            let hash = audit_hash(prev_hash, &record);
            rows.push(AuditRow {
                workspace,
                seq: to_i64(*seq)?,
                at,
                entry,
                data: json_text(&entry.data)?,
                prev_hash: std::mem::replace(prev_hash, hash.clone()),
                hash,
            });
        }
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut insert = QueryBuilder::<Sqlite>::new(
            "INSERT INTO audit (workspace, seq, at, actor, kind, subject, data, prev_hash, hash) ",
        );
        insert.push_values(chunk, |mut values, row| {
            values
                .push_bind(row.workspace)
                .push_bind(row.seq)
                .push_bind(&row.at)
                .push_bind(&row.entry.actor)
                .push_bind(&row.entry.kind)
                .push_bind(&row.entry.subject)
                .push_bind(&row.data)
                .push_bind(&row.prev_hash)
                .push_bind(&row.hash);
        });
        insert.build().execute(&mut *conn).await.map_err(database)?;
    }
    let events = batch
        .iter()
        .flat_map(|&(workspace, effects)| {
            effects.events.iter().map(move |event| (workspace, event))
        })
        .map(|(workspace, event)| Ok((workspace, event, json_text(&event.data)?)))
        .collect::<StoreResult<Vec<_>>>()?;
    for chunk in events.chunks(ROWS_PER_STATEMENT) {
        let mut insert =
            QueryBuilder::<Sqlite>::new("INSERT INTO events (workspace, kind, at, data) ");
        insert.push_values(chunk, |mut values, (workspace, event, data)| {
            values
                .push_bind(*workspace)
                .push_bind(&event.kind)
                .push_bind(millis(event.at))
                .push_bind(data);
        });
        insert.build().execute(&mut *conn).await.map_err(database)?;
    }
    Ok(())
}

/// The last `seq` and hash of `workspace`'s chain (0 and the genesis hash when empty).
async fn chain_head(conn: &mut SqliteConnection, workspace: &str) -> StoreResult<(u64, String)> {
    let head =
        sqlx::query("SELECT seq, hash FROM audit WHERE workspace = ? ORDER BY seq DESC LIMIT 1")
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

pub(crate) async fn audit_after(
    readers: &SqlitePool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Vec<AuditRecord>> {
    let rows = sqlx::query(
        "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
         WHERE workspace = ? AND seq > ? ORDER BY seq LIMIT ?",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(readers)
    .await
    .map_err(database)?;
    rows.iter()
        .map(|row| {
            let columns = Columns::new(row, "audit");
            Ok(AuditRecord {
                seq: columns.unsigned("seq")?,
                at: columns.text("at")?,
                actor: columns.text("actor")?,
                kind: columns.text("kind")?,
                subject: columns.text("subject")?,
                data: columns.json("data")?,
                prev_hash: columns.text("prev_hash")?,
                hash: columns.text("hash")?,
            })
        })
        .collect()
}

/// [`crate::Store::audit_rows_after`]. SQLite aggregates the page itself, each column into
/// one text plus a list of lengths, so a page of 10,000 records crosses into Rust as one
/// row: handing rows over one at a time (a channel message and an allocation per value)
/// cost more than everything else verification does. `group_concat` promises no order,
/// so the result is used only if its seqs rise and its lengths add up; otherwise the page
/// is read again row by row.
pub(crate) async fn audit_rows_after(
    readers: &SqlitePool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<AuditRows> {
    let row = sqlx::query(
        "SELECT count(*),
                group_concat(format('%d %d %d %d %d %d %d %d', seq, octet_length(at),
                    octet_length(actor), octet_length(kind), octet_length(subject),
                    octet_length(data), octet_length(prev_hash), octet_length(hash)), ' '),
                group_concat(at, ''), group_concat(actor, ''), group_concat(kind, ''),
                group_concat(subject, ''), group_concat(data, ''),
                group_concat(prev_hash, ''), group_concat(hash, '')
         FROM (SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
               WHERE workspace = ? AND seq > ? ORDER BY seq LIMIT ?)",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_one(readers)
    .await
    .map_err(database)?;
    let count: i64 = row.try_get(0).map_err(database)?;
    if count == 0 {
        return Ok(AuditRows::default());
    }
    let numbers: Option<&str> = row.try_get(1).map_err(database)?;
    let mut columns: [String; 7] = Default::default();
    for (index, column) in columns.iter_mut().enumerate() {
        let text: Option<String> = row.try_get(index + 2).map_err(database)?;
        *column = text.unwrap_or_default();
    }
    let count = usize::try_from(count).unwrap_or(0);
    match AuditRows::from_columns(count, numbers.unwrap_or_default(), columns) {
        Some(page) => Ok(page),
        None => audit_rows_one_by_one(readers, workspace, after, limit).await,
    }
}

/// The same page read row by row, each column borrowed from its row.
async fn audit_rows_one_by_one(
    readers: &SqlitePool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<AuditRows> {
    let rows = sqlx::query(
        "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
         WHERE workspace = ? AND seq > ? ORDER BY seq LIMIT ?",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(readers)
    .await
    .map_err(database)?;
    let mut page = AuditRows::with_capacity(usize::try_from(limit).unwrap_or(0).min(100_000));
    for row in &rows {
        let seq: i64 = row.try_get(0).map_err(database)?;
        let seq = u64::try_from(seq).map_err(|_| StoreError::Corrupt {
            table: "audit",
            detail: "seq: negative".to_owned(),
        })?;
        let mut columns = [""; 7];
        for (index, column) in columns.iter_mut().enumerate() {
            *column = row.try_get(index + 1).map_err(database)?;
        }
        page.push(seq, columns);
    }
    Ok(page)
}

pub(crate) async fn events_after(
    readers: &SqlitePool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Vec<WorkspaceEvent>> {
    let rows = sqlx::query(
        "SELECT id, kind, at, data FROM events WHERE workspace = ? AND id > ? ORDER BY id LIMIT ?",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(readers)
    .await
    .map_err(database)?;
    rows.iter()
        .map(|row| {
            let columns = Columns::new(row, "events");
            Ok(WorkspaceEvent {
                id: columns.unsigned("id")?,
                kind: columns.text("kind")?,
                at: columns.time("at")?,
                data: columns.json("data")?,
            })
        })
        .collect()
}

pub(crate) async fn last_event_id(readers: &SqlitePool, workspace: &str) -> StoreResult<u64> {
    let row = sqlx::query("SELECT COALESCE(MAX(id), 0) AS id FROM events WHERE workspace = ?")
        .bind(workspace)
        .fetch_one(readers)
        .await
        .map_err(database)?;
    Columns::new(&row, "events").unsigned("id")
}
