//! The audit chain and the workspace event stream: appending [`Effects`] inside an
//! operation's transaction, and reading them back.
//!
//! INVARIANT: [`append_effects`] is the only writer of the `audit` and `events` tables,
//! and it runs inside the write transaction of the operation whose change it records, so
//! a change and its record commit together or not at all (G8). Because every write
//! transaction runs on the one writer connection, reading the chain head and appending
//! after it cannot race with another append.

use super::codec::{database, json_text, millis, to_i64, Columns};
use crate::{Effects, StoreResult};
use airlock_policy::digest::{audit_hash, GENESIS_HASH};
use airlock_protocol::{AuditRecord, WorkspaceEvent};
use serde_json::json;
use sqlx::{SqliteConnection, SqlitePool};

/// Appends `effects` to `workspace`'s audit chain and event stream.
///
/// Each audit record gets `seq` = previous + 1 (1 for the first), `prev_hash` = the
/// previous record's hash (64 zeros for the first), `at` = the entry's RFC 3339 text,
/// and `hash` = `audit_hash(prev_hash, record without hash)` (DESIGN.md §6.3).
pub(crate) async fn append_effects(
    conn: &mut SqliteConnection,
    workspace: &str,
    effects: &Effects,
) -> StoreResult<()> {
    if !effects.audit.is_empty() {
        let head = sqlx::query(
            "SELECT seq, hash FROM audit WHERE workspace = ? ORDER BY seq DESC LIMIT 1",
        )
        .bind(workspace)
        .fetch_optional(&mut *conn)
        .await
        .map_err(database)?;
        let (mut seq, mut prev_hash) = match head {
            Some(row) => {
                let columns = Columns::new(&row, "audit");
                (columns.unsigned("seq")?, columns.text("hash")?)
            }
            None => (0, GENESIS_HASH.to_owned()),
        };
        for entry in &effects.audit {
            seq += 1;
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
            let hash = audit_hash(&prev_hash, &record);
            sqlx::query(
                "INSERT INTO audit (workspace, seq, at, actor, kind, subject, data, prev_hash, hash)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(workspace)
            .bind(to_i64(seq)?)
            .bind(&at)
            .bind(&entry.actor)
            .bind(&entry.kind)
            .bind(&entry.subject)
            .bind(json_text(&entry.data)?)
            .bind(&prev_hash)
            .bind(&hash)
            .execute(&mut *conn)
            .await
            .map_err(database)?;
            prev_hash = hash;
        }
    }
    for event in &effects.events {
        sqlx::query("INSERT INTO events (workspace, kind, at, data) VALUES (?, ?, ?, ?)")
            .bind(workspace)
            .bind(&event.kind)
            .bind(millis(event.at))
            .bind(json_text(&event.data)?)
            .execute(&mut *conn)
            .await
            .map_err(database)?;
    }
    Ok(())
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
