//! The per-workspace write lock, the audit chain and the workspace event stream:
//! appending [`Effects`] inside an operation's transaction (with a notification to every
//! node), and reading them back.
//!
//! INVARIANT: [`append_many`] (and [`append_effects`], one of it) is the only writer of
//! the `audit`, `events` and `audit_heads` tables, and it runs inside the write
//! transaction of the operation whose change it records, so a change and its record
//! commit together or not at all (G8). It extends the chain from the head row it holds locked (`FOR UPDATE`) until commit,
//! so two nodes appending at once queue on that row and the chain stays continuous.

use super::codec::{database, json_text, millis, to_i64, Columns};
use crate::{AuditEntry, AuditRows, Effects, StoreError, StoreResult};
use airlock_policy::digest::audit_hash;
use airlock_protocol::{AuditRecord, WorkspaceEvent};
use serde_json::json;
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder, Row};

/// The channel every appended event is announced on (delivered on commit).
pub(crate) const CHANNEL: &str = "airlock_events";

/// The newest audit record of a workspace: `(0, 64 zeros)` before the first.
pub(crate) struct Head {
    seq: u64,
    hash: String,
}

/// Locks `workspace` for the rest of the transaction and returns its chain head, or
/// `None` when no such workspace exists.
///
/// INVARIANT: every write transaction on a workspace calls this before it reads for
/// update or writes any other row of the workspace. All transactions thus take their
/// locks in one order (head, then rows; several heads in workspace order, see
/// `expiry`), so they queue and never deadlock, and writes of one workspace are
/// serialised across nodes as SQLite's single writer serialises them in one process.
pub(crate) async fn lock_workspace(
    conn: &mut PgConnection,
    workspace: &str,
) -> StoreResult<Option<Head>> {
    let row = sqlx::query("SELECT seq, hash FROM audit_heads WHERE workspace = $1 FOR UPDATE")
        .bind(workspace)
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
    row.map(|row| {
        let columns = Columns::new(&row, "audit_heads");
        Ok(Head {
            seq: columns.unsigned("seq")?,
            hash: columns.text("hash")?,
        })
    })
    .transpose()
}

/// Appends `effects` to `workspace`'s audit chain and event stream, and announces each
/// event on [`CHANNEL`].
pub(crate) async fn append_effects(
    conn: &mut PgConnection,
    workspace: &str,
    effects: &Effects,
) -> StoreResult<()> {
    append_many(conn, &[(workspace, effects)]).await
}

/// Rows per multi-row `INSERT`: far below PostgreSQL's limit on bound values (65,535).
const ROWS_PER_STATEMENT: usize = 256;

/// An audit record ready to insert.
struct AuditRow<'a> {
    seq: i64,
    at: String,
    entry: &'a AuditEntry,
    data: String,
    prev_hash: String,
    hash: String,
}

