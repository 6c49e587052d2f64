//! The audit chain and the workspace event stream: appending [`Effects`] inside an
//! operation's transaction, and reading them back.
//!
//! Reading the chain back and sealing its oldest records into segments is `pages.rs`'s.
//!
//! INVARIANT: [`append_many`] (and [`append_effects`], one of it) is the only writer of
//! the `audit` and `events` tables (and PostgreSQL's `audit_heads`) but for the sealer
//! (`pages::seal_audit`), which moves records unchanged, and it runs inside the
//! write transaction of the operation whose change it records, so a change and its record
//! commit together or not at all (G8). The chain head it extends cannot move under it:
//! SQLite runs every write on its one writer connection, and PostgreSQL's operations hold
//! the workspace's head row locked until commit (`dialect::lock_workspace`).

use super::dialect::{self, Conn, Db, Pool};
use crate::codec::{database, millis, to_i64, Columns};
use crate::{AuditEntry, Effects, EventEntry, StoreResult};
use airlock_digest::digest::{audit_record_hash, AuditMembers};
use airlock_protocol::WorkspaceEvent;
use sqlx::QueryBuilder;

/// Appends `effects` to `workspace`'s audit chain and event stream.
pub(crate) async fn append_effects(
    conn: &mut Conn,
    workspace: &str,
    effects: &Effects,
) -> StoreResult<()> {
    append_many(conn, &[(workspace, effects)], Vec::new()).await
}

/// Rows per multi-row `INSERT`: far below either database's limit on bound values
/// (SQLite 32,766, PostgreSQL 65,535).
const ROWS_PER_STATEMENT: usize = 256;

/// An audit record ready to insert.
struct AuditRow<'a> {
    workspace: &'a str,
    seq: i64,
    at: String,
    entry: &'a AuditEntry,
    prev_hash: String,
    hash: String,
}

/// An event ready to insert, with its workspace.
pub(crate) type EventRow<'a> = (&'a str, &'a EventEntry);

/// What [`append_many`] inserts: the audit records chained on each workspace's head, the
/// heads as they end, and the events.
pub(crate) struct Chained<'a> {
    rows: Vec<AuditRow<'a>>,
    /// (workspace, last seq, last hash) of each chain the batch extends.
    heads: Vec<(&'a str, u64, String)>,
    events: Vec<EventRow<'a>>,
}

/// Chains each `(workspace, effects)` in order on its workspace's head: the one known
/// among `heads`, `(workspace, seq, hash)`, else read once inside the transaction.
/// SQLite's writer keeps the heads its last commit left (`writer.rs`), PostgreSQL's
/// batch the heads it locked (`dialect::lock_head`); the primary key `(workspace, seq)`
/// refuses a record chained on a head that moved since.
///
/// Each audit record gets `seq` = previous + 1 (1 for the first), `prev_hash` = the
/// previous record's hash (64 zeros for the first), `at` = the entry's RFC 3339 text,
/// and `hash` = `audit_hash(prev_hash, record without hash)` (DESIGN.md §6.3).
pub(crate) async fn chain_on<'a>(
    conn: &mut Conn,
    batch: &[(&'a str, &'a Effects)],
    mut heads: Vec<(&'a str, u64, String)>,
) -> StoreResult<Chained<'a>> {
    let mut rows: Vec<AuditRow<'_>> = Vec::new();
    for &(workspace, effects) in batch {
        if effects.audit.is_empty() && effects.events.is_empty() {
            continue;
        }
        let index = match heads.iter().position(|(known, ..)| *known == workspace) {
            Some(index) => index,
            None => {
                let (seq, hash) = dialect::chain_head(&mut *conn, workspace).await?;
                heads.push((workspace, seq, hash));
                heads.len() - 1
            }
        };
        let (_, seq, prev_hash) = &mut heads[index];
        for entry in &effects.audit {
            *seq += 1;
            // The text hashed is the text stored: a verifier recomputes from the row.
            // `data` is stored as its canonical JSON, so a verifier finds its members
            // already in order and hashes them as they are.
            let at = entry.at.to_string();
            let hash = audit_record_hash(&AuditMembers {
                seq: *seq,
                at: &at,
                actor: &entry.actor,
                kind: &entry.kind,
                subject: &entry.subject,
                canonical_data: entry.data.as_str().as_bytes(),
                prev_hash,
            });
            rows.push(AuditRow {
                workspace,
                seq: to_i64(*seq)?,
                at,
                entry,
                prev_hash: std::mem::replace(prev_hash, hash.clone()),
                hash,
            });
        }
    }
    let events = batch
        .iter()
        .flat_map(|&(workspace, effects)| {
            effects.events.iter().map(move |event| (workspace, event))
        })
        .collect();
    Ok(Chained {
        rows,
        heads,
        events,
    })
}

/// Pushes one multi-row `INSERT` of audit records onto `insert`.
fn push_audit<'q>(insert: &mut QueryBuilder<'q, Db>, chunk: &'q [AuditRow<'_>]) {
    insert.push(
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
            .push_bind(row.entry.data.as_str())
            .push_bind(&row.prev_hash)
            .push_bind(&row.hash);
    });
}

/// Pushes one multi-row `INSERT` of events onto `insert`.
pub(crate) fn push_events<'q>(insert: &mut QueryBuilder<'q, Db>, chunk: &'q [EventRow<'_>]) {
    insert.push("INSERT INTO events (workspace, kind, at, data) ");
    insert.push_values(chunk, |mut values, (workspace, event)| {
        values
            .push_bind(*workspace)
            .push_bind(&event.kind)
            .push_bind(millis(event.at))
            .push_bind(event.data.as_str());
    });
}

impl<'a> Chained<'a> {
    /// Each chain's head as the batch leaves it: `(workspace, seq, hash)`.
    #[allow(
        dead_code,
        reason = "PostgreSQL's copy of this module has no single writer"
    )]
    pub(crate) fn heads(&self) -> &[(&'a str, u64, String)] {
        &self.heads
    }

    /// Pushes every insert onto `statements`, a string of statements the driver runs in
    /// one call, each after a `; ` (`statements` already holds one). Only for SQLite
    /// (`dialect::SINGLE_WRITER`): its chain head is the newest record, so there is no head
    /// to move, and its events are announced to no one (`dialect::insert_events` only
    /// inserts them).
    pub(crate) fn push_inserts<'q>(&'q self, statements: &mut QueryBuilder<'q, Db>) {
        for chunk in self.rows.chunks(ROWS_PER_STATEMENT) {
            statements.push("; ");
            push_audit(statements, chunk);
        }
        for chunk in self.events.chunks(ROWS_PER_STATEMENT) {
            statements.push("; ");
            push_events(statements, chunk);
        }
    }
}

/// Appends each `(workspace, effects)` in order ([`chain_on`] the `heads` the operation
/// already read under its lock): the audit records of all of them in one multi-row
/// statement, each chain's head moved once, then the events in another (group commit and
/// the batcher hand many at once).
pub(crate) async fn append_many<'a>(
    conn: &mut Conn,
    batch: &[(&'a str, &'a Effects)],
    heads: Vec<(&'a str, u64, String)>,
) -> StoreResult<()> {
    let chained = chain_on(&mut *conn, batch, heads).await?;
    for chunk in chained.rows.chunks(ROWS_PER_STATEMENT) {
        let mut insert = QueryBuilder::<Db>::new("");
        push_audit(&mut insert, chunk);
        insert.build().execute(&mut *conn).await.map_err(database)?;
    }
    if !chained.rows.is_empty() {
        for (workspace, seq, hash) in &chained.heads {
            dialect::move_head(&mut *conn, workspace, *seq, hash).await?;
        }
    }
    for chunk in chained.events.chunks(ROWS_PER_STATEMENT) {
        dialect::insert_events(&mut *conn, chunk).await?;
    }
    Ok(())
}

pub(crate) async fn events_after(
    pool: &Pool,
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

pub(crate) async fn last_event_id(pool: &Pool, workspace: &str) -> StoreResult<u64> {
    let row = sqlx::query("SELECT COALESCE(MAX(id), 0) AS id FROM events WHERE workspace = $1")
        .bind(workspace)
        .fetch_one(pool)
        .await
        .map_err(database)?;
    Columns::new(&row, "events").unsigned("id")
}