/// Appends each `(workspace, effects)` in order, workspace by workspace: its audit
/// records in one multi-row statement, its head moved once, its events in one statement,
/// and one `pg_notify` statement announcing them (the batcher hands many at once).
///
/// Each audit record gets `seq` = previous + 1 (1 for the first), `prev_hash` = the
/// previous record's hash (64 zeros for the first), `at` = the entry's RFC 3339 text,
/// and `hash` = `audit_hash(prev_hash, record without hash)` (DESIGN.md §6.3).
pub(crate) async fn append_many(
    conn: &mut PgConnection,
    batch: &[(&str, &Effects)],
) -> StoreResult<()> {
    let mut workspaces: Vec<&str> = Vec::new();
    for &(workspace, effects) in batch {
        let touches = !effects.audit.is_empty() || !effects.events.is_empty();
        if touches && !workspaces.contains(&workspace) {
            workspaces.push(workspace);
        }
    }
    for workspace in workspaces {
        let mine = || {
            batch
                .iter()
                .filter(move |(of, _)| *of == workspace)
                .map(|(_, effects)| *effects)
        };
        // Already locked by the operation (a second FOR UPDATE by the same transaction
        // does not wait); read again so the head is the one this transaction last wrote.
        let Head { mut seq, mut hash } = lock_workspace(conn, workspace)
            .await?
            .ok_or_else(|| StoreError::Database(format!("no workspace {workspace}")))?;
        let mut rows = Vec::new();
        for entry in mine().flat_map(|effects| &effects.audit) {
            seq += 1;
            let prev_hash = std::mem::take(&mut hash);
            // The text hashed is the text stored: a verifier recomputes from the row.
            let at = entry.at.to_string();
            let record = json!({
                "seq": seq,
                "at": at,
                "actor": entry.actor,
                "kind": entry.kind,
                "subject": entry.subject,
                "data": entry.data,
                "prev_hash": prev_hash,
            });
            hash = audit_hash(&prev_hash, &record);
            rows.push(AuditRow {
                seq: to_i64(seq)?,
                at,
                entry,
                data: json_text(&entry.data)?,
                prev_hash,
                hash: hash.clone(),
            });
        }
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let mut insert = QueryBuilder::<Postgres>::new(
                "INSERT INTO audit (workspace, seq, at, actor, kind, subject, data, prev_hash, hash) ",
            );
            insert.push_values(chunk, |mut values, row| {
                values
                    .push_bind(workspace)
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
        if !rows.is_empty() {
            sqlx::query("UPDATE audit_heads SET seq = $1, hash = $2 WHERE workspace = $3")
                .bind(to_i64(seq)?)
                .bind(&hash)
                .bind(workspace)
                .execute(&mut *conn)
                .await
                .map_err(database)?;
        }
        let events = mine()
            .flat_map(|effects| &effects.events)
            .map(|event| Ok((event, json_text(&event.data)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        let mut payloads = Vec::with_capacity(events.len());
        for chunk in events.chunks(ROWS_PER_STATEMENT) {
            let mut insert =
                QueryBuilder::<Postgres>::new("INSERT INTO events (workspace, kind, at, data) ");
            insert.push_values(chunk, |mut values, (event, data)| {
                values
                    .push_bind(workspace)
                    .push_bind(&event.kind)
                    .push_bind(millis(event.at))
                    .push_bind(data);
            });
            insert.push(" RETURNING id");
            let ids: Vec<i64> = insert
                .build_query_scalar()
                .fetch_all(&mut *conn)
                .await
                .map_err(database)?;
            if ids.len() != chunk.len() {
                return Err(StoreError::Database(format!(
                    "{} events inserted, {} ids returned",
                    chunk.len(),
                    ids.len()
                )));
            }
            // Small on purpose (NOTIFY payloads are limited to 8000 bytes): what changed
            // and where; a listener reads the rest from the tables.
            for ((event, _), id) in chunk.iter().zip(ids) {
                let payload = json!({
                    "workspace": workspace,
                    "id": id,
                    "kind": event.kind,
                    "call_id": event.data.get("call_id").and_then(|call_id| call_id.as_str()),
                });
                payloads.push(payload.to_string());
            }
        }
        if !payloads.is_empty() {
            sqlx::query(
                "SELECT pg_notify($1, payload) FROM unnest($2::text[]) WITH ORDINALITY AS p(payload, n) ORDER BY n",
            )
            .bind(CHANNEL)
            .bind(&payloads)
            .execute(&mut *conn)
            .await
            .map_err(database)?;
        }
    }
    Ok(())
}

pub(crate) async fn audit_after(
    pool: &PgPool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Vec<AuditRecord>> {
    let rows = sqlx::query(
        "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
         WHERE workspace = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(pool)
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

/// [`crate::Store::audit_rows_after`]: the rows copied into one [`AuditRows`] page, each
/// column borrowed from its row (no `String` or JSON value per record).
pub(crate) async fn audit_rows_after(
    pool: &PgPool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<AuditRows> {
    let rows = sqlx::query(
        "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM audit
         WHERE workspace = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(pool)
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
    pool: &PgPool,
    workspace: &str,
    after: u64,
    limit: u32,
) -> StoreResult<Vec<WorkspaceEvent>> {
    let rows = sqlx::query(
        "SELECT id, kind, at, data FROM events WHERE workspace = $1 AND id > $2
         ORDER BY id LIMIT $3",
    )
    .bind(workspace)
    .bind(to_i64(after)?)
    .bind(i64::from(limit))
    .fetch_all(pool)
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

pub(crate) async fn last_event_id(pool: &PgPool, workspace: &str) -> StoreResult<u64> {
    let row = sqlx::query("SELECT COALESCE(MAX(id), 0) AS id FROM events WHERE workspace = $1")
        .bind(workspace)
        .fetch_one(pool)
        .await
        .map_err(database)?;
    Columns::new(&row, "events").unsigned("id")
}
